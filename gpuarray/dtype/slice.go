package dtype

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Slice is a run of values of one DType in host memory (see the package documentation). The
// zero Slice is an empty float64 slice. Slices share memory like Go slices: Slice and the typed
// views alias the same values.
type Slice struct {
	dt   DType
	b    []byte
	keep any // kept reachable while b is read: it owns memory the garbage collector does not (see KeepAlive)
}

// KeepAlive returns s holding owner reachable for as long as s, or a Slice of s, is: for
// values in memory that a cleanup of owner frees (a mapping the garbage collector does not
// see). The values returned by Float64s and the like do not hold it.
func KeepAlive(s Slice, owner any) Slice {
	s.keep = owner
	return s
}

// Owned reports whether s's memory belongs to the garbage collector: false for a Slice of
// KeepAlive, whose typed values (Float64s and the like) are valid only while its owner is.
func (s Slice) Owned() bool { return s.keep == nil }

type elem interface {
	bool | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | float32 | float64 | complex64 | complex128
}

func view[T elem](dt DType, v []T) Slice {
	var z T
	return Slice{dt: dt, b: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(z)))}
}

func typed[T elem](s Slice, dt DType) []T {
	if s.dt != dt {
		return nil
	}
	var z T
	n := len(s.b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s.b))), n)
}

// Make returns n zero values of dtype dt.
func Make(dt DType, n int) Slice {
	switch dt {
	case Bool:
		return view(dt, make([]bool, n))
	case Int8:
		return view(dt, make([]int8, n))
	case Int16:
		return view(dt, make([]int16, n))
	case Int32:
		return view(dt, make([]int32, n))
	case Int64:
		return view(dt, make([]int64, n))
	case Uint8:
		return view(dt, make([]uint8, n))
	case Uint16:
		return view(dt, make([]uint16, n))
	case Uint32:
		return view(dt, make([]uint32, n))
	case Uint64:
		return view(dt, make([]uint64, n))
	case Float32:
		return view(dt, make([]float32, n))
	case Complex64:
		return view(dt, make([]complex64, n))
	case Complex128:
		return view(dt, make([]complex128, n))
	}
	return view(Float64, make([]float64, n))
}

// Of wraps a Go slice without copying: v is one of []bool, []int8, []int16, []int32, []int64,
// []uint8, []uint16, []uint32, []uint64, []float32, []float64, []complex64, []complex128.
func Of(v any) (Slice, error) {
	switch v := v.(type) {
	case []bool:
		return view(Bool, v), nil
	case []int8:
		return view(Int8, v), nil
	case []int16:
		return view(Int16, v), nil
	case []int32:
		return view(Int32, v), nil
	case []int64:
		return view(Int64, v), nil
	case []uint8:
		return view(Uint8, v), nil
	case []uint16:
		return view(Uint16, v), nil
	case []uint32:
		return view(Uint32, v), nil
	case []uint64:
		return view(Uint64, v), nil
	case []float32:
		return view(Float32, v), nil
	case []float64:
		return view(Float64, v), nil
	case []complex64:
		return view(Complex64, v), nil
	case []complex128:
		return view(Complex128, v), nil
	}
	return Slice{}, fmt.Errorf("dtype: %T is not a slice of an element type", v)
}

// OfFloat64 wraps v without copying.
func OfFloat64(v []float64) Slice { return view(Float64, v) }

// OfFloat32 wraps v without copying.
func OfFloat32(v []float32) Slice { return view(Float32, v) }

// OfInt64 wraps v without copying.
func OfInt64(v []int64) Slice { return view(Int64, v) }

// OfComplex128 wraps v without copying.
func OfComplex128(v []complex128) Slice { return view(Complex128, v) }

// OfBool wraps v without copying.
func OfBool(v []bool) Slice { return view(Bool, v) }

// Any returns the values as the Go slice of their element type, sharing memory ([]float64
// for Float64, []uint8 for Uint8, …).
func (s Slice) Any() any {
	switch s.dt {
	case Bool:
		return s.Bools()
	case Int8:
		return typed[int8](s, Int8)
	case Int16:
		return typed[int16](s, Int16)
	case Int32:
		return s.Int32s()
	case Int64:
		return s.Int64s()
	case Uint8:
		return s.Uint8s()
	case Uint16:
		return typed[uint16](s, Uint16)
	case Uint32:
		return typed[uint32](s, Uint32)
	case Uint64:
		return s.Uint64s()
	case Float32:
		return s.Float32s()
	case Complex64:
		return s.Complex64s()
	case Complex128:
		return s.Complex128s()
	}
	return s.Float64s()
}

// Float64s returns the values as []float64 without copying; nil unless s is Float64.
func (s Slice) Float64s() []float64 { return typed[float64](s, Float64) }

// Float32s returns the values as []float32 without copying; nil unless s is Float32.
func (s Slice) Float32s() []float32 { return typed[float32](s, Float32) }

// Int64s returns the values as []int64 without copying; nil unless s is Int64.
func (s Slice) Int64s() []int64 { return typed[int64](s, Int64) }

// Int32s returns the values as []int32 without copying; nil unless s is Int32.
func (s Slice) Int32s() []int32 { return typed[int32](s, Int32) }

// Int16s returns the values as []int16 without copying; nil unless s is Int16.
func (s Slice) Int16s() []int16 { return typed[int16](s, Int16) }

// Int8s returns the values as []int8 without copying; nil unless s is Int8.
func (s Slice) Int8s() []int8 { return typed[int8](s, Int8) }

// Uint64s returns the values as []uint64 without copying; nil unless s is Uint64.
func (s Slice) Uint64s() []uint64 { return typed[uint64](s, Uint64) }

// Uint32s returns the values as []uint32 without copying; nil unless s is Uint32.
func (s Slice) Uint32s() []uint32 { return typed[uint32](s, Uint32) }

// Uint16s returns the values as []uint16 without copying; nil unless s is Uint16.
func (s Slice) Uint16s() []uint16 { return typed[uint16](s, Uint16) }

// Uint8s returns the values as []uint8 without copying; nil unless s is Uint8.
func (s Slice) Uint8s() []uint8 { return typed[uint8](s, Uint8) }

// Bools returns the values as []bool without copying; nil unless s is Bool.
func (s Slice) Bools() []bool { return typed[bool](s, Bool) }

// Complex64s returns the values as []complex64 without copying; nil unless s is Complex64.
func (s Slice) Complex64s() []complex64 { return typed[complex64](s, Complex64) }

// Complex128s returns the values as []complex128 without copying; nil unless s is Complex128.
func (s Slice) Complex128s() []complex128 { return typed[complex128](s, Complex128) }

// DType returns the values' element type.
func (s Slice) DType() DType { return s.dt }

// Len returns the number of values.
func (s Slice) Len() int {
	if sz := s.dt.Size(); sz > 0 {
		return len(s.b) / sz
	}
	return 0
}

// IsNil reports whether s refers to no memory at all (the zero Slice, or one made from a nil
// Go slice), as opposed to an empty one.
func (s Slice) IsNil() bool { return s.b == nil }

// Bytes returns the values' memory as bytes, without copying (in this machine's byte order,
// little-endian on every platform gpuarray runs on), for GPU transfers and files.
func (s Slice) Bytes() []byte { return s.b }

// Slice returns the values [lo, hi), sharing memory.
func (s Slice) Slice(lo, hi int) Slice {
	sz := s.dt.Size()
	return Slice{dt: s.dt, b: s.b[lo*sz : hi*sz], keep: s.keep}
}

// Clone returns a copy of s in new memory.
func (s Slice) Clone() Slice {
	c := Make(s.dt, s.Len())
	copyBytes(c.b, s.b)
	return c
}

// copyBytes copies src into dst (equal lengths), a large copy on up to GOMAXPROCS goroutines:
// the first touches of fresh memory (page faults) dominate copies of hundreds of megabytes
// (a 512 MB spectrum, a 6.4 GB reduction result) and scale with cores.
func copyBytes(dst, src []byte) {
	const grain = 16 << 20
	w := min(runtime.GOMAXPROCS(0), len(src)/grain)
	if w <= 1 {
		copy(dst, src)
		return
	}
	per := (len(src) + w - 1) / w
	var wg sync.WaitGroup
	for lo := 0; lo < len(src); lo += per {
		hi := min(lo+per, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// Copy copies min(dst.Len(), src.Len()) values from src to dst, converting them to dst's dtype
// as Convert does, and returns the number copied.
func Copy(dst, src Slice) int {
	n := min(dst.Len(), src.Len())
	if dst.dt == src.dt {
		sz := dst.dt.Size()
		copy(dst.b[:n*sz], src.b[:n*sz])
		return n
	}
	convert(dst.Slice(0, n), src.Slice(0, n))
	return n
}

// ViewWords returns w's memory, 8-byte words, as values of dt without copying: dt must be
// Float64, Int64, Uint64 (a word each) or Complex128 (two words each, real then imaginary),
// whose layout in memory is those words'; ok is false for the other dtypes or a complex view of
// an odd number of words.
func ViewWords(dt DType, w []float64) (s Slice, ok bool) {
	switch dt {
	case Float64, Int64, Uint64:
	case Complex128:
		if len(w)%2 != 0 {
			return Slice{}, false
		}
	default:
		return Slice{}, false
	}
	return Slice{dt: dt, b: unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 8*len(w))}, true
}

// FromBytes returns the values that b holds in this machine's byte order; it copies b into new
// memory (aligned for dt).
func FromBytes(dt DType, b []byte) (Slice, error) {
	sz := dt.Size()
	if sz == 0 {
		return Slice{}, fmt.Errorf("dtype: invalid dtype %d", uint8(dt))
	}
	if len(b)%sz != 0 {
		return Slice{}, fmt.Errorf("dtype: %d bytes are not a whole number of %v values (%d bytes each)", len(b), dt, sz)
	}
	s := Make(dt, len(b)/sz)
	copy(s.b, b)
	return s, nil
}

// SwapBytes reverses the byte order of every value in place (for big-endian data, and the
// two halves of a complex value separately).
func (s Slice) SwapBytes() {
	w := s.dt.Size()
	if s.dt.IsComplex() {
		w /= 2
	}
	for i := 0; i+w <= len(s.b); i += w {
		e := s.b[i : i+w]
		for a, b := 0, w-1; a < b; a, b = a+1, b-1 {
			e[a], e[b] = e[b], e[a]
		}
	}
}

// Float returns value i as a float64 (the real part of a complex value, 1 or 0 for a bool).
func (s Slice) Float(i int) float64 {
	switch s.dt {
	case Bool:
		if s.b[i] != 0 {
			return 1
		}
		return 0
	case Int8:
		return float64(int8(s.b[i]))
	case Int16:
		return float64(s.Int16s()[i])
	case Int32:
		return float64(s.Int32s()[i])
	case Int64:
		return float64(s.Int64s()[i])
	case Uint8:
		return float64(s.b[i])
	case Uint16:
		return float64(s.Uint16s()[i])
	case Uint32:
		return float64(s.Uint32s()[i])
	case Uint64:
		return float64(s.Uint64s()[i])
	case Float32:
		return float64(s.Float32s()[i])
	case Complex64:
		return float64(real(s.Complex64s()[i]))
	case Complex128:
		return real(s.Complex128s()[i])
	}
	return s.Float64s()[i]
}

// ToFloat64 returns the values as float64s: s's own memory when s is Float64, a converted copy
// otherwise (complex values give their real parts).
func (s Slice) ToFloat64() []float64 {
	if s.dt == Float64 {
		return s.Float64s()
	}
	d := Make(Float64, s.Len())
	convert(d, s)
	return d.Float64s()
}

// Convert returns s's values as dtype dt with NumPy's astype rules (see convert): s itself
// when it already is dt.
func Convert(s Slice, dt DType) Slice {
	if s.dt == dt {
		return s
	}
	d := Make(dt, s.Len())
	convert(d, s)
	return d
}

// Equal reports whether a and b have the same dtype and the same bytes.
func Equal(a, b Slice) bool { return a.dt == b.dt && bytes.Equal(a.b, b.b) }

// GobEncode writes the dtype and the values' bytes (little-endian).
func (s Slice) GobEncode() ([]byte, error) {
	out := make([]byte, 1+len(s.b))
	out[0] = byte(s.dt)
	copy(out[1:], s.b)
	return out, nil
}

// GobDecode reads what GobEncode wrote into new, aligned memory.
func (s *Slice) GobDecode(b []byte) error {
	if len(b) < 1 {
		return fmt.Errorf("dtype: decode slice: no dtype byte")
	}
	v, err := FromBytes(DType(b[0]), b[1:])
	if err != nil {
		return fmt.Errorf("dtype: decode slice: %w", err)
	}
	*s = v
	return nil
}

// String describes s briefly, like "float64[3]".
func (s Slice) String() string { return fmt.Sprintf("%v[%d]", s.dt, s.Len()) }

type jsonSlice struct {
	DType string `json:"dtype"`
	Bytes []byte `json:"bytes"` // little-endian values, base64 in JSON
}

// MarshalJSON writes the dtype's name and the values' bytes (base64, so NaN and ±Inf survive).
func (s Slice) MarshalJSON() ([]byte, error) {
	return json.Marshal(jsonSlice{DType: s.dt.String(), Bytes: s.b})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *Slice) UnmarshalJSON(b []byte) error {
	var j jsonSlice
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("dtype: decode slice: %w", err)
	}
	dt, _, err := Parse(j.DType)
	if err != nil {
		return fmt.Errorf("dtype: decode slice: %w", err)
	}
	v, err := FromBytes(dt, j.Bytes)
	if err != nil {
		return fmt.Errorf("dtype: decode slice: %w", err)
	}
	if j.Bytes == nil {
		v.b = nil
	}
	*s = v
	return nil
}

// Elem returns value i as its Go type (bool, int8, …, complex128).
func (s Slice) Elem(i int) any {
	switch s.dt {
	case Bool:
		return s.b[i] != 0
	case Int8:
		return int8(s.b[i])
	case Int16:
		return s.Int16s()[i]
	case Int32:
		return s.Int32s()[i]
	case Int64:
		return s.Int64s()[i]
	case Uint8:
		return s.b[i]
	case Uint16:
		return s.Uint16s()[i]
	case Uint32:
		return s.Uint32s()[i]
	case Uint64:
		return s.Uint64s()[i]
	case Float32:
		return s.Float32s()[i]
	case Complex64:
		return s.Complex64s()[i]
	case Complex128:
		return s.Complex128s()[i]
	}
	return s.Float64s()[i]
}

// Gather sets dst[i] = src[at[i]] for each i; dst and src have one dtype.
func Gather(dst, src Slice, at []int) {
	switch dst.dt.Size() {
	case 1:
		gatherWords(dst.b, src.b, at)
	case 2:
		gatherWords(words[uint16](dst), words[uint16](src), at)
	case 4:
		gatherWords(words[uint32](dst), words[uint32](src), at)
	case 8:
		gatherWords(words[uint64](dst), words[uint64](src), at)
	default: // complex128
		gatherWords(words[[2]uint64](dst), words[[2]uint64](src), at)
	}
}

// words views s's memory as n words of T (T's size is s's element size).
func words[T uint16 | uint32 | uint64 | [2]uint64](s Slice) []T {
	var z T
	n := len(s.b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(s.b))), n)
}

func gatherWords[T any](dst, src []T, at []int) {
	for i, j := range at {
		dst[i] = src[j]
	}
}
