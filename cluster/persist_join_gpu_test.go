package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUWorkerJoinsPersistedChunks: on a GPU worker, blocks spanning several chunks kept on
// its GPU (a sort along the chunked rows, the rows of a product) and persisted further
// operands of calls (a product's b, a solve's right-hand sides, in several chunks) are joined
// on the worker's GPU, float64 and float32 (held in 4 bytes): the results equal those of the
// unpersisted arrays on the same worker bit for bit, Path names no host step, and the client
// never copies the persisted arrays.
func TestGPUWorkerJoinsPersistedChunks(t *testing.T) {
	needGPU(t)
	c := newGPUCluster(t, cluster.Options{})
	for _, dt := range []gpuarray.DType{gpuarray.Float64, gpuarray.Float32} {
		rs := gpuarray.NewRandomState(61)
		x := rs.StandardNormal(gpuarray.Shape(600, 400), gpuarray.Chunks(200, 200), gpuarray.WithDType(dt))
		b := rs.StandardNormal(gpuarray.Shape(400, 60), gpuarray.Chunks(100, 40), gpuarray.WithDType(dt))
		m0 := rs.StandardNormal(gpuarray.Shape(300, 300), gpuarray.Chunks(300, 300))
		m := m0.Add(gpuarray.Eye(300, 300, 0, gpuarray.Chunks(300, 300)).Mul(60))
		rhs := rs.StandardNormal(gpuarray.Shape(300, 4), gpuarray.Chunks(100, 4), gpuarray.WithDType(dt))
		s := spanning{x, b, m, rhs}
		ps := s.persist(t, c)
		for what, op := range spanOps {
			sameOnWorker(t, c, what+" of "+dt.String(), op(s), op(ps))
		}
		ps.checkNotCopied(t, dt.String()+": ")
		for _, p := range ps.byName() {
			p.Release()
		}
	}
}

// sameOnWorker checks that persisted, a computation on arrays persisted on c's GPU worker,
// names no host step in its Path and equals unpersisted, the same computation on the arrays
// not persisted, on the same worker bit for bit.
func sameOnWorker(t *testing.T, c *cluster.LocalCUDA, what string, unpersisted, persisted *gpuarray.Array) {
	t.Helper()
	want, err := unpersisted.ToSlice(gpuarray.On(c))
	if err != nil {
		t.Fatalf("%s unpersisted: %v", what, err)
	}
	g, err := persisted.Compute(gpuarray.On(c))
	if err != nil {
		t.Fatalf("%s persisted: %v", what, err)
	}
	if p := g.Path(); strings.Contains(p, "host") {
		t.Errorf("%s: Path %q names a host step", what, p)
	}
	got, err := g.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, want) {
		t.Errorf("%s persisted differs from unpersisted on the worker", what)
	}
}
