package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// opsResult is one JSON line of `bench ops --json` (see DESIGN.md "Commands").
type opsResult struct {
	Op      string `json:"op"`
	N       int    `json:"n"`
	Chunk   int    `json:"chunk"`
	Backend string `json:"backend"`
	Device  string `json:"device"`
	// GPUs is how many GPUs the chunks were spread over (--gpus), 0 on the CPU.
	GPUs    int     `json:"gpus,omitempty"`
	Seconds float64 `json:"seconds"`
	// ToHostSeconds is Compute and then ToSlice (best of 3): a result left on a GPU (an array
	// result of Compute) brought to host memory, as the CuPy peers' .get() brings theirs; with
	// --on-device only the first element of a result of more than 2^20 elements.
	ToHostSeconds float64 `json:"to_host_seconds"`
	Path          string  `json:"path"`
	// Persisted says the ops read an array computed once and kept (--persist).
	Persisted bool `json:"persisted,omitempty"`
	// Value is a checksum of the result (its first element), so peers can be compared.
	Value float64 `json:"value"`
}

// benchOp builds one op of the table from x (regenerated per run, as a dask graph is).
type benchOp struct {
	name  string
	build func(x *gpuarray.Array, n, chunk int) *gpuarray.Array
}

// of names the array a row reads (benchArray): its rowInputs entry; for a row with no build,
// a sum of it, its name's "float32", "int32" or "bool"; "" for the others' float64 normal
// n x n array.
func (op benchOp) of() string {
	if in, ok := rowInputs[op.name]; ok {
		return in
	}
	if op.build != nil {
		return ""
	}
	return strings.TrimSuffix(strings.TrimPrefix(op.name, "sum("), ")")
}

// benchSizes are the sizes of the arrays the rows read: the n x n array in chunk x chunk
// chunks, the vector of vn values in chunks of vchunk, the matrix of a product (mn x mn) and
// the matrix of a solve or inverse (sn x sn), each of these two in one chunk.
type benchSizes struct{ n, chunk, vn, vchunk, mn, sn int }

// benchArray is the array an op of the table reads: the n x n standard normal one (seed 42),
// generated as float32, or from it, int32(1000 x) or x > 0; "vec" a standard normal vector
// (seed 42) and "ivec" int64(1000 |v|) of it; "mat" and "sq" standard normal square matrices
// (seeds 43 and 44).
func benchArray(of string, s benchSizes) *gpuarray.Array {
	rs := gpuarray.NewRandomState(42)
	switch of {
	case "vec":
		return rs.StandardNormal(gpuarray.Shape(s.vn), gpuarray.Chunks(s.vchunk))
	case "ivec":
		return rs.StandardNormal(gpuarray.Shape(s.vn), gpuarray.Chunks(s.vchunk)).Abs().Mul(1000).AsType(gpuarray.Int64)
	case "mat":
		return gpuarray.NewRandomState(43).StandardNormal(gpuarray.Shape(s.mn, s.mn), gpuarray.Chunks(s.mn, s.mn))
	case "sq":
		return gpuarray.NewRandomState(44).StandardNormal(gpuarray.Shape(s.sn, s.sn), gpuarray.Chunks(s.sn, s.sn))
	}
	dt := gpuarray.Float64
	if of == "float32" {
		dt = gpuarray.Float32
	}
	x := rs.StandardNormal(gpuarray.Shape(s.n, s.n), gpuarray.Chunks(s.chunk, s.chunk), gpuarray.WithDType(dt))
	switch of {
	case "int32":
		return x.Mul(1000).AsType(gpuarray.Int32)
	case "bool":
		return x.Gt(0)
	}
	return x
}

// rowInputs names the arrays the call rows read other than the n x n one (benchArray).
var rowInputs = map[string]string{
	"sort(v)": "vec", "argsort(v)": "vec", "topk(v, 10)": "vec", "sum(abs(fft(v)))": "vec",
	"unique(iv)": "ivec", "bincount(iv)": "ivec", "histogram(v, 100, range=(-5, 5))": "vec",
	"searchsorted(linspace(-5, 5, 1000001), v)": "vec", "nonzero(v > 1)[0]": "vec",
	"take(v, int64((len(v)-1) |sin(1000 v)|))": "vec", "quantile(v, 0.9)": "vec", "median(v)": "vec",
	"solve(a, a[:, :16])": "sq", "inv(a)": "sq", "matmul(m, m)": "mat",
}

// opsTable is the fixed table of `bench ops`; bench/cupy_ops.py runs the same ops.
var opsTable = []benchOp{
	{"sum", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Sum() }},
	{"mean", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Mean() }},
	{"std", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Std() }},
	{"max", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Max() }},
	{"argmax", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.ArgMax() }},
	{"sum(axis=0)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Sum(0) }},
	{"mean(axis=0)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Mean(0) }},
	{"std(axis=0)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Std(0) }},
	{"sum(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Sum(1) }},
	{"mean(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Mean(1) }},
	{"std(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Std(1) }},
	{"sum(x + x.T)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Add(x.T()).Sum() }},
	{"sum(exp(x) + sin(x))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Exp().Add(x.Sin()).Sum() }},
	{"sum(where(x > 0, x, -x))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.Where(x.Gt(0), x, x.Neg()).Sum()
	}},
	{"mean(x[::2, ::3])", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return x.Slice(gpuarray.Every(2), gpuarray.Every(3)).Mean()
	}},
	{"sum(float32)", nil}, // x generated as float32
	// Integer and bool arrays (held in their own element size when persisted on a GPU).
	{"sum(int32)", nil},
	{"sum(bool)", nil},
	{"sum(arange(n*n))", func(_ *gpuarray.Array, n, chunk int) *gpuarray.Array {
		return gpuarray.Arange(0, float64(n)*float64(n), 1, gpuarray.Chunks(chunk*chunk)).Sum()
	}},
	// Manipulation and indexing (issue 15): a masked mean (fused as a where and a count), a
	// reshape then an axis reduction (the reshape reaches the random leaf: no copy), a join
	// then a sum (a kernel per piece: no joined buffer; it sums twice the elements, so twice
	// the full sum is its floor, not a defect).
	{"mean(x[x > 1])", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Mask(x.Gt(1)).Mean() }},
	{"sum(x.reshape(n/2, 2, n), axis=1)", func(x *gpuarray.Array, n, _ int) *gpuarray.Array {
		return x.Reshape(n/2, 2, n).Sum(1)
	}},
	{"sum(concat([x, x]))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Concat(x, x).Sum() }},
	// The user-kernel row: a 5-op expression through Elementwise (CuPy peer:
	// ElementwiseKernel), fused with the sum.
	{"sum(Elementwise: where(x > 0, x * x, exp(x)) + 1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return benchKernel.Apply(x).Sum() }},
	// The histogram row of issue 17 (at --n 31623, about 1e9 normals): bins computed and
	// counted per chunk by one fused kernel on a GPU, the chunks' counts summed.
	{"histogram(x, 100, range=(-5, 5))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		h, _ := gpuarray.Histogram(x, 100, -5, 5, nil)
		return h
	}},
}

// callsTable are the call rows of `bench ops` (issue 32: sorts, scans, transforms), run with
// --calls or when --op/--match names them; bench/cupy_ops.py --calls runs the same. Their
// outputs stay on the GPU (array results) or are read in place by the stage after them.
var callsTable = []benchOp{
	{"cumsum(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.CumulativeSum(x, 1, false) }},
	{"cumsum(axis=0)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.CumulativeSum(x, 0, false) }},
	{"sort(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Sort(x, 1) }},
	{"argsort(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Argsort(x, 1) }},
	{"sort(axis=1)[:, :10]", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.Sort(x, 1).Slice(gpuarray.All(), gpuarray.Span(0, 10))
	}},
	{"fft(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.FFT(x, gpuarray.FFTAxis(1)) }},
	{"sum(abs(fft(axis=1)))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.FFT(x, gpuarray.FFTAxis(1)).Abs().Sum()
	}},
	{"rfft(axis=0)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.RFFT(x, gpuarray.FFTAxis(0)) }},
	{"sum(cumsum(axis=1))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.CumulativeSum(x, 1, false).Sum()
	}},
	// Selections (a device compaction where the array is one chunk along its rows).
	{"nonzero(x > 1)[0]", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Nonzero(x.Gt(1))[0] }},
	{"argwhere(x > 2)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Argwhere(x.Gt(2)) }},
	// The unique family (run boundaries marked and compacted on the device) and a median
	// (a sort keeping only the middle ranks).
	{"unique(rint(10 x))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.UniqueValues(x.Mul(10).Round())
	}},
	{"median(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Median(x, 1) }},
	// The rest of issue 32's call stages, on the 1e8 vector v (rowInputs), the n x n array, or
	// the matrices of a solve (4096^2) and a product (8192^2); and its fused rows not in the op
	// table (standardize; mean and std along an axis, x + x.T and the masked mean are there).
	{"sort(v)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Sort(x, 0) }},
	{"argsort(v)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Argsort(x, 0) }},
	{"topk(v, 10)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.TopK(x, 10, 0) }},
	{"sum(abs(fft(v)))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.FFT(x).Abs().Sum() }},
	{"diff(axis=1)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Diff(x, 1, 1) }},
	{"unique(iv)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.UniqueValues(x) }},
	// Read back: its to_host_seconds is the row's figure (CuPy's peer ends in .get()).
	{"bincount(iv)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Bincount(x) }},
	{"histogram(v, 100, range=(-5, 5))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		h, _ := gpuarray.Histogram(x, 100, -5, 5, nil)
		return h
	}},
	{"searchsorted(linspace(-5, 5, 1000001), v)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.Searchsorted(gpuarray.Linspace(-5, 5, 1000001), x, "left")
	}},
	{"nonzero(v > 1)[0]", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Nonzero(x.Gt(1))[0] }},
	// A gather at scattered positions, its indices computed from v in the graph.
	{"take(v, int64((len(v)-1) |sin(1000 v)|))", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return x.Take(x.Mul(1000).Sin().Abs().Mul(float64(x.Size() - 1)).AsType(gpuarray.Int64))
	}},
	{"quantile(v, 0.9)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Quantile(x, 0.9) }},
	{"median(v)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Median(x) }},
	{"solve(a, a[:, :16])", func(x *gpuarray.Array, _, _ int) *gpuarray.Array {
		return gpuarray.Solve(x, x.Slice(gpuarray.All(), gpuarray.Span(0, 16)))
	}},
	{"inv(a)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.Inv(x) }},
	{"matmul(m, m)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return gpuarray.MatMul(x, x) }},
	{"standardize(axis=0)", func(x *gpuarray.Array, _, _ int) *gpuarray.Array { return x.Sub(x.Mean(0)).Div(x.Std(0)) }},
}

// firstElement is a view of c's first element, as an array of c's rank: a slice of each axis
// (no reshape), so that a result held on a GPU is read in place, one element of one chunk.
func firstElement(c *gpuarray.Array) *gpuarray.Array {
	idx := make([]gpuarray.Index, c.NDim())
	for i := range idx {
		idx[i] = gpuarray.Span(0, 1)
	}
	return c.Slice(idx...)
}

// benchKernel is the Elementwise row's kernel.
var benchKernel = func() *gpuarray.Kernel {
	k, err := gpuarray.Elementwise("x", "where(x > 0, x * x, exp(x)) + 1")
	if err != nil {
		panic(err) // a constant expression: a test catches it
	}
	return k
}()

// benchOps runs the ops table on a standard normal n x n array (seed 42) in chunk x chunk
// chunks: each op once to warm up (contexts, kernel links), then best of 3, regenerating the
// array each time (with --persist: reading the array persisted once).
func benchOps(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench ops", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 20000, "array side")
	chunk := fs.Int("chunk", 10000, "chunk side")
	backend := fs.String("backend", "cpu", "cpu or gpu")
	gpus := fs.Int("gpus", 1, "GPUs to spread the chunks over with --backend gpu (OnGPUs)")
	only := fs.String("op", "", "run only this op")
	match := fs.String("match", "", "run only the ops whose names match this regular expression")
	persist := fs.Bool("persist", false, "compute the arrays once and keep them where they were computed (Persist), then run the ops on them")
	persisted := fs.Bool("persisted", false, "--persist --calls: every row, on persisted inputs")
	calls := fs.Bool("calls", false, "run the call rows too (sorts, scans, transforms), or with --op/--match only those named")
	vn := fs.Int("vn", 100000000, "length of the vector the 1-d call rows read")
	vchunk := fs.Int("vchunk", 12500000, "chunk length of that vector")
	mn := fs.Int("mn", 8192, "side of the matrix product's matrix")
	sn := fs.Int("sn", 4096, "side of the solve's and inverse's matrix")
	onDevice := fs.Bool("on-device", false, "read back only the first element of an array result of more than 2^20 elements (as bench/cupy_ops.py --on-device), not all of it")
	asJSON := fs.Bool("json", false, "print one JSON line per op")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: bench ops: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: bench ops: unexpected arguments %q", errUsage, fs.Args())
	}
	if *n <= 0 || *chunk <= 0 || *vn <= 0 || *vchunk <= 0 || *mn <= 0 || *sn <= 0 {
		return fmt.Errorf("%w: bench ops: --n %d, --chunk %d, --vn %d, --vchunk %d, --mn %d and --sn %d must be positive", errUsage, *n, *chunk, *vn, *vchunk, *mn, *sn)
	}
	if *persisted {
		*persist, *calls = true, true
	}
	sizes := benchSizes{n: *n, chunk: *chunk, vn: *vn, vchunk: *vchunk, mn: *mn, sn: *sn}
	var re *regexp.Regexp
	if *match != "" {
		var err error
		if re, err = regexp.Compile(*match); err != nil {
			return fmt.Errorf("%w: bench ops: --match: %v", errUsage, err)
		}
	}
	opt, device, err := benchBackend("ops", *backend, *gpus)
	if err != nil {
		return err
	}
	selected := func(op benchOp) bool {
		return (*only == "" || op.name == *only) && (re == nil || re.MatchString(op.name))
	}
	table := opsTable
	if *calls || *only != "" || re != nil {
		table = append(slices.Clip(opsTable), callsTable...)
	}
	held := map[string]*gpuarray.Array{} // by benchOp.of()
	if *persist {
		// Each array is persisted only when a selected op reads it: the float32 copy would
		// take device memory the float64 one may need (a 120000^2 array on two GPUs).
		for _, op := range table {
			if !selected(op) || held[op.of()] != nil {
				continue
			}
			h := benchArray(op.of(), sizes).Persist(opt, gpuarray.WithContext(ctx))
			if err := h.Err(); err != nil {
				return fmt.Errorf("bench ops: persist: %w", err)
			}
			held[op.of()] = h
			defer h.Release()
		}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	ran := false
	var firstErr error
	for _, op := range table {
		if !selected(op) {
			continue
		}
		ran = true
		res := opsResult{Op: op.name, N: *n, Chunk: *chunk, Backend: *backend, Device: device, Seconds: math.Inf(1), ToHostSeconds: math.Inf(1), Persisted: *persist}
		if *backend == "gpu" {
			res.GPUs = *gpus
		}
		var failed error
		for rep := 0; rep < 4; rep++ { // a warm-up, then best of 3
			t0 := time.Now()
			x := benchArray(op.of(), sizes)
			if *persist {
				x = held[op.of()]
			}
			var y *gpuarray.Array
			if op.build == nil {
				y = x.Sum()
			} else {
				y = op.build(x, *n, *chunk)
			}
			c, err := y.Compute(opt, gpuarray.WithContext(ctx))
			if err != nil {
				failed = fmt.Errorf("bench ops: %s: %w", op.name, err)
				break
			}
			if rep > 0 {
				res.Seconds = min(res.Seconds, time.Since(t0).Seconds())
			}
			read := c
			if *onDevice && c.Size() > 1<<20 {
				// Its first element alone: a 4e8-element argsort took 14.9 s to come to host
				// memory as float64 values on an H200 (bench/RESULTS.md), 4 times a row.
				read = firstElement(c)
			}
			vals, err := read.ToSlice(opt, gpuarray.WithContext(ctx))
			if err != nil {
				c.Release()
				failed = fmt.Errorf("bench ops: %s: %w", op.name, err)
				break
			}
			if rep > 0 {
				res.ToHostSeconds = min(res.ToHostSeconds, time.Since(t0).Seconds())
			}
			c.Release() // a result held on a GPU gives its memory back before the next run
			res.Value, res.Path = vals[0], c.Path()
			if res.Path == "" {
				res.Path = "cpu (fused loops)"
			}
		}
		if failed != nil {
			// With --json the other rows still run (a long device run keeps its figures); the
			// first failure is the command's error.
			if !*asJSON {
				return failed
			}
			if err := enc.Encode(map[string]string{"op": op.name, "error": failed.Error()}); err != nil {
				return err
			}
			if firstErr == nil {
				firstErr = failed
			}
			continue
		}
		if *asJSON {
			if err := enc.Encode(res); err != nil {
				return err
			}
			continue
		}
		if _, err := fmt.Fprintf(w, "%-26s n=%d chunk=%d %s  %.4f s  (%s)\n", res.Op, res.N, res.Chunk, res.Backend, res.Seconds, res.Path); err != nil {
			return err
		}
	}
	if !ran {
		return fmt.Errorf("%w: bench ops: no op named %q matching %q", errUsage, *only, *match)
	}
	return firstErr
}
