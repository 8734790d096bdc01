package interp

import (
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/traefik/yaegi/interp"
)

// goCall runs f(args...) in a goroutine started by a cell (`go f(args...)` is rewritten into
// it): the arguments were evaluated at the go statement, as Go does, and a panic becomes a
// cell error instead of killing the kernel.
func (s *Session) goCall(f any, args ...any) { s.goStart(f, args, false) }

// goSpread is goCall for `go f(a, xs...)`: its last argument is the variadic slice.
func (s *Session) goSpread(f any, args ...any) { s.goStart(f, args, true) }

func (s *Session) goStart(f any, args []any, spread bool) {
	fv := reflect.ValueOf(f)
	if fv.Kind() != reflect.Func {
		panic(fmt.Sprintf("go statement: %T is not a function", f))
	}
	in, err := callArgs(fv.Type(), args, spread)
	if err != nil {
		panic("go statement: " + err.Error())
	}
	o := s.admit() // goguard.go
	go func() {
		id := selfGoID()
		setOrigin(id, o) // goorigin.go
		defer delOrigin(id)
		defer liveGoroutines.Add(-1)
		defer s.recoverGo()
		if spread {
			fv.CallSlice(in)
		} else {
			fv.Call(in)
		}
	}()
}

func (s *Session) recoverGo() { s.goPanic(recover()) }

// goPanic reports r, a goroutine's recovered panic (nil: none), to the running cell.
func (s *Session) goPanic(r any) {
	if r != nil {
		e := &CellError{Name: "panic", Value: fmt.Sprintf("in goroutine: %v", r),
			Traceback: []string{fmt.Sprintf("panic in a goroutine started by the cell: %v", r)}}
		select {
		case s.goPanics <- e:
		default:
		}
		fmt.Fprintf(os.Stderr, "panic in goroutine: %v\n", r)
	}
}

// callArgs converts a go statement's arguments to f's parameter types: untyped constants
// arrive with their default types (1 as int for an int64 parameter, nil as a nil any).
func callArgs(t reflect.Type, args []any, spread bool) ([]reflect.Value, error) {
	n := t.NumIn()
	if (!t.IsVariadic() || spread) && len(args) != n || t.IsVariadic() && !spread && len(args) < n-1 {
		return nil, fmt.Errorf("%d arguments for a function of %d parameters", len(args), n)
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		pt := paramType(t, i)
		if spread && i == n-1 {
			pt = t.In(n - 1)
		}
		if a == nil {
			in[i] = reflect.Zero(pt)
			continue
		}
		v := reflect.ValueOf(a)
		switch {
		case v.Type().AssignableTo(pt):
		case v.Type().ConvertibleTo(pt):
			v = v.Convert(pt)
		default:
			return nil, fmt.Errorf("argument %d: cannot use %s as %s", i+1, v.Type(), pt)
		}
		in[i] = v
	}
	return in, nil
}

// clearValue is Go 1.21's clear builtin, which yaegi lacks: it empties a map and zeroes a
// slice's elements.
func clearValue(x any) {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Map, reflect.Slice:
		v.Clear()
	case reflect.Invalid:
	default:
		panic(fmt.Sprintf("invalid argument: clear(%T): argument must be a map or a slice", x))
	}
}

// hasKey is the ok of `v, ok := m[k]`, which yaegi cannot define at a cell's top level.
func hasKey(m, k any) bool {
	mv := reflect.ValueOf(m)
	if mv.Kind() != reflect.Map || mv.IsNil() {
		return false
	}
	kv := reflect.ValueOf(k)
	if !kv.IsValid() {
		kv = reflect.Zero(mv.Type().Key())
	} else if kv.Type() != mv.Type().Key() && kv.Type().ConvertibleTo(mv.Type().Key()) {
		kv = kv.Convert(mv.Type().Key())
	}
	return mv.MapIndex(kv).IsValid()
}

// compilePanic reports whether a panic escaped yaegi while it compiled a cell (its type
// checker crashing on something it does not support), rather than while the cell ran.
func compilePanic(p interp.Panic) bool {
	st := string(p.Stack)
	return strings.Contains(st, "interp.(*Interpreter).CompileAST") || strings.Contains(st, "interp.(*Interpreter).compileSrc")
}
