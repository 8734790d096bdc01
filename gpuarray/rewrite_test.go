package gpuarray

import (
	"errors"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// graphNodes returns the distinct nodes of root's graph.
func graphNodes(root *expr.Node) map[*expr.Node]bool {
	seen := map[*expr.Node]bool{}
	var walk func(n *expr.Node)
	walk = func(n *expr.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, a := range n.Args {
			walk(a)
		}
	}
	walk(root)
	return seen
}

// TestRewriteGraph checks the walk GPU computes rewrite their graphs with (rewriteGraph, used
// by resolveBincounts and resolveTakes) on a graph with shared subtrees: each node is offered
// once however many nodes read it, nothing below a replaced node is offered, a node read twice
// is rebuilt once (the rebuilt graph has as many nodes as the old one, less the replaced
// subtree, plus the replacement), the given graph is left as it was, the values are those of
// the graph with the replacement, a graph with nothing replaced comes back as it is, and an
// error stops the walk.
func TestRewriteGraph(t *testing.T) {
	x := FromSlice([]float64{1, 2, 3, 4})
	y := FromSlice([]float64{10, 20, 30, 40})
	s := x.Sin()                      // read by m and by r: replaced by y
	m := s.Mul(2)                     // read twice by r
	r := m.Add(m.Neg().Mul(3)).Add(s) // -3*s
	before := graphNodes(r.n)

	offered := map[*expr.Node]int{}
	got, err := rewriteGraph(r.n, func(n *expr.Node) (*expr.Node, error) {
		offered[n]++
		if n == s.n {
			return y.n, nil
		}
		return nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for n, k := range offered {
		if k != 1 {
			t.Errorf("a %v node offered %d times", n.Kind, k)
		}
	}
	if offered[x.n] != 0 {
		t.Error("the node below the replaced one was offered")
	}
	if offered[s.n] != 1 || offered[m.n] != 1 || offered[r.n] != 1 {
		t.Errorf("offered: s %d, m %d, root %d times, want once each", offered[s.n], offered[m.n], offered[r.n])
	}
	if got == r.n {
		t.Fatal("the root was not rebuilt")
	}
	after := graphNodes(got)
	if after[s.n] || after[x.n] || !after[y.n] {
		t.Errorf("rebuilt graph: has s %v, x %v, y %v; want only y", after[s.n], after[x.n], after[y.n])
	}
	if want := len(before) - 2 + 1; len(after) != want {
		t.Errorf("rebuilt graph has %d nodes, want %d (a shared node rebuilt more than once?)", len(after), want)
	}
	if again := graphNodes(r.n); len(again) != len(before) || !again[s.n] || !again[x.n] {
		t.Error("the given graph changed")
	}
	v, err := (&Array{n: got}).Values(Threads(1))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := dtype.Convert(v, dtype.Float64).Float64s(), []float64{-30, -60, -90, -120}; !slices.Equal(g, w) {
		t.Errorf("values %v, want %v", g, w)
	}

	same, err := rewriteGraph(r.n, func(*expr.Node) (*expr.Node, error) { return nil, nil })
	if err != nil || same != r.n {
		t.Errorf("nothing replaced: got a new graph (%v)", err)
	}

	stop := errors.New("stop")
	calls := 0
	if _, err := rewriteGraph(r.n, func(n *expr.Node) (*expr.Node, error) {
		calls++
		if n == m.n {
			return nil, stop
		}
		return nil, nil
	}); !errors.Is(err, stop) {
		t.Errorf("error %v, want %v", err, stop)
	}
	if calls >= len(before) {
		t.Errorf("the walk went on after the error (%d of %d nodes offered)", calls, len(before))
	}
}
