package gpuarray

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestGPUPersistFloat32Narrow: a float32 array persisted on the GPU is held in 4 bytes per
// element (about half the device memory the 8-byte words took), read in place by every kernel
// (reductions over all and some axes, the tiled x + x.T, elementwise results, strided slices,
// a product and a sort whose blocks span chunks, joined on the GPU), and each result has the bits of the same
// computation reading the array from 8-byte words and of one regenerating it on the GPU, and
// the CPU's values.
func TestGPUPersistFloat32Narrow(t *testing.T) {
	needGPU(t)
	const n = 1600
	x := NewRandomState(21).StandardNormal(Shape(n, n), Chunks(400, 500), WithDType(Float32))
	s, err := gpuScheduler([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	dev := s.(*gpuSched).devs[0]
	inUse := func() uint64 {
		var u uint64
		_ = dev.Do(context.Background(), func() error { u = dev.Pool().InUse(); return nil })
		return u
	}
	u0 := inUse()
	narrowStore = false
	wide := x.Persist(OnGPU()) // as every dtype was held before: 8-byte words
	narrowStore = true
	if err := wide.Err(); err != nil {
		t.Fatal(err)
	}
	defer wide.Release()
	if g, ok := wide.n.Buf.(*gpuChunks); !ok || g.narrow {
		t.Fatalf("the 8-byte copy is not one (%T)", wide.n.Buf)
	}
	u1 := inUse()
	y := x.Persist(OnGPU())
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	defer y.Release()
	u2 := inUse()
	gc, ok := y.n.Buf.(*gpuChunks)
	if !ok || !gc.narrow {
		t.Fatalf("the float32 array is not held in 4-byte floats (%T)", y.n.Buf)
	}
	if p := gc.placement(); len(p) != 1 || p[0].Bytes != 4*n*n {
		t.Fatalf("placement %v, want %d bytes on gpu 0", p, 4*n*n)
	}
	if d32, d64 := u2-u1, u1-u0; d32 < 4*n*n || float64(d32) > 0.6*float64(d64) {
		t.Fatalf("device memory taken: %d bytes in 4-byte floats, %d in 8-byte words", d32, d64)
	}
	if h := y.HTML(); !strings.Contains(h, "<th>Held on gpu 0</th><td>10.24 MB</td>") {
		t.Fatalf("HTML does not show 10.24 MB on gpu 0: %s", h)
	}
	// The held values are the CPU's, bit for bit.
	want, err := x.Compute()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := want.n.Values()
	b, err := y.n.Values()
	if err != nil || !dtype.Equal(a, b) {
		t.Fatalf("persisted values differ from the CPU's (%v)", err)
	}
	ops := map[string]func(x *Array) *Array{
		"sum":          func(x *Array) *Array { return x.Sum() },
		"mean":         func(x *Array) *Array { return x.Mean() },
		"std":          func(x *Array) *Array { return x.Std() },
		"max":          func(x *Array) *Array { return x.Max() },
		"argmax":       func(x *Array) *Array { return x.ArgMax() },
		"sum(0)":       func(x *Array) *Array { return x.Sum(0) },
		"mean(1)":      func(x *Array) *Array { return x.Mean(1) },
		"std(0)":       func(x *Array) *Array { return x.Std(0) },
		"argmin(1)":    func(x *Array) *Array { return x.ArgMin(1) },
		"x + x.T":      func(x *Array) *Array { return x.Add(x.T()).Sum() },
		"exp + sin":    func(x *Array) *Array { return x.Exp().Add(x.Sin()).Sum() },
		"where":        func(x *Array) *Array { return Where(x.Gt(0), x, x.Neg()).Sum() },
		"2x + 1":       func(x *Array) *Array { return x.Mul(2).Add(1) },
		"x.T - x":      func(x *Array) *Array { return x.T().Sub(x) },
		"strided mean": func(x *Array) *Array { return x.Slice(Every(3), SpanStep(1, n, 2)).Mean() },
		"reversed":     func(x *Array) *Array { return x.Slice(Every(-1)).Mul(x).Sum(1) },
		"product":      func(x *Array) *Array { return x.Slice(Span(0, 500)).Dot(x.T().Slice(All(), Span(0, 300))) },
		"sort":         func(x *Array) *Array { return x.Slice(Span(0, 300)).Sort(1) },
	}
	for name, op := range ops {
		regen, err := op(x).Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s regenerated: %v", name, err)
		}
		held, err := op(y).Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s persisted: %v", name, err)
		}
		// The sort (along the chunked axis) and the product (its rows 0-500 span two row chunks)
		// read blocks spanning several held chunks: joined on the GPU, with no host step.
		if p := held.Path(); strings.Contains(p, "host") {
			t.Errorf("%s of the persisted array: Path %q names a host step", name, p)
		}
		ra, _ := regen.n.Values()
		ha, err := held.n.Values()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w, err := op(wide).Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s of the 8-byte copy: %v", name, err)
		}
		wa, _ := w.n.Values()
		for what, other := range map[string]dtype.Slice{"regenerated": ra, "read from 8-byte words": wa} {
			if !dtype.Equal(other, ha) {
				worst := 0
				for i := range ha.Len() {
					worst = max(worst, ulpApart(other, ha, i))
				}
				t.Errorf("%s: read from 4-byte floats and %s differ (up to %d ulp)", name, what, worst)
			}
		}
		w.Release()
		cpu, err := op(x).Compute()
		if err != nil {
			t.Fatal(err)
		}
		ca, _ := cpu.n.Values()
		tol := 1e-6 // float32 results, the sums' orders differing
		if name == "product" {
			tol = 1e-4 // cuBLAS's and the CPU's orders of the 1600 products
		}
		cf, hf := ca.ToFloat64(), ha.ToFloat64()
		for i := range cf {
			if d := math.Abs(cf[i] - hf[i]); !(d <= tol*math.Max(1, math.Abs(cf[i]))) && !(math.IsNaN(cf[i]) && math.IsNaN(hf[i])) {
				t.Errorf("%s[%d]: %v on the CPU, %v from the persisted array", name, i, cf[i], hf[i])
				break
			}
		}
		regen.Release()
		held.Release()
	}
	// A float32 result left on the GPU by a compute, and a persisted array computed from the
	// narrow one, are narrow too, with the CPU's values.
	for name, z := range map[string]*Array{
		"compute": func() *Array { c, _ := y.Mul(3).Compute(OnGPU()); return c }(),
		"persist": y.Mul(3).Persist(OnGPU()),
	} {
		if z == nil || z.Err() != nil {
			t.Fatalf("%s: %v", name, z.Err())
		}
		g, ok := z.n.Buf.(*gpuChunks)
		if !ok || !g.narrow {
			t.Errorf("%s: a float32 result not held in 4-byte floats (%T)", name, z.n.Buf)
			continue
		}
		c, err := x.Mul(3).Compute()
		if err != nil {
			t.Fatal(err)
		}
		ca, _ := c.n.Values()
		za, err := z.n.Values()
		if err != nil || !dtype.Equal(ca, za) {
			t.Errorf("%s: values differ from the CPU's (%v)", name, err)
		}
		if v, err := z.Sum().Float64(OnGPU()); err != nil || math.IsNaN(v) {
			t.Errorf("%s: sum %v, %v", name, v, err)
		}
		z.Release()
	}
}
