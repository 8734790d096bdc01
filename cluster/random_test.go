package cluster_test

import (
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// The random distributions travel as their specs: the workers draw the same values, bit for
// bit, as the inline run (counter-based, so the chunks a worker gets do not matter).
func TestRandomDistributionsOnClusterEqualLocal(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2, ThreadsPerWorker: 1})
	opts := []gpuarray.ArrayOption{gpuarray.Shape(60, 50), gpuarray.Chunks(25, 20)}
	draws := map[string]func() *gpuarray.Array{
		"exponential": func() *gpuarray.Array { return gpuarray.NewRandomState(1).Exponential(2, opts...) },
		"gamma":       func() *gpuarray.Array { return gpuarray.NewRandomState(2).Gamma(0.6, 3, opts...) },
		"beta":        func() *gpuarray.Array { return gpuarray.NewRandomState(3).Beta(2, 0.5, opts...) },
		"beta johnk":  func() *gpuarray.Array { return gpuarray.NewRandomState(11).Beta(0.01, 0.3, opts...) },
		"lognormal":   func() *gpuarray.Array { return gpuarray.NewRandomState(4).LogNormal(1, 0.3, opts...) },
		"t":           func() *gpuarray.Array { return gpuarray.NewRandomState(5).StandardT(3, opts...) },
		"chisquare":   func() *gpuarray.Array { return gpuarray.NewRandomState(6).Chisquare(4, opts...) },
		"poisson":     func() *gpuarray.Array { return gpuarray.NewRandomState(7).Poisson(30, opts...) },
		"binomial":    func() *gpuarray.Array { return gpuarray.NewRandomState(8).Binomial(40, 0.1, opts...) },
		"permutation": func() *gpuarray.Array { return gpuarray.NewRandomState(9).Permutation(500) },
		"choice": func() *gpuarray.Array {
			return gpuarray.NewRandomState(10).Choice(gpuarray.Arange(0, 9, 1), 300, true, []float64{0.3, 0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1})
		},
	}
	for name, draw := range draws {
		local, err := draw().ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatalf("%s inline: %v", name, err)
		}
		remote, err := draw().ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s on the cluster: %v", name, err)
		}
		if len(remote) != len(local) {
			t.Fatalf("%s: %d values on the cluster, %d inline", name, len(remote), len(local))
		}
		for i := range local {
			if math.Float64bits(remote[i]) != math.Float64bits(local[i]) {
				t.Fatalf("%s element %d: cluster %v, inline %v", name, i, remote[i], local[i])
			}
		}
	}
}
