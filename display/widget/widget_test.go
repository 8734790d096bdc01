package widget_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/display/widget"
)

type sent struct {
	typ      string
	content  map[string]any
	metadata map[string]any
	buffers  [][]byte
}

// front records what widgets send, as the kernel's cell output would publish it.
type front struct {
	mu       sync.Mutex
	msgs     []sent
	displays []display.Data
	closes   chan string // comm ids of comm_close messages, when not nil
}

func (f *front) Display(d display.Data, update bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.displays = append(f.displays, d)
}
func (f *front) Clear(bool) {}
func (f *front) Comm(typ string, content, metadata map[string]any, buffers [][]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// a round trip through JSON, as the wire does
	b, _ := json.Marshal(content)
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	f.msgs = append(f.msgs, sent{typ, c, metadata, buffers})
	if typ == "comm_close" && f.closes != nil {
		f.closes <- c["comm_id"].(string)
	}
}

func (f *front) of(id string) []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sent
	for _, m := range f.msgs {
		if m.content["comm_id"] == id {
			out = append(out, m)
		}
	}
	return out
}

func bind(t *testing.T) *front {
	f := &front{}
	restore := display.Bind(context.Background(), f)
	t.Cleanup(restore)
	return f
}

// fromPage delivers a front-end comm_msg and runs the callbacks it returns.
func fromPage(t *testing.T, id string, data map[string]any, buffers [][]byte, reply display.CommSink) {
	t.Helper()
	b, _ := json.Marshal(data)
	run, _, known := widget.Comms().CommMsg(id, b, buffers, reply)
	if !known {
		t.Fatalf("comm %s unknown", id)
	}
	if run != nil {
		run()
	}
}

func TestOpenShapeAndGoSideUpdate(t *testing.T) {
	f := bind(t)
	s := widget.NewIntSlider(5, 0, 10, widget.T{"description": "n"})
	defer s.Close()
	open := f.of(s.ModelID())[0]
	if open.typ != "comm_open" || open.content["target_name"] != "jupyter.widget" || open.metadata["version"] != "2.1.0" {
		t.Fatalf("open = %+v", open)
	}
	st := open.content["data"].(map[string]any)["state"].(map[string]any)
	if st["_model_name"] != "IntSliderModel" || st["_model_module_version"] != "2.0.0" || st["value"] != 5.0 || st["description"] != "n" {
		t.Fatalf("state = %v", st)
	}
	var seen []int
	s.Observe("value", func(c widget.Change) { seen = append(seen, c.Int()) })
	s.SetValue(7)
	s.SetValue(7) // no change, no message, no observer
	msgs := f.of(s.ModelID())
	last := msgs[len(msgs)-1].content["data"].(map[string]any)
	if last["method"] != "update" || last["state"].(map[string]any)["value"] != 7.0 {
		t.Fatalf("update = %v", last)
	}
	if len(seen) != 1 || seen[0] != 7 || s.Value() != 7 {
		t.Fatalf("observer saw %v, value %d", seen, s.Value())
	}
	d := s.DisplayData().MIME[widget.ViewMIME].(map[string]any)
	if d["model_id"] != s.ModelID() || d["version_major"] != 2 {
		t.Fatalf("view = %v", d)
	}
}

func TestPageUpdateEchoObserveAndRequestState(t *testing.T) {
	bind(t)
	s := widget.NewFloatSlider(0.5, 0, 1)
	defer s.Close()
	var got float64
	s.Observe("value", func(c widget.Change) { got = c.Float() })
	reply := &front{}
	fromPage(t, s.ModelID(), map[string]any{"method": "update", "state": map[string]any{"value": 0.25}, "buffer_paths": []any{}}, nil, reply)
	echo := reply.of(s.ModelID())[0].content["data"].(map[string]any)
	if echo["method"] != "echo_update" || echo["state"].(map[string]any)["value"] != 0.25 {
		t.Fatalf("echo = %v", echo)
	}
	if got != 0.25 || s.Value() != 0.25 {
		t.Fatalf("observer got %v, value %v", got, s.Value())
	}
	reply = &front{}
	fromPage(t, s.ModelID(), map[string]any{"method": "request_state"}, nil, reply)
	full := reply.of(s.ModelID())[0].content["data"].(map[string]any)
	if full["method"] != "update" || full["state"].(map[string]any)["_model_name"] != "FloatSliderModel" {
		t.Fatalf("request_state answered %v", full)
	}
}

func TestBuffersBothWays(t *testing.T) {
	f := bind(t)
	w := widget.NewAnyWidget("export default {}", widget.T{"data": []byte{1, 2}})
	defer w.Close()
	open := f.of(w.ModelID())[0]
	paths := open.content["data"].(map[string]any)["buffer_paths"].([]any)
	if len(paths) != 1 || len(open.buffers) != 1 || string(open.buffers[0]) != "\x01\x02" {
		t.Fatalf("open paths %v buffers %v", paths, open.buffers)
	}
	fromPage(t, w.ModelID(), map[string]any{"method": "update", "state": map[string]any{}, "buffer_paths": [][]any{{"data"}}},
		[][]byte{{9, 8, 7}}, &front{})
	if b, _ := w.Get("data").([]byte); string(b) != "\x09\x08\x07" {
		t.Fatalf("data = %v", w.Get("data"))
	}
}

func TestLinkAndControlStates(t *testing.T) {
	bind(t)
	a, b := widget.NewIntSlider(1, 0, 10), widget.NewIntSlider(2, 0, 10)
	defer a.Close()
	defer b.Close()
	widget.Link(a, "value", b, "value")
	if b.Value() != 1 {
		t.Fatalf("link did not copy: %d", b.Value())
	}
	fromPage(t, a.ModelID(), map[string]any{"method": "update", "state": map[string]any{"value": 6}}, nil, &front{})
	if b.Value() != 6 {
		t.Fatalf("b = %d after a page update of a", b.Value())
	}
	b.SetValue(3)
	if a.Value() != 3 {
		t.Fatalf("a = %d after b.SetValue(3)", a.Value())
	}
	h := widget.Comms()
	if !h.CommOpen("ctl", widget.ControlTarget, nil, nil, &front{}) {
		t.Fatal("control comm refused")
	}
	reply := &front{}
	fromPage(t, "ctl", map[string]any{"method": "request_states"}, nil, reply)
	states := reply.of("ctl")[0].content["data"].(map[string]any)["states"].(map[string]any)
	if st := states[a.ModelID()].(map[string]any); st["model_name"] != "IntSliderModel" || st["state"].(map[string]any)["value"] != 3.0 {
		t.Fatalf("update_states for a: %v", st)
	}
	ns := widget.NotebookState()["state"].(map[string]any)
	if _, ok := ns[b.ModelID()]; !ok {
		t.Fatal("NotebookState lacks b")
	}
}

func TestInteractiveRerunsIntoOutput(t *testing.T) {
	bind(t)
	box, err := widget.Interactive(func(a, b int) int { return a * b }, 3, []int{0, 10})
	if err != nil {
		t.Fatal(err)
	}
	defer widget.CloseAll()
	kids, _ := box.Get("children").([]any)
	if len(kids) != 3 {
		t.Fatalf("children = %v", kids)
	}
	outputs := func() string {
		ref := kids[2].(string)
		b, _ := json.Marshal(widget.NotebookState()["state"].(map[string]any)[ref[len("IPY_MODEL_"):]].(map[string]any)["state"].(map[string]any)["outputs"])
		return string(b)
	}
	if o := outputs(); o != `[{"data":{"text/plain":"15"},"metadata":{},"output_type":"display_data"}]` {
		t.Fatalf("first run shows %s", o)
	}
	first := kids[0].(string)[len("IPY_MODEL_"):]
	if _, err := widget.Interactive(42); err == nil {
		t.Fatal("Interactive(42) did not fail")
	}
	fromPage(t, first, map[string]any{"method": "update", "state": map[string]any{"value": 7}}, nil, &front{})
	if o := outputs(); o != `[{"data":{"text/plain":"35"},"metadata":{},"output_type":"display_data"}]` {
		t.Fatalf("after the change it shows %s", o)
	}
}
