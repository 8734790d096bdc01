package widget

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/gpunotes/gpunotes/display"
)

// Protocol constants of the Jupyter widget protocol this package speaks.
const (
	// ProtocolVersion goes in every comm_open's metadata; front ends refuse widgets without it.
	ProtocolVersion = "2.1.0"
	// ViewMIME is the MIME type of a widget's display_data.
	ViewMIME = "application/vnd.jupyter.widget-view+json"
	// StateMIME is the key of the widget state saved in a notebook's metadata.
	StateMIME = "application/vnd.jupyter.widget-state+json"
	// Target is the comm target of widget models.
	Target = "jupyter.widget"
	// ControlTarget is the comm target front ends open to fetch every state at once.
	ControlTarget = "jupyter.widget.control"
)

const (
	controlsModule  = "@jupyter-widgets/controls"
	controlsVersion = "2.0.0"
	baseModule      = "@jupyter-widgets/base"
	baseVersion     = "2.0.0"
	outputModule    = "@jupyter-widgets/output"
	outputVersion   = "1.0.0"
	modelRef        = "IPY_MODEL_"
)

// T is a set of traits by name, given to constructors and SetMany (ipywidgets' keyword
// arguments): widget.NewIntSlider(5, 0, 10, widget.T{"description": "n"}).
type T map[string]any

// Widget is any widget of this package (every widget type embeds *Model).
type Widget interface {
	Widget() *Model
}

// Change is one trait change given to observers: Old and New are JSON values (numbers are
// float64, lists []any, binary []byte).
type Change struct {
	Name     string
	Old, New any
	Owner    *Model
}

// Int returns New as an int (0 if it is not a number).
func (c Change) Int() int { return toInt(c.New) }

// Float returns New as a float64 (0 if it is not a number).
func (c Change) Float() float64 { return toFloat(c.New) }

// Text returns New as a string.
func (c Change) Text() string { return toString(c.New) }

// Bool returns New as a bool.
func (c Change) Bool() bool { b, _ := c.New.(bool); return b }

type observer struct {
	name      string // "" observes every trait
	fn        func(Change)
	immediate bool // compiled code of this package (links): run at once, not queued
	out       *Output
}

type msgHandler struct {
	fn  func(content map[string]any, buffers [][]byte)
	out *Output
}

// Model is a widget's model: its traits and its comm. Every widget type embeds it, so these
// methods work on all of them.
type Model struct {
	mu        sync.Mutex
	id        string
	state     map[string]any
	observers []observer
	handlers  []msgHandler
	closed    bool
	opened    bool
	kind      string          // the model name, for text/plain
	refs      map[*Model]bool // widgets its traits were given: they live as long as it does
}

// registry holds every open model by id. A model is held weakly until it is shown (or the
// page sends it a message): a widget the cells no longer reach that no page can show is
// closed when the garbage collector frees it (gc.go).
var registry = struct {
	sync.Mutex
	m     map[string]*entry
	order []string
}{m: map[string]*entry{}}

// newModel makes a model of module/name with a view, its state from defaults and then
// traits (later wins), and opens its comm.
func newModel(module, version, name, viewModule, viewVersion, view string, defaults T, traits []T) *Model {
	st := map[string]any{
		"_model_module": module, "_model_module_version": version, "_model_name": name,
		"_view_module": nil, "_view_module_version": viewVersion, "_view_name": nil,
	}
	if view != "" {
		st["_view_module"], st["_view_name"] = viewModule, view
	}
	for k, v := range defaults {
		st[k] = normalize(v)
	}
	for _, t := range traits {
		for k, v := range t {
			st[k] = normalize(v)
		}
	}
	m := &Model{id: strings.ReplaceAll(uuid.NewString(), "-", ""), state: st, kind: strings.TrimSuffix(name, "Model")}
	m.keepRefs(defaults)
	for _, t := range traits {
		m.keepRefs(t)
	}
	register(m)
	m.open()
	return m
}

func controlModel(name string, defaults T, traits []T) *Model {
	d := T{"_dom_classes": []any{}, "layout": nil, "tabbable": nil, "tooltip": nil}
	for k, v := range defaults {
		d[k] = v
	}
	return newModel(controlsModule, controlsVersion, name+"Model", controlsModule, controlsVersion, name+"View", d, traits)
}

func (m *Model) open() {
	c := display.Comms()
	if c == nil {
		return
	}
	m.mu.Lock()
	st, paths, bufs := splitBuffers(m.state)
	m.opened = true
	m.mu.Unlock()
	markOpened(m.id)
	c.Comm("comm_open", map[string]any{"comm_id": m.id, "target_name": Target,
		"data": map[string]any{"state": st, "buffer_paths": paths}},
		map[string]any{"version": ProtocolVersion}, bufs)
}

func (m *Model) send(reply display.CommSink, data map[string]any, bufs [][]byte) {
	if reply == nil {
		reply = display.Comms()
	}
	if reply == nil {
		return
	}
	reply.Comm("comm_msg", map[string]any{"comm_id": m.id, "data": data}, map[string]any{"version": ProtocolVersion}, bufs)
}

// Widget returns m itself: it makes every widget type a Widget.
func (m *Model) Widget() *Model { return m }

// ModelID is the widget's model id (its comm id).
func (m *Model) ModelID() string { return m.id }

// MarshalJSON encodes the widget as a reference to its model, as traits that hold widgets do.
func (m *Model) MarshalJSON() ([]byte, error) { return json.Marshal(modelRef + m.id) }

// DisplayData is the widget's view: display it with display.Show or as a cell's last value.
func (m *Model) DisplayData() display.Data {
	pin(m)
	return display.Data{MIME: map[string]any{
		ViewMIME:     map[string]any{"model_id": m.id, "version_major": 2, "version_minor": 0},
		"text/plain": m.String(),
	}}
}

// String describes the widget with its main traits.
func (m *Model) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, k := range []string{"value", "min", "max", "description"} {
		if v, ok := m.state[k]; ok && v != nil && v != "" {
			b, _ := json.Marshal(v)
			parts = append(parts, k+"="+string(b))
		}
	}
	return m.kind + "(" + strings.Join(parts, ", ") + ")"
}

// Get returns a trait's value as JSON sees it (numbers float64, lists []any).
func (m *Model) Get(name string) any {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state[name]
}

// GetInt, GetFloat, GetString and GetBool read a trait as that type.
func (m *Model) GetInt(name string) int { return toInt(m.Get(name)) }

// GetFloat reads a trait as a float64.
func (m *Model) GetFloat(name string) float64 { return toFloat(m.Get(name)) }

// GetString reads a trait as a string.
func (m *Model) GetString(name string) string { return toString(m.Get(name)) }

// GetBool reads a trait as a bool.
func (m *Model) GetBool(name string) bool { b, _ := m.Get(name).(bool); return b }

// Set sets a trait, sends it to the front end, and runs the trait's observers.
func (m *Model) Set(name string, v any) { m.SetMany(T{name: v}) }

// SetMany sets several traits in one update.
func (m *Model) SetMany(t T) {
	m.keepRefs(t)
	changes := m.apply(t, true)
	if len(changes) == 0 {
		return
	}
	st := map[string]any{}
	for _, c := range changes {
		st[c.Name] = c.New
	}
	clean, paths, bufs := splitBuffers(st)
	m.send(nil, map[string]any{"method": "update", "state": clean, "buffer_paths": paths}, bufs)
	for _, o := range m.observersOf(changes) {
		o.obs.fn(o.change)
	}
}

// apply stores traits and returns the ones that changed.
func (m *Model) apply(t T, norm bool) []Change {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var changes []Change
	for _, k := range keys {
		v := t[k]
		if norm {
			v = normalize(v)
		}
		old, had := m.state[k]
		if had && reflect.DeepEqual(old, v) {
			continue
		}
		m.state[k] = v
		changes = append(changes, Change{Name: k, Old: old, New: v, Owner: m})
	}
	return changes
}

type pending struct {
	obs    observer
	change Change
}

func (m *Model) observersOf(changes []Change) []pending {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []pending
	for _, c := range changes {
		for _, o := range m.observers {
			if o.name == "" || o.name == c.Name {
				out = append(out, pending{o, c})
			}
		}
	}
	return out
}

// Observe runs fn whenever the trait name changes, in the page or in Go ("" observes every
// trait). From the page, fn runs as the cells do (after a running cell, interruptible), and its
// output goes to the cell that called Observe.
func (m *Model) Observe(name string, fn func(Change)) {
	out := cellOutput()
	m.mu.Lock()
	m.observers = append(m.observers, observer{name: name, fn: fn, out: out})
	m.mu.Unlock()
}

// Unobserve removes every observer of the trait name.
func (m *Model) Unobserve(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	kept := m.observers[:0]
	for _, o := range m.observers {
		if o.name != name || o.immediate {
			kept = append(kept, o)
		}
	}
	m.observers = kept
}

func (m *Model) observeNow(name string, fn func(Change)) {
	m.mu.Lock()
	m.observers = append(m.observers, observer{name: name, fn: fn, immediate: true})
	m.mu.Unlock()
}

// OnMsg runs fn for each custom message the front end sends (a custom widget's model.send).
func (m *Model) OnMsg(fn func(content map[string]any, buffers [][]byte)) {
	out := cellOutput()
	m.mu.Lock()
	m.handlers = append(m.handlers, msgHandler{fn: fn, out: out})
	m.mu.Unlock()
}

// Send sends a custom message to the widget's front-end model (anywidget's "msg:custom").
func (m *Model) Send(content any, buffers ...[]byte) {
	m.send(nil, map[string]any{"method": "custom", "content": normalize(content)}, buffers)
}

// Close closes the widget's comm: its views disappear and it leaves the registry.
func (m *Model) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	opened := m.opened
	m.mu.Unlock()
	unregister(m.id)
	if c := display.Comms(); c != nil && opened {
		c.Comm("comm_close", map[string]any{"comm_id": m.id, "data": map[string]any{}}, nil, nil)
	}
}

// CloseAll closes every open widget.
func CloseAll() {
	for _, m := range liveModels() {
		m.Close()
	}
}

// fullState is the model's state for request_state and saved notebooks.
func (m *Model) fullState() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := make(map[string]any, len(m.state))
	for k, v := range m.state {
		st[k] = v
	}
	return st
}

func lookup(id string) *Model {
	registry.Lock()
	defer registry.Unlock()
	if e := registry.m[id]; e != nil {
		return e.model()
	}
	return nil
}

// normalize turns a Go value into the JSON value the front end will see (so comparisons and
// observers see one form): widgets become model references, []byte stays binary.
func normalize(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case []byte:
		return bytes.Clone(x)
	case Widget:
		if x.Widget() == nil {
			return nil
		}
		return modelRef + x.Widget().id
	case string, bool, float64:
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	case T:
		return normalize(map[string]any(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return []any{}
		}
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = normalize(rv.Index(i).Interface())
		}
		return out
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint())
	case reflect.Float32:
		return rv.Float()
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// splitBuffers takes the binary values out of a state, as the protocol sends them: the state
// without them, their paths, and the buffers.
func splitBuffers(st map[string]any) (map[string]any, [][]any, [][]byte) {
	paths := [][]any{}
	var bufs [][]byte
	var walk func(v any, path []any) any
	walk = func(v any, path []any) any {
		switch x := v.(type) {
		case []byte:
			paths = append(paths, append([]any(nil), path...))
			bufs = append(bufs, x)
			return nil
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				w := walk(e, append(path, k))
				if _, bin := e.([]byte); bin {
					continue // binary keys are left out of the state, as ipywidgets does
				}
				out[k] = w
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e, append(path, i))
			}
			return out
		}
		return v
	}
	clean := walk(st, nil).(map[string]any)
	return clean, paths, bufs
}

// putBuffers puts the buffers of a message back into its state at their paths.
func putBuffers(st map[string]any, paths [][]any, bufs [][]byte) {
	for i, p := range paths {
		if i >= len(bufs) || len(p) == 0 {
			break
		}
		var cur any = st
		for j, k := range p {
			last := j == len(p)-1
			switch c := cur.(type) {
			case map[string]any:
				key := fmt.Sprint(k)
				if last {
					c[key] = bufs[i]
				} else {
					cur = c[key]
				}
			case []any:
				n := toInt(k)
				if n < 0 || n >= len(c) {
					break
				}
				if last {
					c[n] = bufs[i]
				} else {
					cur = c[n]
				}
			}
		}
	}
}

func toInt(v any) int {
	switch x := v.(type) {
	case float64:
		if x < 0 {
			return int(x - 0.5)
		}
		return int(x + 0.5)
	case int:
		return x
	case json.Number:
		n, _ := x.Int64()
		return int(n)
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int:
		return float64(x)
	}
	return 0
}

func toString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}
