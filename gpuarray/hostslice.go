package gpuarray

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// FromSlice returns an array over a copy of data, as numpy.asarray: data is a Go slice of
// numbers or bools, flat or nested ([]int, [][]float64, [][][]float32, ...), and the array
// has its nesting as shape (row-major) and its element type as dtype: int and int64 give
// int64, uint and uint64 uint64, float64 float64, float32 float32, complex128 complex128,
// and so on (named types count by their underlying kind). Shape reshapes the values;
// WithDType converts them, by AsType's rules. Ragged input (rows of different lengths), an
// empty nesting whose element type is unknown, or an element that is not a number is an
// error, held in the array (see Err).
func FromSlice(data any, opts ...ArrayOption) *Array {
	flat, shape, err := flatten(data)
	if err != nil {
		return errArray(fmt.Errorf("FromSlice: %w", err))
	}
	s, err := dtype.Of(flat)
	if err != nil {
		return errArray(fmt.Errorf("FromSlice: %w", err))
	}
	shape, chunks, dt, err := resolveDT("FromSlice", shape, s.DType(), opts)
	if err != nil {
		return errArray(err)
	}
	return wrap(expr.NewData(dtype.Convert(s, dt), shape, chunks))
}

// Asarray is FromSlice (numpy.asarray, the Array API's asarray).
func Asarray(data any, opts ...ArrayOption) *Array { return FromSlice(data, opts...) }

// flatElem returns the flat slice type the leaf kind k is collected into.
func flatElem(k reflect.Kind) (reflect.Type, bool) {
	switch k {
	case reflect.Bool:
		return reflect.TypeFor[[]bool](), true
	case reflect.Int, reflect.Int64:
		return reflect.TypeFor[[]int64](), true
	case reflect.Int32:
		return reflect.TypeFor[[]int32](), true
	case reflect.Int16:
		return reflect.TypeFor[[]int16](), true
	case reflect.Int8:
		return reflect.TypeFor[[]int8](), true
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return reflect.TypeFor[[]uint64](), true
	case reflect.Uint32:
		return reflect.TypeFor[[]uint32](), true
	case reflect.Uint16:
		return reflect.TypeFor[[]uint16](), true
	case reflect.Uint8:
		return reflect.TypeFor[[]uint8](), true
	case reflect.Float64:
		return reflect.TypeFor[[]float64](), true
	case reflect.Float32:
		return reflect.TypeFor[[]float32](), true
	case reflect.Complex128:
		return reflect.TypeFor[[]complex128](), true
	case reflect.Complex64:
		return reflect.TypeFor[[]complex64](), true
	}
	return nil, false
}

// flatten returns the values of a nested slice (or array) of numbers as a fresh flat slice of
// its leaf kind, and its shape.
func flatten(data any) (any, []int, error) {
	v := reflect.ValueOf(data)
	if !v.IsValid() {
		return nil, nil, fmt.Errorf("data is nil, want a slice of numbers")
	}
	// The shape from the first element at each depth, and the leaf type.
	var shape []int
	t := v.Type()
	w := v
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		shape = append(shape, w.Len())
		t = t.Elem()
		if w.Len() > 0 {
			w = w.Index(0)
		}
	}
	if len(shape) == 0 {
		return nil, nil, fmt.Errorf("data is a %T, want a slice of numbers", data)
	}
	ft, ok := flatElem(t.Kind())
	if !ok {
		return nil, nil, fmt.Errorf("data is a %T: its elements (%v) are not numbers or bools", data, t)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	flat := reflect.MakeSlice(ft, 0, n)
	et := ft.Elem()
	var walk func(v reflect.Value, depth int, path []int) error
	walk = func(v reflect.Value, depth int, path []int) error {
		if v.Len() != shape[depth] {
			return fmt.Errorf("ragged input: %s has %d elements, %s has %d", where(path), v.Len(), where(first(path)), shape[depth])
		}
		if depth == len(shape)-1 {
			if v.Kind() == reflect.Slice && v.Type().Elem() == et {
				flat = reflect.AppendSlice(flat, v)
				return nil
			}
			for i := range v.Len() {
				flat = reflect.Append(flat, v.Index(i).Convert(et))
			}
			return nil
		}
		for i := range v.Len() {
			if err := walk(v.Index(i), depth+1, append(path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(v, 0, nil); err != nil {
		return nil, nil, err
	}
	return flat.Interface(), shape, nil
}

// where names a nested row: "data", "data[1]", "data[1][2]".
func where(path []int) string {
	var b strings.Builder
	b.WriteString("data")
	for _, i := range path {
		fmt.Fprintf(&b, "[%d]", i)
	}
	return b.String()
}

// first is path with every index 0: the row whose length set the shape.
func first(path []int) []int { return make([]int, len(path)) }
