package interp

import (
	"context"
	"encoding/json"
	"errors"
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
// and that the interrupt's traceback says what yaegi cannot bring back.
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
	if !errors.As(err, &ce) || ce.Name != "KeyboardInterrupt" || !strings.Contains(strings.Join(ce.Traceback, "\n"), "run again") {
		t.Fatalf("the interrupted callback: %v", err)
	}
	if err := update(50, false); err != nil {
		t.Fatal(err)
	}
	if got, _ := runOK(t, s, "fmt.Sprint(hits, s.Value())"); got != `"2 50"` {
		t.Errorf("after the interrupt: hits, value = %s, want 2 50", got)
	}
}
