package cluster

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
)

var (
	typesMu       sync.RWMutex
	typesResolver func(name string) ([]reflect.Type, error)
)

// SetResultTypeResolver installs how Submit and Map learn the result types of a function
// named by a string: the kernel installs its session's ResultTypes. A worker sends back
// values of types it cannot name on the wire (a struct declared in a cell) as JSON; the client
// rebuilds them in these types, so Result returns a Point where the func returns a Point.
func SetResultTypeResolver(f func(name string) ([]reflect.Type, error)) {
	typesMu.Lock()
	defer typesMu.Unlock()
	typesResolver = f
}

// resultTypes returns the result types of the function fn names (nil when unknown: a Source,
// or no resolver).
func resultTypes(fn any) []reflect.Type {
	name, ok := fn.(string)
	if !ok {
		return nil
	}
	typesMu.RLock()
	r := typesResolver
	typesMu.RUnlock()
	if r == nil {
		return nil
	}
	ts, err := r(name)
	if err != nil {
		return nil
	}
	return ts
}

// typedResult rebuilds v, decoded from b, in the function's result types: one value for one
// result, a []any for several (as the worker sends them).
func typedResult(b *blob, v any, types []reflect.Type) (any, error) {
	switch len(types) {
	case 0:
		return v, nil
	case 1:
		var raw []byte
		if b != nil && b.Enc == encJSON {
			raw = b.Data
		}
		return convertTo(v, raw, types[0])
	}
	vs, ok := v.([]any)
	if !ok || len(vs) != len(types) {
		return v, nil
	}
	var raws []json.RawMessage
	if b != nil && b.Enc == encJSON {
		if err := json.Unmarshal(b.Data, &raws); err != nil || len(raws) != len(vs) {
			raws = nil
		}
	}
	out := make([]any, len(vs))
	for i := range vs {
		var raw []byte
		if raws != nil {
			raw = raws[i]
		}
		var err error
		if out[i], err = convertTo(vs[i], raw, types[i]); err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
	}
	return out, nil
}

// convertTo returns v as a value of type t: as it is when it already is one (or t is an
// interface), else decoded from its JSON (raw, or v re-encoded).
func convertTo(v any, raw []byte, t reflect.Type) (any, error) {
	if t.Kind() == reflect.Interface {
		return v, nil
	}
	if v == nil {
		return reflect.Zero(t).Interface(), nil
	}
	if vt := reflect.TypeOf(v); vt == t || vt.AssignableTo(t) {
		return v, nil
	}
	if raw == nil {
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("rebuild a %T as %v: %w", v, t, err)
		}
	}
	p := reflect.New(t)
	if err := json.Unmarshal(raw, p.Interface()); err != nil {
		return nil, fmt.Errorf("rebuild the result as %v: %w", t, err)
	}
	return p.Elem().Interface(), nil
}
