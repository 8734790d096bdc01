package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestPersistedJoinsOnWorkers: blocks of persisted arrays that span several chunks kept on the
// workers (a sort along the chunked axis, the rows of a product) and a call's persisted further
// operands (a product's b, a solve's right-hand sides, in several chunks) are joined by the
// workers that run the tasks: the results equal the inline computation's bit for bit, and the
// client never copies the persisted arrays to its memory (before, it read each such array
// whole and sent its blocks with the tasks).
func TestPersistedJoinsOnWorkers(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	rs := gpuarray.NewRandomState(51)
	x := rs.StandardNormal(gpuarray.Shape(300, 200), gpuarray.Chunks(100, 100))
	b := rs.StandardNormal(gpuarray.Shape(200, 30), gpuarray.Chunks(50, 20))
	m0 := rs.StandardNormal(gpuarray.Shape(120, 120), gpuarray.Chunks(120, 120))
	m := m0.Add(gpuarray.Eye(120, 120, 0, gpuarray.Chunks(120, 120)).Mul(40))
	rhs := rs.StandardNormal(gpuarray.Shape(120, 3), gpuarray.Chunks(40, 3))
	persist := func(a *gpuarray.Array) *gpuarray.Array {
		p := a.Persist(gpuarray.On(c))
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	px, pb, pm, prhs := persist(x), persist(b), persist(m), persist(rhs)
	ops := map[string]func(x, b, m, rhs *gpuarray.Array) *gpuarray.Array{
		"sort along the chunked rows": func(x, _, _, _ *gpuarray.Array) *gpuarray.Array { return gpuarray.Sort(x, 0) },
		"product by a b in chunks":    func(x, b, _, _ *gpuarray.Array) *gpuarray.Array { return gpuarray.MatMul(x, b) },
		"solve for right-hand sides":  func(_, _, m, rhs *gpuarray.Array) *gpuarray.Array { return gpuarray.Solve(m, rhs) },
	}
	for what, op := range ops {
		want, err := op(x, b, m, rhs).ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatalf("%s inline: %v", what, err)
		}
		got, err := op(px, pb, pm, prhs).ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s on the persisted arrays: %v", what, err)
		}
		if !bitEqual(got, want) {
			t.Errorf("%s on the persisted arrays differs from the inline computation", what)
		}
	}
	for name, p := range map[string]*gpuarray.Array{"x": px, "b": pb, "m": pm, "rhs": prhs} {
		if s := p.String(); !strings.HasPrefix(s, "gpuarray.Array<") {
			t.Errorf("the client copied the persisted %s to its memory: %.80s", name, s)
		}
	}
}
