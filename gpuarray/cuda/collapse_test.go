package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// sourceIndex is leaf l's source index at element e (row-major over t.Dims) of task t.
func sourceIndex(t *Task, l int, e int64) int64 {
	m := t.Maps[l]
	idx := m.Off
	for k := len(t.Dims) - 1; k >= 0; k-- {
		idx += m.Strides[k] * (e % t.Dims[k])
		e /= t.Dims[k]
	}
	return idx
}

// TestCollapsedKeepsEveryIndex: merging dims keeps the rank, the element count and, for every
// element in row-major order, every leaf's source index; whole contiguous chunks become one run.
func TestCollapsedKeepsEveryIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	merged := 0
	for trial := range 2000 {
		R := 1 + r.IntN(4)
		dims := make([]int64, R)
		for k := range dims {
			dims[k] = int64(1 + r.IntN(5))
			if r.IntN(4) == 0 {
				dims[k] = 1
			}
		}
		L := 1 + r.IntN(3)
		task := Task{Dims: dims}
		for range L {
			// A row-major layout of a larger array (a slice of it), transposed or not, or
			// broadcast along some dims.
			full := make([]int64, R)
			for k := range full {
				full[k] = dims[k] + int64(r.IntN(2)*r.IntN(3))
			}
			st := make([]int64, R)
			acc := int64(1)
			order := r.Perm(R)
			if r.IntN(2) == 0 {
				slices.Sort(order)
				slices.Reverse(order) // row-major
			}
			for _, k := range order {
				st[k] = acc
				acc *= full[k]
			}
			for k := range st {
				if r.IntN(6) == 0 {
					st[k] = 0
				}
			}
			task.Maps = append(task.Maps, Map{Off: int64(r.IntN(7)), Strides: st})
		}
		c := collapsed(task)
		if len(c.Dims) != R || c.Elements() != task.Elements() {
			t.Fatalf("trial %d: dims %v -> %v", trial, task.Dims, c.Dims)
		}
		for l := range task.Maps {
			for e := range task.Elements() {
				if a, b := sourceIndex(&task, l, e), sourceIndex(&c, l, e); a != b {
					t.Fatalf("trial %d: dims %v maps %v -> dims %v maps %v: leaf %d element %d at %d, was %d", trial, task.Dims, task.Maps, c.Dims, c.Maps, l, e, b, a)
				}
			}
		}
		if !slices.Equal(c.Dims, task.Dims) {
			merged++
		}
	}
	if merged < 100 {
		t.Errorf("only %d of 2000 tasks merged any dims", merged)
	}
	// A whole chunk of a row-major array, and a transposed read that cannot merge.
	whole := Task{Dims: []int64{3, 4, 5}, Maps: []Map{{Off: 7, Strides: []int64{20, 5, 1}}}}
	if c := collapsed(whole); !slices.Equal(c.Dims, []int64{1, 1, 60}) || !slices.Equal(c.Maps[0].Strides, []int64{0, 0, 1}) || c.Maps[0].Off != 7 {
		t.Errorf("whole chunk: %v %v", c.Dims, c.Maps)
	}
	tr := Task{Dims: []int64{4, 5}, Maps: []Map{{Strides: []int64{5, 1}}, {Strides: []int64{1, 4}}}}
	if c := collapsed(tr); !slices.Equal(c.Dims, tr.Dims) {
		t.Errorf("transposed leaf merged: %v %v", c.Dims, c.Maps)
	}
	if whole.Maps[0].Strides[0] != 20 {
		t.Errorf("collapsed changed its argument's maps")
	}
}
