package gpuarray

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// reshapeBlockValues returns the values of a block of a reshape of the array held as g
// (made-up addresses, heldForPlanning) that a task reads: the chunk's host values, or the
// join's copies done on them (plan.JoinValues), row-major over the block.
func reshapeBlockValues(t *testing.T, b *plan.Block, g *gpuChunks) dtype.Slice {
	t.Helper()
	chunk := func(ptr uintptr) int {
		return slices.IndexFunc(g.ptrs, func(q driver.DevicePtr) bool { return uintptr(q) == ptr })
	}
	if b.Held.Join == nil {
		i := chunk(b.Held.Ptr)
		if i < 0 || !slices.Equal(b.Source.Origin, g.offs[i]) || !slices.Equal(b.Source.Shape, g.chunkShape(i)) {
			t.Fatalf("a block at %v of shape %v reads %#x, source %+v: not a chunk of the array", b.Origin, b.Shape, b.Held.Ptr, *b.Source)
		}
		return cutBox(g.host, g.grid.shape, g.offs[i], g.chunkShape(i))
	}
	var vals []dtype.Slice
	for _, p := range b.Held.Join.Pieces {
		i := chunk(p.Ptr)
		if i < 0 || !slices.Equal(p.Origin, g.offs[i]) || !slices.Equal(p.Shape, g.chunkShape(i)) {
			t.Fatalf("a join's piece %+v is no chunk of the array", p)
		}
		vals = append(vals, cutBox(g.host, g.grid.shape, p.Origin, p.Shape))
	}
	v, err := plan.JoinValues(b, vals)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestHeldReshapeReadInPlace: a reshape of an array persisted on a GPU reads the chunks where
// the GPU holds them when each task's block of the reshape is, element for element in
// row-major order, a box of the array (splitting or merging axes within chunks), joined on
// the device where the box spans chunks; the block's values, read as the kernel addresses
// them (the block's box of the reshape, row-major), are the reshape's. Before, every reshape
// of a held array read its host copy (6.6 s for the op table's reshape row on an H100, where
// the regenerated array takes 16.7 ms). Where a task's block is no box of the array, or the
// chunk holding it is no box of the reshape, Path names the host read and why.
func TestHeldReshapeReadInPlace(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	for _, c := range []struct {
		name    string
		chunks  []int
		shape   []int
		rechunk []int // chunks of the reshape, where given
		joins   bool
		why     string // the host read's reason, "" for none
	}{
		{name: "split rows", chunks: []int{10, 30}, shape: []int{20, 2, 30}},
		{name: "split columns", chunks: []int{10, 15}, shape: []int{40, 2, 15}},
		{name: "flatten across chunks", chunks: []int{10, 15}, shape: []int{1200}, joins: true},
		{name: "merge rows", chunks: []int{10, 30}, shape: []int{4, 300}},
		{name: "mixed block", chunks: []int{10, 30}, shape: []int{1200}, rechunk: []int{200}, why: "no box of the (40, 30) array (it starts or ends within a row"},
		{name: "chunk no box", chunks: []int{15, 30}, shape: []int{20, 60}, rechunk: []int{1, 60}, why: "is no box of the reshape to (20, 60)"},
	} {
		x, g := heldForPlanning(t, NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(c.chunks...)), dev, false)
		r := x.Reshape(c.shape...)
		if c.rechunk != nil {
			r = r.Rechunk(c.rechunk...)
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		root := r.Sum(0)
		st, err := plan.Lower(0, root.n, map[*expr.Node]dtype.Slice{}, plan.Options{Held: heldOn(dev)})
		if err != nil {
			t.Fatal(err)
		}
		s := &gpuSched{devs: []*cuda.Device{dev}}
		s.planSteps(st, time.Now())
		if c.why != "" {
			if len(s.host) != 1 || !strings.Contains(s.host[0], c.why) || !strings.Contains(s.host[0], "through a reshape to "+expr.ShapeString(c.shape)) {
				t.Fatalf("%s: host steps %q, want one naming %q", c.name, s.host, c.why)
			}
			continue
		}
		if len(s.host) != 0 || len(st.ReshapeReads) != 0 {
			t.Fatalf("%s: host steps %q", c.name, s.host)
		}
		joined := 0
		for _, task := range st.Tasks {
			if len(task.Inputs) != 1 || task.Inputs[0].Held == nil || task.Inputs[0].Source == nil {
				t.Fatalf("%s: task %d reads %+v, not a held block of the array", c.name, task.Index, task.Inputs)
			}
			b := &task.Inputs[0]
			if b.Held.Join != nil {
				joined++
			}
			// The block is a box of the reshape holding the array's values at the same
			// row-major positions.
			want := cutBox(g.host, c.shape, b.Origin, b.Shape)
			if got := reshapeBlockValues(t, b, g); !dtype.Equal(got, want) {
				t.Fatalf("%s: task %d: the block at %v of shape %v of the reshape does not hold its values", c.name, task.Index, b.Origin, b.Shape)
			}
		}
		if c.joins != (joined > 0) {
			t.Fatalf("%s: %d of %d blocks joined", c.name, joined, len(st.Tasks))
		}
	}
}

// TestHostHeldReshapeReadInPlace: a reshape of an array persisted in host memory reads its
// chunks in place as blocks of the reshape (Block.Source), and the CPU executor, addressing
// them as the reshape's boxes, gives the bits of the same computation regenerating the array.
func TestHostHeldReshapeReadInPlace(t *testing.T) {
	x := NewRandomState(5).StandardNormal(Shape(40, 30), Chunks(10, 15))
	p := x.Persist(Threads(2))
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	for _, f := range []func(*Array) *Array{
		func(a *Array) *Array { return a.Reshape(20, 2, 30).Sum(1) },
		func(a *Array) *Array { return a.Reshape(40, 2, 15).Max(2) },
		func(a *Array) *Array { return a.Reshape(4, 10, 2, 15).Mean(1).Add(a.Reshape(4, 10, 2, 15).Std(1)) },
		func(a *Array) *Array { return a.Reshape(1200).Rechunk(200).Sum() }, // read from the host copy
	} {
		want, err := f(x).Compute(Threads(2))
		if err != nil {
			t.Fatal(err)
		}
		got, err := f(p).Compute(Threads(2))
		if err != nil {
			t.Fatal(err)
		}
		a, _ := want.n.Values()
		b, _ := got.n.Values()
		if !dtype.Equal(a, b) {
			t.Fatalf("%s of the persisted array differs from the regenerated one", expr.ShapeString(got.Shape()))
		}
	}
	st, err := plan.Lower(0, p.Reshape(20, 2, 30).Sum(1).n, map[*expr.Node]dtype.Slice{}, planOptions(&engine.Threads{N: 2}, 0))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range st.Tasks {
		if b := task.Inputs[0]; b.Source == nil || len(st.ReshapeReads) != 0 {
			t.Fatalf("task %d reads a block at %v of shape %v that is no chunk read in place", task.Index, b.Origin, b.Shape)
		}
	}
}

// TestHeldReshapeOnSeveralGPUs: with chunks persisted on two GPUs (OnGPUs), each task of a
// reshape reads its chunk on the GPU holding it, and the scheduler knows the chunk behind each
// block (for a task that must read it from the host or from the other GPU).
func TestHeldReshapeOnSeveralGPUs(t *testing.T) {
	devs := []*cuda.Device{{Info: cuda.DeviceInfo{Index: 0}}, {Info: cuda.DeviceInfo{Index: 1}}}
	x, g := heldForPlanning(t, NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(10, 30)), devs[0], false)
	for i := range g.devs {
		g.devs[i] = devs[i%2] // row chunks dealt round-robin, as OnGPUs deals them
	}
	s := &gpuSched{devs: devs}
	st, err := plan.Lower(0, x.Reshape(20, 2, 30).Sum(1).n, map[*expr.Node]dtype.Slice{}, planOptions(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 4 || len(st.ReshapeReads) != 0 {
		t.Fatalf("%d tasks, reshape reads %+v", len(st.Tasks), st.ReshapeReads)
	}
	for _, task := range st.Tasks {
		b := task.Inputs[0]
		i := task.Index
		if b.Held == nil || b.Held.Join != nil || b.Held.Ptr != uintptr(g.ptrs[i]) || b.Held.Device != i%2 || !slices.Equal(b.Source.Origin, g.offs[i]) {
			t.Fatalf("task %d reads %+v (source %+v), not chunk %d on gpu %d", i, b.Held, b.Source, i, i%2)
		}
		if src, ok := s.sources[*b.Held]; !ok || src.i != i || src.g != g {
			t.Fatalf("task %d: the scheduler's source of its block is %+v", i, src)
		}
	}
}
