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
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

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

func uniform100(seed uint64, n int) []float64 {
	v := make([]float64, n)
	inBlocks(n, seed, func(r *rand.Rand, lo, hi int) {
		for i := lo; i < hi; i++ {
			v[i] = math.Round(r.Float64()*100*1e6) / 1e6
		}
	})
	return v
}

// joinTables are db-benchmark's join tables J1_N_NA_0_0: x and its small, medium and big
// right-hand sides.
type joinTables struct{ x, small, medium, big *dataframe.Frame }

// joinLevel is one key set of the join tables (N/1e6, N/1e3 or N keys) and the categories
// "id%d" of its keys 1..1.1N, which the factor columns id4..id6 of every table share.
type joinLevel struct {
	keys joinKeySets
	cats []string
}

// factor is the categorical of keys in lv's categories ("id%d" of each key).
func (lv joinLevel) factor(keys []int32) dataframe.CategoricalColumn {
	codes := make([]int32, len(keys))
	inBlocks(len(keys), 0, func(_ *rand.Rand, lo, hi int) {
		for i := lo; i < hi; i++ {
			codes[i] = keys[i] - 1
		}
	})
	return dataframe.Categorical(codes, lv.cats)
}

// joinData generates the join tables with this project's generator and the distributions of
// db-benchmark's join-datagen.R (no nulls, random order): key sets of N/1e6, N/1e3 and N keys
// (90% on both sides, 10% left only, 10% right only); x draws id1..id3 from the left keys,
// every key at least once; small has id1, medium id1 and id2, big id1..id3 from the right
// keys, the last of each a permutation (unique); id4..id6 are "id%d" of id1..id3 as
// categoricals; v1 (x) and v2 (right sides) are uniform on [0, 100) rounded to 6 places. Each
// key set and column draws from its own stream of one seed, the columns at once on the cores.
func joinData(n, parts int) joinTables {
	sizes := []int{max(1, n/1_000_000), max(1, n/1_000), n}
	lv := make([]joinLevel, 3)
	var wg sync.WaitGroup
	for i, m := range sizes {
		wg.Go(func() {
			k := splitXLR(rand.New(rand.NewPCG(108, uint64(i))), m)
			lv[i] = joinLevel{k, idNumbers(len(k.x) + len(k.l) + len(k.r))}
		})
	}
	wg.Wait()
	// x's id1..id3, then small's, medium's and big's keys, each column its own stream.
	draws := []struct {
		size  int
		level int
		right bool
	}{{n, 0, false}, {n, 1, false}, {n, 2, false}, {sizes[0], 0, true}, {sizes[1], 0, true}, {sizes[1], 1, true},
		{n, 0, true}, {n, 1, true}, {n, 2, true}}
	keys := make([][]int32, len(draws))
	for i, d := range draws {
		wg.Go(func() {
			k, side := lv[d.level].keys, lv[d.level].keys.l
			if d.right {
				side = k.r
			}
			keys[i] = sampleAll(rand.New(rand.NewPCG(108, uint64(10+i))), d.size, k.x, side)
		})
	}
	wg.Wait()
	xid, sid1, mid, bid := keys[0:3], keys[3], keys[4:6], keys[6:9]
	x := dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v1"},
		[]any{xid[0], xid[1], xid[2], lv[0].factor(xid[0]), lv[1].factor(xid[1]), lv[2].factor(xid[2]), uniform100(20, n)},
		dataframe.NPartitions(parts))
	small := dataframe.FromSlices([]string{"id1", "id4", "v2"},
		[]any{sid1, lv[0].factor(sid1), uniform100(21, sizes[0])}, dataframe.NPartitions(1))
	medium := dataframe.FromSlices([]string{"id1", "id2", "id4", "id5", "v2"},
		[]any{mid[0], mid[1], lv[0].factor(mid[0]), lv[1].factor(mid[1]), uniform100(22, sizes[1])},
		dataframe.NPartitions(max(1, min(parts, sizes[1]/100_000))))
	big := dataframe.FromSlices([]string{"id1", "id2", "id3", "id4", "id5", "id6", "v2"},
		[]any{bid[0], bid[1], bid[2], lv[0].factor(bid[0]), lv[1].factor(bid[1]), lv[2].factor(bid[2]), uniform100(23, n)},
		dataframe.NPartitions(parts))
	return joinTables{x, small, medium, big}
}

// idNumbers is "id%d" of 1..n, formatted on every core into shared buffers (one per block).
func idNumbers(n int) []string {
	out := make([]string, n)
	inBlocks(n, 0, func(_ *rand.Rand, lo, hi int) {
		buf := make([]byte, 0, (hi-lo)*(2+len(strconv.Itoa(hi))))
		for i := lo; i < hi; i++ {
			at := len(buf)
			buf = strconv.AppendInt(append(buf, "id"...), int64(i+1), 10)
			out[i] = unsafe.String(&buf[at], len(buf)-at)
		}
	})
	return out
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
	t0 := time.Now()
	t := joinData(*rows, *parts)
	t1 := time.Now()
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
	t2 := time.Now()
	for _, f := range []**dataframe.Frame{&t.x, &t.small, &t.medium, &t.big} {
		if *f = (*f).Persist(opts...); (*f).Err() != nil {
			return (*f).Err()
		}
	}
	fmt.Fprintf(os.Stderr, "bench frame: join tables of %d rows generated in %.2f s, persisted in %.2f s\n", *rows, t1.Sub(t0).Seconds(), time.Since(t2).Seconds())
	stop, err := profileQuestions()
	if err != nil {
		return err
	}
	defer stop()
	want := map[string]bool{}
	for _, q := range strings.Split(*only, ",") {
		if q = strings.TrimSpace(q); q != "" {
			want[q] = true
		}
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
