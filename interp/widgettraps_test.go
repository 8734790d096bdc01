package interp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/display/widget"
)

const widgetImports = "import (\n\t\"fmt\"\n\n\t\"github.com/gpunotes/gpunotes/display/widget\"\n)"

func runOK(t *testing.T, s *Session, code string) (string, *recOut) {
	t.Helper()
	d, out, err := run(t, s, code)
	if err != nil {
		t.Fatalf("%s:\n%v", code, err)
	}
	if d == nil {
		return "", out
	}
	return plainOf(t, d), out
}

// TestUnnamedParamCallbacks checks that functions with unnamed parameters, declared or
// literal, run when compiled code calls them (a widget observer): yaegi stored the argument
// in the wrong frame slot and the cell panicked with "reflect.Set: value of type
// widget.Change is not assignable".
func TestUnnamedParamCallbacks(t *testing.T) {
	s := widgetSession(t)
	defer widget.CloseAll()
	runOK(t, s, widgetImports)
	_, out := runOK(t, s, "s := widget.NewIntSlider(1, 0, 10)\n"+
		"func f(widget.Change) { fmt.Println(\"declared\") }\n"+
		"s.Observe(\"value\", f)\n"+
		"s.Observe(\"value\", func(widget.Change) { fmt.Println(\"literal\") })\n"+
		"s.Observe(\"value\", func(_ widget.Change, ) { fmt.Println(\"blank\") })\n"+
		"s.SetValue(3)")
	if got := out.out("stdout"); got != "declared\nliteral\nblank\n" {
		t.Errorf("the observers printed %q", got)
	}
	// unnamed parameters of other kinds keep their meaning
	if got, _ := runOK(t, s, "func sum(int, ...int) int { return 7 }\nsum(1, 2, 3)"); got != "7" {
		t.Errorf("sum = %s", got)
	}
}

// TestSingleEmbedOfCompiledType checks that a cell type whose only field embeds a compiled
// type with methods is a clear error (yaegi's reflect.StructOf type crashed the kernel at its
// first interface conversion), and that the type with a second field works: its methods,
// the embedded widget's, and as a widget.Widget.
func TestSingleEmbedOfCompiledType(t *testing.T) {
	s := widgetSession(t)
	defer widget.CloseAll()
	runOK(t, s, widgetImports)
	_, _, err := run(t, s, "type Lone struct{ *widget.AnyWidget }")
	if err == nil || !strings.Contains(err.Error(), "second field") || !strings.Contains(err.Error(), "*widget.AnyWidget") {
		t.Fatalf("a lone embedded *widget.AnyWidget: err = %v", err)
	}
	got, _ := runOK(t, s, "type Counter struct {\n\t*widget.AnyWidget\n\t_ struct{}\n}\n"+
		"func (c *Counter) Bump() { c.Set(\"n\", c.GetInt(\"n\")+1) }\n"+
		"c := &Counter{AnyWidget: widget.NewAnyWidget(\"export default {}\", widget.T{\"n\": 1})}\n"+
		"c.Bump()\nvar w widget.Widget = c\nfmt.Sprint(c.GetInt(\"n\"), w.Widget().ModelID() == c.ModelID())")
	if got != `"2 true"` {
		t.Errorf("the two-field type gives %s", got)
	}
	// shown, as a cell's value, it is the widget's view
	d, _, err := run(t, s, "c")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := d.MIME[widget.ViewMIME].(map[string]any); !ok || v["model_id"] == nil {
		t.Errorf("the cell value c shows %v, not the widget's view", d.MIME)
	}
	// a struct with one embedded type of the cells, or a compiled one without methods, is fine
	runOK(t, s, "type Base struct{ n int }\ntype Over struct{ Base }\nfmt.Sprint(Over{Base{3}})")
}

// TestTopLevelCallbackAfterInterrupt checks that a func literal a cell handed to compiled code
// (an Observe callback) runs again after an interrupted callback, with no cell in between,
// and that the interrupt's traceback does not warn of stopped closures (stopcheck.go).
func TestTopLevelCallbackAfterInterrupt(t *testing.T) {
	started := make(chan struct{}, 1)
	s := widgetSessionHooks(t, map[string]any{"Started": func() { started <- struct{}{} }})
	defer widget.CloseAll()
	runOK(t, s, "import (\n\t\"fmt\"\n\n\t\"gpunotes.test/hook\"\n\t\"github.com/gpunotes/gpunotes/display/widget\"\n)")
	runOK(t, s, "hits := 0\ns := widget.NewIntSlider(1, 0, 100)\n"+
		"s.Observe(\"value\", func(c widget.Change) { hits++; if c.Int() == 99 { hook.Started(); for {} } })")
	id, _ := runOK(t, s, "s.ModelID()")
	id = strings.Trim(id, `"`)
	update := func(v int, interrupt bool) error {
		b, _ := json.Marshal(map[string]any{"method": "update", "state": map[string]any{"value": v}})
		fn, _, known := widget.Comms().CommMsg(id, b, nil, nil)
		if !known || fn == nil {
			t.Fatalf("update %d: no callback to run", v)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if interrupt {
			go func() { <-started; cancel() }()
		}
		return s.RunCallback(ctx, newRec(), fn)
	}
	err := update(99, true)
	var ce *CellError
	if !errors.As(err, &ce) || ce.Name != "KeyboardInterrupt" {
		t.Fatalf("the interrupted callback: %v", err)
	}
	if tb := strings.Join(ce.Traceback, "\n"); strings.Contains(tb, "run again") {
		t.Errorf("a loop's stop check ended the callback, yet the traceback says closures stop:\n%s", tb)
	}
	if err := update(50, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := runOK(t, s, "fmt.Sprint(hits, s.Value())"); got != `"2 50"` {
		t.Errorf("after the interrupt: hits, value = %s, want 2 50", got)
	}
}

// TestClosuresRunAfterInterrupt: closures made inside function bodies (callbacks, as widgets
// take them) still run after a cell was interrupted, whether its loop spins at the top level
// or inside a called func, it recurses, or it waits on a channel (runid.go). An interrupt of
// code blocked in a compiled call, which does not unwind, says in its traceback that such
// closures stop.
func TestClosuresRunAfterInterrupt(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	s := widgetSessionHooks(t, map[string]any{"Started": func() { started <- struct{}{} }, "Block": func() { <-release }})
	defer widget.CloseAll()
	runOK(t, s, "import (\n\t\"fmt\"\n\n\t\"gpunotes.test/hook\"\n\t\"github.com/gpunotes/gpunotes/display/widget\"\n)")
	runOK(t, s, "hits := 0\ns := widget.NewIntSlider(1, 0, 100)\n"+
		"func watch() { s.Observe(\"value\", func(c widget.Change) { hits += c.Int() }) }\nwatch()\n"+
		"func mkAdd(k int) func(int) int { return func(n int) int { return n + k } }\nadd3 := mkAdd(3)")
	id, _ := runOK(t, s, "s.ModelID()")
	id = strings.Trim(id, `"`)
	update := func(v int) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"method": "update", "state": map[string]any{"value": v}})
		fn, _, known := widget.Comms().CommMsg(id, b, nil, nil)
		if !known || fn == nil {
			t.Fatalf("update %d: no callback to run", v)
		}
		if err := s.RunCallback(context.Background(), newRec(), fn); err != nil {
			t.Fatalf("update %d: %v", v, err)
		}
	}
	interrupt := func(code string) *CellError {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() { <-started; cancel() }()
		_, err := s.Execute(ctx, code, newRec())
		var ce *CellError
		if !errors.As(err, &ce) || ce.Name != "KeyboardInterrupt" {
			t.Fatalf("%s: %v", code, err)
		}
		return ce
	}
	update(2)
	want := 2
	for k, code := range []string{"hook.Started()\nfor {}", "func spin() { for {} }\nhook.Started()\nspin()",
		"func deep(n int) int { return deep(n+1) + 1 }\nhook.Started()\nfor { deep(0) }",
		"hook.Started()\n<-make(chan int)"} {
		ce := interrupt(code)
		if tb := strings.Join(ce.Traceback, "\n"); strings.Contains(tb, "run again") {
			t.Errorf("%s: it unwound, yet the traceback says closures stop:\n%s", code, tb)
		}
		update(5 + k)
		want += 5 + k
	}
	if got, _ := runOK(t, s, "fmt.Sprint(hits, add3(4))"); got != fmt.Sprintf(`"%d 7"`, want) {
		t.Errorf("after the interrupts: hits, add3(4) = %s, want %d 7", got, want)
	}
	// blocked in a compiled call, the cell does not unwind: the traceback says what stops
	ce := interrupt("hook.Started()\nhook.Block()")
	close(release)
	if tb := strings.Join(ce.Traceback, "\n"); !strings.Contains(tb, "run again") {
		t.Errorf("the blocked cell did not unwind, yet the traceback does not say so:\n%s", tb)
	}
	if got, _ := runOK(t, s, "1 + 1"); got != "2" {
		t.Errorf("after the blocked cell: 1 + 1 = %s", got)
	}
}
