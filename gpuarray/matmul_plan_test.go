package gpuarray

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestProductTasksGetTheirPanel: a product's tasks are given only the column chunk of b that
// their panel product reads (so a worker is never sent all of b), with its values.
func TestProductTasksGetTheirPanel(t *testing.T) {
	const k, n = 30, 70
	yv := make([]float64, k*n)
	for i := range yv {
		yv[i] = float64(i)
	}
	x := NewRandomState(3).StandardNormal(Shape(50, k), Chunks(20, 10))
	y := FromSlice(yv, Shape(k, n), Chunks(10, 25))
	join := MatMul(x, y).n
	if join.Kind != expr.KConcat || len(join.Args) != 3 {
		t.Fatalf("MatMul of y in 3 column chunks: a %v of %d nodes", join.Kind, len(join.Args))
	}
	for j, p := range join.Args {
		off, w := 25*j, min(25, n-25*j)
		st, err := plan.Lower(0, p, map[*expr.Node]dtype.Slice{}, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) != 3 {
			t.Fatalf("panel %d: %d tasks, want one per row chunk of x", j, len(st.Tasks))
		}
		for _, task := range st.Tasks {
			ops := task.Operands()
			if len(ops) != 1 || ops[0].Len() != k*w {
				t.Fatalf("panel %d: a task's operand holds %d values, want %d x %d", j, ops[0].Len(), k, w)
			}
			got := ops[0].Float64s()
			for r := range k {
				for c := range w {
					if got[r*w+c] != yv[r*n+off+c] {
						t.Fatalf("panel %d: operand (%d, %d) is %v, want y's (%d, %d) = %v", j, r, c, got[r*w+c], r, off+c, yv[r*n+off+c])
					}
				}
			}
		}
	}
}

// TestSubstituteProducts: the products that later work reads (not roots, not panel products
// of a join) are handed to compute once each and the roots rebuilt to read its node, with the
// same values; a nil from compute keeps the graph.
func TestSubstituteProducts(t *testing.T) {
	rs := NewRandomState(4)
	x := rs.StandardNormal(Shape(60, 40), Chunks(20, 10))
	y := rs.StandardNormal(Shape(40, 50), Chunks(10, 20))
	z := rs.StandardNormal(Shape(50, 30), Chunks(20, 30))
	p := MatMul(x, y)
	var asked []*expr.Node
	onCPU := func(n *expr.Node) (*expr.Node, error) {
		asked = append(asked, n)
		c, err := (&Array{n: n}).Compute(Inline())
		if err != nil {
			return nil, err
		}
		return c.n, nil
	}
	cases := []struct {
		name  string
		roots []*Array
		want  []*expr.Node // the nodes compute is asked for
	}{
		{"2 x y - 3 and its sum", []*Array{p.Mul(2).Sub(3), p.Mul(2).Sub(3).Sum()}, []*expr.Node{p.n}},
		{"x y, a root", []*Array{p}, nil},
		{"(x y) z", []*Array{MatMul(p, z)}, []*expr.Node{p.n}},
		{"x y and x y + 1", []*Array{p, p.Add(1)}, nil},
	}
	for _, c := range cases {
		asked = nil
		roots := make([]*expr.Node, len(c.roots))
		for i, r := range c.roots {
			roots[i] = r.n
		}
		got, err := substituteProducts(roots, onCPU)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(asked) != len(c.want) {
			t.Fatalf("%s: asked for %d products, want %d", c.name, len(asked), len(c.want))
		}
		for i := range asked {
			if asked[i] != c.want[i] {
				t.Fatalf("%s: asked for a %v of shape %v, not the product", c.name, asked[i].Kind, asked[i].Shape)
			}
		}
		for i, r := range c.roots {
			if len(c.want) == 0 && got[i] != roots[i] {
				t.Fatalf("%s: root %d rebuilt though nothing was computed", c.name, i)
			}
			want, err := r.ToSlice(Inline())
			if err != nil {
				t.Fatal(err)
			}
			have, err := (&Array{n: got[i]}).ToSlice(Inline())
			if err != nil {
				t.Fatal(err)
			}
			if len(have) != len(want) {
				t.Fatalf("%s: root %d has %d values, want %d", c.name, i, len(have), len(want))
			}
			for j := range want {
				if have[j] != want[j] {
					t.Fatalf("%s: root %d element %d is %v rebuilt, %v before", c.name, i, j, have[j], want[j])
				}
			}
		}
	}
	twice := p.Mul(2)
	same, err := substituteProducts([]*expr.Node{twice.n}, func(*expr.Node) (*expr.Node, error) { return nil, nil })
	if err != nil || same[0] != twice.n {
		t.Fatalf("a product compute declines: the root rebuilt (%v)", err)
	}
}
