package cluster_test

import (
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestReshapeAndConcatOnCluster computes a reshape (of a random array, fused; and of a
// transpose, computed first) and joins (a kernel per piece) on CPU workers, and compares with
// the same computed locally.
func TestReshapeAndConcatOnCluster(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	rs := gpuarray.NewRandomState(3)
	x := rs.Normal(0, 1, gpuarray.Shape(300, 200), gpuarray.Chunks(100, 50))
	y := rs.Uniform(0, 1, gpuarray.Shape(120, 200), gpuarray.Chunks(60, 200))
	cases := map[string]*gpuarray.Array{
		"reshape then axis mean": x.Reshape(150, 2, 200).Mean(1),
		"reshape of a transpose": x.T().Reshape(-1, 600).Add(1),
		"concat then sum":        gpuarray.Concat(x, y).Mul(2).Sum(0),
		"stack, roll, tile":      gpuarray.Tile(gpuarray.Roll(gpuarray.Stack(x, x.Neg()), 7, 2), 1, 2, 1),
	}
	for name, a := range cases {
		local, err := a.ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatalf("%s locally: %v", name, err)
		}
		remote, err := a.ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s on the cluster: %v", name, err)
		}
		if !slices.Equal(local, remote) {
			t.Errorf("%s: cluster result differs from the local one", name)
		}
	}
}
