package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// setPTX changes the generator's options (ptx.SetOptions) by f; the test restores them.
func setPTX(f func(o *ptx.Options)) {
	o := ptx.CurrentOptions()
	f(&o)
	ptx.SetOptions(o)
}

// fusedRun interprets spec s's kernel over tasks whose inputs lie in mem (task.Held pointers),
// as Device.run launches it (ptxtest.Fused), with the output at out. It returns each task's
// per-thread library-call arguments by [task][slice][thread].
func fusedRun(t *testing.T, s *Spec, tasks []Task, mem map[uint64]uint64, out uint64) [][][][]uint64 {
	t.Helper()
	return ptxtest.Fused(t, s, interpTasks(tasks), mem, out)
}

// interpTasks are tasks as the interpreter's descriptors give them.
func interpTasks(tasks []Task) []ptxtest.Task {
	its := make([]ptxtest.Task, len(tasks))
	for i, tk := range tasks {
		it := ptxtest.Task{Dims: tk.Dims, MirrorBase: tk.MirrorBase}
		for _, m := range tk.Maps {
			it.Maps = append(it.Maps, ptxtest.Map{Off: m.Off, Strides: m.Strides})
		}
		for _, h := range tk.Held {
			it.Held = append(it.Held, uint64(h.Ptr))
		}
		its[i] = it
	}
	return its
}

// leafWord is the first descriptor word of leaf l of a task of s: a random leaf's Philox key,
// another leaf's buffer address (task.Held).
func leafWord(s *Spec, task *Task, l int) uint64 {
	if k, ok := randomKeys(s)[l]; ok {
		return k
	}
	return uint64(task.Held[l].Ptr)
}

// heldTask builds a task of dims whose leaves read buffers held at bases (device addresses of
// the interpreter's memory) of lens elements through maps.
func heldTask(dims []int64, maps []Map, bases []uint64, lens []int64) Task {
	t := Task{Dims: dims, Maps: maps}
	for l := range maps {
		t.Held = append(t.Held, HeldInput{Ptr: driver.DevicePtr(bases[l]), Len: lens[l]})
	}
	return t
}

// TestUnrolledKernelKeepsElementOrder interprets the fused kernel of an input sum (and a
// Welford reduction) on the host: every thread accumulates the elements lo+tid, lo+tid+256, …
// of its slice in that order, as the kernel did before passes of four elements, so the bits
// are those of one element per pass; dims with row ends inside the passes, several slices,
// strided and offset reads, and merged dims (collapsed) included.
func TestUnrolledKernelKeepsElementOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	cases := []struct {
		dims    []int64
		strides []int64
		off     int64
	}{
		{[]int64{37, 300}, []int64{300, 1}, 0},
		{[]int64{5, 1000}, []int64{2003, 2}, 7},
		{[]int64{3, 30001}, []int64{30001, 1}, 0},
		{[]int64{1, 70001}, []int64{0, 1}, 3},
		{[]int64{4, 3, 257}, []int64{771, 257, 1}, 0},
	}
	for _, red := range []Reduce{RSum, RWelford} {
		for ci, c := range cases {
			s := &Spec{Rank: len(c.dims), Reduce: red, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
			task := heldTask(c.dims, []Map{{Off: c.off, Strides: c.strides}}, []uint64{1 << 32}, []int64{1 << 40})
			mem := map[uint64]uint64{}
			// Values at every index the map reaches, of varied magnitudes (the order shows).
			x := func(idx int64) float64 { return math.Float64frombits(mem[1<<32+uint64(idx)*8]) }
			m := task.Elements()
			for e := range m {
				idx := sourceIndex(&task, 0, e)
				mem[1<<32+uint64(idx)*8] = math.Float64bits(math.Ldexp(r.Float64()-0.3, r.IntN(40)-20))
			}
			for _, tk := range []Task{task, collapsed(task)} {
				got := fusedRun(t, s, []Task{tk}, mem, 1<<46)
				S := Slices(m)
				for b := range S {
					lo, hi := SliceRange(m, S, b)
					for tid := range BlockSize {
						var acc, wn, wm, wq float64
						for e := lo + int64(tid); e < hi; e += BlockSize {
							v := x(sourceIndex(&task, 0, e))
							acc += v
							wn++
							d := v - wm
							wm += d / wn
							wq += d * (v - wm)
						}
						args := got[0][b][tid]
						switch red {
						case RSum:
							if args[0] != math.Float64bits(acc) {
								t.Fatalf("case %d dims %v: slice %d thread %d sums %v, want %v", ci, tk.Dims, b, tid, math.Float64frombits(args[0]), acc)
							}
						case RWelford:
							if args[0] != math.Float64bits(wn) || args[1] != math.Float64bits(wm) || args[2] != math.Float64bits(wq) {
								t.Fatalf("case %d dims %v: slice %d thread %d Welford (%v, %v, %v), want (%v, %v, %v)", ci, tk.Dims, b, tid,
									math.Float64frombits(args[0]), math.Float64frombits(args[1]), math.Float64frombits(args[2]), wn, wm, wq)
							}
						}
					}
				}
			}
		}
	}
}

// TestTiledKernelReadsEveryElementOnce interprets tiled kernels (Spec.Tile) on the host: an
// elementwise a + b.T writes every element of the result exactly (edges of tiles, a 3-d
// iteration space, two tasks), and a tiled sum of integer values over several slices adds
// every element once (the threads' partials total the exact sum).
func TestTiledKernelReadsEveryElementOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for ci, dims := range [][]int64{{45, 70}, {2, 33, 40}, {260, 270}} {
		R := len(dims)
		rows, cols := dims[R-2], dims[R-1]
		outer := int64(1)
		for _, d := range dims[:R-2] {
			outer *= d
		}
		// a: row-major dims; b: row-major (outer, cols, rows), read transposed.
		const aBase, bBase, out = 1 << 32, 1 << 36, 1 << 46
		n := outer * rows * cols
		mem := map[uint64]uint64{}
		for i := range n {
			mem[aBase+uint64(8*i)] = math.Float64bits(float64(r.IntN(1000) - 500))
			mem[bBase+uint64(8*i)] = math.Float64bits(float64(r.IntN(1000) - 500))
		}
		as, bs := make([]int64, R), make([]int64, R)
		as[R-1], as[R-2], bs[R-2], bs[R-1] = 1, cols, 1, rows
		for k := R - 3; k >= 0; k-- {
			as[k] = as[k+1] * dims[k+1]
			if k == R-3 {
				as[k] = rows * cols
			}
			bs[k] = as[k]
		}
		task := heldTask(dims, []Map{{Strides: as}, {Strides: bs}}, []uint64{aBase, bBase}, []int64{n, n})
		want := func(e int64) float64 {
			return math.Float64frombits(mem[aBase+uint64(8*sourceIndex(&task, 0, e))]) + math.Float64frombits(mem[bBase+uint64(8*sourceIndex(&task, 1, e))])
		}
		nodes := []Node{{Kind: NInput, DType: expr.Float64}, {Kind: NInput, DType: expr.Float64, Leaf: 1, Transposed: true}, {Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}}}
		if n <= 1<<14 {
			s := &Spec{Rank: R, Reduce: RNone, Tile: true, Nodes: nodes}
			for e := range 2 * n {
				mem[out+uint64(8*e)] = poisonBits
			}
			fusedRun(t, s, []Task{task, task}, mem, out)
			for k := range int64(2) {
				for e := range n {
					if got := math.Float64frombits(mem[out+uint64(8*(k*n+e))]); got != want(e) {
						t.Fatalf("case %d, task %d: element %d is %v, want %v", ci, k, e, got, want(e))
					}
				}
			}
		}
		s := &Spec{Rank: R, Reduce: RSum, Tile: true, Nodes: nodes}
		got := fusedRun(t, s, []Task{task}, mem, out)
		var sum, exact float64
		for _, blk := range got[0] {
			for _, args := range blk {
				sum += math.Float64frombits(args[0])
			}
		}
		for e := range n {
			exact += want(e)
		}
		if sum != exact || len(got[0]) != Slices(n) {
			t.Fatalf("case %d: tiled sum %v over %d slices, want %v over %d", ci, sum, len(got[0]), exact, Slices(n))
		}
	}
}
