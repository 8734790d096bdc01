package widget_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/display/widget"
)

// wire is a front end that publishes as the kernel does: each message's content must encode
// as JSON, or the kernel could not send it.
type wire struct {
	mu  sync.Mutex
	bad error
}

func (w *wire) Display(d display.Data, update bool) {}
func (w *wire) Clear(bool)                          {}
func (w *wire) Comm(typ string, content, metadata map[string]any, buffers [][]byte) {
	_, err := json.Marshal(content)
	if err == nil {
		_, err = json.Marshal(metadata)
	}
	w.mu.Lock()
	if err != nil && w.bad == nil {
		w.bad = err
	}
	w.mu.Unlock()
}

func (w *wire) check(t *testing.T, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.bad != nil {
		t.Fatalf("%s: a message the kernel cannot encode: %v", what, w.bad)
	}
}

// FuzzCommMsg: any comm_msg data and buffers from the page, to any widget kind (with Go
// observers, click and custom message handlers, links and an interactive function), to the
// control comm or to an unknown comm, gives a reply or nothing, and callbacks that run, never
// a panic; every message back encodes as JSON, and the full state still does after it.
func FuzzCommMsg(f *testing.F) {
	w := &wire{}
	f.Cleanup(display.Bind(context.Background(), w))
	slider := widget.NewIntSlider(5, 0, 10, widget.T{"description": "n"})
	slider.Observe("value", func(c widget.Change) { _ = slider.Value() + c.Int() })
	other := widget.NewIntSlider(1, 0, 10)
	widget.Link(slider, "value", other, "value")
	rng := widget.NewFloatRangeSlider(1, 2, 0, 10)
	rng.Observe("", func(c widget.Change) { _ = rng.Get("value") })
	drop := widget.NewDropdown([]string{"a", "b", "c"}, 1)
	multi := widget.NewSelectMultiple([]string{"a", "b", "c"}, []int{0, 2})
	text := widget.NewText("hi")
	date := widget.NewDatePicker(time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	color := widget.NewColorPicker("#ff0000")
	clicks := 0
	button := widget.NewButton("go")
	button.OnClick(func() { clicks++ })
	aw := widget.NewAnyWidget("export default { render() {} }", widget.T{"count": 0})
	aw.OnMsg(func(content map[string]any, buffers [][]byte) { _ = len(buffers) + len(content) })
	box, err := widget.Interactive(func(a int, b float64, s string, ok bool) float64 { return float64(a) * b }, 3, 0.5, "x", true)
	if err != nil {
		f.Fatal(err)
	}
	out := widget.NewOutput()
	f.Cleanup(widget.CloseAll)
	ids := []string{slider.ModelID(), other.ModelID(), rng.ModelID(), drop.ModelID(), multi.ModelID(),
		text.ModelID(), date.ModelID(), color.ModelID(), button.ModelID(), aw.ModelID(), box.ModelID(), out.ModelID()}
	for _, kid := range box.Get("children").([]any) {
		if ref, ok := kid.(string); ok && len(ref) > len("IPY_MODEL_") {
			ids = append(ids, ref[len("IPY_MODEL_"):])
		}
	}
	const ctl = "fuzz-control"
	if !widget.Comms().CommOpen(ctl, widget.ControlTarget, nil, nil, w) {
		f.Fatal("the control comm was refused")
	}
	ids = append(ids, ctl, "no-such-comm")

	add := func(target int, data map[string]any, bufs ...[]byte) {
		b, err := json.Marshal(data)
		if err != nil {
			f.Fatal(err)
		}
		var joined []byte
		var cuts []byte
		for _, x := range bufs {
			joined = append(joined, x...)
			cuts = append(cuts, byte(len(x)))
		}
		f.Add(uint8(target), b, joined, cuts)
	}
	for i := range ids {
		add(i, map[string]any{"method": "request_state"})
		add(i, map[string]any{"method": "update", "state": map[string]any{"value": 7}, "buffer_paths": []any{}})
	}
	add(2, map[string]any{"method": "update", "state": map[string]any{"value": []any{3.5, 1}}})
	add(3, map[string]any{"method": "update", "state": map[string]any{"index": 2}})
	add(4, map[string]any{"method": "update", "state": map[string]any{"index": []any{1, 5, -1}}})
	add(5, map[string]any{"method": "update", "state": map[string]any{"value": map[string]any{"nested": []any{nil, "x"}}}})
	add(6, map[string]any{"method": "update", "state": map[string]any{"value": map[string]any{"year": 2026, "month": 13, "date": 40}}})
	add(8, map[string]any{"method": "custom", "content": map[string]any{"event": "click"}})
	add(9, map[string]any{"method": "custom", "content": map[string]any{"x": 1}}, []byte("abc"), []byte{0, 1})
	add(9, map[string]any{"method": "update", "state": map[string]any{"data": nil, "deep": map[string]any{"a": []any{0}}},
		"buffer_paths": []any{[]any{"data"}, []any{"deep", "a", 0}, []any{"deep", "zz", "q"}, []any{}}}, []byte("xy"), []byte("z"), []byte("w"))
	add(len(ids)-2, map[string]any{"method": "request_states"})
	add(12, map[string]any{"method": "update", "state": map[string]any{"value": "not a number"}})
	f.Add(uint8(0), []byte(`{"method":"update","state":null}`), []byte(nil), []byte(nil))
	f.Add(uint8(0), []byte(`{"method":"update","state":{"value":1e400}}`), []byte(nil), []byte(nil))
	f.Add(uint8(0), []byte(`[1,2`), []byte(nil), []byte(nil))

	f.Fuzz(func(t *testing.T, target uint8, data, joined, cuts []byte) {
		id := ids[int(target)%len(ids)]
		// The buffers: joined cut at the lengths in cuts (what is left is the last one).
		var bufs [][]byte
		for _, c := range cuts {
			n := min(int(c), len(joined))
			bufs = append(bufs, joined[:n])
			joined = joined[n:]
		}
		run, _, _ := widget.Comms().CommMsg(id, data, bufs, w)
		if run != nil {
			run()
		}
		w.check(t, "the reply")
		// The whole state, as a page that loads now asks for it.
		run, _, known := widget.Comms().CommMsg(ctl, []byte(`{"method":"request_states"}`), nil, w)
		if !known || run != nil {
			t.Fatalf("request_states: known %v, callbacks %v", known, run != nil)
		}
		w.check(t, "request_states after it")
		if _, err := json.Marshal(widget.NotebookState()); err != nil {
			t.Fatalf("the notebook's widget state no longer encodes: %v", err)
		}
	})
}
