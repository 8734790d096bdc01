package ptxtest

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
	"github.com/gpunotes/gpunotes/kernels"
)

// Map is how a leaf is indexed from a task's iteration index: Off + sum_k Strides[k]*i_k (the
// runtime's cuda.Map).
type Map struct {
	Off     int64
	Strides []int64
}

// Task is one chunk of work of a fused kernel as its descriptor gives it: the iteration space,
// one Map per leaf, the byte address in the interpreter's memory of each input leaf's data
// (Held[leaf], 0 for random leaves) and, for a mirrored spec of stored inputs, the task's
// place against the diagonal (the runtime's Task.MirrorBase).
type Task struct {
	Dims       []int64
	Maps       []Map
	Held       []uint64
	MirrorBase int64
}

// Elements returns the task's element count.
func (t *Task) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// HeldTask builds a task of dims whose leaves read buffers held at bases (addresses in the
// interpreter's memory) through maps.
func HeldTask(dims []int64, maps []Map, bases []uint64) Task {
	return Task{Dims: dims, Maps: maps, Held: slices.Clone(bases)}
}

// Library returns the device library's PTX (package kernels, sm_90) that kernels are generated
// against.
func Library() (string, error) {
	lib, err := kernels.LibPTX(kernels.SM90)
	return string(lib), err
}

// Fused interprets spec s's kernel (generated against the real device library) over tasks
// whose inputs lie in mem, as the runtime launches it (one launch, ptx.Slices blocks per
// task, each task's descriptor as ptx.SpecDescWords lays it out), with the output at out. It
// returns each task's per-thread library-call arguments by [task][slice][thread].
func Fused(tb testing.TB, s *ptx.Spec, tasks []Task, mem map[uint64]uint64, out uint64) [][][][]uint64 {
	tb.Helper()
	lib, err := Library()
	if err != nil {
		tb.Fatal(err)
	}
	text, _, err := ptx.GeneratePTX(s, lib)
	if err != nil {
		tb.Fatal(err)
	}
	p := Parse(tb, text)
	R, L := s.Rank, s.Leaves()
	W := ptx.SpecDescWords(s)
	const desc = 1 << 44
	elems := make([]int64, len(tasks))
	for i := range tasks {
		elems[i] = tasks[i].Elements()
	}
	padded := slices.Clone(elems)
	if s.NarrowOut { // as the runtime: each task's elements from a multiple of 8 bytes' elements
		a := int64(8 / s.Nodes[len(s.Nodes)-1].DType.Size())
		for i := range padded {
			padded[i] = (padded[i] + a - 1) / a * a
		}
	}
	_, offs, err := ptx.PlanLaunches(padded, s.Reduce, 0)
	if err != nil {
		tb.Fatal(err)
	}
	keys := RandomKeys(s)
	got := make([][][][]uint64, len(tasks))
	for ti, task := range tasks {
		w := make([]uint64, W)
		for j, d := range task.Dims {
			w[j] = uint64(d)
		}
		w[R], w[R+1] = uint64(ptx.Slices(elems[ti])), uint64(offs[ti])
		for l := range L {
			b := w[R+2+l*(R+2):]
			b[0], b[1] = LeafWord(keys, task.Held, l), uint64(task.Maps[l].Off)
			for j, st := range task.Maps[l].Strides {
				b[2+j] = uint64(st)
			}
		}
		if s.StoredMirror() {
			w[W-1] = uint64(task.MirrorBase)
		}
		for j, v := range w {
			mem[desc+uint64(ti*W*8+8*j)] = v
		}
	}
	params := map[string]uint64{"desc": desc, "out": out}
	for i, l := range ptx.KeyLeaves(s) {
		params["key"+strconv.Itoa(i)] = keys[l]
	}
	for ti := range tasks {
		got[ti] = make([][][]uint64, ptx.Slices(elems[ti]))
		for b := range got[ti] {
			got[ti][b] = make([][]uint64, ptx.BlockSize)
			Run(tb, p, b, ti, params, mem, func(tid int, name string, args []uint64) {
				got[ti][b][tid] = args
			})
		}
	}
	return got
}

// RandomKeys maps each random leaf of s to the Philox key that its first descriptor word (or
// key parameter) holds: k0 the low word, k1 the high one, as the runtime writes it.
func RandomKeys(s *ptx.Spec) map[int]uint64 {
	keys := map[int]uint64{}
	for _, nd := range s.Nodes {
		if nd.Kind == ptx.NRandom {
			keys[nd.Leaf] = uint64(nd.Rand.Key[0]) | uint64(nd.Rand.Key[1])<<32
		}
	}
	return keys
}

// LeafWord is the first descriptor word of leaf l: a random leaf's Philox key (keys, from
// RandomKeys), another leaf's buffer address (held[l]).
func LeafWord(keys map[int]uint64, held []uint64, l int) uint64 {
	if k, ok := keys[l]; ok {
		return k
	}
	return held[l]
}

// StoredNormals returns memory holding the normals of key at indices [0, n) as the CPU draws
// them (rng's NormalStrided: a persisted array's data), from byte address base, and the
// ziggurat tables (ZigTables); and how many of the draws leave the ziggurat's fast path.
func StoredNormals(key rng.Key, base uint64, n int64) (map[uint64]uint64, int) {
	mem := map[uint64]uint64{}
	ZigTables(mem)
	x := make([]float64, n)
	key.NormalStrided(x, 0, 1, 1, 2)
	z := rng.ZigguratTables()
	slow := 0
	for i, v := range x {
		mem[base+uint64(8*i)] = math.Float64bits(v)
		x0, x1, x2, _ := key.Block(uint64(i), 0)
		if (uint64(x1)<<32|uint64(x0))>>11 >= z.K[x2&255] {
			slow++
		}
	}
	return mem, slow
}
