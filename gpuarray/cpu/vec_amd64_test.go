package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"golang.org/x/sys/cpu"
)

// TestAVXLoopsMatchGoLoops checks the AVX loops bit for bit against the Go loops, on every
// length around the vector widths and on special values, whichever useAVX picked here.
func TestAVXLoopsMatchGoLoops(t *testing.T) {
	if !cpu.X86.HasAVX || !cpu.X86.HasAVX2 {
		t.Skip("no AVX2 on this CPU")
	}
	rs := rand.New(rand.NewPCG(7, 16))
	special := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 5e-324, math.MaxFloat64, 1, -3}
	val := func() float64 {
		if rs.IntN(5) == 0 {
			return special[rs.IntN(len(special))]
		}
		return rs.NormFloat64() * math.Pow(10, float64(rs.IntN(20)-10))
	}
	same := func(x, y float64) bool { return math.Float64bits(x) == math.Float64bits(y) || x != x && y != y }
	for _, l := range []int{0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 511, 512} {
		a, b := make([]float64, l+3), make([]float64, l+3)
		for i := range a {
			a[i], b[i] = val(), val()
		}
		d1, d2 := make([]float64, l), make([]float64, l)
		divAVX(d1, a[:l], b[:l])
		divGo(d2, a, b)
		for i := range d1 {
			if !same(d1[i], d2[i]) {
				t.Fatalf("div length %d, element %d: AVX %v, Go %v (%v / %v)", l, i, d1[i], d2[i], a[i], b[i])
			}
		}
		absAVX(d1, a[:l])
		absGo(d2, a)
		for i := range d1 {
			if math.Float64bits(d1[i]) != math.Float64bits(d2[i]) {
				t.Fatalf("abs length %d, element %d: AVX %v, Go %v (of %v)", l, i, d1[i], d2[i], a[i])
			}
		}
		st := [2][3][]float64{}
		for k := range st {
			for j := range st[k] {
				st[k][j] = make([]float64, l)
			}
		}
		for i := 0; i < l; i++ { // the same starting partials
			st[0][1][i], st[0][2][i] = val(), math.Abs(val())
			st[1][1][i], st[1][2][i] = st[0][1][i], st[0][2][i]
		}
		for row := 1; row <= 3; row++ {
			v := make([]float64, l)
			for i := range v {
				v[i] = val()
			}
			c := float64(row + 5)
			welfordAVX(st[0][0], st[0][1], st[0][2], v, c, 1/c)
			welfordGo(st[1][0], st[1][1], st[1][2], v, c, 1/c)
		}
		for j, what := range []string{"n", "m", "m2"} {
			for i := 0; i < l; i++ {
				if !same(st[0][j][i], st[1][j][i]) {
					t.Fatalf("welford length %d, %s[%d]: AVX %v, Go %v", l, what, i, st[0][j][i], st[1][j][i])
				}
			}
		}
	}
}

func BenchmarkDiv(b *testing.B) {
	x, y, d := make([]float64, BlockLen), make([]float64, BlockLen), make([]float64, BlockLen)
	for i := range x {
		x[i], y[i] = float64(i+1), float64(2*i+3)
	}
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			divGo(d, x, y)
		}
	})
	b.Run("avx", func(b *testing.B) {
		for b.Loop() {
			divAVX(d, x, y)
		}
	})
}
