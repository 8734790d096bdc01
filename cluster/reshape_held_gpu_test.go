package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUWorkerReshapesPersistedChunks: on a GPU worker, reshapes of an array persisted on its
// GPU read the kept chunks there (joined on the GPU where a block spans chunks), float64 and
// float32 (held in 4 bytes): the results equal those of the unpersisted array on the same
// worker bit for bit, Path names no host step, and the client never copies the array.
func TestGPUWorkerReshapesPersistedChunks(t *testing.T) {
	needGPU(t)
	c := newGPUCluster(t, cluster.Options{})
	for _, dt := range []gpuarray.DType{gpuarray.Float64, gpuarray.Float32} {
		x := gpuarray.NewRandomState(73).StandardNormal(gpuarray.Shape(300, 200), gpuarray.Chunks(100, 100), gpuarray.WithDType(dt))
		px := x.Persist(gpuarray.On(c))
		if err := px.Err(); err != nil {
			t.Fatal(err)
		}
		for what, op := range reshapeOps {
			if strings.HasPrefix(what, "flattened") {
				continue // read from the client's copy
			}
			sameOnWorker(t, c, what+" of "+dt.String(), op(x), op(px))
		}
		if s := px.String(); !strings.HasPrefix(s, "gpuarray.Array<") {
			t.Errorf("%v: the client copied the persisted array to its memory: %.80s", dt, s)
		}
		px.Release()
	}
}
