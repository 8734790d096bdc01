// Package elem describes stored array elements by NumPy type strings ('<f8', '|b1', '>i4',
// '<c16') and converts raw element bytes: byte swaps, and to and from float64.
package elem

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

// Type is a stored element type: its kind, size in bytes and byte order.
type Type struct {
	Kind  byte // 'b' bool, 'i' signed int, 'u' unsigned int, 'f' float, 'c' complex
	Size  int  // bytes per element
	Order byte // '<' little endian, '>' big endian, '|' not applicable (one byte)
}

// Parse parses a NumPy type string such as '<f8', '>i4', '|b1', '<c16', '=f4' (native order)
// or 'f8' (no order: native).
func Parse(s string) (Type, error) {
	if len(s) < 2 {
		return Type{}, fmt.Errorf("type string %q: too short", s)
	}
	var t Type
	rest := s
	switch s[0] {
	case '<', '>', '|', '=':
		t.Order, rest = s[0], s[1:]
	default:
		t.Order = '='
	}
	if len(rest) < 2 {
		return Type{}, fmt.Errorf("type string %q: no size", s)
	}
	t.Kind = rest[0]
	n, err := strconv.Atoi(rest[1:])
	if err != nil || n <= 0 {
		return Type{}, fmt.Errorf("type string %q: bad size %q", s, rest[1:])
	}
	t.Size = n
	ok := false
	switch t.Kind {
	case 'b':
		ok = n == 1
	case 'i', 'u':
		ok = n == 1 || n == 2 || n == 4 || n == 8
	case 'f':
		ok = n == 2 || n == 4 || n == 8
	case 'c':
		ok = n == 8 || n == 16
	}
	if !ok {
		return Type{}, fmt.Errorf("type string %q: unsupported element type (bool, ints, floats and complex numbers only)", s)
	}
	if t.Order == '=' {
		t.Order = nativeOrder()
	}
	if t.Size == 1 {
		t.Order = '|'
	}
	return t, nil
}

// MustParse is Parse for type strings known to be valid; it panics otherwise.
func MustParse(s string) Type {
	t, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return t
}

func nativeOrder() byte {
	var x uint16 = 1
	b := binary.NativeEndian.AppendUint16(nil, x)
	if b[0] == 1 {
		return '<'
	}
	return '>'
}

// String returns the NumPy type string, like "<f8".
func (t Type) String() string { return string(t.Order) + string(t.Kind) + strconv.Itoa(t.Size) }

// Native reports whether the elements are stored in this machine's byte order.
func (t Type) Native() bool { return t.Order == '|' || t.Order == nativeOrder() }

// WithOrder returns t stored in byte order o ('<' or '>'); one-byte types keep '|'.
func (t Type) WithOrder(o byte) Type {
	if t.Size > 1 {
		t.Order = o
	}
	return t
}

// NativeType returns t in this machine's byte order.
func (t Type) NativeType() Type { return t.WithOrder(nativeOrder()) }

// Name returns NumPy's name of the type: "float64", "int32", "bool", "complex128".
func (t Type) Name() string {
	switch t.Kind {
	case 'b':
		return "bool"
	case 'i':
		return "int" + strconv.Itoa(8*t.Size)
	case 'u':
		return "uint" + strconv.Itoa(8*t.Size)
	case 'f':
		return "float" + strconv.Itoa(8*t.Size)
	case 'c':
		return "complex" + strconv.Itoa(8*t.Size)
	}
	return "?"
}

// FromName returns the little-endian type of NumPy's name ("float64", "int8", "bool", …), as
// Zarr v3 names data types.
func FromName(name string) (Type, error) {
	var t Type
	for _, k := range []struct {
		prefix string
		kind   byte
	}{{"complex", 'c'}, {"float", 'f'}, {"uint", 'u'}, {"int", 'i'}} {
		if len(name) > len(k.prefix) && name[:len(k.prefix)] == k.prefix {
			bits, err := strconv.Atoi(name[len(k.prefix):])
			if err != nil || bits%8 != 0 {
				return Type{}, fmt.Errorf("data type %q: unknown", name)
			}
			t = Type{Kind: k.kind, Size: bits / 8, Order: '<'}
			break
		}
	}
	if name == "bool" {
		t = Type{Kind: 'b', Size: 1, Order: '|'}
	}
	if t.Kind == 0 {
		return Type{}, fmt.Errorf("data type %q: unknown (bool, ints, floats and complex numbers only)", name)
	}
	return Parse(t.String())
}

// Swap reverses the byte order of each element of b in place (each half of a complex number).
func (t Type) Swap(b []byte) {
	w := t.Size
	if t.Kind == 'c' {
		w /= 2
	}
	if w == 1 {
		return
	}
	for i := 0; i+w <= len(b); i += w {
		e := b[i : i+w]
		for l, r := 0, w-1; l < r; l, r = l+1, r-1 {
			e[l], e[r] = e[r], e[l]
		}
	}
}

// ToNative swaps b (elements of t) to this machine's byte order where t is not native.
func (t Type) ToNative(b []byte) {
	if !t.Native() {
		t.Swap(b)
	}
}

// Real reports whether the elements convert to float64 (every kind but complex and float16).
func (t Type) Real() bool { return t.Kind != 'c' && !(t.Kind == 'f' && t.Size == 2) }

// ToFloat64 converts elements of t in native byte order (src) to float64 (dst, one per
// element). Integers beyond 2**53 round; bools give 0 or 1.
func (t Type) ToFloat64(dst []float64, src []byte) error {
	if !t.Real() {
		return fmt.Errorf("%s (%s) elements do not convert to float64", t, t.Name())
	}
	n := len(src) / t.Size
	if len(dst) < n {
		return fmt.Errorf("convert %s: %d values for %d elements", t, len(dst), n)
	}
	ne := binary.NativeEndian
	switch {
	case t.Kind == 'f' && t.Size == 8:
		for i := range n {
			dst[i] = math.Float64frombits(ne.Uint64(src[8*i:]))
		}
	case t.Kind == 'f' && t.Size == 4:
		for i := range n {
			dst[i] = float64(math.Float32frombits(ne.Uint32(src[4*i:])))
		}
	case t.Kind == 'b':
		for i := range n {
			if src[i] != 0 {
				dst[i] = 1
			} else {
				dst[i] = 0
			}
		}
	case t.Kind == 'u' && t.Size == 1:
		for i := range n {
			dst[i] = float64(src[i])
		}
	case t.Kind == 'i' && t.Size == 1:
		for i := range n {
			dst[i] = float64(int8(src[i]))
		}
	case t.Kind == 'u' && t.Size == 2:
		for i := range n {
			dst[i] = float64(ne.Uint16(src[2*i:]))
		}
	case t.Kind == 'i' && t.Size == 2:
		for i := range n {
			dst[i] = float64(int16(ne.Uint16(src[2*i:])))
		}
	case t.Kind == 'u' && t.Size == 4:
		for i := range n {
			dst[i] = float64(ne.Uint32(src[4*i:]))
		}
	case t.Kind == 'i' && t.Size == 4:
		for i := range n {
			dst[i] = float64(int32(ne.Uint32(src[4*i:])))
		}
	case t.Kind == 'u' && t.Size == 8:
		for i := range n {
			dst[i] = float64(ne.Uint64(src[8*i:]))
		}
	case t.Kind == 'i' && t.Size == 8:
		for i := range n {
			dst[i] = float64(int64(ne.Uint64(src[8*i:])))
		}
	default:
		return fmt.Errorf("convert %s to float64: unsupported", t)
	}
	return nil
}

// FromFloat64 converts float64 values to elements of t in native byte order (dst holds
// len(src)*t.Size bytes). Integer types truncate toward zero; bools are v != 0.
func (t Type) FromFloat64(dst []byte, src []float64) error {
	if !t.Real() {
		return fmt.Errorf("float64 values do not convert to %s (%s) elements", t, t.Name())
	}
	if len(dst) < len(src)*t.Size {
		return fmt.Errorf("convert to %s: %d bytes for %d values", t, len(dst), len(src))
	}
	ne := binary.NativeEndian
	for i, v := range src {
		switch {
		case t.Kind == 'f' && t.Size == 8:
			ne.PutUint64(dst[8*i:], math.Float64bits(v))
		case t.Kind == 'f' && t.Size == 4:
			ne.PutUint32(dst[4*i:], math.Float32bits(float32(v)))
		case t.Kind == 'b':
			dst[i] = 0
			if v != 0 {
				dst[i] = 1
			}
		case t.Kind == 'i' && t.Size == 1, t.Kind == 'u' && t.Size == 1:
			dst[i] = byte(int64(v))
		case t.Size == 2:
			ne.PutUint16(dst[2*i:], uint16(int64(v)))
		case t.Size == 4:
			ne.PutUint32(dst[4*i:], uint32(int64(v)))
		case t.Kind == 'u':
			ne.PutUint64(dst[8*i:], uint64(v))
		default:
			ne.PutUint64(dst[8*i:], uint64(int64(v)))
		}
	}
	return nil
}
