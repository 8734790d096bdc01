package gpuarray

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
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
	wide, y := persistNarrowAndWide(t, narrowDevice(t), x, n)
	defer wide.Release()
	defer y.Release()
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
	checkNarrowResults(t, x, y, func(x *Array) *Array { return x.Mul(3) }, func(name string, z *Array) {
		if v, err := z.Sum().Float64(OnGPU()); err != nil || math.IsNaN(v) {
			t.Errorf("%s: sum %v, %v", name, v, err)
		}
	})
}

// narrowDevice returns the GPU scheduler's first device.
func narrowDevice(t *testing.T) *cuda.Device {
	t.Helper()
	s, err := gpuScheduler([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*gpuSched).devs[0]
}

// persistNarrowAndWide persists x, an n x n array, on dev (GPU 0) twice: as an 8-byte copy
// (narrowStore off, as every dtype was held before) and held in its dtype's own size. It
// checks that the narrow one is (the placement's bytes; the pool's bytes in use at most size/8
// + 0.1 of the 8-byte copy's; the HTML's bytes held, in size-byte elements) and has the CPU's
// values. The caller releases both.
func persistNarrowAndWide(t *testing.T, dev *cuda.Device, x *Array, n int64) (wide, y *Array) {
	t.Helper()
	dt := x.DType()
	size := int64(dt.Size())
	inUse := func() uint64 {
		var u uint64
		_ = dev.Do(context.Background(), func() error { u = dev.Pool().InUse(); return nil })
		return u
	}
	u0 := inUse()
	narrowStore = false
	wide = x.Persist(OnGPU())
	narrowStore = true
	if err := wide.Err(); err != nil {
		t.Fatalf("%v: %v", dt, err)
	}
	if g, ok := wide.n.Buf.(*gpuChunks); !ok || g.narrow {
		t.Fatalf("%v: the 8-byte copy is not one (%T)", dt, wide.n.Buf)
	}
	u1 := inUse()
	y = x.Persist(OnGPU())
	if err := y.Err(); err != nil {
		t.Fatalf("%v: %v", dt, err)
	}
	u2 := inUse()
	gc, ok := y.n.Buf.(*gpuChunks)
	if !ok || !gc.narrow {
		t.Fatalf("%v: not held in its own element size (%T)", dt, y.n.Buf)
	}
	if p := gc.placement(); len(p) != 1 || p[0].Bytes != size*n*n {
		t.Fatalf("%v: placement %v, want %d bytes on gpu 0", dt, p, size*n*n)
	}
	if dn, dw := u2-u1, u1-u0; dn < uint64(size*n*n) || float64(dn) > (float64(size)/8+0.1)*float64(dw) {
		t.Fatalf("%v: device memory taken: %d bytes narrow, %d in 8-byte words", dt, dn, dw)
	}
	h := y.HTML()
	if held := fmt.Sprintf("<th>Held on gpu 0</th><td>%s</td>", bytesString(size*n*n)); !strings.Contains(h, held) || !strings.Contains(h, fmt.Sprintf("in %d-byte elements", size)) {
		t.Fatalf("%v: the HTML does not show %s held in %d-byte elements: %s", dt, bytesString(size*n*n), size, h)
	}
	// The held values are the CPU's, bit for bit.
	want, err := x.Compute()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := want.n.Values()
	b, err := y.n.Values()
	if err != nil || !dtype.Equal(a, b) {
		t.Fatalf("%v: persisted values differ from the CPU's (%v)", dt, err)
	}
	return wide, y
}

// checkNarrowResults checks that f's result on y, x persisted narrow, left on the GPU by a
// compute or persisted, is held in its dtype's own size too, with the values of f(x) on the
// CPU; also, when set, checks more of each.
func checkNarrowResults(t *testing.T, x, y *Array, f func(*Array) *Array, also func(name string, z *Array)) {
	t.Helper()
	dt := x.DType()
	for name, z := range map[string]*Array{
		"compute": func() *Array { c, _ := f(y).Compute(OnGPU()); return c }(),
		"persist": f(y).Persist(OnGPU()),
	} {
		name = fmt.Sprintf("%v, %s", dt, name)
		if z == nil || z.Err() != nil {
			t.Fatalf("%s: %v", name, z.Err())
		}
		g, ok := z.n.Buf.(*gpuChunks)
		if !ok || !g.narrow || g.dt != dt {
			t.Errorf("%s: a result not held in its own element size (%T)", name, z.n.Buf)
			continue
		}
		c, err := f(x).Compute()
		if err != nil {
			t.Fatal(err)
		}
		ca, _ := c.n.Values()
		za, err := z.n.Values()
		if err != nil || !dtype.Equal(ca, za) {
			t.Errorf("%s: values differ from the CPU's (%v)", name, err)
		}
		if also != nil {
			also(name, z)
		}
		z.Release()
	}
}
