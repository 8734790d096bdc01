package dtype

import (
	"math"
	"runtime"
	"sync"
)

// lane is one value read for a cast: the field of its source's kind is set.
type lane struct {
	k Kind
	f float64
	i int64
	u uint64
	c complex128
}

func (s Slice) lane(i int) lane {
	switch s.dt {
	case Bool:
		return lane{k: KindBool, u: uint64(s.b[i])}
	case Int8:
		return lane{k: KindInt, i: int64(int8(s.b[i]))}
	case Int16:
		return lane{k: KindInt, i: int64(s.Int16s()[i])}
	case Int32:
		return lane{k: KindInt, i: int64(s.Int32s()[i])}
	case Int64:
		return lane{k: KindInt, i: s.Int64s()[i]}
	case Uint8:
		return lane{k: KindUint, u: uint64(s.b[i])}
	case Uint16:
		return lane{k: KindUint, u: uint64(s.Uint16s()[i])}
	case Uint32:
		return lane{k: KindUint, u: uint64(s.Uint32s()[i])}
	case Uint64:
		return lane{k: KindUint, u: s.Uint64s()[i]}
	case Float32:
		return lane{k: KindFloat, f: float64(s.Float32s()[i])}
	case Complex64:
		return lane{k: KindComplex, c: complex128(s.Complex64s()[i])}
	case Complex128:
		return lane{k: KindComplex, c: s.Complex128s()[i]}
	}
	return lane{k: KindFloat, f: s.Float64s()[i]}
}

// FloatToInt64 converts x as NumPy does on x86-64 (cvttsd2si): toward zero, and NaN or a value
// outside int64's range gives math.MinInt64.
func FloatToInt64(x float64) int64 {
	if !(x > -9.223372036854777856e18 && x < 9.223372036854775808e18) {
		return math.MinInt64
	}
	return int64(x)
}

// FloatToInt32 is FloatToInt64 for a 32-bit conversion (math.MinInt32 when out of range);
// NumPy's int8, int16, uint8 and uint16 casts take the low bits of it.
func FloatToInt32(x float64) int32 {
	if !(x > -2147483649 && x < 2147483648) {
		return math.MinInt32
	}
	return int32(x)
}

// FloatToUint64 converts x as NumPy does on x86-64: values from 2^63 up are converted after
// subtracting 2^63; NaN and out-of-range values follow FloatToInt64's rule.
func FloatToUint64(x float64) uint64 {
	if x >= 9.223372036854775808e18 {
		return uint64(FloatToInt64(x-9.223372036854775808e18)) ^ (1 << 63)
	}
	return uint64(FloatToInt64(x))
}

// FloatToUint32 is FloatToUint64 at 32 bits, as NumPy's vectorized cast loop (the one arrays
// longer than a few elements take) gives it; NaN and values out of range give 0 or 2^31.
func FloatToUint32(x float64) uint32 {
	if x >= 2147483648 {
		return uint32(FloatToInt32(x-2147483648)) ^ (1 << 31)
	}
	return uint32(FloatToInt32(x))
}

func (l lane) asInt() int64 {
	switch l.k {
	case KindInt:
		return l.i
	case KindUint, KindBool:
		return int64(l.u)
	case KindComplex:
		return FloatToInt64(real(l.c))
	}
	return FloatToInt64(l.f)
}

func (l lane) asUint() uint64 {
	switch l.k {
	case KindInt:
		return uint64(l.i)
	case KindUint, KindBool:
		return l.u
	case KindComplex:
		return FloatToUint64(real(l.c))
	}
	return FloatToUint64(l.f)
}

// int32 conversion of a float for the narrow integer types.
func (l lane) asInt32() int32 {
	switch l.k {
	case KindFloat:
		return FloatToInt32(l.f)
	case KindComplex:
		return FloatToInt32(real(l.c))
	}
	return int32(l.asInt())
}

func (l lane) asFloat() float64 {
	switch l.k {
	case KindInt:
		return float64(l.i)
	case KindUint, KindBool:
		return float64(l.u)
	case KindComplex:
		return real(l.c)
	}
	return l.f
}

func (l lane) asFloat32() float32 {
	switch l.k {
	case KindInt:
		return float32(l.i) // one rounding, not two through float64
	case KindUint, KindBool:
		return float32(l.u)
	case KindComplex:
		return float32(real(l.c))
	}
	return float32(l.f)
}

func (l lane) asBool() bool {
	switch l.k {
	case KindInt:
		return l.i != 0
	case KindUint, KindBool:
		return l.u != 0
	case KindComplex:
		return l.c != 0 || real(l.c) != real(l.c) || imag(l.c) != imag(l.c)
	}
	return l.f != 0 || l.f != l.f
}

func (l lane) asComplex() complex128 {
	if l.k == KindComplex {
		return l.c
	}
	return complex(l.asFloat(), 0)
}

// convert writes src's values into dst (of the same length) as dst's dtype, by NumPy's astype
// rules on x86-64: integers wrap to the width, floats truncate toward zero (NaN and values out
// of range as cvttsd2si gives them), complex values give their real part, and anything nonzero
// (NaN included) is true.
func convert(dst, src Slice) {
	n := src.Len()
	const grain = 1 << 20
	w := min(runtime.GOMAXPROCS(0), n/grain)
	if w <= 1 {
		convertRange(dst, src)
		return
	}
	// A large conversion (4e8 argsort indices read back as float64s: ToSlice) on all cores,
	// each worker converting its own range.
	per := (n + w - 1) / w
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			convertRange(dst.Slice(lo, hi), src.Slice(lo, hi))
		}()
	}
	wg.Wait()
}

// toFloat64s converts integer values to float64s, as lane.asFloat does one at a time.
func toFloat64s[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](d []float64, s []T) {
	for i, x := range s[:len(d)] {
		d[i] = float64(x)
	}
}

// convertRange is convert on one goroutine: typed loops for the common conversions to float64
// (ToSlice of an integer or bool result), the element-by-element lanes for the rest.
func convertRange(dst, src Slice) {
	n := src.Len()
	if dst.dt == Float64 {
		d := dst.Float64s()
		switch src.dt {
		case Int64:
			toFloat64s(d, src.Int64s())
			return
		case Int32:
			toFloat64s(d, src.Int32s())
			return
		case Int16:
			toFloat64s(d, src.Int16s())
			return
		case Int8:
			toFloat64s(d, src.Int8s())
			return
		case Uint64:
			toFloat64s(d, src.Uint64s())
			return
		case Uint32:
			toFloat64s(d, src.Uint32s())
			return
		case Uint16:
			toFloat64s(d, src.Uint16s())
			return
		case Uint8, Bool:
			toFloat64s(d, src.b)
			return
		}
	}
	switch {
	case dst.dt == Float64 && src.dt == Float32:
		d, s := dst.Float64s(), src.Float32s()
		for i, x := range s[:n] {
			d[i] = float64(x)
		}
		return
	case dst.dt == Float32 && src.dt == Float64:
		d, s := dst.Float32s(), src.Float64s()
		for i, x := range s[:n] {
			d[i] = float32(x)
		}
		return
	}
	for i := 0; i < n; i++ {
		l := src.lane(i)
		switch dst.dt {
		case Bool:
			if l.asBool() {
				dst.b[i] = 1
			} else {
				dst.b[i] = 0
			}
		case Int8:
			dst.Int8s()[i] = int8(l.asInt32())
		case Int16:
			dst.Int16s()[i] = int16(l.asInt32())
		case Int32:
			dst.Int32s()[i] = l.asInt32()
		case Int64:
			dst.Int64s()[i] = l.asInt()
		case Uint8:
			dst.b[i] = uint8(l.asInt32())
		case Uint16:
			dst.Uint16s()[i] = uint16(l.asInt32())
		case Uint32:
			switch l.k {
			case KindFloat:
				dst.Uint32s()[i] = FloatToUint32(l.f)
			case KindComplex:
				dst.Uint32s()[i] = FloatToUint32(real(l.c))
			default:
				dst.Uint32s()[i] = uint32(l.asUint())
			}
		case Uint64:
			dst.Uint64s()[i] = l.asUint()
		case Float32:
			dst.Float32s()[i] = l.asFloat32()
		case Float64:
			dst.Float64s()[i] = l.asFloat()
		case Complex64:
			if l.k == KindComplex {
				dst.Complex64s()[i] = complex64(l.c)
			} else {
				dst.Complex64s()[i] = complex(l.asFloat32(), 0)
			}
		case Complex128:
			dst.Complex128s()[i] = l.asComplex()
		}
	}
}

// FromFloat64 returns v's values as dtype dt (v itself for Float64), by convert's rules.
func FromFloat64(v []float64, dt DType) Slice { return Convert(OfFloat64(v), dt) }
