package widget

import (
	"fmt"
	"reflect"
	"time"

	"github.com/gpunotes/gpunotes/display"
)

// Fixed passes v to Interact's function as is, with no control.
func Fixed(v any) any { return fixed{v} }

type fixed struct{ v any }

type named struct {
	name   string
	abbrev any
}

// Named labels a control of Interact (its description) and gives its abbreviation (see
// Interact); the function's parameter names are not visible to compiled code.
func Named(name string, abbrev any) any { return named{name, abbrev} }

// Interact is Interactive that shows an error, instead of returning it, as a red label.
func Interact(fn any, args ...any) *Box {
	b, err := Interactive(fn, args...)
	if err != nil {
		return NewVBox(NewHTML(`<span style="color:#c00">` + err.Error() + `</span>`))
	}
	return b
}

// Interactive is ipywidgets' interactive: a control for each of fn's parameters, made from
// args in order, and an Output that shows fn's output, replaced on each change. An argument is
//   - a widget with a "value" trait (used as is);
//   - an int or float64 default v: a slider over [-v, 3v] ([v, v+1] for 0);
//   - []int{min, max[, step]} or []float64{...}: a slider from min to max at the midpoint;
//   - []string: a drop-down of those options; a bool: a checkbox; a string: a text box;
//   - Fixed(v): v itself, no control; Named(label, abbrev): abbrev with a label;
//   - nil, or nothing: a control from the parameter's type (int: a slider 0-100, float64:
//     0-1, bool, string, time.Time: a date picker).
//
// fn runs once at once, then after each change of a control; a value it returns (other than
// a nil error) is shown below its output; an error it returns is shown as stderr.
func Interactive(fn any, args ...any) (*Box, error) {
	fv := reflect.ValueOf(fn)
	if fv.Kind() != reflect.Func {
		return nil, fmt.Errorf("widget.Interactive: %T is not a function", fn)
	}
	ft := fv.Type()
	if len(args) > ft.NumIn() {
		return nil, fmt.Errorf("widget.Interactive: %d controls for a function of %d parameters", len(args), ft.NumIn())
	}
	type param struct {
		w     *Model
		trait string
		fixed any
		sel   *Selection
	}
	params := make([]param, ft.NumIn())
	var controls []Widget
	for i := range params {
		var a any
		if i < len(args) {
			a = args[i]
		}
		label := fmt.Sprintf("arg%d", i+1)
		if n, ok := a.(named); ok {
			label, a = n.name, n.abbrev
		}
		if f, ok := a.(fixed); ok {
			params[i].fixed = f.v
			continue
		}
		w, err := control(a, ft.In(i))
		if err != nil {
			return nil, fmt.Errorf("widget.Interactive: parameter %d: %w", i+1, err)
		}
		m := w.Widget()
		if s, ok := w.(*Selection); ok {
			params[i].sel, params[i].trait = s, "index"
		} else {
			params[i].trait = "value"
		}
		if d, _ := m.Get("description").(string); d == "" {
			m.Set("description", label)
		}
		params[i].w = m
		controls = append(controls, w)
	}
	out := NewOutput()
	call := func() {
		in := make([]reflect.Value, len(params))
		for i, p := range params {
			t := ft.In(i)
			var v any
			switch {
			case p.w == nil:
				v = p.fixed
			case p.sel != nil:
				if t.Kind() == reflect.Int {
					v = p.sel.Index()
				} else {
					v = p.sel.Value()
				}
			case t == reflect.TypeOf(time.Time{}):
				v = (&DatePicker{p.w}).Value()
			default:
				v = p.w.Get("value")
			}
			in[i] = convert(v, t)
		}
		outs := fv.Call(in)
		for _, o := range outs {
			if e, ok := o.Interface().(error); ok || (o.Kind() == reflect.Interface && o.IsNil() && o.Type().Implements(reflect.TypeOf((*error)(nil)).Elem())) {
				if e != nil {
					out.Stream("stderr", e.Error()+"\n")
				}
				continue
			}
			d, _ := display.Bundle(o.Interface())
			out.Display(d, false)
		}
	}
	rerun := func(Change) {
		out.Clear(true)
		out.Capture(call)
	}
	for _, p := range params {
		if p.w != nil {
			p.w.mu.Lock()
			p.w.observers = append(p.w.observers, observer{name: p.trait, fn: rerun, out: out})
			p.w.mu.Unlock()
		}
	}
	out.Capture(call)
	return NewVBox(append(controls, out)...), nil
}

// control makes the control an Interactive argument abbreviates for a parameter of type t.
func control(a any, t reflect.Type) (Widget, error) {
	switch x := a.(type) {
	case Widget:
		return x, nil
	case nil:
		switch {
		case t == reflect.TypeOf(time.Time{}):
			return NewDatePicker(time.Now()), nil
		case t.Kind() == reflect.Bool:
			return NewCheckbox(false, ""), nil
		case t.Kind() == reflect.String:
			return NewText(""), nil
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
			return NewIntSlider(0, 0, 100), nil
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			return NewFloatSlider(0, 0, 1), nil
		}
		return nil, fmt.Errorf("no control for a %s without an abbreviation", t)
	case bool:
		return NewCheckbox(x, ""), nil
	case string:
		return NewText(x), nil
	case int:
		lo, hi := rangeOf(float64(x))
		return NewIntSlider(x, int(lo), int(hi)), nil
	case float64:
		lo, hi := rangeOf(x)
		return NewFloatSlider(x, lo, hi), nil
	case []int:
		if len(x) < 2 || len(x) > 3 || x[0] > x[1] {
			return nil, fmt.Errorf("want []int{min, max} or {min, max, step}, got %v", x)
		}
		s := NewIntSlider(x[0]+(x[1]-x[0])/2, x[0], x[1])
		if len(x) == 3 {
			s.Set("step", x[2])
		}
		return s, nil
	case []float64:
		if len(x) < 2 || len(x) > 3 || x[0] > x[1] {
			return nil, fmt.Errorf("want []float64{min, max} or {min, max, step}, got %v", x)
		}
		s := NewFloatSlider((x[0]+x[1])/2, x[0], x[1])
		if len(x) == 3 {
			s.Set("step", x[2])
		}
		return s, nil
	case []string:
		if len(x) == 0 {
			return nil, fmt.Errorf("no options")
		}
		return NewDropdown(x, 0), nil
	}
	return nil, fmt.Errorf("no control for a %T", a)
}

// rangeOf is ipywidgets' range for a bare default v.
func rangeOf(v float64) (lo, hi float64) {
	switch {
	case v > 0:
		return -v, 3 * v
	case v < 0:
		return 3 * v, -v
	}
	return v, v + 1
}

// convert turns a JSON trait value into a parameter of type t.
func convert(v any, t reflect.Type) reflect.Value {
	if v == nil {
		return reflect.Zero(t)
	}
	rv := reflect.ValueOf(v)
	if f, ok := v.(float64); ok && t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64 {
		rv = reflect.ValueOf(toInt(f))
	}
	if rv.Type().ConvertibleTo(t) {
		return rv.Convert(t)
	}
	if t.Kind() == reflect.Interface && rv.Type().Implements(t) {
		return rv
	}
	return reflect.Zero(t)
}
