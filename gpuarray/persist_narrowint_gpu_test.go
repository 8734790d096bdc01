package gpuarray

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// narrowIntArray returns an n x n array of dt in chunks of 400 x 500 whose values cover dt's
// range, its minimum and maximum included (bools: about half true).
func narrowIntArray(r *rand.Rand, dt DType, n int) *Array {
	lo, hi := int64(0), int64(1)
	if dt != Bool {
		bits := 8 * dt.Size()
		if dt.Kind() == dtype.KindUint {
			hi = 1<<bits - 1
		} else {
			lo, hi = -1<<(bits-1), 1<<(bits-1)-1
		}
	}
	v := make([]int64, n*n)
	for i := range v {
		switch r.IntN(8) {
		case 0:
			v[i] = lo
		case 1:
			v[i] = hi
		default:
			v[i] = lo + int64(r.Uint64N(uint64(hi-lo)+1))
		}
	}
	return FromSliceInt64(v, Shape(n, n), Chunks(400, 500), WithDType(dt))
}

// narrowIntOps are computations on an integer (ints) or bool array: reductions over all and
// some axes, arg reductions, the tiled x + x.T, elementwise results left as arrays, strided
// and reversed reads, casts, a count, and a sort (its blocks span chunks: joined on the GPU).
func narrowIntOps(n int, ints bool) map[string]func(x *Array) *Array {
	ops := map[string]func(x *Array) *Array{
		"sum":          func(x *Array) *Array { return x.Sum() },
		"mean":         func(x *Array) *Array { return x.Mean() },
		"max":          func(x *Array) *Array { return x.Max() },
		"argmax":       func(x *Array) *Array { return x.ArgMax() },
		"argmin(1)":    func(x *Array) *Array { return x.ArgMin(1) },
		"sum(0)":       func(x *Array) *Array { return x.Sum(0) },
		"max(1)":       func(x *Array) *Array { return x.Max(1) },
		"std(0)":       func(x *Array) *Array { return x.AsType(Float64).Std(0) },
		"x == x.T":     func(x *Array) *Array { return x.Eq(x.T()).Sum() },
		"strided sum":  func(x *Array) *Array { return x.Slice(Every(3), SpanStep(1, n, 2)).Sum() },
		"reversed":     func(x *Array) *Array { return x.Slice(Every(-1)).Eq(x).Sum(1) },
		"as float64":   func(x *Array) *Array { return x.AsType(Float64).Mean(1) },
		"as int64 (1)": func(x *Array) *Array { return x.AsType(Int64).Sum(1) },
		"sort":         func(x *Array) *Array { return x.Slice(Span(0, 300)).Sort(1) },
	}
	if ints {
		ops["x + x.T"] = func(x *Array) *Array { return x.Add(x.T()).Sum() }
		ops["where"] = func(x *Array) *Array { return Where(x.Gt(0), x, x.Neg()).Sum() }
		ops["3x + 1"] = func(x *Array) *Array { return x.Mul(3).Add(1) }
		ops["x.T - x"] = func(x *Array) *Array { return x.T().Sub(x) }
		ops["count"] = func(x *Array) *Array { return x.Gt(0).Sum(0) }
		ops["min"] = func(x *Array) *Array { return x.Min() }
	} else {
		ops["any(1)"] = func(x *Array) *Array { return x.Any(1) }
		ops["all(0)"] = func(x *Array) *Array { return x.All(0) }
		ops["not"] = func(x *Array) *Array { return x.Eq(false) }
	}
	return ops
}

// TestGPUPersistIntegerNarrow: bool and integer arrays of 1, 2 and 4 bytes persisted on the
// GPU are held in their own element size (the placement's bytes, the pool's bytes in use
// against the 8-byte copy's, the HTML), with the CPU's values; every computation reading them
// in place has the bits of the same computation reading an 8-byte copy (narrowStore off) and
// of the CPU, and a computed result of such a dtype left on the GPU is narrow too.
func TestGPUPersistIntegerNarrow(t *testing.T) {
	needGPU(t)
	const n = 1200
	r := rand.New(rand.NewPCG(51, 52))
	dev := narrowDevice(t)
	for _, dt := range []DType{Bool, Int8, Int16, Int32, Uint8, Uint16, Uint32} {
		x := narrowIntArray(r, dt, n)
		size := int64(dt.Size())
		wide, y := persistNarrowAndWide(t, dev, x, n)
		for name, op := range narrowIntOps(n, dt != Bool) {
			held, err := op(y).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%v, %s of the persisted array: %v", dt, name, err)
			}
			// The sort reads blocks spanning two held chunks: joined on the GPU in the
			// dtype's own size, with no host step.
			if p := held.Path(); strings.Contains(p, "host") {
				t.Errorf("%v, %s of the persisted array: Path %q names a host step", dt, name, p)
			}
			ha, err := held.n.Values()
			if err != nil {
				t.Fatalf("%v, %s: %v", dt, name, err)
			}
			w, err := op(wide).Compute(OnGPU())
			if err != nil {
				t.Fatalf("%v, %s of the 8-byte copy: %v", dt, name, err)
			}
			wa, _ := w.n.Values()
			if !dtype.Equal(wa, ha) {
				t.Errorf("%v, %s: read from %d-byte elements and from 8-byte words differ", dt, name, size)
			}
			cpu, err := op(x).Compute()
			if err != nil {
				t.Fatal(err)
			}
			ca, _ := cpu.n.Values()
			if ca.DType() != ha.DType() || ca.Len() != ha.Len() {
				t.Fatalf("%v, %s: %v[%d] on the CPU, %v[%d] from the persisted array", dt, name, ca.DType(), ca.Len(), ha.DType(), ha.Len())
			}
			if !ca.DType().IsFloat() {
				if !dtype.Equal(ca, ha) {
					t.Errorf("%v, %s: the persisted array's result differs from the CPU's", dt, name)
				}
			} else {
				cf, hf := ca.ToFloat64(), ha.ToFloat64()
				for i := range cf {
					if d := math.Abs(cf[i] - hf[i]); !(d <= 1e-12*math.Max(1, math.Abs(cf[i]))) {
						t.Errorf("%v, %s[%d]: %v on the CPU, %v from the persisted array", dt, name, i, cf[i], hf[i])
						break
					}
				}
			}
			w.Release()
			held.Release()
		}
		// A result of the dtype computed from the narrow array, left on the GPU by a compute
		// or persisted, is narrow too, with the CPU's values.
		f := func(x *Array) *Array { return x.Slice(Every(-1)) }
		if dt != Bool {
			f = func(x *Array) *Array { return x.Mul(3).Add(x.T()) }
		}
		checkNarrowResults(t, x, y, f, nil)
		y.Release()
		wide.Release()
	}
}
