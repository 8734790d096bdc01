package interp

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestCompiledValuesPrintThemselves checks that once a cell declares struct types (so fmt's
// arguments go through the cell type registry), compiled values still print through their own
// Error, String and Format methods: an error wrapping another, a time, a value whose fields
// hold interfaces.
func TestCompiledValuesPrintThemselves(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, `import (
	"errors"
	"fmt"
	"time"
)

type trial struct {
	label string
	n     int
}`); err != nil {
		t.Fatal(err)
	}
	err := fmt.Errorf("outer: %w", errors.New("inner"))
	d := 1500 * time.Millisecond
	want := fmt.Sprintf("%v|%s|%q|%+v|%v|%v\n", err, err, err, struct {
		label string
		n     int
	}{"a", 1}, d, []error{err, nil})
	want += fmt.Sprintln(err, d)
	_, out, runErr := run(t, s, `err := fmt.Errorf("outer: %w", errors.New("inner"))
d := 1500 * time.Millisecond
fmt.Printf("%v|%s|%q|%+v|%v|%v\n", err, err, err, trial{"a", 1}, d, []error{err, nil})
fmt.Println(err, d)`)
	if runErr != nil {
		t.Fatal(runErr)
	}
	if got := out.out("stdout"); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	if strings.Contains(out.out("stdout"), "&{") {
		t.Errorf("a compiled value printed by its fields: %q", out.out("stdout"))
	}
}
