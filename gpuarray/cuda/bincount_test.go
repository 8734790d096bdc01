package cuda

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// countInputSpec is the counting kernel of an input leaf's values into bins counters.
func countInputSpec(bins int) *Spec {
	return &Spec{Rank: 1, Reduce: RCount, Bins: bins, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
}

// TestGPUBincountMatchesHost: the counting kernel, with a copy of the counters per warp in
// shared memory (few bins), one copy (more) and atomics in device memory (many), counts random
// values of several tasks as a loop on the host does, and flags values that are not integers
// in range.
func TestGPUBincountMatchesHost(t *testing.T) {
	d := gpu(t)
	rs := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		n     int
		nbins int
	}{{1, 1}, {1000, 7}, {3_000_001, 100}, {2_000_000, ptx.MaxSharedBins / 8}, {2_000_000, ptx.MaxSharedBins}, {500_000, ptx.MaxSharedBins + 1}, {100_000, 100_000}} {
		var tasks []Task
		var want [][]int64
		for _, n := range []int{tc.n, tc.n / 3, 0} {
			vals := make([]float64, n)
			w := make([]int64, tc.nbins)
			for i := range vals {
				k := rs.IntN(tc.nbins)
				if rs.IntN(3) == 0 {
					k = rs.IntN(1 + tc.nbins/10) // crowd the first bins
				}
				vals[i] = float64(k)
				w[k]++
			}
			tasks = append(tasks, Task{Dims: []int64{int64(n)}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{vals}})
			want = append(want, w)
		}
		got, err := d.Count(context.Background(), countInputSpec(tc.nbins), tasks)
		if err != nil {
			t.Fatalf("%d values into %d bins: %v", tc.n, tc.nbins, err)
		}
		for i := range want {
			for k := range want[i] {
				if got[i][k] != want[i][k] {
					t.Fatalf("task %d, %d values into %d bins: bin %d holds %d, want %d", i, tc.n, tc.nbins, k, got[i][k], want[i][k])
				}
			}
		}
	}
	for _, bad := range []struct {
		v    float64
		want string
	}{{-1, "negative"}, {2.5, "not an integer"}, {9, "not below the length 9"}, {math.NaN(), "not an integer"}} {
		task := Task{Dims: []int64{4}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{{1, 2, bad.v, 3}}}
		_, err := d.Count(context.Background(), countInputSpec(9), []Task{task})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("value %v: error %v, want one saying %q", bad.v, err, bad.want)
		}
	}
}

// TestCountKernelInterpreted interprets counting kernels on the host (the interpreter of
// package ptx/ptxtest): two tasks of several slices each, one read through a strided 2-d map,
// counted with per-warp copies of the counters, one copy, and atomics in device memory,
// give the counts of a loop on the host bit for bit; a value out of range sets the flag.
func TestCountKernelInterpreted(t *testing.T) {
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	const base, out = 1 << 32, 1 << 46
	for _, bins := range []int{7, 2000, ptx.MaxSharedBins + 5} {
		if want := map[int]int{7: 8, 2000: 1, ptx.MaxSharedBins + 5: 0}[bins]; ptx.CountCopies(bins) != want {
			t.Fatalf("%d bins: %d copies, want %d", bins, ptx.CountCopies(bins), want)
		}
		tasks := []Task{
			heldTask([]int64{1, 70001}, []Map{{Off: 3, Strides: []int64{0, 1}}}, []uint64{base}, []int64{1 << 40}),
			heldTask([]int64{50, 1500}, []Map{{Off: 0, Strides: []int64{1700, 1}}}, []uint64{base}, []int64{1 << 40}),
		}
		s := &Spec{Rank: 2, Reduce: RCount, Bins: bins, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
		mem := map[uint64]uint64{}
		want := make([][]int64, len(tasks))
		for ti := range tasks {
			want[ti] = make([]int64, bins)
			for e := range tasks[ti].Elements() {
				idx := sourceIndex(&tasks[ti], 0, e)
				k := r.IntN(bins)
				if r.IntN(2) == 0 {
					k = r.IntN(min(bins, 5)) // contention on a few bins
				}
				mem[base+uint64(idx)*8] = math.Float64bits(float64(k))
			}
		}
		for ti := range tasks { // values read twice by a map count twice: count after writing
			for e := range tasks[ti].Elements() {
				want[ti][int(math.Float64frombits(mem[base+uint64(sourceIndex(&tasks[ti], 0, e))*8]))]++
			}
		}
		got := countRun(t, lib, s, tasks, mem, out)
		for ti := range tasks {
			if got[ti][bins] != 0 {
				t.Fatalf("%d bins, task %d: flag set for value %v", bins, ti, math.Float64frombits(got[ti][bins+1]))
			}
			for k := range bins {
				if int64(got[ti][k]) != want[ti][k] {
					t.Fatalf("%d bins, task %d: bin %d holds %d, want %d", bins, ti, k, int64(got[ti][k]), want[ti][k])
				}
			}
		}
		// One value out of range in the second task: its flag and value, the first task's
		// counts unchanged.
		bad := sourceIndex(&tasks[1], 0, tasks[1].Elements()-1) // beyond what the first task reads
		mem[base+uint64(bad)*8] = math.Float64bits(float64(bins))
		got = countRun(t, lib, s, tasks, mem, out)
		if got[1][bins] != 1 || math.Float64frombits(got[1][bins+1]) != float64(bins) || got[0][bins] != 0 {
			t.Fatalf("%d bins: flags %d, %d and value %v after a value of %d", bins, got[0][bins], got[1][bins], math.Float64frombits(got[1][bins+1]), bins)
		}
		e := &CountError{Task: 1, Value: float64(bins), Bins: bins}
		var ce *CountError
		if !errors.As(error(e), &ce) || !strings.Contains(e.Error(), "not below the length") {
			t.Fatalf("CountError %v", e)
		}
	}
}

// countRun interprets counting kernel s over tasks as Device.Count launches it (task k's
// Bins+2 output words from out+8*k*(Bins+2), zeroed first) and returns each task's words.
func countRun(t *testing.T, lib string, s *Spec, tasks []Task, mem map[uint64]uint64, out uint64) [][]uint64 {
	t.Helper()
	text, _, err := GeneratePTX(s, lib)
	if err != nil {
		t.Fatal(err)
	}
	if c := ptx.CountCopies(s.Bins); (c > 0) != strings.Contains(text, "red.shared.add.u32") || !strings.Contains(text, "st.global.f64 [%rd") {
		t.Fatalf("%d bins (%d copies): the kernel counts elsewhere:\n%s", s.Bins, c, text)
	}
	p := ptxtest.Parse(t, text)
	R, L := s.Rank, s.Leaves()
	W := ptx.DescWords(R, L)
	const desc = 1 << 44
	per := s.Bins + 2
	for ti, task := range tasks {
		w := make([]uint64, W)
		for j, d := range task.Dims {
			w[j] = uint64(d)
		}
		w[R], w[R+1] = uint64(Slices(task.Elements())), uint64(ti*per)
		for l := range L {
			b := w[R+2+l*(R+2):]
			b[0], b[1] = leafWord(s, &task, l), uint64(task.Maps[l].Off)
			for j, st := range task.Maps[l].Strides {
				b[2+j] = uint64(st)
			}
		}
		for j, v := range w {
			mem[desc+uint64(ti*W*8+8*j)] = v
		}
		for k := range per {
			mem[out+uint64(8*(ti*per+k))] = 0
		}
	}
	params := map[string]uint64{"desc": desc, "out": out}
	for i, l := range ptx.KeyLeaves(s) {
		params["key"+strconv.Itoa(i)] = randomKeys(s)[l]
	}
	for ti, task := range tasks {
		for b := range Slices(task.Elements()) {
			ptxtest.Run(t, p, b, ti, params, mem, func(tid int, name string, args []uint64) {
				t.Fatalf("thread %d calls %s", tid, name)
			})
		}
	}
	got := make([][]uint64, len(tasks))
	for ti := range tasks {
		got[ti] = make([]uint64, per)
		for k := range per {
			got[ti][k] = mem[out+uint64(8*(ti*per+k))]
		}
	}
	return got
}

// TestWeightedKernelInterpreted interprets the weighted bincount kernel on the host: each
// block's sums are, bit for bit, its threads' sums of their rows in order, combined by the
// warps' shuffle tree and then warp after warp; the blocks' sums combine pairwise; a value
// out of range sets the flag.
func TestWeightedKernelInterpreted(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, out = 1 << 32, 1 << 46
	for _, tc := range []struct {
		m    int64
		bins int
	}{{70001, 5}, {1000, 300}} {
		p := ptxtest.Parse(t, ptx.WeightedPTX("8.0", "sm_90", tc.bins))
		mem := map[uint64]uint64{}
		vals := make([]int, tc.m)
		ws := make([]float64, tc.m)
		for i := range vals {
			vals[i] = r.IntN(tc.bins)
			ws[i] = math.Ldexp(r.Float64()-0.4, r.IntN(30)-15)
			mem[rows+uint64(16*i)] = math.Float64bits(float64(vals[i]))
			mem[rows+uint64(16*i+8)] = math.Float64bits(ws[i])
		}
		run := func() []uint64 {
			S := Slices(tc.m)
			words := S*tc.bins + 2
			for i := range words {
				mem[out+uint64(8*i)] = 0
			}
			for b := range S {
				ptxtest.Run(t, p, b, 0, map[string]uint64{"rows": rows, "n": uint64(tc.m), "out": out, "S": uint64(S)}, mem, func(tid int, name string, _ []uint64) {
					t.Fatalf("thread %d calls %s", tid, name)
				})
			}
			got := make([]uint64, words)
			for i := range got {
				got[i] = mem[out+uint64(8*i)]
			}
			return got
		}
		got := run()
		S := Slices(tc.m)
		for b := range S {
			lo, hi := SliceRange(tc.m, S, b)
			for k := range tc.bins {
				var lanes [BlockSize]float64
				for tid := range BlockSize {
					for e := lo + int64(tid); e < hi; e += BlockSize {
						if vals[e] == k {
							lanes[tid] += ws[e]
						}
					}
				}
				var want float64
				for w := range BlockSize / 32 {
					v := lanes[32*w : 32*w+32]
					for o := 16; o >= 1; o /= 2 {
						next := make([]float64, 32)
						for i := range next {
							j := i + o
							if j >= 32 {
								j = i // a shuffle past the warp gives the lane's own value
							}
							next[i] = v[i] + v[j]
						}
						v = next
					}
					if w == 0 {
						want = v[0]
					} else {
						want += v[0]
					}
				}
				if g := got[b*tc.bins+k]; g != math.Float64bits(want) {
					t.Fatalf("%d rows, %d bins: block %d bin %d holds %v, want %v", tc.m, tc.bins, b, k, math.Float64frombits(g), want)
				}
			}
		}
		if got[S*tc.bins] != 0 {
			t.Fatalf("flag set for %v", math.Float64frombits(got[S*tc.bins+1]))
		}
		// The blocks' sums combined: within 2n ulp of the host's sums in row order.
		sums := combineBlocks(got[:S*tc.bins], S, tc.bins)
		host := make([]float64, tc.bins)
		mag := make([]float64, tc.bins)
		cnt := make([]float64, tc.bins)
		for i, k := range vals {
			host[k] += ws[i]
			mag[k] += math.Abs(ws[i])
			cnt[k]++
		}
		for k := range sums {
			if math.Abs(sums[k]-host[k]) > 2*cnt[k]*0x1p-53*mag[k] {
				t.Errorf("%d rows, bin %d: %v, host %v", tc.m, k, sums[k], host[k])
			}
		}
		// A value out of range.
		mem[rows+uint64(16*(tc.m-1))] = math.Float64bits(2.5)
		if got = run(); got[S*tc.bins] != 1 || math.Float64frombits(got[S*tc.bins+1]) != 2.5 {
			t.Fatalf("flag %d, value %v after a value of 2.5", got[S*tc.bins], math.Float64frombits(got[S*tc.bins+1]))
		}
	}
}

// TestCountKernelOfNormalsInterpreted interprets the counting kernel of where(x > 0.5, 1, 0)
// over a normal array drawn in the kernel, whose slow draws are deferred (a queue, out of
// element order: counts need none): every element is counted once, in the bin of its value as
// the CPU draws it.
func TestCountKernelOfNormalsInterpreted(t *testing.T) {
	if testing.Short() {
		t.Skip("interprets a kernel of 20000 normal draws")
	}
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	key := rng.Key{K0: 42, K1: 7}
	const n = 20000
	mem, slow := ptxtest.StoredNormals(key, 1<<32, n)
	if slow < 100 {
		t.Fatalf("%d of %d draws leave the fast path: too few to defer", slow, n)
	}
	s := &Spec{Rank: 1, Reduce: RCount, Bins: 2, Nodes: []Node{
		{Kind: NRandom, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 2, Key: [2]uint32{key.K0, key.K1}}},
		{Kind: NConst, DType: expr.Float64, Value: 0.5},
		{Kind: NBinary, DType: expr.Bool, Op: expr.OpGt, Args: [3]int{0, 1}},
		{Kind: NConst, DType: expr.Float64, Value: 1},
		{Kind: NConst, DType: expr.Float64, Value: 0},
		{Kind: NWhere, DType: expr.Float64, Args: [3]int{2, 3, 4}},
	}}
	if !ptx.DrawsNormals(s) || !ptx.CurrentOptions().Defer {
		t.Fatal("the kernel defers no draw")
	}
	task := Task{Dims: []int64{n}, Maps: []Map{{Strides: []int64{1}}}}
	var want [2]uint64
	for i := range n {
		if math.Float64frombits(mem[1<<32+uint64(8*i)]) > 0.5 {
			want[1]++
		} else {
			want[0]++
		}
	}
	defer ptx.SetOptions(ptx.CurrentOptions())
	for _, batches := range []bool{false, true} { // each lane its queue; warps together
		setPTX(func(o *ptx.Options) { o.CountBatch = batches })
		got := countRun(t, lib, s, []Task{task}, mem, 1<<46)[0]
		if got[0] != want[0] || got[1] != want[1] || got[2] != 0 {
			t.Errorf("batches %v: counts %v (flag %d), want %v", batches, got[:2], got[2], want)
		}
	}
}

// TestCountKernelFlagsValuesNotBins interprets a count of 7 bins over values that are no bin:
// each alone among bins 0..6 sets the flag with its value and leaves the counts right; -0
// counts in bin 0. Values of 2^32 and more would have low words below 7.
func TestCountKernelFlagsValuesNotBins(t *testing.T) {
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	const base, out, bins, n = 1 << 32, 1 << 46, 7, 300
	s := &Spec{Rank: 1, Reduce: RCount, Bins: bins, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
	task := heldTask([]int64{n}, []Map{{Strides: []int64{1}}}, []uint64{base}, []int64{n})
	for _, bad := range []float64{7, 8, 2.5, 0.25, 6.999999999999999, -1, -0.3, math.NaN(), math.Inf(1), math.Inf(-1), 1<<32 + 3, 1<<40 + 1, 1 << 52, 1<<52 + 2, 1e300, -1e300, 5e-324} {
		mem := map[uint64]uint64{}
		var want [bins]uint64
		for i := range n {
			v := float64(i % bins)
			if i == 1 {
				v = math.Copysign(0, -1)
			}
			if i == n/2 {
				v = bad
			} else {
				want[int(v)]++
			}
			mem[base+8*uint64(i)] = math.Float64bits(v)
		}
		got := countRun(t, lib, s, []Task{task}, mem, out)[0]
		if got[bins] != 1 || math.Float64bits(math.Float64frombits(got[bins+1])) != math.Float64bits(bad) && !math.IsNaN(bad) {
			t.Errorf("value %v: flag %d, value %v", bad, got[bins], math.Float64frombits(got[bins+1]))
		}
		for k := range bins {
			if got[k] != want[k] {
				t.Errorf("value %v: bin %d holds %d, want %d", bad, k, got[k], want[k])
			}
		}
	}
}
