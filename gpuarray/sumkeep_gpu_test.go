package gpuarray

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGPUSumsCombinedOnDevice: sums, means, standard deviations and variances over random axes
// of random shapes and chunks (float64 and float32, of regenerated, uploaded and persisted
// arrays), computed with OnGPU, combine their partials on the device (gpuResults.keepSum) and
// equal bit for bit the result combined on the host (ToSlice), and the CPU's within 1e-12
// relative; a mean that another result of the same compute reads is combined on the host, and
// right too.
func TestGPUSumsCombinedOnDevice(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(5, 7))
	p := NewRandomState(8).Normal(1, 2, Shape(900, 700), Chunks(250, 300)).Persist(OnGPU())
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	combined := 0
	for trial := range 45 {
		var x *Array
		switch trial % 3 {
		case 0, 1:
			rank := 2 + r.IntN(2)
			shape, chunks := make([]int, rank), make([]int, rank)
			n := 1
			for k := range shape {
				shape[k] = 1 + r.IntN(300)
				chunks[k] = 1 + r.IntN(shape[k])
				n *= shape[k]
			}
			if trial%3 == 0 {
				x = NewRandomState(int64(trial)).StandardNormal(Shape(shape...), Chunks(chunks...))
			} else {
				data := make([]float64, n)
				for i := range data {
					data[i] = math.Sin(float64(i)) * 100
				}
				x = FromSlice(data, Shape(shape...), Chunks(chunks...))
			}
		default:
			x = p.Mul(p).Sub(1)
		}
		if r.IntN(3) == 0 {
			x = x.AsType(Float32)
		}
		rank := len(x.Shape())
		var axes []int
		for len(axes) == 0 || len(axes) == rank {
			axes = axes[:0]
			for k := range rank {
				if r.IntN(2) == 0 {
					axes = append(axes, k)
				}
			}
		}
		var y *Array
		switch r.IntN(4) {
		case 0:
			y = x.Sum(axes...)
		case 1:
			y = x.Mean(axes...)
		case 2:
			y = x.Std(axes...)
		default:
			y = x.Var(axes...)
		}
		c, err := y.Compute(OnGPU())
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		gc, ok := c.n.Buf.(*gpuChunks)
		if !ok {
			t.Fatalf("trial %d: %v not kept on the GPU (path %q)", trial, y, c.Path())
		}
		if gc.combined {
			combined++
		}
		held, err := c.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		viaHost, err := y.ToSlice(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		cpu, err := y.ToSlice(Threads(0))
		if err != nil {
			t.Fatal(err)
		}
		for i := range viaHost {
			if math.Float64bits(held[i]) != math.Float64bits(viaHost[i]) {
				t.Fatalf("trial %d, %v[%d]: combined on the GPU %v, on the host %v", trial, y, i, held[i], viaHost[i])
			}
			if math.Abs(held[i]-cpu[i]) > 1e-12*math.Max(1, math.Abs(cpu[i]))*1e3 {
				t.Fatalf("trial %d, %v[%d]: GPU %v, CPU %v", trial, y, i, held[i], cpu[i])
			}
		}
	}
	if combined < 35 {
		t.Fatalf("only %d of 45 results were combined on the device", combined)
	}
	// A mean that another result reads: combined on the host, both right.
	m := p.Mean(0)
	out, err := ComputeAll(m, p.Sub(m), OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if gc, ok := out[0].n.Buf.(*gpuChunks); ok && gc.combined {
		t.Fatal("a mean read by another result was combined on the device")
	}
	got, err := out[0].ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.ToSlice(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("mean[%d]: %v, want %v", i, got[i], want[i])
		}
	}
}
