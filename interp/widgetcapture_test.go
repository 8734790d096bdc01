package interp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"

	"github.com/gpunotes/gpunotes/display/widget"
)

// widgetSession is a session with the widget names these tests use (not all of preload, to
// keep this package's test binary small).
func widgetSession(t *testing.T) *Session {
	t.Helper()
	return widgetSessionHooks(t, nil)
}

// widgetSessionHooks is widgetSession with hooks, as newHookedSession.
func widgetSessionHooks(t *testing.T, hooks map[string]any) *Session {
	t.Helper()
	syms := interp.Exports{"github.com/gpunotes/gpunotes/display/widget/widget": {
		"NewOutput":    reflect.ValueOf(widget.NewOutput),
		"NewIntSlider": reflect.ValueOf(widget.NewIntSlider),
		"Change":       reflect.ValueOf((*widget.Change)(nil)),
		"AnyWidget":    reflect.ValueOf((*widget.AnyWidget)(nil)),
		"NewAnyWidget": reflect.ValueOf(widget.NewAnyWidget),
		"T":            reflect.ValueOf((*widget.T)(nil)),
		"Widget":       reflect.ValueOf((*widget.Widget)(nil)),
		"_Widget":      reflect.ValueOf((*wrapWidget)(nil)),
	}}
	if hooks != nil {
		m := map[string]reflect.Value{}
		for k, v := range hooks {
			m[k] = reflect.ValueOf(v)
		}
		syms["gpunotes.test/hook/hook"] = m
	}
	s, err := New(Options{Symbols: syms})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// wrapWidget is the interface wrapper yaegi extract makes for widget.Widget.
type wrapWidget struct {
	IValue  any
	WWidget func() *widget.Model
}

func (w wrapWidget) Widget() *widget.Model { return w.WWidget() }

// outputsOf is the "outputs" trait of the Output widget with model id, as the page sees it.
func outputsOf(t *testing.T, id string) string {
	t.Helper()
	st, _ := widget.NotebookState()["state"].(map[string]any)[id].(map[string]any)
	b, err := json.Marshal(st["state"].(map[string]any)["outputs"])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// streamsOf is the text of each stream the Output widget with model id holds.
func streamsOf(t *testing.T, id string) string {
	t.Helper()
	var outs []map[string]any
	if err := json.Unmarshal([]byte(outputsOf(t, id)), &outs); err != nil {
		t.Fatal(err)
	}
	text := map[string]string{}
	for _, o := range outs {
		if o["output_type"] != "stream" {
			t.Errorf("the Output holds a %v", o["output_type"])
		}
		text[o["name"].(string)] += o["text"].(string)
	}
	return "stdout: " + text["stdout"] + " | stderr: " + text["stderr"]
}

// TestOutputCaptureTakesPrints checks that Output.Capture sends what interpreted code, compiled
// code (fmt.Fprintln to os.Stdout, fd 1) and os.Stderr print inside it to the widget, and
// leaves the prints before and after it in the cell, in order, nested captures too.
func TestOutputCaptureTakesPrints(t *testing.T) {
	s := widgetSession(t)
	defer widget.CloseAll()
	if _, _, err := run(t, s, "import (\n\t\"fmt\"\n\t\"os\"\n\n\t\"github.com/gpunotes/gpunotes/display/widget\"\n)"); err != nil {
		t.Fatal(err)
	}
	_, out, err := run(t, s, `
out := widget.NewOutput()
inner := widget.NewOutput()
fmt.Println("before")
out.Capture(func() {
	fmt.Println("inside")
	fmt.Fprintln(os.Stdout, "compiled")
	fmt.Fprintln(os.Stderr, "oops")
	inner.Capture(func() { fmt.Println("nested") })
	fmt.Print("after nested\n")
})
fmt.Println("after")`)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.out("stdout"); got != "before\nafter\n" {
		t.Errorf("the cell got stdout %q, want the prints outside the capture only", got)
	}
	if got := out.out("stderr"); got != "" {
		t.Errorf("the cell got stderr %q", got)
	}
	id := func(name string) string {
		d, _, err := run(t, s, name+".ModelID()")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Trim(plainOf(t, d), `"`)
	}
	// stdout and stderr are two pipes: their order with each other is not kept, as in cells
	if got, want := streamsOf(t, id("out")), "stdout: inside\ncompiled\nafter nested\n | stderr: oops\n"; got != want {
		t.Errorf("the Output holds %q, want %q", got, want)
	}
	if got, want := streamsOf(t, id("inner")), "stdout: nested\n | stderr: "; got != want {
		t.Errorf("the nested Output holds %q, want %q", got, want)
	}
}
