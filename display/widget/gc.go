package widget

import (
	"reflect"
	"runtime"
	"weak"

	"github.com/gpunotes/gpunotes/display"
)

// entry is a model in the registry: held weakly until pinned.
//
// ipywidgets keeps every widget in Widget._instances until close() (its __del__ never runs
// while that holds it), so a Python kernel closes nothing by itself. Go cells make widgets in
// loops and helper functions as freely as any value, so here a widget that nothing reaches
// any more and that no page can be showing (never displayed, not in another widget's traits,
// never sent a message by a page) is closed when collected: its comm_close tells the front
// end to drop the model. A widget that was displayed stays until Close, CloseAll or the
// kernel's restart, as in ipywidgets: its view may be on the page.
type entry struct {
	weak   weak.Pointer[Model]
	strong *Model // set once pinned
	opened bool   // its comm_open went out
}

func (e *entry) model() *Model {
	if e.strong != nil {
		return e.strong
	}
	return e.weak.Value()
}

func register(m *Model) {
	registry.Lock()
	registry.m[m.id] = &entry{weak: weak.Make(m)}
	registry.order = append(registry.order, m.id)
	registry.Unlock()
	runtime.AddCleanup(m, collected, m.id)
}

// pin makes the registry hold m until it is closed.
func pin(m *Model) {
	registry.Lock()
	if e := registry.m[m.id]; e != nil {
		e.strong = m
	}
	registry.Unlock()
}

func markOpened(id string) {
	registry.Lock()
	if e := registry.m[id]; e != nil {
		e.opened = true
	}
	registry.Unlock()
}

// unregister removes id from the registry and reports whether its comm had been opened.
func unregister(id string) (opened bool) {
	registry.Lock()
	defer registry.Unlock()
	e := registry.m[id]
	if e == nil {
		return false
	}
	delete(registry.m, id)
	for i, o := range registry.order {
		if o == id {
			registry.order = append(registry.order[:i], registry.order[i+1:]...)
			break
		}
	}
	return e.opened
}

// collected closes the comm of a model the garbage collector freed (runtime.AddCleanup; a
// pinned or closed model never gets here with an entry).
func collected(id string) {
	if !unregister(id) {
		return
	}
	if c := display.Comms(); c != nil {
		c.Comm("comm_close", map[string]any{"comm_id": id, "data": map[string]any{}}, nil, nil)
	}
}

// liveModels is every open model still reachable, in creation order.
func liveModels() []*Model {
	registry.Lock()
	defer registry.Unlock()
	ms := make([]*Model, 0, len(registry.order))
	for _, id := range registry.order {
		if m := registry.m[id].model(); m != nil {
			ms = append(ms, m)
		}
	}
	return ms
}

// keepRefs makes m hold the widgets found in traits t (a box's children, a layout, a link's
// ends), which the state names by id only, so that they live as long as m.
func (m *Model) keepRefs(t T) {
	var found []*Model
	for _, v := range t {
		refsOf(v, func(r *Model) { found = append(found, r) })
	}
	if len(found) == 0 {
		return
	}
	m.mu.Lock()
	if m.refs == nil {
		m.refs = map[*Model]bool{}
	}
	for _, r := range found {
		m.refs[r] = true
	}
	m.mu.Unlock()
}

func refsOf(v any, add func(*Model)) {
	switch x := v.(type) {
	case nil, string, bool, float64, int, []byte:
		return
	case Widget:
		rv := reflect.ValueOf(x)
		if rv.Kind() == reflect.Pointer && rv.IsNil() {
			return
		}
		if m := x.Widget(); m != nil {
			add(m)
		}
		return
	case T:
		for _, e := range x {
			refsOf(e, add)
		}
		return
	case map[string]any:
		for _, e := range x {
			refsOf(e, add)
		}
		return
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice || rv.Kind() == reflect.Array {
		for i := 0; i < rv.Len(); i++ {
			refsOf(rv.Index(i).Interface(), add)
		}
	}
}
