package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

type cellOut struct{ text strings.Builder }

func (o *cellOut) Stream(name, text string)           { o.text.WriteString(text) }
func (o *cellOut) Display(display.Data, bool)         {}
func (o *cellOut) Clear(bool)                         {}
func (o *cellOut) Input(string, bool) (string, error) { return "", fmt.Errorf("no stdin") }

// TestSubmitCellFuncByName runs a func declared in a cell on a cluster worker: the user's
// session resolves its source, a worker's own session evaluates and calls it.
func TestSubmitCellFuncByName(t *testing.T) {
	bin := testenv.Binary(t)
	s, err := newUserSession()
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{
		"import \"strings\"\nconst greeting = \"hello\"\nfunc shout(name string, n int) string { return strings.ToUpper(greeting+\" \"+name) + strings.Repeat(\"!\", n) }",
		fmt.Sprintf("c, err := cluster.NewLocalCUDA(cluster.Options{NWorkers: 1, Binary: %q})\nif err != nil { panic(err) }", bin),
		"v, err := c.Submit(\"shout\", \"gopher\", 3).Result(context.Background())\nif err != nil { panic(err) }\nv",
		"c.Close()",
	}
	var last *display.Data
	for i, code := range cells {
		if i == 2 {
			code = "import \"context\"\n" + code
		}
		out := &cellOut{}
		res, err := s.Execute(context.Background(), code, out)
		if err != nil {
			t.Fatalf("cell %d: %v\n%s", i, err, out.text.String())
		}
		if i == 2 {
			last = res
		}
	}
	if last == nil || last.MIME["text/plain"] != `"HELLO GOPHER!!!"` {
		t.Fatalf("result %+v", last)
	}
}
