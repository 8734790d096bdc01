package display

import "reflect"

// embeddedDisplay finds the value a struct of the cells embeds that has a DisplayData method
// (a widget in `type Counter struct { *widget.AnyWidget; clicks int }`), or nil. Compiled Go
// promotes the embedded method and never gets here; the interpreter builds such a struct with
// the embedded value in a plain field named after its type (reflect.StructOf cannot promote
// methods of a field that is not the only one), so the method is looked for there.
func embeddedDisplay(v any) interface{ DisplayData() Data } {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct || rv.Type().Name() != "" {
		return nil // a named compiled type: Go would have promoted the method
	}
	for i := 0; i < rv.NumField(); i++ {
		f := rv.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Name() != f.Name {
			continue
		}
		fv := rv.Field(i)
		if fv.Kind() == reflect.Pointer && fv.IsNil() {
			continue
		}
		if x, ok := fv.Interface().(interface{ DisplayData() Data }); ok {
			return x
		}
	}
	return nil
}
