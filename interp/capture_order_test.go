package interp

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/display"
)

// TestPrintsKeepOrderWithOtherWriters: interpreted prints, which may skip the capture pipe,
// keep their order with what reaches fd 1 through it: the cell's own writes to os.Stdout,
// fmt.Fprintln(os.Stdout) and a goroutine that the loop waits for; a display follows every
// line printed before it; and the next cell starts clean.
func TestPrintsKeepOrderWithOtherWriters(t *testing.T) {
	s, err := New(Options{Symbols: map[string]map[string]reflect.Value{
		"github.com/gpunotes/gpunotes/display/display": {"HTML": reflect.ValueOf(display.HTML)}},
		Preload: []string{"github.com/gpunotes/gpunotes/display"}})
	if err != nil {
		t.Fatal(err)
	}
	code := `import ("fmt"; "os"; "strconv")
for i := 0; i < 3000; i++ {
	switch i % 5 {
	case 0, 1:
		fmt.Println(i)
	case 2:
		os.Stdout.WriteString(strconv.Itoa(i) + "\n")
	case 3:
		fmt.Fprintln(os.Stdout, i)
	case 4:
		done := make(chan bool)
		go func() { fmt.Print(i, "\n"); done <- true }()
		<-done
	}
}
display.HTML("<b>end</b>")
fmt.Println("after")`
	o := &orderOut{}
	if _, err := s.Execute(context.Background(), code, o); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintln(&want, i)
	}
	want.WriteString("<display>after\n")
	var got strings.Builder
	for _, e := range o.events {
		if e == "display" {
			got.WriteString("<display>")
		} else {
			got.WriteString(strings.TrimPrefix(e, "stream:"))
		}
	}
	if got.String() != want.String() {
		gl, wl := strings.Split(got.String(), "\n"), strings.Split(want.String(), "\n")
		for i := range wl {
			if i >= len(gl) || gl[i] != wl[i] {
				t.Fatalf("line %d: got %q, want %q (of %d lines, got %d)", i, at(gl, i), wl[i], len(wl), len(gl))
			}
		}
		t.Fatalf("got %d lines, want %d", len(gl), len(wl))
	}
	_, out2, err := run(t, s, `fmt.Println("next cell")`)
	if err != nil || out2.out("stdout") != "next cell\n" {
		t.Fatalf("next cell: %v %q", err, out2.out("stdout"))
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "<none>"
}
