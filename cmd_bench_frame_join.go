package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// frameTask returns the value of --task in args ("groupby" when absent), so that benchFrame can
// hand the join task to benchFrameJoin before parsing its own flags.
func frameTask(args []string) string {
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "task="); ok {
			return v
		}
		if a == "task" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "groupby"
}

// joinKeySets is split_xlr of join-datagen.R: a permutation of 1..1.1n split into the keys
// both sides have (0.9n), the left side only (0.1n) and the right side only (0.1n).
type joinKeySets struct{ x, l, r []int32 }

func splitXLR(rng *rand.Rand, n int) joinKeySets {
	nx := max(1, int(math.Round(0.9*float64(n))))
	nl := max(0, n-nx)
	nr := int(math.Round(0.1 * float64(n)))
	all := make([]int32, nx+nl+nr)
	for i := range all {
		all[i] = int32(i + 1)
	}
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	return joinKeySets{all[:nx], all[nx : nx+nl], all[nx+nl:]}
}

// sampleAll is size draws from keys in which every key appears at least once, shuffled (the
// R script's sample_all): a permutation when size equals the number of keys.
func sampleAll(rng *rand.Rand, size int, sets ...[]int32) []int32 {
	var keys []int32
	for _, s := range sets {
		keys = append(keys, s...)
	}
	out := make([]int32, 0, max(size, len(keys)))
	out = append(out, keys...)
	for len(out) < size {
		out = append(out, keys[rng.IntN(len(keys))])
	}
	out = out[:max(size, 0)]
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func uniform100(rng *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Round(rng.Float64()*100*1e6) / 1e6
	}
	return v
}

// idStrings is sprintf("id%.0f", k) of every key, as a categorical's values.
func idStrings(k []int32) []string {
	out := make([]string, len(k))
	for i, x := range k {
		out[i] = fmt.Sprintf("id%d", x)
	}
	return out
}

// joinTables are db-benchmark's join tables J1_N_NA_0_0: x and its small, medium and big
// right-hand sides.
type joinTables struct{ x, small, medium, big *dataframe.Frame }

// joinData generates the join tables with this project's generator and the distributions of
// db-benchmark's join-datagen.R (no nulls, random order): key sets of N/1e6, N/1e3 and N keys
// (90% on both sides, 10% left only, 10% right only); x draws id1..id3 from the left keys,
// every key at least once; small has id1, medium id1 and id2, big id1..id3 from the right
// keys, the last of each a permutation (unique); id4..id6 are "id%d" of id1..id3 as
// categoricals; v1 (x) and v2 (right sides) are uniform on [0, 100) rounded to 6 places.
func joinData(n, parts int) joinTables {
	rng := rand.New(rand.NewPCG(108, 0))
	ns := max(1, n/1_000_000)
	nm := max(1, n/1_000)
	k1, k2, k3 := splitXLR(rng, ns), splitXLR(rng, nm), splitXLR(rng, n)
	cat := func(f *dataframe.Frame, cols ...string) *dataframe.Frame {
		for _, c := range cols {
			f = f.AsType(c, dataframe.Category)
		}
		return f
	}
	xid1, xid2, xid3 := sampleAll(rng, n, k1.x, k1.l), sampleAll(rng, n, k2.x, k2.l), sampleAll(rng, n, k3.x, k3.l)
	x := cat(dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v1"},
		[]any{xid1, xid2, xid3, idStrings(xid1), idStrings(xid2), idStrings(xid3), uniform100(rng, n)},
		dataframe.NPartitions(parts)), "id4", "id5", "id6")
	sid1 := sampleAll(rng, ns, k1.x, k1.r)
	small := cat(dataframe.FromSlices([]string{"id1", "id4", "v2"},
		[]any{sid1, idStrings(sid1), uniform100(rng, ns)}, dataframe.NPartitions(1)), "id4")
	mid1, mid2 := sampleAll(rng, nm, k1.x, k1.r), sampleAll(rng, nm, k2.x, k2.r)
	medium := cat(dataframe.FromSlices([]string{"id1", "id2", "id4", "id5", "v2"},
		[]any{mid1, mid2, idStrings(mid1), idStrings(mid2), uniform100(rng, nm)},
		dataframe.NPartitions(max(1, min(parts, nm/100_000)))), "id4", "id5")
	bid1, bid2, bid3 := sampleAll(rng, n, k1.x, k1.r), sampleAll(rng, n, k2.x, k2.r), sampleAll(rng, n, k3.x, k3.r)
	big := cat(dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v2"},
		[]any{bid1, bid2, bid3, idStrings(bid1), idStrings(bid2), idStrings(bid3), uniform100(rng, n)},
		dataframe.NPartitions(parts)), "id4", "id5", "id6")
	return joinTables{x, small, medium, big}
}

// joinQuestions are db-benchmark's five join questions, as its pandas, Polars and DuckDB
// solutions write them (q3, "medium outer", is a left join there).
var joinQuestions = []struct {
	name string
	run  func(t joinTables) *dataframe.Frame
}{
	{"q1 small inner on int", func(t joinTables) *dataframe.Frame { return dataframe.Merge(t.x, t.small, dataframe.On("id1")) }},
	{"q2 medium inner on int", func(t joinTables) *dataframe.Frame { return dataframe.Merge(t.x, t.medium, dataframe.On("id2")) }},
	{"q3 medium outer on int", func(t joinTables) *dataframe.Frame {
		return dataframe.Merge(t.x, t.medium, dataframe.On("id2"), dataframe.How("left"))
	}},
	{"q4 medium inner on factor", func(t joinTables) *dataframe.Frame { return dataframe.Merge(t.x, t.medium, dataframe.On("id5")) }},
	{"q5 big inner on int", func(t joinTables) *dataframe.Frame { return dataframe.Merge(t.x, t.big, dataframe.On("id3")) }},
}

// benchFrameJoin is `bench frame --task join`: db-benchmark's join task on generated tables in
// memory; --write DIR also writes them as Parquet (x, small, medium, big .parquet) for
// bench/join_peers.py.
func benchFrameJoin(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench frame", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	task := fs.String("task", "join", "join")
	rows := fs.Int("rows", 1_000_000, "rows of x")
	parts := fs.Int("partitions", 8, "partitions of x and big")
	backend := fs.String("backend", "cpu", "cpu or gpu")
	asJSON := fs.Bool("json", false, "one JSON line per question")
	write := fs.String("write", "", "directory to write the tables to as Parquet")
	only := fs.String("questions", "", "comma-separated questions to run (q1,q5); all when empty")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: bench frame: %v", errUsage, err)
	}
	if *rows <= 0 || *parts <= 0 {
		return fmt.Errorf("%w: bench frame: --rows and --partitions must be positive", errUsage)
	}
	opt, device, err := benchBackend("frame", *backend, 1)
	if err != nil {
		return err
	}
	opts := []gpuarray.ComputeOption{opt, gpuarray.WithContext(ctx), gpuarray.NoProgressBar()}
	t := joinData(*rows, *parts)
	if *write != "" {
		if err := os.MkdirAll(*write, 0o755); err != nil {
			return fmt.Errorf("bench frame --write: %w", err)
		}
		for name, f := range map[string]*dataframe.Frame{"x": t.x, "small": t.small, "medium": t.medium, "big": t.big} {
			if err := f.ToParquet(filepath.Join(*write, name+".parquet")); err != nil {
				return fmt.Errorf("bench frame --write: %w", err)
			}
		}
	}
	// Data in memory for every engine: generated, then persisted where the backend computes.
	for _, f := range []**dataframe.Frame{&t.x, &t.small, &t.medium, &t.big} {
		if *f = (*f).Persist(opts...); (*f).Err() != nil {
			return (*f).Err()
		}
	}
	want := map[string]bool{}
	for _, q := range strings.Split(*only, ",") {
		if q = strings.TrimSpace(q); q != "" {
			want[q] = true
		}
	}
	// GPUNOTES_CPUPROFILE=FILE profiles the questions (not the generator), as for groupby.
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
	for _, q := range joinQuestions {
		if len(want) > 0 && !want[strings.Fields(q.name)[0]] {
			continue
		}
		base := frameResult{Task: *task, Question: q.name, Rows: *rows, Backend: *backend, Device: device}
		if err := timeQuestion(w, base, *asJSON, "rows", func() (*dataframe.Frame, error) { return q.run(t).Compute(opts...) }); err != nil {
			return err
		}
	}
	return nil
}
