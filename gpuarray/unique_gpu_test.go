package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// masksIn returns the mask nodes of n's graph, each once.
func masksIn(n *expr.Node) []*expr.Node {
	var out []*expr.Node
	seen := map[*expr.Node]bool{}
	var walk func(n *expr.Node)
	walk = func(n *expr.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if n.Kind == expr.KMask {
			out = append(out, n)
		}
		for _, a := range n.Args {
			walk(a)
		}
	}
	walk(n)
	return out
}

// TestUniqueMasksSelectOnDevice (planning, no GPU): every mask of the unique family's outputs
// (UniqueValues' values, UniqueCounts' counts from the runs' first and last positions,
// UniqueAll's first indices) is selected with run boundaries marked on the device
// (uniqueCompacts), where the general compaction refuses it (its mask's chunks are not the
// sorted values'); a mask not made by the family is not.
func TestUniqueMasksSelectOnDevice(t *testing.T) {
	rs := NewRandomState(7)
	x := rs.Integers(0, 50, Shape(300, 40), Chunks(100, 40))
	f := rs.StandardNormal(Shape(5000), Chunks(1200)).AsType(Float32)
	values, counts := UniqueCounts(x)
	_, indices, _, allCounts := UniqueAll(f)
	for _, c := range []struct {
		name  string
		a     *Array
		masks int
	}{
		{"UniqueValues of int64", UniqueValues(x), 1},
		{"UniqueCounts' values", values, 1},
		{"UniqueCounts' counts", counts, 2},
		{"UniqueAll's indices", indices, 1},
		{"UniqueAll's counts", allCounts, 2},
	} {
		if err := c.a.Err(); err != nil {
			t.Fatal(err)
		}
		ms := masksIn(c.a.n)
		if len(ms) != c.masks {
			t.Fatalf("%s: %d masks in the graph, want %d", c.name, len(ms), c.masks)
		}
		for _, m := range ms {
			if why := uniqueCompacts(m); why != "" {
				t.Errorf("%s: not selected on the device: %s", c.name, why)
			}
			if why := maskCompacts(m); !strings.Contains(why, "chunks") {
				t.Errorf("%s: the general compaction says %q, want the chunks' reason", c.name, why)
			}
		}
	}
	other := x.Mask(x.Gt(3))
	if why := uniqueCompacts(other.n); why != "not a mask of the unique family" {
		t.Errorf("a mask not of the unique family: %q", why)
	}
}
