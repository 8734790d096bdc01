package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// orderCase is a reduction of a normal array (loc 1, scale 2) over one task of dims (kept axes
// first for partial reductions) read through strides from index 0.
type orderCase struct {
	name    string
	red     Reduce
	kept    int
	rows    bool
	short   bool
	dims    []int64
	strides []int64
	// masked makes the reduced value that of a masked mean, x.Mask(x > 1).Mean(): the sum of
	// where(x > 1, x + 1i, 0), the 1i read from a one-value complex input (a complex batch,
	// two words a value).
	masked bool
}

// orderRun interprets the kernel of c over a random leaf (regenerated) or an input leaf
// reading the same values stored (persisted), and returns its partial words: the partial
// reduction's slots, or for a full reduction each thread's accumulators (the arguments of the
// library's block reduction) in slice and thread order.
func orderRun(t *testing.T, c orderCase, stored bool) []uint64 {
	t.Helper()
	key := rng.Key{K0: 42, K1: 7}
	const base = 1 << 32
	n := int64(1)
	for _, d := range c.dims {
		n *= d
	}
	mem, _ := ptxtest.StoredNormals(key, base, n)
	node := Node{Kind: NRandom, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 2, Key: [2]uint32{key.K0, key.K1}}}
	if stored {
		node = Node{Kind: NInput, DType: expr.Float64}
	}
	s := &Spec{Rank: len(c.dims), Reduce: c.red, Kept: c.kept, Rows: c.rows, Short: c.short, Nodes: []Node{node}}
	task := heldTask(c.dims, []Map{{Strides: c.strides}}, []uint64{base}, []int64{n})
	if c.masked {
		const unit = 1 << 36 // 0 + 1i
		mem[unit], mem[unit+8] = 0, math.Float64bits(1)
		c128 := expr.Complex128
		s.Nodes = append(s.Nodes,
			Node{Kind: NConst, DType: expr.Float64, Value: 1},
			Node{Kind: NBinary, DType: expr.Bool, Op: expr.OpGt, Args: [3]int{0, 1}},
			Node{Kind: NCast, DType: c128, Args: [3]int{0}},
			Node{Kind: NInput, DType: c128, Leaf: 1},
			Node{Kind: NBinary, DType: c128, Op: expr.OpAdd, Args: [3]int{3, 4}},
			Node{Kind: NConst, DType: c128},
			Node{Kind: NWhere, DType: c128, Args: [3]int{2, 5, 6}})
		task = heldTask(c.dims, []Map{{Strides: c.strides}, {Strides: make([]int64, len(c.dims))}}, []uint64{base, unit}, []int64{n, 1})
	}
	if c.kept > 0 {
		words, _, _ := axesRunWords(t, s, task, mem)
		return words
	}
	const out = 1 << 46
	var words []uint64
	for _, blk := range fusedRun(t, s, []Task{task}, mem, out)[0] {
		for _, args := range blk {
			words = append(words, args...)
		}
	}
	if c.masked { // a complex sum's blocks add their threads' sums inline: their sums, in order
		for i := range 2 * Slices(task.Elements()) {
			words = append(words, mem[out+uint64(8*i)])
		}
	}
	return words
}

// orderCases are column and row reductions (the three walks of partial reductions, over one
// axis and over two, where a batch spans rows) and full ones, sums and Welford (means and standard
// deviations), each thread's run long enough to hold several batches of deferred elements.
var orderCases = []orderCase{
	{"column sums", RSum, 1, false, false, []int64{8, 700}, []int64{1, 8}, false},
	{"column Welford", RWelford, 1, false, false, []int64{8, 700}, []int64{1, 8}, false},
	{"sums of 40 columns (a whole warp's and 8)", RSum, 1, false, false, []int64{40, 300}, []int64{1, 40}, false},
	{"row sums", RSum, 1, true, false, []int64{2, 2600}, []int64{2600, 1}, false},
	{"row Welford", RWelford, 1, true, false, []int64{2, 2600}, []int64{2600, 1}, false},
	{"sums over axes 0 and 1 of (30, 40, 4)", RSum, 1, false, false, []int64{4, 30, 40}, []int64{1, 160, 4}, false},
	{"row Welford over axes 1 and 2 of (3, 20, 130)", RWelford, 1, true, false, []int64{3, 20, 130}, []int64{2600, 130, 1}, false},
	{"full sum", RSum, 0, false, false, []int64{20, 1000}, []int64{1000, 1}, false},
	{"full Welford", RWelford, 0, false, false, []int64{20, 1000}, []int64{1000, 1}, false},
	{"masked mean (a complex sum)", RSum, 0, false, false, []int64{20, 1000}, []int64{1000, 1}, true},
	{"masked means of columns", RSum, 1, false, false, []int64{40, 300}, []int64{1, 40}, true},
	{"short column sums of a (3, 2, 300) array over axis 1", RSum, 2, false, true, []int64{3, 300, 2}, []int64{600, 1, 300}, false},
	{"short column Welford of a (3, 2, 300) array over axis 1", RWelford, 2, false, true, []int64{3, 300, 2}, []int64{600, 1, 300}, false},
	{"short sums over axes 0 and 2 of (4, 50, 5)", RSum, 1, false, true, []int64{50, 4, 5}, []int64{5, 250, 1}, false},
}

// TestDeferredReductionsKeepElementOrder interprets the generated kernels of reductions of a
// normal array that defer slow draws (GPUNOTES_PTX_DEFER_AXES for the partial ones) and of the
// same reductions of the array stored, as the CPU draws it (a persisted array): every thread's
// partial has the same bits, so a reduction of a regenerated array equals the same reduction
// of it persisted; for batches of 8, 32 and 64 elements (the last one partial, the full ones
// folded unrolled, or in groups: 64 values, and a masked mean's complex values), for a queue of 2 slow elements (the batch ends when it is full, at other
// elements in each lane), with the slow elements computed by the warp together (where all its
// lanes end a batch at once; the interpreter groups the lanes stopped at the same place) and
// by each lane for its own (where some lanes are done, and GPUNOTES_PTX_DEFER_COOP=0), and as
// coopPays chooses. The
// same kernels folding the deferred values after the others (the fold before element order,
// deferOrdered off) give other bits in some case: the comparison sees the order.
func TestDeferredReductionsKeepElementOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets kernels of 20000 normal draws each")
	}
	defer ptx.SetOptions(ptx.CurrentOptions())
	setPTX(func(o *ptx.Options) { o.DeferAxes = true })
	_, slow := ptxtest.StoredNormals(rng.Key{K0: 42, K1: 7}, 0, 20000)
	if slow < 100 {
		t.Fatalf("%d of 20000 draws leave the fast path: too few to see the order", slow)
	}
	unordered := 0
	for _, c := range orderCases {
		stored := orderRun(t, c, true)
		if c.masked {
			// The imaginary parts count the selected values, exactly.
			n := c.dims[0] * c.dims[1]
			x := make([]float64, n)
			rng.Key{K0: 42, K1: 7}.NormalStrided(x, 0, 1, 1, 2)
			want, got := 0.0, 0.0
			for _, v := range x {
				if v > 1 {
					want++
				}
			}
			for i := 1; i < len(stored); i += 2 {
				got += math.Float64frombits(stored[i])
			}
			if got != want || want == 0 {
				t.Fatalf("%s: the stored kernel counts %v values above 1, want %v", c.name, got, want)
			}
		}
		for _, v := range []struct {
			ordered      bool
			coop         string
			batch, queue int
		}{{true, "", 32, 0}, {true, "all", 8, 0}, {true, "all", 64, 2}, {true, "0", 32, 0}, {true, "0", 64, 2}, {false, "", 32, 0}} {
			setPTX(func(o *ptx.Options) {
				o.DeferOrder, o.DeferCoop, o.DeferBatch, o.DeferQueue = v.ordered, v.coop, v.batch, v.queue
			})
			whole, part := ptxtest.ActiveMasks[true], ptxtest.ActiveMasks[false]
			got := orderRun(t, c, false)
			// Warps end batches together, whole (their lanes compute the slow elements
			// together), and some lanes without the others at the task's end.
			switch together := ptxtest.ActiveMasks[true] > whole; {
			case v.coop == "0" && (together || ptxtest.ActiveMasks[false] > part):
				t.Errorf("%s, GPUNOTES_PTX_DEFER_COOP=0: the kernel asks which lanes are here", c.name)
			case v.coop == "all" && !together && !(c.kept > 0 && !c.rows && c.dims[0] < 32) && !c.short: // a column walk of under 32 columns has no whole warp; a short walk defers nothing
				t.Errorf("%s, GPUNOTES_PTX_DEFER_COOP=all: no whole warp computed slow elements together", c.name)
			}
			if len(got) != len(stored) {
				t.Fatalf("%s: %d partial words regenerated, %d stored", c.name, len(got), len(stored))
			}
			diff := ""
			for i := range got {
				if got[i] != stored[i] {
					diff = fmt.Sprintf("word %d is %v regenerated, %v stored", i, math.Float64frombits(got[i]), math.Float64frombits(stored[i]))
					break
				}
			}
			switch {
			case v.ordered && diff != "":
				t.Errorf("%s, batches of %d, queues of %d, GPUNOTES_PTX_DEFER_COOP=%q: %s", c.name, v.batch, v.queue, v.coop, diff)
			case !v.ordered && diff != "":
				unordered++
			}
		}
	}
	if unordered == 0 {
		t.Error("folding the deferred values last changed no bit of any case: the test does not see the order")
	}
}

// TestMirroredReductionKeepsElementOrder interprets the mirrored sum of x + x.T over a square
// normal x (GPUNOTES_PTX_MIRROR's kernel: element (i, j), i <= j, folds x[i,j] + x[j,i] and,
// off the diagonal, the same at (j, i)) with its slow draws deferred: each thread's sum has
// the bits of adding those values in that order, its elements in their order, as drawn on the
// CPU.
func TestMirroredReductionKeepsElementOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets a kernel of 2 x 14400 normal draws")
	}
	key := rng.Key{K0: 42, K1: 7}
	const n = 120
	mem, _ := ptxtest.StoredNormals(key, 1<<32, n*n)
	x := func(i, j int64) float64 { return math.Float64frombits(mem[1<<32+uint64(8*(i*n+j))]) }
	normal := func(leaf, same int) Node {
		return Node{Kind: NRandom, DType: expr.Float64, Leaf: leaf, SameKey: same, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 2, Key: [2]uint32{key.K0, key.K1}}}
	}
	s := &Spec{Rank: 2, Reduce: RSum, Mirror: []int{0, 1}, Nodes: []Node{normal(0, 0), normal(1, 1), {Kind: NBinary, DType: expr.Float64, Op: expr.OpAdd, Args: [3]int{0, 1}}}}
	task := heldTask([]int64{n, n}, []Map{{Strides: []int64{n, 1}}, {Strides: []int64{1, n}}}, []uint64{0, 0}, []int64{n * n, n * n})
	defer ptx.SetOptions(ptx.CurrentOptions())
	for _, v := range []struct {
		coop   string
		unroll int
	}{{"0", 32}, {"all", 32}, {"all", 0}} { // 0: the batch folded in groups, skipping by its mask
		setPTX(func(o *ptx.Options) { o.DeferCoop, o.FoldUnroll = v.coop, v.unroll })
		mirroredSums(t, s, task, mem, x, n)
	}
}

// mirroredSums checks each thread's sum of TestMirroredReductionKeepsElementOrder's kernel.
func mirroredSums(t *testing.T, s *Spec, task Task, mem map[uint64]uint64, x func(i, j int64) float64, n int64) {
	t.Helper()
	got := fusedRun(t, s, []Task{task}, mem, 1<<46)[0]
	m := n * n
	S := Slices(m)
	for b := range S {
		lo, hi := SliceRange(m, S, b)
		for tid := range BlockSize {
			var acc float64
			for e := lo + int64(tid); e < hi; e += BlockSize {
				i, j := e/n, e%n
				if i > j {
					continue
				}
				acc += x(i, j) + x(j, i)
				if i != j {
					acc += x(j, i) + x(i, j)
				}
			}
			if a := got[b][tid][0]; a != math.Float64bits(acc) {
				t.Fatalf("GPUNOTES_PTX_DEFER_COOP=%s: slice %d thread %d sums %v, want %v", ptx.CurrentOptions().DeferCoop, b, tid, math.Float64frombits(a), acc)
			}
		}
	}
}
