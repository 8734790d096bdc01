package cluster_test

import (
	"context"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// groupByFrame is a frame of two keys (one with nulls) and three value columns: floats with
// nulls and NaN, int64s with nulls, int32s.
func groupByFrame(rows, parts int) *dataframe.Frame {
	k := make([]int64, rows)
	kok := make([]bool, rows)
	d := make([]int32, rows)
	x := make([]float64, rows)
	xok := make([]bool, rows)
	n := make([]int64, rows)
	nok := make([]bool, rows)
	j := make([]int32, rows)
	for i := range k {
		k[i], kok[i] = int64(i*7919%37)-5, i%23 != 0
		d[i] = int32(i % 5)
		x[i], xok[i] = float64(i%1000)/7+float64(i%3), i%13 != 0
		if i%29 == 0 {
			x[i] = math.NaN()
		}
		n[i], nok[i] = int64(i*31%101)-50, i%11 != 0
		j[i] = int32(i * 17 % 211)
	}
	return dataframe.FromSlices([]string{"k", "d", "x", "n", "j"},
		[]any{dataframe.Nullable(k, kok), d, dataframe.Nullable(x, xok), dataframe.Nullable(n, nok), j}, dataframe.NPartitions(parts))
}

// groupByAggs are the aggregations compared, each over every value column.
var groupByAggs = []struct {
	name string
	agg  func(string) dataframe.Agg
}{
	{"sum", dataframe.Sum}, {"mean", dataframe.Mean}, {"min", dataframe.Min}, {"max", dataframe.Max},
	{"count", dataframe.Count}, {"size", func(string) dataframe.Agg { return dataframe.Size() }},
	{"var", dataframe.Var}, {"std", dataframe.Std}, {"first", dataframe.First}, {"last", dataframe.Last},
	{"nunique", dataframe.NUnique}, {"median", dataframe.Median},
}

func aggsOf(name string, agg func(string) dataframe.Agg) []dataframe.Agg {
	if name == "size" {
		return []dataframe.Agg{dataframe.Size()}
	}
	return []dataframe.Agg{agg("x"), agg("n"), agg("j")}
}

// sameFrame fails unless got and want have the same columns, nulls and values: integers
// exactly, floats to tol relative (sums added in another order), NaN equal to NaN.
func sameFrame(t *testing.T, what string, got, want *dataframe.Frame, tol float64) {
	t.Helper()
	gf, wf := got.Dtypes(), want.Dtypes()
	if len(gf) != len(wf) {
		t.Fatalf("%s: columns %v, want %v", what, gf, wf)
	}
	for i, f := range wf {
		if gf[i] != f {
			t.Fatalf("%s: column %d is %v, want %v", what, i, gf[i], f)
		}
		gv, err1 := got.Valid(f.Name)
		wv, err2 := want.Valid(f.Name)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if len(gv) != len(wv) {
			t.Fatalf("%s: %d rows, want %d", what, len(gv), len(wv))
		}
		for r := range wv {
			if gv[r] != wv[r] {
				t.Fatalf("%s: %s[%d] valid %v, want %v", what, f.Name, r, gv[r], wv[r])
			}
		}
		if f.DType.IsFloat() {
			g, err1 := got.Float64s(f.Name)
			w, err2 := want.Float64s(f.Name)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			for r := range w {
				if math.IsNaN(w[r]) != math.IsNaN(g[r]) || (!math.IsNaN(w[r]) && math.Abs(g[r]-w[r]) > tol*math.Max(1, math.Abs(w[r]))) {
					t.Fatalf("%s: %s[%d] = %v, want %v", what, f.Name, r, g[r], w[r])
				}
			}
			continue
		}
		g, err1 := got.Int64s(f.Name)
		w, err2 := want.Int64s(f.Name)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		for r := range w {
			if g[r] != w[r] {
				t.Fatalf("%s: %s[%d] = %d, want %d", what, f.Name, r, g[r], w[r])
			}
		}
	}
}

// checkGroupByOnWorkers runs every aggregation of groupByAggs over f grouped by k and d,
// persisted on c, and checks each equals the groupby in this process; want says what Path must
// say of where the partitions were aggregated, tol how close floats must be.
func checkGroupByOnWorkers(t *testing.T, c *cluster.LocalCUDA, f *dataframe.Frame, persisted *dataframe.Frame, where func(agg string) string, tol float64) {
	t.Helper()
	for _, a := range groupByAggs {
		want, err := f.GroupBy("k", "d").Sorted().Agg(aggsOf(a.name, a.agg)...).Compute()
		if err != nil {
			t.Fatalf("%s inline: %v", a.name, err)
		}
		got, err := persisted.GroupBy("k", "d").Sorted().Agg(aggsOf(a.name, a.agg)...).Compute(gpuarray.On(c))
		if err != nil {
			t.Fatalf("%s on the workers: %v", a.name, err)
		}
		p := got.Path()
		if !strings.Contains(p, "on the workers holding them") || strings.Contains(p, "aggregated here") {
			t.Errorf("%s: path %q: not aggregated on the workers", a.name, p)
		}
		if w := where(a.name); !strings.Contains(p, w) {
			t.Errorf("%s: path %q does not say %q", a.name, p, w)
		}
		sameFrame(t, a.name, got, want, tol)
		if a.name == "var" || a.name == "first" {
			t.Logf("path of %s: %s", a.name, p)
		}
	}
}

// TestGroupByOnWorkersEqualsInline groups a frame persisted on three CPU workers by two keys
// (nulls among them) with every aggregation, each worker aggregating the partitions it holds
// and the partials combined there, and checks each result equals the groupby in this
// process; and that SplitOut gives the same groups.
func TestGroupByOnWorkersEqualsInline(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3})
	f := groupByFrame(20000, 11)
	pf := f.Persist(gpuarray.On(c))
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	checkGroupByOnWorkers(t, c, f, pf, func(string) string { return "aggregated on the CPU (hashagg; no GPU on this worker)" }, 1e-12)

	want, err := f.GroupBy("k", "d").Sorted().Agg(dataframe.Sum("x"), dataframe.Count("n")).Compute()
	if err != nil {
		t.Fatal(err)
	}
	split, err := pf.GroupBy("k", "d").SplitOut(4).Agg(dataframe.Sum("x"), dataframe.Count("n")).Compute(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	if split.NPartitions() != 4 {
		t.Fatalf("SplitOut(4): %d partitions", split.NPartitions())
	}
	sorted, err := split.SortValues([]string{"k", "d"}).Compute()
	if err != nil {
		t.Fatal(err)
	}
	sameFrame(t, "split out", sorted, want, 1e-12)
}

// TestGroupByOnWorkersSurvivesKilledWorker persists a frame on three workers, groups it,
// kills (SIGKILL) the worker holding the most of its partitions, and groups it again: the
// partitions lost with it are computed again from the graph, and the result equals the
// groupby in this process.
func TestGroupByOnWorkersSurvivesKilledWorker(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3})
	f := groupByFrame(30000, 12)
	pf := f.Persist(gpuarray.On(c))
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	aggs := []dataframe.Agg{dataframe.Sum("x"), dataframe.Mean("n"), dataframe.Max("j"), dataframe.Size(), dataframe.First("x"), dataframe.Median("n")}
	want, err := f.GroupBy("k", "d").Sorted().Agg(aggs...).Compute()
	if err != nil {
		t.Fatal(err)
	}
	before, err := pf.GroupBy("k", "d").Sorted().Agg(aggs...).Compute(gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	sameFrame(t, "before the kill", before, want, 1e-12)
	victim := busiestWorker(t, c)
	pid := c.WorkerPIDs()[victim.Name]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	after, err := pf.GroupBy("k", "d").Sorted().Agg(aggs...).Compute(gpuarray.On(c))
	if err != nil {
		t.Fatalf("groupby after %s (holding %d results) was killed: %v", victim.Name, victim.InMemory, err)
	}
	if alive(pid) {
		t.Fatalf("worker %s (pid %d) survived SIGKILL", victim.Name, pid)
	}
	sameFrame(t, "after the kill", after, want, 1e-12)
	t.Logf("%s (pid %d, %d results) killed; after: %s", victim.Name, pid, victim.InMemory, after.Path())
	if !strings.Contains(after.Path(), "on the workers holding them") {
		t.Fatalf("path %q: not aggregated on the workers", after.Path())
	}
}

// TestGroupByOnWorkersKilledMidGroupBy groups a frame persisted on four workers and kills
// (SIGKILL) the worker holding the most of its partitions while the groupby's tasks run on
// the workers (partials and combines in flight): the lost partitions and partials are computed
// again from the graph, and the result equals the groupby in this process and the one on the
// cluster without the kill.
func TestGroupByOnWorkersKilledMidGroupBy(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	on := gpuarray.On(c)
	f := groupByFrame(400_000, 32)
	pf := f.Persist(on)
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	aggs := []dataframe.Agg{dataframe.Sum("x"), dataframe.Mean("n"), dataframe.Max("j"), dataframe.Size(), dataframe.First("x"), dataframe.Var("n")}
	group := func() (*dataframe.Frame, error) {
		return pf.GroupBy("k", "d").Sorted().Agg(aggs...).Compute(on, gpuarray.WithContext(ctx))
	}
	want, err := f.GroupBy("k", "d").Sorted().Agg(aggs...).Compute()
	if err != nil {
		t.Fatal(err)
	}
	before, err := group()
	if err != nil {
		t.Fatal(err)
	}
	sameFrame(t, "without a kill", before, want, 1e-12)
	victim := busiestWorker(t, c)
	got, err := killDuring(t, ctx, c, victim.Name, func(returned func()) (*dataframe.Frame, error) {
		g, err := group()
		returned()
		return g, err
	})
	if err != nil {
		t.Fatalf("groupby with %s killed mid-run: %v", victim.Name, err)
	}
	sameFrame(t, "with a worker killed mid-run", got, want, 1e-12)
	sameFrame(t, "with a worker killed mid-run, against the run without", got, before, 0)
	if !strings.Contains(got.Path(), "on the workers holding them") {
		t.Fatalf("path %q: not aggregated on the workers", got.Path())
	}
	t.Logf("%s killed mid-groupby (restarts %v); path: %s", victim.Name, c.Restarts(), got.Path())
}
