package cuda

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// gpu opens device 0 or skips: these tests run on a GPU machine (make test-gpu), where
// GPUNOTES_GPU_TESTS=1 turns a missing GPU into a failure.
func gpu(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return d
}

func ulps(a, b float64) int64 {
	if a == b {
		return 0
	}
	ia, ib := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if (ia < 0) != (ib < 0) {
		return math.MaxInt64
	}
	d := ia - ib
	if d < 0 {
		d = -d
	}
	return d
}

// randomTask is a strided 2-d window of an rows x cols random array.
func randomTask(r0, c0, n, m, rs, cs, cols int64) Task {
	return Task{Dims: []int64{n, m}, Maps: []Map{{Off: r0*cols + c0, Strides: []int64{rs * cols, cs}}}}
}

func TestGPURandomMatchesCPU(t *testing.T) {
	d := gpu(t)
	// Two keys through one linked kernel per distribution: the key is descriptor data.
	for _, key := range []rng.Key{rng.KeyOf(0x123456789, 3), rng.KeyOf(42, 0)} {
		testRandomKey(t, d, key)
	}
}

func testRandomKey(t *testing.T, d *Device, key rng.Key) {
	for _, dist := range []expr.Dist{expr.Uniform, expr.Normal, expr.Integers} {
		s := &Spec{Rank: 2, Reduce: RNone, Nodes: []Node{{Kind: NRandom, Rand: expr.RandSpec{Dist: dist, P0: -2, P1: 5, Key: [2]uint32{key.K0, key.K1}}}}}
		const cols = 3001
		// Chunks of several shapes and strides, some with rows the block stride skips across.
		tasks := []Task{randomTask(0, 0, 700, 900, 1, 1, cols), randomTask(5, 7, 1000, 1000, 2, 3, cols), randomTask(2999, 3000, 3, 1, -1, 1, cols), randomTask(11, 13, 1, 2900, 1, 1, cols)}
		res, err := d.Run(context.Background(), s, tasks, Options{Poison: true})
		if err != nil {
			t.Fatalf("%v: %v", dist, err)
		}
		var worst int64
		n := 0
		for ti, tk := range tasks {
			out := res.Out[ti]
			for i := int64(0); i < tk.Dims[0]; i++ {
				for j := int64(0); j < tk.Dims[1]; j++ {
					idx := uint64(tk.Maps[0].Off + i*tk.Maps[0].Strides[0] + j*tk.Maps[0].Strides[1])
					var want float64
					switch dist {
					case expr.Uniform:
						want = 7*key.Uniform(idx) + -2
					case expr.Normal:
						want = -2 + 5*key.Normal(idx)
					case expr.Integers:
						want = float64(-2 + int64(key.Integer(idx, 7)))
					}
					got := out[i*tk.Dims[1]+j]
					u := ulps(got, want)
					if dist != expr.Normal && u != 0 {
						t.Fatalf("%v task %d (%d,%d) idx %d: GPU %v, CPU %v", dist, ti, i, j, idx, got, want)
					}
					worst = max(worst, u)
					n++
				}
			}
		}
		if worst > 2 {
			t.Fatalf("%v: worst difference %d ulp (want <= 2)", dist, worst)
		}
		t.Logf("%v: %d elements, worst %d ulp", dist, n, worst)
	}
}

// cpuEval evaluates spec s's element value for a task element (a naive reference).
func cpuEval(s *Spec, tk *Task, i []int64) float64 {
	vals := make([]float64, len(s.Nodes))
	for k, nd := range s.Nodes {
		a := func(j int) float64 { return vals[nd.Args[j]] }
		var v float64
		switch nd.Kind {
		case NConst:
			v = nd.Value
		case NRandom, NInput:
			m := tk.Maps[nd.Leaf]
			idx := m.Off
			for j := range i {
				idx += m.Strides[j] * i[j]
			}
			if nd.Kind == NInput {
				v = tk.Inputs[nd.Leaf][idx]
			} else {
				key := rng.Key{K0: nd.Rand.Key[0], K1: nd.Rand.Key[1]}
				v = nd.Rand.P0 + nd.Rand.P1*key.Normal(uint64(idx))
			}
		case NUnary:
			switch nd.Op {
			case expr.OpNeg:
				v = -a(0)
			case expr.OpAbs:
				v = math.Abs(a(0))
			case expr.OpSqrt:
				v = math.Sqrt(a(0))
			case expr.OpExp:
				v = math.Exp(a(0))
			}
		case NBinary:
			switch nd.Op {
			case expr.OpAdd:
				v = a(0) + a(1)
			case expr.OpSub:
				v = a(0) - a(1)
			case expr.OpMul:
				v = a(0) * a(1)
			case expr.OpDiv:
				v = a(0) / a(1)
			case expr.OpMax:
				v = math.Max(a(0), a(1))
			case expr.OpLt:
				if a(0) < a(1) {
					v = 1
				}
			}
		case NWhere:
			if a(0) != 0 {
				v = a(1)
			} else {
				v = a(2)
			}
		}
		if nd.DType == expr.Float32 {
			v = float64(float32(v))
		}
		vals[k] = v
	}
	return vals[len(vals)-1]
}

// TestGPURandomExpressions runs random fused expressions with every reduction on the GPU and
// compares them with a CPU reference.
func TestGPURandomExpressions(t *testing.T) {
	d := gpu(t)
	r := rand.New(rand.NewSource(7))
	unary := []expr.Op{expr.OpNeg, expr.OpAbs, expr.OpSqrt, expr.OpExp}
	binary := []expr.Op{expr.OpAdd, expr.OpSub, expr.OpMul, expr.OpDiv, expr.OpMax, expr.OpLt}
	for trial := 0; trial < 24; trial++ {
		rank := 1 + r.Intn(3)
		s := &Spec{Rank: rank, Reduce: Reduce(trial % 7)}
		s.Nodes = append(s.Nodes, Node{Kind: NRandom, Leaf: 0, Rand: expr.RandSpec{Dist: expr.Normal, P0: 1, P1: 0.5, Key: [2]uint32{uint32(trial), 9}}})
		s.Nodes = append(s.Nodes, Node{Kind: NInput, Leaf: 1})
		for k := 0; k < 3+r.Intn(5); k++ {
			n := len(s.Nodes)
			switch r.Intn(4) {
			case 0:
				s.Nodes = append(s.Nodes, Node{Kind: NUnary, Op: unary[r.Intn(len(unary))], Args: [3]int{r.Intn(n)}})
				if s.Nodes[n].Op == expr.OpExp || s.Nodes[n].Op == expr.OpSqrt {
					s.Nodes[n].Op = expr.OpAbs // exact ops only: the reference compares bits
				}
			case 1:
				s.Nodes = append(s.Nodes, Node{Kind: NConst, Value: r.NormFloat64()})
			case 2:
				s.Nodes = append(s.Nodes, Node{Kind: NWhere, Args: [3]int{r.Intn(n), r.Intn(n), r.Intn(n)}})
			default:
				s.Nodes = append(s.Nodes, Node{Kind: NBinary, Op: binary[r.Intn(len(binary))], Args: [3]int{r.Intn(n), r.Intn(n)}, DType: expr.DType(r.Intn(2))})
			}
		}
		var tasks []Task
		for k := 0; k < 1+r.Intn(4); k++ {
			tk := Task{}
			size := int64(1)
			for j := 0; j < rank; j++ {
				dim := int64(1 + r.Intn(70))
				if j == rank-1 && r.Intn(3) == 0 {
					dim = int64(300 + r.Intn(700))
				}
				tk.Dims = append(tk.Dims, dim)
				size *= dim
			}
			m0, m1 := Map{Off: int64(r.Intn(1000))}, Map{}
			// input leaf: a row-major buffer, read transposed-ish by reversing strides' roles
			st := int64(1)
			m1.Strides = make([]int64, rank)
			for j := rank - 1; j >= 0; j-- {
				m1.Strides[j] = st
				st *= tk.Dims[j]
			}
			for j := 0; j < rank; j++ {
				m0.Strides = append(m0.Strides, int64(r.Intn(5)-1)*int64(1+r.Intn(100)))
			}
			m0.Off += 1 << 20
			in := make([]float64, size)
			for i := range in {
				in[i] = r.NormFloat64()
			}
			tk.Maps = []Map{m0, m1}
			tk.Inputs = [][]float64{nil, in}
			tasks = append(tasks, tk)
		}
		res, err := d.Run(context.Background(), s, tasks, Options{Poison: true})
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		for ti := range tasks {
			tk := &tasks[ti]
			var vals []float64
			idx := make([]int64, rank)
			var rec func(j int)
			rec = func(j int) {
				if j == rank {
					vals = append(vals, cpuEval(s, tk, idx))
					return
				}
				for idx[j] = 0; idx[j] < tk.Dims[j]; idx[j]++ {
					rec(j + 1)
				}
			}
			rec(0)
			checkReduce(t, trial, s.Reduce, res, ti, vals)
		}
	}
}

func checkReduce(t *testing.T, trial int, red Reduce, res *Result, ti int, vals []float64) {
	t.Helper()
	close := func(got, want float64) bool {
		if math.IsNaN(want) {
			return math.IsNaN(got)
		}
		return got == want || math.Abs(got-want) <= 1e-12*math.Max(1, math.Abs(want))
	}
	switch red {
	case RNone:
		for i, v := range vals {
			// normals may differ by 2 ulp, and ops amplify that; exact ops only keep it small
			if !close(res.Out[ti][i], v) && math.Abs(res.Out[ti][i]-v) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Fatalf("trial %d task %d element %d: GPU %v, CPU %v", trial, ti, i, res.Out[ti][i], v)
			}
		}
	case RSum:
		var s float64
		for _, v := range vals {
			s += v
		}
		if !close(res.Values[ti], s) && math.Abs(res.Values[ti]-s) > 1e-9*math.Max(1, math.Abs(s)) {
			t.Fatalf("trial %d task %d: sum GPU %v, CPU %v", trial, ti, res.Values[ti], s)
		}
	case RMin, RMax:
		want := vals[0]
		for _, v := range vals {
			want = pick(want, v, red == RMax)
		}
		if !close(res.Values[ti], want) {
			t.Fatalf("trial %d task %d: %v GPU %v, CPU %v", trial, ti, red, res.Values[ti], want)
		}
	case RArgMin, RArgMax:
		bi := 0
		for i, v := range vals {
			if better(v, int64(i), vals[bi], int64(bi), red == RArgMax) {
				bi = i
			}
		}
		if res.Index[ti] != int64(bi) && !close(vals[res.Index[ti]], vals[bi]) {
			t.Fatalf("trial %d task %d: %v GPU index %d (%v), CPU %d (%v)", trial, ti, red, res.Index[ti], res.Values[ti], bi, vals[bi])
		}
	case RWelford:
		var n, m, q float64
		for _, v := range vals {
			n, m, q = MergeWelford(n, m, q, 1, v, 0)
		}
		if res.Count[ti] != n || !close(res.Mean[ti], m) || math.Abs(res.M2[ti]-q) > 1e-9*math.Max(1, q) {
			t.Fatalf("trial %d task %d: welford GPU (%v %v %v), CPU (%v %v %v)", trial, ti, res.Count[ti], res.Mean[ti], res.M2[ti], n, m, q)
		}
	}
}

// seedTasks are the chunk tasks of (x + 1)[::2, ::2].sum() for x of shape (n, n), chunks c.
func seedTasks(n, c int64, step int64) []Task {
	var tasks []Task
	for r0 := int64(0); r0 < n; r0 += c {
		for c0 := int64(0); c0 < n; c0 += c {
			rows, cols := min(c, n-r0), min(c, n-c0)
			tasks = append(tasks, randomTask(r0, c0, (rows+step-1)/step, (cols+step-1)/step, step, step, n))
		}
	}
	return tasks
}

func TestGPUSeedSumMatchesCPU(t *testing.T) {
	d := gpu(t)
	const n, c = 2000, 300 // c even, edge chunks smaller
	res, err := d.Run(context.Background(), seedSpec(), seedTasks(n, c, 2), Options{Poison: true})
	if err != nil {
		t.Fatal(err)
	}
	gpuSum := PairwiseSum(res.Values)
	key := rng.KeyOf(42, 0)
	var cpu float64
	for i := int64(0); i < n; i += 2 {
		for j := int64(0); j < n; j += 2 {
			cpu += (10 + 1*key.Normal(uint64(i*n+j))) + 1
		}
	}
	if math.Abs(gpuSum-cpu) > 1e-12*math.Abs(cpu) {
		t.Fatalf("GPU %v, CPU %v (rel %g)", gpuSum, cpu, math.Abs(gpuSum-cpu)/cpu)
	}
}

func TestGPULaunchErrorNamesKernel(t *testing.T) {
	d := gpu(t)
	s := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NInput}}}
	// A map that reaches outside its buffer is refused before launch.
	_, err := d.Run(context.Background(), s, []Task{{Dims: []int64{10}, Maps: []Map{{Off: 5, Strides: []int64{1}}}, Inputs: [][]float64{make([]float64, 10)}}}, Options{})
	if err == nil {
		t.Fatal("out-of-bounds task accepted")
	}
	if _, err := Open(99); err == nil {
		t.Fatal("device 99 opened")
	} else {
		t.Log(err)
	}
}

// TestGPUBench times the seed experiment and its variants when GPUNOTES_BENCH_N is set (used by
// bench/gpu.sh; not a timed test). It prints one JSON line per figure.
func TestGPUBench(t *testing.T) {
	nStr := os.Getenv("GPUNOTES_BENCH_N")
	if nStr == "" {
		t.Skip("GPUNOTES_BENCH_N not set")
	}
	devs := []*Device{gpu(t)}
	for i := 1; i < envInt("GPUNOTES_BENCH_GPUS", 1); i++ {
		d, err := Open(i)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, d)
	}
	n, _ := strconv.ParseInt(nStr, 10, 64)
	c := int64(envInt("GPUNOTES_BENCH_CHUNK", 10000))
	which := os.Getenv("GPUNOTES_BENCH_WHAT")
	var s *Spec
	var mk func() []Task
	var kept float64
	switch which {
	case "", "seed":
		which, s, kept = "seed", seedSpec(), float64((n+1)/2)*float64((n+1)/2)
		mk = func() []Task { return seedTasks(n, c, 2) }
	case "full":
		s, kept = seedSpec(), float64(n)*float64(n)
		mk = func() []Task { return seedTasks(n, c, 1) }
	case "transpose":
		s = &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{
			{Kind: NRandom, Leaf: 0, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}}},
			{Kind: NRandom, Leaf: 1, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}}},
			{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}},
		}}
		kept = float64(n) * float64(n)
		mk = func() []Task {
			ts := seedTasks(n, c, 1)
			for i := range ts {
				m := ts[i].Maps[0]
				r0, c0 := m.Off/n, m.Off%n
				ts[i].Maps = append(ts[i].Maps, Map{Off: c0*n + r0, Strides: []int64{1, n}})
			}
			return ts
		}
	}
	ctx := context.Background()
	t0 := time.Now()
	if _, err := RunOn(ctx, devs, s, mk()[:1], Options{}); err != nil { // warm-up: link + load
		t.Fatal(err)
	}
	warm := time.Since(t0)
	var best time.Duration
	var sum float64
	for rep := 0; rep < envInt("GPUNOTES_BENCH_REPS", 2); rep++ {
		t1 := time.Now()
		res, err := RunOn(ctx, devs, s, mk(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		sum = PairwiseSum(res.Values)
		if el := time.Since(t1); rep == 0 || el < best {
			best = el
		}
	}
	expected := 11 * kept
	if which == "transpose" {
		expected = 20 * kept
	}
	line, _ := json.Marshal(map[string]any{"what": which, "n": n, "chunk": c, "backend": "gpu", "gpus": len(devs), "device": devs[0].Info.Name,
		"seconds": best.Seconds(), "first_call_link_seconds": warm.Seconds(), "sum": sum, "expected": expected, "z": (sum - expected) / math.Sqrt(kept)})
	fmt.Println(string(line))
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return v
	}
	return def
}

// TestGPUCopies round-trips host data through the device with CopyToDevice and CopyToHost at
// sizes around the direct-copy threshold and the staging pieces, and times a large copy.
func TestGPUCopies(t *testing.T) {
	d := gpu(t)
	for _, n := range []int{0, 1, transferDirect/8 - 1, transferDirect/8 + 1, transferPiece / 8, 3*transferPiece/8 + 5, 200_000_001} {
		src := make([]float64, n)
		for i := range src {
			src[i] = float64(i)*0.5 - 3
		}
		dst := make([]float64, n)
		var up, down time.Duration
		err := d.Do(context.Background(), func() error {
			p, err := d.pool.Alloc(uint64(max(n, 1)) * 8)
			if err != nil {
				return err
			}
			defer d.pool.Free(p)
			t0 := time.Now()
			if err := d.CopyToDevice(p, src); err != nil {
				return err
			}
			up = time.Since(t0)
			t0 = time.Now()
			if err := d.CopyToHost(dst, p); err != nil {
				return err
			}
			down = time.Since(t0)
			return nil
		})
		if err != nil {
			t.Fatalf("%d elements: %v", n, err)
		}
		for i := range src {
			if dst[i] != src[i] {
				t.Fatalf("%d elements: element %d is %v, want %v", n, i, dst[i], src[i])
			}
		}
		if n > 100_000_000 {
			gb := float64(n) * 8 / 1e9
			t.Logf("%.1f GB: to device %.2f GB/s, to host (fresh memory) %.2f GB/s", gb, gb/up.Seconds(), gb/down.Seconds())
		}
	}
}

// TestGPULinkTime times linking new fused kernels (each spec once: a normal sum, a uniform
// max, and elementwise chains with exp, sin and pow), which every new expression pays on its
// first run and a cluster worker on its first task.
func TestGPULinkTime(t *testing.T) {
	d := gpu(t)
	var specs []*Spec
	for i, op := range []expr.Op{expr.OpExp, expr.OpSin, expr.OpTanh, expr.OpLog} {
		specs = append(specs,
			&Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P0: float64(i), P1: 1}}}},
			&Spec{Rank: 2, Reduce: RMax, Nodes: []Node{{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Uniform, P0: 0, P1: float64(i + 1)}}, {Kind: NUnary, Op: op, Args: [3]int{0}}}},
		)
	}
	var total time.Duration
	err := d.Do(context.Background(), func() error {
		for _, s := range specs {
			t0 := time.Now()
			if _, err := d.kernel(s); err != nil {
				return err
			}
			total += time.Since(t0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("linked %d new kernels in %.3f s: %.1f ms each (%s)", len(specs), total.Seconds(), 1e3*total.Seconds()/float64(len(specs)), d.Info.Name)
}
