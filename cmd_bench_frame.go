package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"strings"
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
// uniform on [0, 100) rounded to 6 decimals.
func groupbyData(n, k, parts int) *dataframe.Frame {
	r := rand.New(rand.NewPCG(108, 0))
	nk := max(1, n/k)
	// Each distinct string formatted once (the rows share them; 3n Sprintf calls took most of
	// the generator's time at 1e8 rows).
	t3, t10 := make([]string, k), make([]string, nk)
	for i := range t3 {
		t3[i] = fmt.Sprintf("id%03d", i+1)
	}
	for i := range t10 {
		t10[i] = fmt.Sprintf("id%010d", i+1)
	}
	s3 := func(x int) string { return t3[x-1] }
	id1, id2, id3 := make([]string, n), make([]string, n), make([]string, n)
	id4, id5, id6, v1, v2 := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
	v3 := make([]float64, n)
	for i := 0; i < n; i++ {
		id1[i], id2[i] = s3(1+r.IntN(k)), s3(1+r.IntN(k))
		id3[i] = t10[r.IntN(nk)]
		id4[i], id5[i], id6[i] = int32(1+r.IntN(k)), int32(1+r.IntN(k)), int32(1+r.IntN(nk))
		v1[i], v2[i] = int32(1+r.IntN(5)), int32(1+r.IntN(15))
		v3[i] = float64(int64(r.Float64()*100*1e6)) / 1e6
	}
	return dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v1", "v2", "v3"},
		[]any{id1, id2, id3, id4, id5, id6, v1, v2, v3}, dataframe.NPartitions(parts)).
		AsType("id1", dataframe.Category).AsType("id2", dataframe.Category).AsType("id3", dataframe.Category)
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
	x := groupbyData(*rows, *k, *parts).Persist(opts...)
	if err := x.Err(); err != nil {
		return err
	}
	want := map[string]bool{}
	for _, q := range strings.Split(*only, ",") {
		if q = strings.TrimSpace(q); q != "" {
			want[q] = true
		}
	}
	// GPUNOTES_CPUPROFILE=FILE profiles the questions (not the generator), as for the kernel.
	if path := os.Getenv("GPUNOTES_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return fmt.Errorf("bench frame: cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("bench frame: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
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
