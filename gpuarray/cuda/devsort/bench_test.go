package devsort

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// BenchmarkGPUDeviceSort times the sort on the device alone, as CuPy's cupy-device row of
// bench/cupy_sort.py does: GPUNOTES_SORT_N (default 1e8) float64 normals resident on GPU 0,
// sorted into a device buffer (allocations from the warm pool included, no transfer). Cases:
// the sort of one line (keys alone), its argsort (keys and positions), and the sort along axis 0
// of a square block keeping 3 positions of each line, as a median does.
func BenchmarkGPUDeviceSort(b *testing.B) {
	d, err := cuda.Open(0)
	if err != nil {
		b.Skipf("no GPU: %v", err)
	}
	n := 100000000
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_SORT_N")); err == nil {
		n = v
	}
	r := rand.New(rand.NewPCG(1, 2))
	f := make([]float64, n)
	for i := range f {
		f[i] = r.NormFloat64()
	}
	vals := dtype.OfFloat64(f)
	ctx := context.Background()
	var x driver.DevicePtr
	err = d.Do(ctx, func() error {
		var err error
		if x, err = d.Pool().Alloc(uint64(8 * n)); err != nil {
			return err
		}
		return upload(d, x, vals.Bytes())
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Do(ctx, func() error { d.Pool().Free(x); return nil }) })
	side := 1
	for (side+1)*(side+1) <= n {
		side++
	}
	cases := []struct {
		name  string
		fn    expr.CallFn
		shape []int
		keep  []int
	}{
		{"sort-f64", expr.FnSort, []int{n}, nil},
		{"argsort-f64", expr.FnArgsort, []int{n}, nil},
		{"median-lines", expr.FnSort, []int{side, side}, []int{side/2 - 1, side / 2, side - 1}},
	}
	for _, cs := range cases {
		b.Run(cs.name, func(b *testing.B) {
			odt := dtype.Float64
			if cs.fn == expr.FnArgsort {
				odt = dtype.Int64
			}
			c := &plan.CallStep{Call: expr.Call{Fn: cs.fn, Axis: 0, N: cs.shape[0], Keep: cs.keep}, DType: odt}
			once := func() error {
				return d.Do(ctx, func() error {
					s, err := newSorter(d, c, x, dtype.Float64, cs.shape)
					if err != nil {
						return err
					}
					defer s.free()
					if _, err := s.sort(ctx); err != nil {
						return err
					}
					return d.Stream().Synchronize()
				})
			}
			if err := once(); err != nil { // warm-up: module load, pool
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := once(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
