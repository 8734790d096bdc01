package cluster_test

import (
	"fmt"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestDTypesOnCluster computes integer, bool, float32 and complex work and ops of the table on
// CPU workers (typed inputs and outputs on the wire) and compares it with the same computed
// locally, value and dtype.
func TestDTypesOnCluster(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	rs := gpuarray.NewRandomState(5)
	ints := rs.Integers(-100, 100, gpuarray.Shape(200, 60), gpuarray.Chunks(50, 30))
	small := ints.AsType(gpuarray.Int8)
	data := make([]uint8, 1000)
	for i := range data {
		data[i] = uint8(i * 7)
	}
	img := gpuarray.FromSliceUint8(data, gpuarray.Shape(40, 25), gpuarray.Chunks(10, 25))
	z := gpuarray.FromSliceComplex128([]complex128{1 + 2i, 3, -1i, 4 - 4i}, gpuarray.Chunks(2))
	x := rs.Normal(0, 1, gpuarray.Shape(200, 60), gpuarray.Chunks(50, 30), gpuarray.WithDType(gpuarray.Float32))
	cases := map[string]*gpuarray.Array{
		"int8 arithmetic wraps":   small.Mul(small).Add(small),
		"sum of int8 is int64":    small.Sum(0),
		"count of a comparison":   x.Gt(0.5).Sum(1),
		"argmax of uint8 rows":    img.ArgMax(1),
		"uint8 image mean":        img.Mean(),
		"shift and mask":          gpuarray.BitwiseAnd(gpuarray.BitwiseRightShift(img, 2), 15),
		"floor divide, remainder": gpuarray.FloorDivide(small, 7).Add(gpuarray.Remainder(small, -3)),
		"float32 table ops":       gpuarray.Where(gpuarray.IsFinite(gpuarray.Log1p(x)), gpuarray.Round(x.Mul(10)), 0),
		"complex sum":             z.Mul(z).Sum(),
		"logical ops":             gpuarray.LogicalXor(x.Gt(0), small.Lt(0)),
	}
	for name, a := range cases {
		local, err := a.Compute(gpuarray.Inline())
		if err != nil {
			t.Fatalf("%s locally: %v", name, err)
		}
		remote, err := a.Compute(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s on the cluster: %v", name, err)
		}
		if local.DType() != remote.DType() || fmt.Sprint(local) != fmt.Sprint(remote) {
			t.Errorf("%s: cluster gives %v %v, local %v %v", name, remote.DType(), remote, local.DType(), local)
		}
		lv, _ := local.ToSliceComplex128()
		rv, _ := remote.ToSliceComplex128()
		for i := range lv {
			if lv[i] != rv[i] {
				t.Errorf("%s: element %d: cluster %v, local %v", name, i, rv[i], lv[i])
				break
			}
		}
	}
}
