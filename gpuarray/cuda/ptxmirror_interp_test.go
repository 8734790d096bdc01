package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// mirrorTask is one task of a mirrored reduction over an n x n array: the region of rows
// [i0, i0+ri) and columns [j0, j0+rj).
type mirrorTask struct{ i0, j0, ri, rj int64 }

// mirrorTasks cuts an n x n iteration space at the row bounds rb and column bounds cb: tasks
// that straddle the diagonal without being square on it, above it and below it.
func mirrorTasks(n int64, rb, cb []int64) []mirrorTask {
	var ts []mirrorTask
	rb, cb = append(append([]int64{0}, rb...), n), append(append([]int64{0}, cb...), n)
	for a := 0; a+1 < len(rb); a++ {
		for b := 0; b+1 < len(cb); b++ {
			ts = append(ts, mirrorTask{rb[a], cb[b], rb[a+1] - rb[a], cb[b+1] - cb[b]})
		}
	}
	return ts
}

// mirrorRun interprets the mirrored reduction red of x*x.T + x over the tasks of an n x n
// normal array (key, loc 1, scale 2): regenerated (random leaves at the array's indices), or
// stored (input leaves, each task reading its own copy of its region of x and of the mirrored
// region, row-major from index 0, placed against the diagonal by Task.MirrorBase, plus shift
// to see that the test sees the placement), each task walked in strips of up to strip columns
// (mirrorStrips, a rank-3 spec) when strip > 0. It returns each task's per-thread partial words.
func mirrorRun(t *testing.T, red Reduce, key rng.Key, x []float64, n int64, tasks []mirrorTask, stored bool, shift, strip int64) [][][][]uint64 {
	t.Helper()
	leaf := func(l int) Node {
		if stored {
			return Node{Kind: NInput, DType: expr.Float64, Leaf: l}
		}
		return Node{Kind: NRandom, DType: expr.Float64, Leaf: l, SameKey: l, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 2, Key: [2]uint32{key.K0, key.K1}}}
	}
	s := &Spec{Rank: 2, Reduce: red, Mirror: []int{0, 1}, Nodes: []Node{leaf(0), leaf(1),
		{Kind: NBinary, DType: expr.Float64, Op: expr.OpMul, Args: [3]int{0, 1}},
		{Kind: NBinary, DType: expr.Float64, Op: expr.OpAdd, Args: [3]int{2, 0}}}}
	if strip > 0 {
		s.Rank = 3
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	mem := map[uint64]uint64{}
	ptxtest.ZigTables(mem)
	var ts []Task
	next := uint64(1 << 32)
	for _, m := range tasks {
		dims := []int64{m.ri, m.rj}
		if !stored {
			ts = append(ts, Task{Dims: dims, Maps: []Map{{Off: m.i0*n + m.j0, Strides: []int64{n, 1}}, {Off: m.j0*n + m.i0, Strides: []int64{1, n}}}})
			continue
		}
		// The task's block of x and the mirrored block, as a GPU holds persisted chunks.
		a, b := next, next+uint64(8*m.ri*m.rj)
		next = b + uint64(8*m.ri*m.rj) + 1<<20
		for i := range m.ri {
			for j := range m.rj {
				mem[a+uint64(8*(i*m.rj+j))] = math.Float64bits(x[(m.i0+i)*n+m.j0+j])
			}
		}
		for j := range m.rj {
			for i := range m.ri {
				mem[b+uint64(8*(j*m.ri+i))] = math.Float64bits(x[(m.j0+j)*n+m.i0+i])
			}
		}
		task := heldTask(dims, []Map{{Strides: []int64{m.rj, 1}}, {Strides: []int64{1, m.ri}}}, []uint64{a, b}, []int64{m.ri * m.rj, m.ri * m.rj})
		task.MirrorBase = m.i0 - m.j0 + shift
		ts = append(ts, task)
	}
	if strip > 0 {
		for i := range ts {
			ts[i] = mirrorStrips(ts[i], strip)
		}
	}
	return fusedRun(t, s, ts, mem, 1<<46)
}

// TestMirroredStoredReadSharesTheOrder interprets the mirrored reduction of x*x.T + x over a
// square normal x twice: regenerated (GPUNOTES_PTX_MIRROR's kernel, drawing both normals of an
// element and deferring slow draws) and reading x stored, as a GPU holds it persisted, one
// block of x and the mirrored block per task. Each task adds, in each thread, for each of its
// elements (i, j) in the thread's order with i <= j, the value at (i, j) and then, off the
// diagonal, the value at (j, i); elements with i > j add nothing. The sums follow that order
// exactly (a Go reference over the CPU's draws), and every thread's partial, sums and Welford
// states, has the same bits regenerated and stored, over tasks above, below and across the
// diagonal, square on it or not: the mirrored reduction of a persisted array equals the
// regenerated one's; also with each task walked in strips of columns (GPUNOTES_PTX_MIRROR_STRIP,
// mirrorStrips: here two strips a task, of 32 or 36 columns). The stored kernel placed one row
// off the diagonal gives other bits.
func TestMirroredStoredReadSharesTheOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets kernels of 2 x 40000 normal draws")
	}
	key := rng.Key{K0: 42, K1: 7}
	const n = 200
	x := make([]float64, n*n)
	key.NormalStrided(x, 0, 1, 1, 2)
	tasks := mirrorTasks(n, []int64{50, 130}, []int64{64, 136})
	for _, v := range []struct {
		red   Reduce
		strip int64
	}{{RSum, 0}, {RWelford, 0}, {RSum, 40}, {RWelford, 40}} {
		red := v.red
		gen := mirrorRun(t, red, key, x, n, tasks, false, 0, v.strip)
		held := mirrorRun(t, red, key, x, n, tasks, true, 0, v.strip)
		words := 0
		for ti, m := range tasks {
			for b := range gen[ti] {
				for tid := range gen[ti][b] {
					g, h := gen[ti][b][tid], held[ti][b][tid]
					if fmt.Sprint(g) != fmt.Sprint(h) {
						t.Fatalf("%v, strips of %d, task %+v, slice %d, thread %d: regenerated %v, stored %v", red, v.strip, m, b, tid, g, h)
					}
					words += len(g)
				}
			}
			if red != RSum {
				continue
			}
			// The order: each thread's elements lo+tid, lo+tid+256, … of its slice, row-major
			// over the task's dims: (i, j), or in strips (s, i, c) at column s*W + c.
			val := func(i, j int64) float64 { return x[i*n+j]*x[j*n+i] + x[i*n+j] }
			W := m.rj
			if v.strip > 0 {
				W = mirrorStrips(Task{Dims: []int64{m.ri, m.rj}, Maps: []Map{{Strides: []int64{0, 0}}}}, v.strip).Dims[2]
				if m.rj >= 64 && W == m.rj {
					t.Fatalf("task %+v: one strip of %d columns", m, W)
				}
			}
			mm := m.ri * m.rj
			S := Slices(mm)
			for b := range S {
				lo, hi := SliceRange(mm, S, b)
				for tid := range BlockSize {
					var acc float64
					for e := lo + int64(tid); e < hi; e += BlockSize {
						s, r := e/(m.ri*W), e%(m.ri*W)
						i, j := m.i0+r/W, m.j0+s*W+r%W
						if i > j {
							continue
						}
						acc += val(i, j)
						if i != j {
							acc += val(j, i)
						}
					}
					if got := gen[ti][b][tid][0]; got != math.Float64bits(acc) {
						t.Fatalf("strips of %d, task %+v, slice %d, thread %d: sum %v, want %v", v.strip, m, b, tid, math.Float64frombits(got), acc)
					}
				}
			}
		}
		if words == 0 {
			t.Fatalf("%v: no partial words", red)
		}
	}
	// Placed one row off, the stored kernel adds other elements (or the same in other turns).
	off := mirrorRun(t, RSum, key, x, n, tasks, true, 1, 0)
	held := mirrorRun(t, RSum, key, x, n, tasks, true, 0, 0)
	if fmt.Sprint(off) == fmt.Sprint(held) {
		t.Error("the stored kernel placed one row off the diagonal gives the same bits: the test does not see the placement")
	}
}
