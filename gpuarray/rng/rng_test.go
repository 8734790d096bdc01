package rng

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"testing"
)

func TestPhiloxKnownAnswers(t *testing.T) {
	// Random123 tests/kat_vectors, "philox4x32 10" lines.
	cases := []struct {
		c    [4]uint32
		k    [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		if got := Philox4x32(c.c, c.k); got != c.want {
			t.Errorf("Philox4x32(%08x, %08x) = %08x, want %08x", c.c, c.k, got, c.want)
		}
	}
}

func TestTables(t *testing.T) {
	z := ZigguratTables()
	if z.X[1] != ZigR || z.X[256] != 0 || z.F[256] != 1 {
		t.Fatalf("table ends: X1 %v X256 %v F256 %v", z.X[1], z.X[256], z.F[256])
	}
	for j := 1; j < 256; j++ {
		if !(z.X[j+1] < z.X[j]) || !(z.F[j+1] > z.F[j]) {
			t.Fatalf("layer %d not monotone: X %v %v F %v %v", j, z.X[j], z.X[j+1], z.F[j], z.F[j+1])
		}
	}
	// X[255] must end near 0: the last layer closes the curve.
	if z.X[255] > 0.3 || z.X[255] <= 0 {
		t.Fatalf("X[255] = %v", z.X[255])
	}
	// Pin the table bits: a change here changes every normal and must be ported to the GPU.
	h := sha256.New()
	for _, v := range z.X {
		binary.Write(h, binary.LittleEndian, math.Float64bits(v))
	}
	for _, v := range z.F {
		binary.Write(h, binary.LittleEndian, math.Float64bits(v))
	}
	binary.Write(h, binary.LittleEndian, z.K[:])
	got := fmt.Sprintf("%x", h.Sum(nil))[:16]
	if got != tablesHash {
		t.Fatalf("ziggurat tables changed: hash %s, pinned %s", got, tablesHash)
	}
}

const tablesHash = "02154be7e75fd6cb"

func TestStridedMatchesScalar(t *testing.T) {
	k := KeyOf(42, 0)
	dst := make([]float64, 1000)
	k.NormalStrided(dst, 5000, -3, 10, 2)
	for i, v := range dst {
		idx := uint64(5000 - 3*i)
		if want := 10 + 2*k.Normal(idx); v != want {
			t.Fatalf("element %d: %v != %v", idx, v, want)
		}
	}
	k.UniformStrided(dst, 7, 2, -1, 3)
	for i, v := range dst {
		if want := 4*k.Uniform(uint64(7+2*i)) - 1; v != want || v < -1 || v >= 3 {
			t.Fatalf("uniform %d: %v != %v", i, v, want)
		}
	}
	k.IntegersStrided(dst, 0, 1, -5, 10)
	for _, v := range dst {
		if v < -5 || v >= 5 || v != math.Trunc(v) {
			t.Fatalf("integer out of range: %v", v)
		}
	}
}

const nStat = 1_000_000

func normals(seed uint64) []float64 {
	x := make([]float64, nStat)
	KeyOf(seed, 0).NormalStrided(x, 0, 1, 0, 1)
	return x
}

func TestNormalMoments(t *testing.T) {
	x := normals(1)
	var s, s2, s3, s4 float64
	for _, v := range x {
		s += v
		s2 += v * v
		s3 += v * v * v
		s4 += v * v * v * v
	}
	n := float64(nStat)
	mean, m2, m3, m4 := s/n, s2/n, s3/n, s4/n
	// Standard errors: mean 1/sqrt(n), E[x^2] sqrt(2/n), E[x^3] sqrt(15/n), E[x^4] sqrt(96/n).
	check := func(name string, got, want, se float64) {
		if math.Abs(got-want) > 5*se {
			t.Errorf("%s = %v, want %v within 5 sigma (%v)", name, got, want, 5*se)
		}
	}
	check("mean", mean, 0, 1/math.Sqrt(n))
	check("E[x^2]", m2, 1, math.Sqrt(2/n))
	check("E[x^3]", m3, 0, math.Sqrt(15/n))
	check("E[x^4]", m4, 3, math.Sqrt(96/n))
}

// ks returns the Kolmogorov-Smirnov statistic of sorted x against cdf.
func ks(x []float64, cdf func(float64) float64) float64 {
	sort.Float64s(x)
	n := float64(len(x))
	d := 0.0
	for i, v := range x {
		c := cdf(v)
		d = math.Max(d, math.Max(c-float64(i)/n, float64(i+1)/n-c))
	}
	return d
}

func TestNormalKS(t *testing.T) {
	x := normals(2)
	d := ks(x, func(v float64) float64 { return 0.5 * math.Erfc(-v/math.Sqrt2) })
	// Critical value at alpha = 0.001: 1.95/sqrt(n).
	if limit := 1.95 / math.Sqrt(nStat); d > limit {
		t.Fatalf("KS statistic %v > %v", d, limit)
	}
	// The tail must be reached and be right: P(|z| > R) = erfc(R/sqrt 2).
	tail := 0
	for _, v := range x {
		if math.Abs(v) > ZigR {
			tail++
		}
	}
	p := math.Erfc(ZigR / math.Sqrt2)
	if e := p * nStat; math.Abs(float64(tail)-e) > 5*math.Sqrt(e) {
		t.Fatalf("tail count %d, expected %v", tail, e)
	}
}

func TestUniformKSAndMoments(t *testing.T) {
	x := make([]float64, nStat)
	KeyOf(3, 0).UniformStrided(x, 0, 1, 0, 1)
	var s, s2 float64
	for _, v := range x {
		s += v
		s2 += (v - 0.5) * (v - 0.5)
	}
	n := float64(nStat)
	if se := math.Sqrt(1.0 / 12 / n); math.Abs(s/n-0.5) > 5*se {
		t.Errorf("uniform mean %v", s/n)
	}
	if se := math.Sqrt((1.0/80 - 1.0/144) / n); math.Abs(s2/n-1.0/12) > 5*se {
		t.Errorf("uniform variance %v", s2/n)
	}
	if d := ks(x, func(v float64) float64 { return v }); d > 1.95/math.Sqrt(n) {
		t.Fatalf("uniform KS %v", d)
	}
}

func TestKeysDiffer(t *testing.T) {
	a, b := KeyOf(42, 0), KeyOf(42, 1)
	if a.Normal(0) == b.Normal(0) || a.Normal(0) == KeyOf(43, 0).Normal(0) {
		t.Fatal("draws or seeds give equal numbers")
	}
}

var sink float64

func BenchmarkPhilox(b *testing.B) {
	var acc uint32
	for i := 0; i < b.N; i++ {
		x0, _, _, _ := philox(uint32(i), 0, 0, 0, 42, 0)
		acc += x0
	}
	sink = float64(acc)
}

// BenchmarkNormalZiggurat is the chosen transform, per normal, through the strided block fill.
func BenchmarkNormalZiggurat(b *testing.B) {
	k := KeyOf(42, 0)
	dst := make([]float64, 512)
	b.SetBytes(0)
	for i := 0; i < b.N; i += len(dst) {
		k.NormalStrided(dst, uint64(i), 2, 10, 1)
	}
	sink = dst[0]
}

// BenchmarkNormalBoxMuller is the rejected candidate: Philox + Box-Muller (log, sqrt, sincos),
// one normal per Philox block as the element-indexed counter demands.
func BenchmarkNormalBoxMuller(b *testing.B) {
	k := KeyOf(42, 0)
	dst := make([]float64, 512)
	for i := 0; i < b.N; i += len(dst) {
		for t := range dst {
			x0, x1, x2, x3 := k.Block(uint64(i+2*t), 0)
			u := (float64(u53(x0, x1)) + 0.5) * twoM53
			v := float64(u53(x2, x3)) * twoM53
			s, _ := math.Sincos(2 * math.Pi * v)
			dst[t] = 10 + math.Sqrt(-2*math.Log(u))*s
		}
	}
	sink = dst[0]
}

func BenchmarkUniform(b *testing.B) {
	k := KeyOf(42, 0)
	dst := make([]float64, 512)
	for i := 0; i < b.N; i += len(dst) {
		k.UniformStrided(dst, uint64(i), 1, 0, 1)
	}
	sink = dst[0]
}

func TestPhilox8MatchesScalar(t *testing.T) {
	k := KeyOf(0xdeadbeef12345678, 3)
	var lo, hi [8]uint32
	for i := range lo {
		idx := uint64(1<<32-3) + uint64(i)*0x1_0000_0001
		lo[i], hi[i] = uint32(idx), uint32(idx>>32)
	}
	var out [4][8]uint32
	philox8(&lo, &hi, &[2]uint32{k.K0, k.K1}, &out)
	for i := range lo {
		x0, x1, x2, x3 := k.Block(uint64(hi[i])<<32|uint64(lo[i]), 0)
		if got := [4]uint32{out[0][i], out[1][i], out[2][i], out[3][i]}; got != [4]uint32{x0, x1, x2, x3} {
			t.Fatalf("lane %d: %08x != %08x", i, got, [4]uint32{x0, x1, x2, x3})
		}
	}
	// Blocks of other sub-streams (the gamma's tries), on the AVX2 path where it runs and on
	// the portable one.
	sw := [2]uint32{5, gammaUniformW | 3}
	for _, avx := range []bool{hasAVX2, false} {
		if avx {
			philox8w(&lo, &hi, &sw, &[2]uint32{k.K0, k.K1}, &out)
		} else {
			philox8Generic(&lo, &hi, &sw, &[2]uint32{k.K0, k.K1}, &out)
		}
		for i := range lo {
			x0, x1, x2, x3 := k.block(uint64(hi[i])<<32|uint64(lo[i]), sw[0], sw[1])
			if got := [4]uint32{out[0][i], out[1][i], out[2][i], out[3][i]}; got != [4]uint32{x0, x1, x2, x3} {
				t.Fatalf("avx2 %v, lane %d of sub-stream %x: %08x != %08x", avx, i, sw[1], got, [4]uint32{x0, x1, x2, x3})
			}
		}
	}
}

// TestPhilox16MatchesScalar: sixteen lanes at once, both groups, any sub-stream.
func TestPhilox16MatchesScalar(t *testing.T) {
	k := KeyOf(0x0123456789abcdef, 7)
	var lo, hi [16]uint32
	for i := range lo {
		idx := uint64(1<<32-5) + uint64(i)*0x1_0000_0003
		lo[i], hi[i] = uint32(idx), uint32(idx>>32)
	}
	for _, sw := range [][2]uint32{{0, 0}, {3, gammaUniformW | 9}} {
		for _, avx := range []bool{hasAVX2, false} {
			var out [4][16]uint32
			if avx {
				philox16(&lo, &hi, &sw, &[2]uint32{k.K0, k.K1}, &out)
			} else {
				philox16Generic(&lo, &hi, &sw, &[2]uint32{k.K0, k.K1}, &out)
			}
			for i := range lo {
				x0, x1, x2, x3 := k.block(uint64(hi[i])<<32|uint64(lo[i]), sw[0], sw[1])
				if got := [4]uint32{out[0][i], out[1][i], out[2][i], out[3][i]}; got != [4]uint32{x0, x1, x2, x3} {
					t.Fatalf("avx2 %v, sub-stream %x, lane %d: %08x != %08x", avx, sw[1], i, got, [4]uint32{x0, x1, x2, x3})
				}
			}
		}
	}
}

// BenchmarkPhilox16 is BenchmarkPhilox8 for sixteen lanes a call (ns per block).
func BenchmarkPhilox16(b *testing.B) {
	var lo, hi [16]uint32
	var out [4][16]uint32
	key := [2]uint32{42, 0}
	for i := 0; i < b.N; i += 16 {
		lo[0] = uint32(i)
		philox16(&lo, &hi, &[2]uint32{}, &key, &out)
	}
	sink = float64(out[0][0])
}

func BenchmarkPhilox8(b *testing.B) {
	var lo, hi [8]uint32
	var out [4][8]uint32
	key := [2]uint32{42, 0}
	for i := 0; i < b.N; i += 8 {
		lo[0] = uint32(i)
		philox8(&lo, &hi, &key, &out)
	}
	sink = float64(out[0][0])
	if hasAVX2 {
		b.ReportMetric(1, "avx2")
	} else {
		b.ReportMetric(0, "avx2")
	}
}
