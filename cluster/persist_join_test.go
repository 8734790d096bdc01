package cluster_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// spanning holds the operands of spanOps: x, chunked along the rows a sort and a product read
// across; a product's b and a solve's right-hand sides rhs, in several chunks; a solve's m.
type spanning struct{ x, b, m, rhs *gpuarray.Array }

// spanOps are the computations whose blocks of persisted arrays span chunks kept on the
// workers: a sort along the chunked rows, a product (its rows, and b as a further operand),
// and a solve (its right-hand sides as a further operand).
var spanOps = map[string]func(s spanning) *gpuarray.Array{
	"sort along the chunked rows": func(s spanning) *gpuarray.Array { return gpuarray.Sort(s.x, 0) },
	"product by a b in chunks":    func(s spanning) *gpuarray.Array { return gpuarray.MatMul(s.x, s.b) },
	"solve for right-hand sides":  func(s spanning) *gpuarray.Array { return gpuarray.Solve(s.m, s.rhs) },
}

// persist returns s's arrays persisted on c.
func (s spanning) persist(t *testing.T, c *cluster.LocalCUDA) spanning {
	t.Helper()
	persist := func(a *gpuarray.Array) *gpuarray.Array {
		p := a.Persist(gpuarray.On(c))
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	return spanning{persist(s.x), persist(s.b), persist(s.m), persist(s.rhs)}
}

// byName returns s's arrays by their names.
func (s spanning) byName() map[string]*gpuarray.Array {
	return map[string]*gpuarray.Array{"x": s.x, "b": s.b, "m": s.m, "rhs": s.rhs}
}

// checkNotCopied checks that the client holds none of s's persisted arrays in its memory
// (their String would show values); what prefixes the errors.
func (s spanning) checkNotCopied(t *testing.T, what string) {
	t.Helper()
	for name, p := range s.byName() {
		if str := p.String(); !strings.HasPrefix(str, "gpuarray.Array<") {
			t.Errorf("%sthe client copied the persisted %s to its memory: %.80s", what, name, str)
		}
	}
}

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
	s := spanning{x, b, m, rhs}
	ps := s.persist(t, c)
	for what, op := range spanOps {
		want, err := op(s).ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatalf("%s inline: %v", what, err)
		}
		got, err := op(ps).ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s on the persisted arrays: %v", what, err)
		}
		if !bitEqual(got, want) {
			t.Errorf("%s on the persisted arrays differs from the inline computation", what)
		}
	}
	ps.checkNotCopied(t, "")
}

// TestPersistedJoinsCountTowardsTheMemoryLimit: a worker joining the parts of kept chunks that
// a task's block spans (plan.Block.RefJoin) fills a buffer as large as the block that the task
// would be sent if the array were in the client's memory, so the memory limit counts it: each
// computation on the persisted arrays runs under the smallest limit that the same computation
// on the arrays in memory runs under, and one byte less is refused, the error naming the join.
// Before, such a block counted 0 bytes.
func TestPersistedJoinsCountTowardsTheMemoryLimit(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	rs := gpuarray.NewRandomState(52)
	inMemory := func(a *gpuarray.Array) *gpuarray.Array {
		v, err := a.Compute(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// m in two row chunks too: a solve reads all of it, a join on the worker.
	m0 := rs.StandardNormal(gpuarray.Shape(120, 120), gpuarray.Chunks(60, 120))
	s := spanning{
		x:   inMemory(rs.StandardNormal(gpuarray.Shape(300, 200), gpuarray.Chunks(100, 100))),
		b:   inMemory(rs.StandardNormal(gpuarray.Shape(200, 30), gpuarray.Chunks(50, 20))),
		m:   inMemory(m0.Add(gpuarray.Eye(120, 120, 0, gpuarray.Chunks(60, 120)).Mul(40))),
		rhs: inMemory(rs.StandardNormal(gpuarray.Shape(120, 3), gpuarray.Chunks(40, 3))),
	}
	ps := s.persist(t, c)
	needs := regexp.MustCompile(`needs (\d+) bytes`)
	for what, op := range spanOps {
		// Summed over the rows, so that the limit bounds the tasks rather than the result.
		run := func(s spanning, limit int64) ([]float64, error) {
			return op(s).Sum(0).ToSlice(gpuarray.On(c), gpuarray.MemoryLimit(limit))
		}
		// The smallest limit the arrays in memory run under: raised to what each refused
		// task needs.
		limit := int64(4096)
		var want []float64
		for {
			var err error
			if want, err = run(s, limit); err == nil {
				break
			}
			m := needs.FindStringSubmatch(err.Error())
			if m == nil {
				t.Fatalf("%s in memory, limit %d: %v", what, limit, err)
			}
			n, _ := strconv.ParseInt(m[1], 10, 64)
			if n <= limit {
				t.Fatalf("%s in memory: a task needing %d bytes refused under a limit of %d", what, n, limit)
			}
			limit = n
		}
		got, err := run(ps, limit)
		if err != nil {
			t.Fatalf("%s on the persisted arrays, under the limit of %d bytes the arrays in memory run under: %v", what, limit, err)
		}
		if !bitEqual(got, want) {
			t.Errorf("%s on the persisted arrays differs from the arrays in memory", what)
		}
		if _, err := run(ps, limit-1); err == nil || !strings.Contains(err.Error(), "memory limit") || !strings.Contains(err.Error(), "to join blocks that span several chunks") {
			t.Errorf("%s on the persisted arrays under a limit of %d bytes, one less than a task needs: error %v, want the memory limit's, naming the join", what, limit-1, err)
		}
	}
	ps.checkNotCopied(t, "")
}
