package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// reshapeOps are reductions of reshapes of a 300 x 200 array in chunks of 100 x 100: axes
// split within chunks, merged across them (blocks joined from several chunks), and a block of
// the reshape that is no box of the array (read from the client's copy).
var reshapeOps = map[string]func(x *gpuarray.Array) *gpuarray.Array{
	"split rows, sum over the pairs": func(x *gpuarray.Array) *gpuarray.Array { return x.Reshape(150, 2, 200).Sum(1) },
	"split columns, max":             func(x *gpuarray.Array) *gpuarray.Array { return x.Reshape(300, 2, 100).Max(2) },
	"rows merged, std":               func(x *gpuarray.Array) *gpuarray.Array { return x.Reshape(3, 20000).Std(1) },
	"flattened in odd pieces, sum":   func(x *gpuarray.Array) *gpuarray.Array { return x.Reshape(60000).Rechunk(7500).Sum() },
}

// TestPersistedReshapeOnWorkers: reshapes of an array persisted on the workers read its kept
// chunks where they are (joined there where a block spans chunks), with the bits of the
// inline computation, and the client never copies the array, except where a block of the
// reshape is no box of the array.
func TestPersistedReshapeOnWorkers(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	x := gpuarray.NewRandomState(71).StandardNormal(gpuarray.Shape(300, 200), gpuarray.Chunks(100, 100))
	px := x.Persist(gpuarray.On(c))
	if err := px.Err(); err != nil {
		t.Fatal(err)
	}
	defer px.Release()
	for _, odd := range []bool{false, true} {
		for what, op := range reshapeOps {
			if odd != strings.HasPrefix(what, "flattened") {
				continue
			}
			want, err := op(x).ToSlice(gpuarray.Inline())
			if err != nil {
				t.Fatalf("%s inline: %v", what, err)
			}
			got, err := op(px).ToSlice(gpuarray.On(c))
			if err != nil {
				t.Fatalf("%s on the persisted array: %v", what, err)
			}
			if !bitEqual(got, want) {
				t.Errorf("%s on the persisted array differs from the inline computation", what)
			}
			if s := px.String(); strings.HasPrefix(s, "gpuarray.Array<") == odd {
				t.Errorf("%s: the client copied the persisted array to its memory: %v (%.80s)", what, odd, s)
			}
		}
	}
}
