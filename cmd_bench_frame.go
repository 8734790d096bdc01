package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// frameResult is one JSON line of `bench frame --json`.
type frameResult struct {
	Task     string  `json:"task"`
	Question string  `json:"question"`
	Rows     int     `json:"rows"`
	Backend  string  `json:"backend"`
	Device   string  `json:"device"`
	Seconds  float64 `json:"seconds"`
	OutRows  int     `json:"out_rows"`
	Path     string  `json:"path"`
	Error    string  `json:"error,omitempty"`
}

// groupbyData generates the db-benchmark groupby table (G1_N_K_0_0) with this project's own
// generator and the distributions of its groupby-datagen.R: id1, id2 from "id%03d" of 1..K;
// id3 from "id%010d" of 1..N/K; id4, id5 in 1..K; id6 in 1..N/K; v1 in 1..5; v2 in 1..15; v3
// uniform on [0, 100) rounded to 6 decimals. id1..id3 are categoricals made from their codes
// (the rows hold no strings); the rows are drawn in blocks on every core, each block from its
// own stream of one seed, so a table is the same on every machine.
func groupbyData(n, k, parts int) *dataframe.Frame {
	nk := max(1, n/k)
	t3, t10 := idNames("id%03d", k), idNames("id%010d", nk)
	id1, id2, id3 := make([]int32, n), make([]int32, n), make([]int32, n)
	id4, id5, id6, v1, v2 := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	v3 := make([]float64, n)
	inBlocks(n, 108, func(r *rand.Rand, lo, hi int) {
		for i := lo; i < hi; i++ {
			id1[i], id2[i], id3[i] = int32(r.IntN(k)), int32(r.IntN(k)), int32(r.IntN(nk))
			id4[i], id5[i], id6[i] = int32(1+r.IntN(k)), int32(1+r.IntN(k)), int32(1+r.IntN(nk))
			v1[i], v2[i] = int32(1+r.IntN(5)), int32(1+r.IntN(15))
			v3[i] = float64(int64(r.Float64()*100*1e6)) / 1e6
		}
	})
	return dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3"},
		[]any{dataframe.Categorical(id1, t3), dataframe.Categorical(id2, t3), dataframe.Categorical(id3, t10),
			id4, id5, id6, v1, v2, v3}, dataframe.NPartitions(parts))
}

// genBlock is how many rows one block of the generators draws.
const genBlock = 1 << 20

// inBlocks calls fill for each block [lo, hi) of n rows, on every core, with a generator of
// its own: the stream of seed numbered by the block.
func inBlocks(n int, seed uint64, fill func(r *rand.Rand, lo, hi int)) {
	nb := (n + genBlock - 1) / genBlock
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(nb, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := int(next.Add(1) - 1); b < nb; b = int(next.Add(1) - 1) {
				fill(rand.New(rand.NewPCG(seed, uint64(b))), b*genBlock, min(n, (b+1)*genBlock))
			}
		}()
	}
	wg.Wait()
}

// idNames is the strings format applied to 1..n (a categorical's categories), formatted on every
// core.
func idNames(format string, n int) []string {
	out := make([]string, n)
	inBlocks(n, 0, func(_ *rand.Rand, lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = fmt.Sprintf(format, i+1)
		}
	})
	return out
}

// groupbyQuestions are db-benchmark's ten groupby questions.
var groupbyQuestions = []struct {
	name string
	run  func(x *dataframe.Frame) *dataframe.Frame
}{
	{"q1 sum v1 by id1", func(x *dataframe.Frame) *dataframe.Frame { return x.GroupBy("id1").Agg(dataframe.Sum("v1")) }},
	{"q2 sum v1 by id1:id2", func(x *dataframe.Frame) *dataframe.Frame { return x.GroupBy("id1", "id2").Agg(dataframe.Sum("v1")) }},
	{"q3 sum v1 mean v3 by id3", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id3").Agg(dataframe.Sum("v1"), dataframe.Mean("v3"))
	}},
	{"q4 mean v1:v3 by id4", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id4").Agg(dataframe.Mean("v1"), dataframe.Mean("v2"), dataframe.Mean("v3"))
	}},
	{"q5 sum v1:v3 by id6", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id6").Agg(dataframe.Sum("v1"), dataframe.Sum("v2"), dataframe.Sum("v3"))
	}},
	{"q6 median v3 sd v3 by id4 id5", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id4", "id5").Agg(dataframe.Median("v3").As("median_v3"), dataframe.Std("v3").As("sd_v3"))
	}},
	{"q7 max v1 - min v2 by id3", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id3").Agg(dataframe.Max("v1"), dataframe.Min("v2")).
			Assign("range_v1_v2", dataframe.Col("v1").Sub(dataframe.Col("v2"))).Select("id3", "range_v1_v2")
	}},
	{"q8 max v3 top 2 by id6", func(x *dataframe.Frame) *dataframe.Frame { return x.GroupBy("id6").NLargest(2, "v3") }},
	{"q9 r2 v1 v2 by id2 id4", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id2", "id4").Agg(dataframe.Corr("v1", "v2").As("r")).
			Assign("r2", dataframe.Col("r").Mul(dataframe.Col("r"))).Select("id2", "id4", "r2")
	}},
	{"q10 sum v3 count by id1:id6", func(x *dataframe.Frame) *dataframe.Frame {
		return x.GroupBy("id1", "id2", "id3", "id4", "id5", "id6").Agg(dataframe.Sum("v3"), dataframe.Size().As("count"))
	}},
}

func benchFrame(ctx context.Context, args []string, w io.Writer) error {
	if frameTask(args) == "join" {
		return benchFrameJoin(ctx, args, w)
	}
	fs := flag.NewFlagSet("bench frame", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	task := fs.String("task", "groupby", "groupby, shuffle or join")
	workers := fs.Int("workers", 4, "shuffle: CPU workers of the local cluster")
	memLimit := fs.String("memory-limit", "", "shuffle: each worker's memory limit (default: the machine's memory divided)")
	rows := fs.Int("rows", 1_000_000, "rows")
	k := fs.Int("k", 100, "groups of the id1/id4 kind (db-benchmark's K)")
	parts := fs.Int("partitions", 8, "partitions")
	backend := fs.String("backend", "cpu", "cpu or gpu")
	asJSON := fs.Bool("json", false, "one JSON line per question")
	only := fs.String("questions", "", "comma-separated questions to run (q1,q10; default all)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: bench frame: %v", errUsage, err)
	}
	if *task != "groupby" && *task != "shuffle" {
		return fmt.Errorf("%w: bench frame: --task %q (have groupby, shuffle, join)", errUsage, *task)
	}
	if *rows <= 0 || *k <= 0 || *parts <= 0 || *workers <= 0 {
		return fmt.Errorf("%w: bench frame: --rows, --k, --partitions and --workers must be positive", errUsage)
	}
	if *task == "shuffle" {
		return benchShuffle(ctx, *rows, *workers, *parts, *memLimit, *asJSON, w)
	}
	opt, device, err := benchBackend("frame", *backend, 1)
	if err != nil {
		return err
	}
	opts := []gpuarray.ComputeOption{opt, gpuarray.WithContext(ctx), gpuarray.NoProgressBar()}
	// Data in memory for every engine: generated, then persisted where the backend computes.
	t0 := time.Now()
	x := groupbyData(*rows, *k, *parts)
	t1 := time.Now()
	if x = x.Persist(opts...); x.Err() != nil {
		return x.Err()
	}
	// On stderr, so that --json's lines stay one per question.
	fmt.Fprintf(os.Stderr, "bench frame: %d rows generated in %.2f s, persisted in %.2f s\n", *rows, t1.Sub(t0).Seconds(), time.Since(t1).Seconds())
	want := map[string]bool{}
	for _, q := range strings.Split(*only, ",") {
		if q = strings.TrimSpace(q); q != "" {
			want[q] = true
		}
	}
	stop, err := profileQuestions()
	if err != nil {
		return err
	}
	defer stop()
	for _, q := range groupbyQuestions {
		if len(want) > 0 && !want[strings.Fields(q.name)[0]] {
			continue
		}
		base := frameResult{Task: *task, Question: q.name, Rows: *rows, Backend: *backend, Device: device}
		if err := timeQuestion(w, base, *asJSON, "groups", func() (*dataframe.Frame, error) { return q.run(x).Compute(opts...) }); err != nil {
			if ctx.Err() != nil {
				return err
			}
			// One question's failure is that question's row; the others still run.
			base.Error = err.Error()
			writeFrameResult(w, base, *asJSON, "groups", 0)
		}
	}
	return nil
}

// profileQuestions starts a CPU profile of the questions (not the generator) into the file
// GPUNOTES_CPUPROFILE names, as for the kernel; stop ends it.
func profileQuestions() (stop func(), err error) {
	path := os.Getenv("GPUNOTES_CPUPROFILE")
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("bench frame: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench frame: cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// timeQuestion runs one benchmark question twice, as db-benchmark times each, and writes the
// best time as a JSON line or a text row (unit names what the result's rows are).
func timeQuestion(w io.Writer, out frameResult, asJSON bool, unit string, run func() (*dataframe.Frame, error)) error {
	best := 0.0
	var res *dataframe.Frame
	for i := 0; i < 2; i++ {
		start := time.Now()
		r, err := run()
		if err != nil {
			return fmt.Errorf("bench frame %s: %w", out.Question, err)
		}
		if s := time.Since(start).Seconds(); i == 0 || s < best {
			best = s
		}
		res = r
	}
	n, _ := res.Len()
	out.Seconds, out.Path = best, res.Path()
	writeFrameResult(w, out, asJSON, unit, n)
	return nil
}

// writeFrameResult writes one question's result (n rows of unit) as a JSON line or a text row.
func writeFrameResult(w io.Writer, out frameResult, asJSON bool, unit string, n int) {
	out.OutRows = n
	switch {
	case asJSON:
		b, _ := json.Marshal(out)
		fmt.Fprintln(w, string(b))
	case out.Error != "":
		fmt.Fprintf(w, "%-32s failed: %s\n", out.Question, out.Error)
	default:
		fmt.Fprintf(w, "%-32s %8.3f s  %d %s\n", out.Question, out.Seconds, n, unit)
	}
}
