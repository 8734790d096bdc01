package gpuarray

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
)

// TestGPUTableOps runs every op of the table that has a PTX body on the GPU backend, on
// float64 and float32 data with NaN, ±Inf, -0 and subnormals (bools from comparisons for the
// logical ops), and requires the CPU executor's bits and no host fallback.
func TestGPUTableOps(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(3, 4))
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 5e-324, -1e-310, 0.5, -0.5, 1.5, 2.5, -2.5}
	data := func() []float64 {
		v := make([]float64, 10000)
		for i := range v {
			if r.IntN(4) == 0 {
				v[i] = specials[r.IntN(len(specials))]
			} else {
				v[i] = r.NormFloat64() * 10
			}
		}
		return v
	}
	for _, o := range optable.Ops {
		if o.PTX == "" {
			continue
		}
		for _, dt := range []DType{Float64, Float32} {
			var xs []*Array
			for range o.Arity {
				x := FromSlice(data(), WithDType(dt), Chunks(2500))
				if o.Rule == optable.Logical {
					x = x.Gt(0)
				}
				xs = append(xs, x)
			}
			y := tableCall(o, xs...)
			cpu, err := y.Compute()
			if err != nil {
				t.Fatalf("%s %v on the CPU: %v", o.Name, dt, err)
			}
			gpu, err := y.Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s %v on the GPU: %v", o.Name, dt, err)
			}
			if strings.Contains(gpu.Path(), "host") {
				t.Errorf("%s %v: part of it ran on the host: %s", o.Name, dt, gpu.Path())
			}
			a, _ := cpu.n.Values()
			b, _ := gpu.n.Values()
			if !dtype.Equal(a, b) {
				for i := range a.Len() {
					x, y := a.Float(i), b.Float(i)
					if math.Float64bits(x) != math.Float64bits(y) && !(x != x && y != y) {
						t.Errorf("%s %v: element %d is %v on the CPU, %v on the GPU", o.Name, dt, i, a.Elem(i), b.Elem(i))
						break
					}
				}
			}
		}
	}
}

// TestGPUMaskCount: counting a comparison (an int64 sum of bools) and a masked mean run in
// the fused kernel and give the CPU's numbers.
func TestGPUMaskCount(t *testing.T) {
	needGPU(t)
	x := NewRandomState(5).Normal(0, 1, Shape(3000, 2000), Chunks(1000, 1000))
	for _, y := range []*Array{x.Gt(1).Sum(), x.Gt(1).Sum(0), Where(x.Gt(1), x, 0).Sum().Div(x.Gt(1).Sum())} {
		cpu, err := y.Compute()
		if err != nil {
			t.Fatal(err)
		}
		gpu, err := y.Compute(OnGPU())
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(gpu.Path(), "sum over") {
			t.Errorf("%v: the sum ran on the host: %s", y, gpu.Path())
		}
		a, _ := cpu.ToSlice()
		b, _ := gpu.ToSlice()
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12*math.Abs(a[i]) {
				t.Fatalf("%v: element %d: CPU %v, GPU %v", y, i, a[i], b[i])
			}
		}
		if y.DType() != cpu.DType() || gpu.DType() != cpu.DType() {
			t.Errorf("dtypes %v, %v, %v", y.DType(), cpu.DType(), gpu.DType())
		}
	}
}
