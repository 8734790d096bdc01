package cluster_test

import (
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestElementwiseOnClusterEqualsLocal: a user kernel is built from gpuarray's ops, so the
// workers run it with no code of their own and give the inline run's bits.
func TestElementwiseOnClusterEqualsLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	k, err := gpuarray.Elementwise("x, y", "where(x > 0, sqrt(x) * y, -y) + atan2(x, 1.5)")
	if err != nil {
		t.Fatal(err)
	}
	build := func() *gpuarray.Array {
		rs := gpuarray.NewRandomState(11)
		x := rs.Normal(0, 1, gpuarray.Shape(300, 200), gpuarray.Chunks(100, 50))
		y := rs.Uniform(1, 2, gpuarray.Shape(200), gpuarray.Chunks(50))
		return k.Apply(x, y).Mul(2)
	}
	local, err := build().ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	remote, err := build().ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if len(remote) != len(local) || len(local) != 300*200 {
		t.Fatalf("%d values on the cluster, %d inline, want %d", len(remote), len(local), 300*200)
	}
	for i := range local {
		if math.Float64bits(remote[i]) != math.Float64bits(local[i]) {
			t.Fatalf("element %d: cluster %v, inline %v", i, remote[i], local[i])
		}
	}
}
