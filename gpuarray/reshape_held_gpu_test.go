package gpuarray

import (
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestGPUReshapeOfPersistedInPlace: reshapes of an array persisted on the GPU, float64 and
// float32 (held in 4 bytes), read its chunks where the GPU holds them (joined there where a
// task's block spans chunks): Path names no host step, and each result has the bits of the
// same computation regenerating the array on the GPU; the sums over pairs (the op table's
// reshape row, folded in element order), maxima and arg maxima have the bits of the CPU
// computing from the values the GPU holds, the rest its values within rounding. A reshape whose blocks are no boxes of the array reads its host copy, which Path
// names, with the same bits.
func TestGPUReshapeOfPersistedInPlace(t *testing.T) {
	needGPU(t)
	const n = 1600
	for _, dt := range []DType{Float64, Float32} {
		x := NewRandomState(23).StandardNormal(Shape(n, n), Chunks(400, 400), WithDType(dt))
		y := x.Persist(OnGPU())
		if err := y.Err(); err != nil {
			t.Fatal(err)
		}
		// The CPU's reference reads the values the GPU holds (the GPU's normal draws are
		// not the CPU's bit for bit).
		vals, err := y.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		h := wrap(expr.NewData(vals.Clone(), y.Shape(), y.n.Chunks))
		ops := map[string]func(x *Array) *Array{
			"pairs sum":      func(x *Array) *Array { return x.Reshape(n/2, 2, n).Sum(1) },
			"split columns":  func(x *Array) *Array { return x.Reshape(n, 4, n/4).Max(2) },
			"rows merged":    func(x *Array) *Array { return x.Reshape(4, n*n/4).Std(1) },
			"flattened":      func(x *Array) *Array { return x.Reshape(n * n).Mul(2).Sum() },
			"pairs argmax":   func(x *Array) *Array { return x.Reshape(n/2, 2, n).ArgMax(1) },
			"odd pieces sum": func(x *Array) *Array { return x.Reshape(n * n).Rechunk(3000).Sum() },
		}
		for name, op := range ops {
			name += " of " + dt.String()
			regen, err := op(x).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s regenerated: %v", name, err)
			}
			held, err := op(y).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s persisted: %v", name, err)
			}
			p := held.Path()
			if odd := strings.HasPrefix(name, "odd"); odd != strings.Contains(p, "host read") || !odd && strings.Contains(p, "host") {
				t.Errorf("%s: Path %q", name, p)
			}
			ra, _ := regen.n.Values()
			ha, err := held.n.Values()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !dtype.Equal(ra, ha) {
				worst := 0
				for i := range ha.Len() {
					worst = max(worst, ulpApart(ra, ha, i))
				}
				t.Errorf("%s: persisted and regenerated differ (up to %d ulp)", name, worst)
			}
			cpu, err := op(h).Compute()
			if err != nil {
				t.Fatal(err)
			}
			ca, _ := cpu.n.Values()
			if strings.HasPrefix(name, "pairs") || strings.HasPrefix(name, "split") {
				if !dtype.Equal(ca, ha) {
					worst := 0
					for i := range ha.Len() {
						worst = max(worst, ulpApart(ca, ha, i))
					}
					t.Errorf("%s: the GPU's bits differ from the CPU's on the same values (up to %d ulp)", name, worst)
				}
			} else {
				tol := 1e-9
				if dt == Float32 {
					tol = 1e-5
				}
				cf, hf := ca.ToFloat64(), ha.ToFloat64()
				for i := range cf {
					if d := math.Abs(cf[i] - hf[i]); !(d <= tol*math.Max(1, math.Abs(cf[i]))) {
						t.Errorf("%s[%d]: %v on the CPU, %v from the persisted array", name, i, cf[i], hf[i])
						break
					}
				}
			}
			regen.Release()
			held.Release()
		}
		y.Release()
	}
}
