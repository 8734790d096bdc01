// Package dtype holds gpuarray's element types and their host storage.
//
// DType names the thirteen element types of the Array API standard (bool, the signed and
// unsigned integers of 8 to 64 bits, float32, float64, complex64, complex128) with NumPy's
// names, sizes, type strings ('<f8', '|b1') and NumPy 2's promotion rules, Go constants being
// weak scalars as in NEP 50. The zero DType is Float64, NumPy's default.
//
// Slice holds n values of one DType in host memory, in the Go element type of that dtype
// ([]bool, []int8, …, []complex128), never widened: an uint8 image stays one byte per element.
// A Slice is a dtype and a byte view of a typed allocation, rather than an `any` holding the
// typed slice: every helper (length, sub-slices, copies, the byte view that GPU transfers and
// files need, gob encoding for the cluster) is then one line on bytes instead of a switch over
// thirteen types, and the typed accessors (Float64s, Int32s, …) are zero-copy views. Memory is
// always allocated as the element type, so it is aligned for it.
//
// The package imports nothing of the project.
package dtype

import (
	"fmt"
	"strings"
)

// DType is an element type.
type DType uint8

// The element types. Float64 is the zero value.
const (
	Float64 DType = iota
	Float32
	Bool
	Int8
	Int16
	Int32
	Int64
	Uint8
	Uint16
	Uint32
	Uint64
	Complex64
	Complex128
	numTypes
)

// All lists every DType, bool first, then by kind and size as NumPy orders them.
var All = []DType{Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float32, Float64, Complex64, Complex128}

// Kind is a class of element types.
type Kind uint8

// The kinds.
const (
	KindFloat Kind = iota
	KindBool
	KindInt // signed integers
	KindUint
	KindComplex
)

func (k Kind) String() string {
	switch k {
	case KindBool:
		return "bool"
	case KindInt:
		return "signed integer"
	case KindUint:
		return "unsigned integer"
	case KindComplex:
		return "complex floating"
	}
	return "real floating"
}

type info struct {
	name string
	size int
	kind Kind
	char byte // NumPy's kind character
}

var infos = [numTypes]info{
	Float64:    {"float64", 8, KindFloat, 'f'},
	Float32:    {"float32", 4, KindFloat, 'f'},
	Bool:       {"bool", 1, KindBool, 'b'},
	Int8:       {"int8", 1, KindInt, 'i'},
	Int16:      {"int16", 2, KindInt, 'i'},
	Int32:      {"int32", 4, KindInt, 'i'},
	Int64:      {"int64", 8, KindInt, 'i'},
	Uint8:      {"uint8", 1, KindUint, 'u'},
	Uint16:     {"uint16", 2, KindUint, 'u'},
	Uint32:     {"uint32", 4, KindUint, 'u'},
	Uint64:     {"uint64", 8, KindUint, 'u'},
	Complex64:  {"complex64", 8, KindComplex, 'c'},
	Complex128: {"complex128", 16, KindComplex, 'c'},
}

// Valid reports whether d is one of the element types.
func (d DType) Valid() bool { return d < numTypes }

// String returns NumPy's name of d ("float64", "uint8", "bool").
func (d DType) String() string {
	if !d.Valid() {
		return fmt.Sprintf("dtype(%d)", uint8(d))
	}
	return infos[d].name
}

// Size returns the number of bytes of one element.
func (d DType) Size() int {
	if !d.Valid() {
		return 0
	}
	return infos[d].size
}

// Kind returns d's kind.
func (d DType) Kind() Kind {
	if !d.Valid() {
		return KindFloat
	}
	return infos[d].kind
}

// IsFloat reports whether d is float32 or float64.
func (d DType) IsFloat() bool { return d.Kind() == KindFloat }

// IsInteger reports whether d is a signed or unsigned integer type.
func (d DType) IsInteger() bool { k := d.Kind(); return k == KindInt || k == KindUint }

// IsComplex reports whether d is complex64 or complex128.
func (d DType) IsComplex() bool { return d.Kind() == KindComplex }

// TypeStr returns NumPy's array-protocol type string of d in little-endian order, as .npy
// headers write it: "<f8", "|b1", "|u1", "<c16".
func (d DType) TypeStr() string {
	in := infos[d]
	order := byte('<')
	if in.size == 1 {
		order = '|'
	}
	return fmt.Sprintf("%c%c%d", order, in.char, in.size)
}

// Real returns the real type of the same precision: float32 for complex64, float64 for
// complex128, d itself otherwise.
func (d DType) Real() DType {
	switch d {
	case Complex64:
		return Float32
	case Complex128:
		return Float64
	}
	return d
}

// Parse reads a NumPy dtype: a type string ('<f8', '|b1', '>i4', '=u2', 'f4') or a name
// ("float32", "bool", "uint8", "?"). bigEndian reports a '>' byte order (the values must be
// swapped to be read on this machine).
func Parse(s string) (d DType, bigEndian bool, err error) {
	t := strings.TrimSpace(s)
	for i := range infos {
		if t == infos[i].name {
			return DType(i), false, nil
		}
	}
	if t == "?" {
		return Bool, false, nil
	}
	if t == "" {
		return 0, false, fmt.Errorf("parse dtype: empty type string")
	}
	switch t[0] {
	case '<', '|', '=':
		t = t[1:]
	case '>':
		bigEndian = true
		t = t[1:]
	}
	if len(t) < 2 {
		return 0, false, fmt.Errorf("parse dtype %q: want a byte order, a kind character and a size, like '<f8'", s)
	}
	char := t[0]
	var size int
	if _, err := fmt.Sscanf(t[1:], "%d", &size); err != nil || fmt.Sprint(size) != t[1:] {
		return 0, false, fmt.Errorf("parse dtype %q: size %q is not a number", s, t[1:])
	}
	for i, in := range infos {
		if in.char == char && in.size == size {
			if in.size == 1 {
				bigEndian = false
			}
			return DType(i), bigEndian, nil
		}
	}
	return 0, false, fmt.Errorf("parse dtype %q: no element type of kind %q and %d bytes (gpuarray has bool, int8-64, uint8-64, float32/64, complex64/128)", s, char, size)
}

// Promote returns the dtype of an operation on arrays of dtypes a and b, by NumPy 2's rules:
// the smallest type that holds both, where int64 with uint64 gives float64, integers of up to
// 16 bits with float32 give float32 and wider ones float64.
func Promote(a, b DType) DType {
	if a == b {
		return a
	}
	ka, kb := a.Kind(), b.Kind()
	if ka == KindBool {
		return b
	}
	if kb == KindBool {
		return a
	}
	if rank(ka) > rank(kb) {
		a, b, ka, kb = b, a, kb, ka
	}
	isInt := func(k Kind) bool { return k == KindInt || k == KindUint }
	switch {
	case isInt(ka) && ka == kb:
		if a.Size() >= b.Size() {
			return a
		}
		return b
	case isInt(ka) && isInt(kb):
		s, u := a, b
		if ka == KindUint {
			s, u = b, a
		}
		if s.Size() > u.Size() {
			return s
		}
		switch u.Size() {
		case 1:
			return Int16
		case 2:
			return Int32
		case 4:
			return Int64
		}
		return Float64
	case isInt(ka) && kb == KindFloat:
		if b == Float32 && a.Size() <= 2 {
			return Float32
		}
		return Float64
	case isInt(ka) && kb == KindComplex:
		if b == Complex64 && a.Size() <= 2 {
			return Complex64
		}
		return Complex128
	case ka == KindFloat && kb == KindFloat:
		return Float64
	case ka == KindFloat && kb == KindComplex:
		if a == Float32 && b == Complex64 {
			return Complex64
		}
		return Complex128
	}
	return Complex128 // two different complex types
}

// rank orders the kinds for promotion: integers < floats < complex.
func rank(k Kind) int {
	switch k {
	case KindFloat:
		return 2
	case KindComplex:
		return 3
	}
	return 1
}

// PromoteWeak returns the dtype of an operation on an array of dtype a and a Go scalar
// constant of kind k (NEP 50: the scalar takes the array's dtype unless its kind is higher):
// float32 array + 1.5 stays float32, int64 array + 1.5 is float64, bool array + 1 is int64,
// float32 array + 1i is complex64.
func PromoteWeak(a DType, k Kind) DType {
	ka := a.Kind()
	switch k {
	case KindBool:
		return a
	case KindInt, KindUint:
		if ka == KindBool {
			return Int64
		}
		return a
	case KindFloat:
		if ka == KindBool || ka == KindInt || ka == KindUint {
			return Float64
		}
		return a
	case KindComplex:
		switch a {
		case Float32, Complex64:
			return Complex64
		}
		return Complex128
	}
	return a
}
