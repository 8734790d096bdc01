package rng

import (
	"math"
	"math/bits"
)

// Ziggurat constants for 256 layers (Marsaglia and Tsang 2000).
const (
	// ZigR is the start of the tail: the right edge of the base layer's rectangle part.
	ZigR = 3.6541528853610088
	// ZigV is the area of each layer.
	ZigV = 0.00492867323399
	// ZigLayers is the number of layers.
	ZigLayers = 256
)

const twoM53 = 1.0 / (1 << 53)

// Tables holds the ziggurat tables, indexed by layer (see the package documentation).
type Tables struct {
	X [ZigLayers + 1]float64 // right edges; X[0] is the base layer's virtual width
	F [ZigLayers + 1]float64 // f(X[j]) with F[0] = f(R)
	K [ZigLayers]uint64      // fast-path thresholds on the 53-bit U
	W [ZigLayers]float64     // X[j] * 2^-53
}

var zig = makeTables()

// ZigguratTables returns a copy of the tables the normal transform uses, bit for bit, for
// backends that must reproduce it.
func ZigguratTables() Tables { return zig }

func makeTables() Tables {
	var t Tables
	f := func(x float64) float64 { return math.Exp(-0.5 * x * x) }
	t.X[0] = ZigV / f(ZigR)
	t.X[1] = ZigR
	for j := 1; j <= 254; j++ {
		t.X[j+1] = math.Sqrt(-2 * math.Log(ZigV/t.X[j]+f(t.X[j])))
	}
	t.X[256] = 0
	t.F[0] = f(ZigR)
	for j := 1; j <= 256; j++ {
		t.F[j] = f(t.X[j])
	}
	for j := 0; j < ZigLayers; j++ {
		t.K[j] = uint64(t.X[j+1] / t.X[j] * (1 << 53))
		t.W[j] = t.X[j] * twoM53
	}
	return t
}

// u53 returns the top 53 bits of the 64-bit word x1:x0.
func u53(x0, x1 uint32) uint64 { return (uint64(x1)<<32 | uint64(x0)) >> 11 }

// Uniform returns the uniform in [0, 1) of element idx.
func (k Key) Uniform(idx uint64) float64 {
	x0, x1, _, _ := k.Block(idx, 0)
	return float64(u53(x0, x1)) * twoM53
}

// Normal returns the standard normal of element idx.
func (k Key) Normal(idx uint64) float64 { return k.normalW(idx, 0) }

// normalSlow finishes a draw on sub-stream w whose first candidate left the fast path.
func (k Key) normalSlow(idx uint64, w uint32, x0, x1, x2, x3 uint32) float64 {
	s := uint32(1)
	for {
		u := u53(x0, x1)
		j := x2 & 255
		z := float64(u) * zig.W[j]
		neg := x2&256 != 0
		switch {
		case u < zig.K[j]:
		case j == 0:
			for {
				y0, y1, y2, y3 := k.block(idx, s, w)
				s++
				a := (float64(u53(y0, y1)) + 0.5) * twoM53
				b := (float64(u53(y2, y3)) + 0.5) * twoM53
				t := -math.Log(a) / ZigR
				e := -math.Log(b)
				if e+e >= t*t {
					z = ZigR + t
					break
				}
			}
		default:
			v := float64(uint64(x3)<<21|uint64(x2>>11)) * twoM53
			if !(zig.F[j]+v*(zig.F[j+1]-zig.F[j]) < math.Exp(-z*z/2)) {
				x0, x1, x2, x3 = k.block(idx, s, w)
				s++
				continue
			}
		}
		if neg {
			z = -z
		}
		return z
	}
}

// Integer returns the integer in [0, n) of element idx (n > 0).
func (k Key) Integer(idx uint64, n uint64) uint64 {
	x0, x1, _, _ := k.Block(idx, 0)
	hi, _ := bits.Mul64(uint64(x1)<<32|uint64(x0), n)
	return hi
}

// NormalStrided sets dst[t] = loc + scale*z(start + t*stride) for the standard normals z of
// elements start, start+stride, …; stride may be negative or zero.
func (k Key) NormalStrided(dst []float64, start uint64, stride int64, loc, scale float64) {
	idx := start
	st := uint64(stride)
	key := [2]uint32{k.K0, k.K1}
	var lo, hi [16]uint32
	var out [4][16]uint32
	t := 0
	for ; t+16 <= len(dst); t += 16 {
		for i := range lo {
			lo[i], hi[i] = uint32(idx), uint32(idx>>32)
			idx += st
		}
		philox16(&lo, &hi, &[2]uint32{}, &key, &out)
		d := dst[t : t+16]
		for i := range d {
			x0, x1, x2 := out[0][i], out[1][i], out[2][i]
			u := u53(x0, x1)
			j := x2 & 255
			var z float64
			if u < zig.K[j] {
				// The sign from bit 8 by a flip of the sign bit, not a branch (taken half the
				// time at random: mispredicted often); -z bit for bit.
				z = math.Float64frombits(math.Float64bits(float64(u)*zig.W[j]) ^ uint64(x2&256)<<55)
			} else {
				z = k.normalSlow(uint64(hi[i])<<32|uint64(lo[i]), 0, x0, x1, x2, out[3][i])
			}
			d[i] = loc + float64(scale*z) // explicit rounding: no fused multiply-add
		}
	}
	for ; t < len(dst); t++ {
		dst[t] = loc + float64(scale*k.Normal(idx))
		idx += st
	}
}

// UniformStrided sets dst[t] = lo + (hi-lo)*u(start + t*stride).
func (k Key) UniformStrided(dst []float64, start uint64, stride int64, low, high float64) {
	idx := start
	st := uint64(stride)
	w := high - low
	key := [2]uint32{k.K0, k.K1}
	var lo, hi [16]uint32
	var out [4][16]uint32
	t := 0
	for ; t+16 <= len(dst); t += 16 {
		for i := range lo {
			lo[i], hi[i] = uint32(idx), uint32(idx>>32)
			idx += st
		}
		philox16(&lo, &hi, &[2]uint32{}, &key, &out)
		d := dst[t : t+16]
		for i := range d {
			d[i] = float64(w*(float64(u53(out[0][i], out[1][i]))*twoM53)) + low
		}
	}
	for ; t < len(dst); t++ {
		dst[t] = float64(w*k.Uniform(idx)) + low
		idx += st
	}
}

// IntegersStrided sets dst[t] = lo + Integer(start + t*stride, n).
func (k Key) IntegersStrided(dst []float64, start uint64, stride int64, lo int64, n uint64) {
	idx := start
	st := uint64(stride)
	for t := range dst {
		dst[t] = float64(lo + int64(k.Integer(idx, n)))
		idx += st
	}
}
