package widget

import (
	"encoding/json"
	"sync"

	"github.com/gpunotes/gpunotes/display"
)

// Handler serves the widget comms for the kernel: its methods are the kernel's CommHandler.
type Handler struct {
	mu      sync.Mutex
	control map[string]bool // open jupyter.widget.control comms
}

var handler = &Handler{control: map[string]bool{}}

// Comms returns the handler the kernel gives the comm messages of widgets to.
func Comms() *Handler { return handler }

// CommOpen accepts the front end's jupyter.widget.control comm (answered with update_states);
// widget models are opened by the kernel only, so any other target is refused.
func (h *Handler) CommOpen(id, target string, data json.RawMessage, buffers [][]byte, reply display.CommSink) bool {
	if target != ControlTarget {
		return false
	}
	h.mu.Lock()
	h.control[id] = true
	h.mu.Unlock()
	return true
}

// CommClose forgets a comm the front end closed.
func (h *Handler) CommClose(id string, data json.RawMessage) {
	h.mu.Lock()
	delete(h.control, id)
	h.mu.Unlock()
	if m := lookup(id); m != nil {
		m.mu.Lock()
		m.opened = false
		m.mu.Unlock()
		m.Close()
	}
}

type commData struct {
	Method      string         `json:"method"`
	State       map[string]any `json:"state"`
	BufferPaths [][]any        `json:"buffer_paths"`
	Content     map[string]any `json:"content"`
}

// CommMsg applies a front-end message to its widget: update (echoed back, then observers),
// request_state (the full state at once), custom (OnMsg handlers, Button clicks), and the
// control comm's request_states. run is the Go code of the cells it triggered, out where its
// output goes.
func (h *Handler) CommMsg(id string, data json.RawMessage, buffers [][]byte, reply display.CommSink) (run func(), out display.Sink, known bool) {
	var d commData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, nil, false
	}
	h.mu.Lock()
	ctl := h.control[id]
	h.mu.Unlock()
	if ctl {
		if d.Method == "request_states" {
			st, paths, bufs := splitBuffers(allStates())
			reply.Comm("comm_msg", map[string]any{"comm_id": id, "data": map[string]any{
				"method": "update_states", "states": st, "buffer_paths": paths}}, map[string]any{"version": ProtocolVersion}, bufs)
		}
		return nil, nil, true
	}
	m := lookup(id)
	if m == nil {
		return nil, nil, false
	}
	pin(m) // a page holds it: it may have shown it (after a reload, say)
	switch d.Method {
	case "update":
		if d.State == nil {
			return nil, nil, true
		}
		// Echo first, as ipywidgets 8 does, so every front end converges on the kernel's view.
		m.send(reply, map[string]any{"method": "echo_update", "state": d.State, "buffer_paths": nonNil(d.BufferPaths)}, buffers)
		putBuffers(d.State, d.BufferPaths, buffers)
		changes := m.apply(d.State, false)
		var later []pending
		for _, p := range m.observersOf(changes) {
			if p.obs.immediate {
				p.obs.fn(p.change)
				continue
			}
			later = append(later, p)
		}
		if len(later) == 0 {
			return nil, nil, true
		}
		var to *Output
		for _, p := range later {
			if p.obs.out != nil {
				to = p.obs.out
				break
			}
		}
		return func() {
			for _, p := range later {
				p.obs.fn(p.change)
			}
		}, sinkOf(to), true
	case "request_state":
		st, paths, bufs := splitBuffers(m.fullState())
		m.send(reply, map[string]any{"method": "update", "state": st, "buffer_paths": paths}, bufs)
		return nil, nil, true
	case "custom":
		m.mu.Lock()
		hs := append([]msgHandler(nil), m.handlers...)
		m.mu.Unlock()
		if len(hs) == 0 {
			return nil, nil, true
		}
		content := d.Content
		return func() {
			for _, h := range hs {
				h.fn(content, buffers)
			}
		}, sinkOf(hs[0].out), true
	}
	return nil, nil, true
}

// sinkOf keeps a nil *Output a nil interface.
func sinkOf(o *Output) display.Sink {
	if o == nil {
		return nil
	}
	return o
}

func nonNil(p [][]any) [][]any {
	if p == nil {
		return [][]any{}
	}
	return p
}

// allStates is every live model's state keyed by model id, in the form of update_states and
// of a notebook's saved widget state.
func allStates() map[string]any {
	ms := liveModels()
	out := make(map[string]any, len(ms))
	for _, m := range ms {
		st := m.fullState()
		out[m.id] = map[string]any{"model_name": st["_model_name"], "model_module": st["_model_module"],
			"model_module_version": st["_model_module_version"], "state": st}
	}
	return out
}

var cellOuts struct {
	sync.Mutex
	binding uint64
	out     *Output
}

// cellOutput is the Output of the running cell where callbacks it registers write: made and
// shown on the cell's first registration. Outside a cell it is nil.
func cellOutput() *Output {
	id := display.BindingID()
	if id == 0 {
		return nil
	}
	cellOuts.Lock()
	defer cellOuts.Unlock()
	if cellOuts.binding == id {
		return cellOuts.out
	}
	o := NewOutput()
	display.Show(o)
	cellOuts.binding, cellOuts.out = id, o
	return o
}
