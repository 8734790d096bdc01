package dataframe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// hostGroupAggregate computes what gpuarray.GroupAggregate's kernels compute, on the host:
// the tables of each column by its codes (codes outside [0, groups) and NaN values skipped),
// so that the device path's planning, codes and result columns run without a GPU.
func hostGroupAggregate(groups int, cols []gpuarray.GroupAggColumn, opts ...gpuarray.ComputeOption) ([]gpuarray.GroupAggTables, string, error) {
	out := make([]gpuarray.GroupAggTables, len(cols))
	for ci, c := range cols {
		codes, err := c.Codes.ToSliceInt64(opts...)
		if err != nil {
			return nil, "", err
		}
		tb := gpuarray.GroupAggTables{Count: make([]int64, groups)}
		var vi []int64
		var vf []float64
		float := c.Values != nil && c.Values.DType() == gpuarray.Float64
		switch {
		case c.Values == nil:
		case float:
			if vf, err = c.Values.ToSlice(opts...); err != nil {
				return nil, "", err
			}
		default:
			if vi, err = c.Values.ToSliceInt64(opts...); err != nil {
				return nil, "", err
			}
		}
		mk := func(on bool, v int64) []int64 {
			if !on || float {
				return nil
			}
			s := make([]int64, groups)
			for i := range s {
				s[i] = v
			}
			return s
		}
		mkf := func(on bool, v float64) []float64 {
			if !on || !float {
				return nil
			}
			s := make([]float64, groups)
			for i := range s {
				s[i] = v
			}
			return s
		}
		tb.SumI, tb.MinI, tb.MaxI = mk(c.Sum, 0), mk(c.Min, math.MaxInt64), mk(c.Max, math.MinInt64)
		tb.SumF, tb.MinF, tb.MaxF = mkf(c.Sum, 0), mkf(c.Min, math.Inf(1)), mkf(c.Max, math.Inf(-1))
		if c.SumSq {
			tb.SumSq = make([]float64, groups)
		}
		for i, g := range codes {
			if g < 0 || g >= int64(groups) || (float && math.IsNaN(vf[i])) {
				continue
			}
			tb.Count[g]++
			switch {
			case c.Values == nil:
			case float:
				x := vf[i]
				if c.Sum {
					tb.SumF[g] += x
				}
				if c.SumSq {
					tb.SumSq[g] += x * x
				}
				if c.Min {
					tb.MinF[g] = math.Min(tb.MinF[g], x)
				}
				if c.Max {
					tb.MaxF[g] = math.Max(tb.MaxF[g], x)
				}
			default:
				x := vi[i]
				if c.Sum {
					tb.SumI[g] += x
				}
				if c.SumSq {
					tb.SumSq[g] += float64(x) * float64(x)
				}
				if c.Min {
					tb.MinI[g] = min(tb.MinI[g], x)
				}
				if c.Max {
					tb.MaxI[g] = max(tb.MaxI[g], x)
				}
			}
		}
		if c.Keep && !(float && (c.Min || c.Max)) {
			// As the device keeps them: arrays instead of the slices.
			tb = keptEmulation(tb, float)
		}
		out[ci] = tb
	}
	return out, fmt.Sprintf("host emulation of the group-aggregate kernels (%d codes)", groups), nil
}

// keptEmulation returns tb's tables as arrays (GroupAggTables' Dev fields), the slices nil, as
// GroupAggregate returns a column that asked to Keep them.
func keptEmulation(tb gpuarray.GroupAggTables, float bool) gpuarray.GroupAggTables {
	var k gpuarray.GroupAggTables
	ints := func(v []int64) *gpuarray.Array {
		if v == nil {
			return nil
		}
		return gpuarray.FromSliceInt64(v)
	}
	k.DevCount = ints(tb.Count)
	switch {
	case float && tb.SumF != nil:
		k.DevSum = gpuarray.FromSlice(tb.SumF)
	case !float:
		k.DevSum = ints(tb.SumI)
	}
	if tb.SumSq != nil {
		k.DevSumSq = gpuarray.FromSlice(tb.SumSq)
	}
	k.DevMin, k.DevMax = ints(tb.MinI), ints(tb.MaxI)
	return k
}

// emulateDevice makes GroupBy take the device path on the CPU, over hostGroupAggregate, until
// the returned function (also run when the test ends) restores it.
func emulateDevice(t *testing.T) (restore func()) {
	t.Helper()
	agg, opts := groupAggregate, deviceOptsOf
	groupAggregate = hostGroupAggregate
	deviceOptsOf = func(rc *runCtx, _ []*column) ([]gpuarray.ComputeOption, bool) { return rc.opts, true }
	restore = func() { groupAggregate, deviceOptsOf = agg, opts }
	t.Cleanup(restore)
	return restore
}

// hostThenDevice computes g on the host path, then on the device path over the host
// emulation (emulateDevice, restored after), failing on an error; what names the case.
func hostThenDevice(t *testing.T, what string, g *Frame) (host, device *Frame) {
	t.Helper()
	host, err := g.Compute()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	restore := emulateDevice(t)
	device, err = g.Compute()
	restore()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return host, device
}

// groupFrame is a random frame of every key kind the device path takes (a categorical, a
// nullable integer with negative values, a bool, a nullable datetime, integers far from 0) and value
// columns with nulls and NaNs, in parts partitions.
func groupFrame(n, parts int, seed uint64) *Frame {
	r := rand.New(rand.NewPCG(seed, 7))
	cats := make([]string, n)
	ki := make([]int64, n)
	kiValid := make([]bool, n)
	kb := make([]bool, n)
	kw := make([]int64, n)
	ky := make([]int64, n)
	vi := make([]int64, n)
	viValid := make([]bool, n)
	vf := make([]float64, n)
	vfValid := make([]bool, n)
	vs := make([]string, n)
	for i := range n {
		cats[i] = fmt.Sprintf("c%d", r.IntN(9))
		ki[i] = int64(r.IntN(41)) - 20
		kiValid[i] = r.IntN(20) != 0
		kb[i] = r.IntN(2) == 0
		kw[i] = int64(r.IntN(3000))*7 - 5e8
		ky[i] = int64(r.IntN(5000))
		vi[i] = r.Int64N(2e12) - 1e12
		viValid[i] = r.IntN(10) != 0
		vf[i] = r.NormFloat64()*100 + 300
		if r.IntN(15) == 0 {
			vf[i] = math.NaN()
		}
		vfValid[i] = r.IntN(8) != 0
		vs[i] = fmt.Sprintf("s%d", r.IntN(5))
	}
	return FromSlices(
		[]string{"cat", "ki", "kb", "kw", "ky", "vi", "vf", "vs"},
		[]any{cats, Nullable(ki, kiValid), kb, kw, ky, Nullable(vi, viValid), Nullable(vf, vfValid), vs},
		NPartitions(parts)).Assign("kc", Col("cat").ToCategory()).
		Assign("kt", Col("ki").Add(1_700_000_000).AsType(DatetimeS))
}

// sameFrames fails unless got and want have the same columns and rows: integers, bools,
// strings and nulls equal, floats within tol relative to their magnitude.
func sameFrames(t *testing.T, what string, got, want *Frame, tol float64) {
	t.Helper()
	if !slices.Equal(got.Columns(), want.Columns()) {
		t.Fatalf("%s: columns %v, want %v", what, got.Columns(), want.Columns())
	}
	for _, fd := range want.Dtypes() {
		gv, err := got.Valid(fd.Name)
		if err != nil {
			t.Fatal(err)
		}
		wv, err := want.Valid(fd.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(gv, wv) {
			t.Fatalf("%s: column %q's nulls differ", what, fd.Name)
		}
		switch {
		case fd.DType.IsFloat():
			g, _ := got.Float64s(fd.Name)
			w, _ := want.Float64s(fd.Name)
			for i := range w {
				if math.IsNaN(w[i]) != math.IsNaN(g[i]) || math.Abs(g[i]-w[i]) > tol*math.Max(1, math.Abs(w[i])) {
					t.Fatalf("%s: %s[%d] = %v, want %v (tolerance %g)", what, fd.Name, i, g[i], w[i], tol)
				}
			}
		case fd.DType == String || fd.DType == Category:
			g, _ := got.Strings(fd.Name)
			w, _ := want.Strings(fd.Name)
			if !slices.Equal(g, w) {
				t.Fatalf("%s: column %q: %v, want %v", what, fd.Name, g, w)
			}
		default:
			g, err := got.Int64s(fd.Name)
			if err != nil {
				t.Fatal(err)
			}
			w, _ := want.Int64s(fd.Name)
			if !slices.Equal(g, w) {
				t.Fatalf("%s: column %q: %v, want %v", what, fd.Name, g, w)
			}
		}
	}
}

// allDenseAggs are every aggregation the device path takes, over an integer, a float and a
// string column.
func allDenseAggs() []Agg {
	return []Agg{Sum("vi").As("vi_sum"), Mean("vi").As("vi_mean"), Min("vi").As("vi_min"), Max("vi").As("vi_max"),
		Count("vi").As("vi_count"), Var("vi").As("vi_var"), Std("vi").As("vi_std"),
		Sum("vf").As("vf_sum"), Mean("vf").As("vf_mean"), Min("vf").As("vf_min"), Max("vf").As("vf_max"),
		Count("vf").As("vf_count"), Var("vf").As("vf_var"), Std("vf").As("vf_std"),
		Count("vs").As("vs_count"), Size(), Min("kt").As("kt_min"), Sum("kb").As("kb_sum"),
		Corr("vi", "vf").As("r_if"), Corr("vf", "ki").As("r_fk")}
}

// TestGroupByDevicePathMatchesHost runs GroupBy's device path (planning, key ranges, the
// fused code expression, tables to result columns) over a host emulation of the kernels and
// compares it with the host hash aggregation, for every key kind the device takes, nulls in
// keys and values, and several partitionings; Path names the dense-code aggregation.
func TestGroupByDevicePathMatchesHost(t *testing.T) {
	keySets := [][]string{{"kc"}, {"ki"}, {"kb"}, {"kt"}, {"kw"}, {"kc", "ki"}, {"ki", "kb", "kc"}}
	for _, parts := range []int{1, 4} {
		f := groupFrame(3000, parts, uint64(parts))
		for _, keys := range keySets {
			what := fmt.Sprintf("%d parts, keys %v", parts, keys)
			g := f.GroupBy(keys...).Sorted().Agg(allDenseAggs()...)
			want, got := hostThenDevice(t, what, g)
			if strings.Contains(want.Path(), "dense-code") {
				t.Fatalf("%s: the host path's Path says %q", what, want.Path())
			}
			if !strings.Contains(got.Path(), "groupby: dense-code aggregation on the GPU") || strings.Contains(got.Path(), "aggregation on the host") {
				t.Fatalf("%s: Path %q", what, got.Path())
			}
			// Var and Std come from sum and sum of squares (hashagg.DensePlan.Partial): about
			// n ulp of the sum of squares, here well inside 1e-9 of the values.
			sameFrames(t, what, got, want, 1e-9)
		}
	}
}

// TestGroupByDeviceSplitOutAndFilter checks SplitOut's partitions and a filter before the
// groupby on the device path against the host's.
func TestGroupByDeviceSplitOutAndFilter(t *testing.T) {
	f := groupFrame(2000, 3, 9).Filter(Col("vf").Gt(0))
	g := f.GroupBy("kc", "kw").SplitOut(3).Agg(Sum("vi"), Max("vf"), Size())
	want, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	emulateDevice(t)
	got, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	if got.NPartitions() != 3 || !strings.Contains(got.Path(), "dense-code") {
		t.Fatalf("%d partitions, Path %q", got.NPartitions(), got.Path())
	}
	sort := func(f *Frame) *Frame {
		s, err := f.SortValues([]string{"kc", "kw"}).Compute()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sameFrames(t, "split out", sort(got), sort(want), 1e-12)
}

// TestGroupByDevicePlanning checks which groupbys the device path takes and what Path says
// of those it leaves to the host.
func TestGroupByDevicePlanning(t *testing.T) {
	emulateDevice(t)
	f := groupFrame(500, 2, 3)
	cases := []struct {
		g    *Frame
		path string // "" for the device path
	}{
		{f.GroupBy("kc").Sum("vi"), ""},
		{f.GroupBy("ki", "kw").Agg(Std("vf"), Size()), ""},
		{f.GroupBy("cat").Sum("vi"), "string keys are dictionary-encoded on the host"},
		{f.GroupBy("kc").Agg(Median("vi")), ""},
		{f.GroupBy("kc").Agg(First("vf")), ""},
		{f.GroupBy("kc").Agg(NUnique("vi")), ""},
		{f.GroupBy("kc").Agg(Quantile("vf", 0.5)), ""},
		{f.GroupBy("kc").Agg(Corr("vf", "vi")), ""},
		{f.GroupBy("kc").Agg(First("vs")), "first of a string column"},
		{f.Assign("big", Col("vi").AsType(Int64)).GroupBy("big").Size(), ""},
		{f.GroupBy("kw", "ky").Size(), ""},
		{f.Assign("huge", Col("vi").Mul(8192)).GroupBy("huge").Size(), "wider than 2^53 codes"},
	}
	for i, c := range cases {
		r, err := c.g.Compute()
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		p := r.Path()
		switch {
		case c.path == "" && (!strings.Contains(p, "dense-code aggregation on the GPU") || strings.Contains(p, "aggregation on the host")):
			t.Errorf("case %d: Path %q, want the device path", i, p)
		case c.path != "" && (!strings.Contains(p, c.path) || !strings.Contains(p, "hash aggregation on the host") || strings.Contains(p, "dense-code")):
			t.Errorf("case %d: Path %q, want the host path because %q", i, p, c.path)
		}
	}
	if why := deviceBlocker([]DType{Float64}, nil, nil); !strings.Contains(why, "float64 keys") {
		t.Errorf("float keys: %q", why)
	}
	if why := deviceBlocker([]DType{Int32, Category, DatetimeNS, Uint8, Bool}, []DType{Float32}, []hashagg.Spec{{Op: hashagg.Var, Col: 0}}); why != "" {
		t.Errorf("dense keys: %q", why)
	}
}

// TestGroupByDeviceEmpty groups a frame whose filter keeps no row on the device path: no
// groups, the columns of the host path's empty result.
func TestGroupByDeviceEmpty(t *testing.T) {
	g := groupFrame(300, 2, 5).Filter(Col("vf").Gt(1e9)).GroupBy("kc", "kw").Agg(Sum("vi"), Mean("vf"), Size())
	want, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	emulateDevice(t)
	got, err := g.Compute()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := got.Len(); n != 0 || !strings.Contains(got.Path(), "dense-code") {
		t.Fatalf("%d rows, Path %q", n, got.Path())
	}
	sameFrames(t, "empty", got, want, 0)
}

// TestGroupByDeviceCorrPrecision checks Corr on the device path (two passes over the host
// emulation of the kernels) where each group's values are far from 0 against their spread,
// so that sums of raw squares would lose every digit: the correlations equal a reference that
// takes each group's values less a float near them (exact subtractions) in two passes, within
// 1e-12. (The host's running updates are off by up to about 4e-9 here.)
func TestGroupByDeviceCorrPrecision(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	n, groups := 3000, 40
	k, x, y := make([]int64, n), make([]float64, n), make([]float64, n)
	base := func(g int64) float64 { return 1e9 + float64(g)*1e6 }
	for i := range n {
		k[i] = int64(r.IntN(groups))
		d := float64(r.IntN(7))
		x[i] = base(k[i]) + d
		y[i] = -2e9 - 3*d + r.Float64()*float64(k[i]%3)
	}
	want := make([]float64, groups)
	for g := range int64(groups) {
		var sx, sy, c float64
		for i := range n {
			if k[i] == g {
				sx, sy, c = sx+x[i]-base(g), sy+y[i]+2e9, c+1
			}
		}
		var a, b, cxy float64
		for i := range n {
			if k[i] == g {
				dx, dy := x[i]-base(g)-sx/c, y[i]+2e9-sy/c
				a, b, cxy = a+dx*dx, b+dy*dy, cxy+dx*dy
			}
		}
		want[g] = max(-1, min(1, cxy/math.Sqrt(a*b)))
	}
	emulateDevice(t)
	got, err := FromSlices([]string{"k", "x", "y"}, []any{k, x, y}, NPartitions(3)).GroupBy("k").Sorted().Agg(Corr("x", "y").As("r")).Compute()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got.Path(), "corr from per-group sums on the GPU") {
		t.Fatalf("Path %q", got.Path())
	}
	keys, _ := got.Int64s("k")
	rs, err := got.Float64s("r")
	if err != nil || len(rs) != groups {
		t.Fatalf("%d groups, %v", len(rs), err)
	}
	for i, g := range keys {
		if math.Abs(rs[i]-want[g]) > 1e-12 {
			t.Fatalf("group %d: r = %v, want %v", g, rs[i], want[g])
		}
	}
}

// deviceResultAggs are the aggregations whose result stays on the device (deviceResultBlocker).
func deviceResultAggs() []Agg {
	return []Agg{Sum("vi").As("vi_sum"), Mean("vi").As("vi_mean"), Min("vi").As("vi_min"), Max("vi").As("vi_max"),
		Count("vi").As("vi_count"), Sum("vf").As("vf_sum"), Mean("vf").As("vf_mean"), Count("vf").As("vf_count"),
		Count("vs").As("vs_count"), Size(), Min("kt").As("kt_min"), Max("kb").As("kb_max"), Sum("kb").As("kb_sum")}
}

// TestGroupByDeviceResultMatchesHostFinalize builds a device groupby's result on the device
// (groups selected, keys decoded, means divided by array operations: here over the host
// emulation of the kernels, so on the CPU) and compares it with the host's finalize of the
// same tables: the same rows in the same order, every value and null bit for bit, for dense
// codes and for groups numbered by sorting.
func TestGroupByDeviceResultMatchesHostFinalize(t *testing.T) {
	keySets := [][]string{{"kc"}, {"ki"}, {"kb"}, {"kt"}, {"kw"}, {"kc", "ki"}, {"ki", "kb", "kc"}, {"big"}, {"big", "kw", "ky", "kc"}}
	defer func() { deviceResults = true }()
	for _, parts := range []int{1, 3} {
		f := groupFrame(2500, parts, uint64(60+parts)).Assign("big", Col("vi").Div(100).AsType(Int64))
		for _, keys := range keySets {
			what := fmt.Sprintf("%d parts, keys %v", parts, keys)
			g := f.GroupBy(keys...).Agg(deviceResultAggs()...)
			restore := emulateDevice(t)
			deviceResults = false
			want, err := g.Compute()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			deviceResults = true
			got, err := g.Compute()
			restore()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !strings.Contains(got.Path(), "the result kept on the GPU") || strings.Contains(want.Path(), "the result kept on the GPU") {
				t.Fatalf("%s: Path %q (host finalize: %q)", what, got.Path(), want.Path())
			}
			sameFrames(t, what, got, want, 0)
			// An expression of the result, as db-benchmark's q7.
			q := func(x *Frame) *Frame {
				return x.Assign("r", Col("vi_max").Sub(Col("vi_min"))).Select(append(slices.Clone(keys), "r")...)
			}
			got2, err := q(got).Compute()
			if err != nil {
				t.Fatal(err)
			}
			want2, err := q(want).Compute()
			if err != nil {
				t.Fatal(err)
			}
			sameFrames(t, what+", max - min", got2, want2, 0)
		}
	}
	// The n largest and smallest of a float column: rows sorted and picked on the device.
	f := groupFrame(3000, 3, 71)
	for _, keys := range [][]string{{"kc"}, {"ki", "kb"}, {"kw"}} {
		for _, c := range []struct {
			name string
			g    *Frame
		}{{"nlargest", f.GroupBy(keys...).NLargest(2, "vf")}, {"nsmallest", f.GroupBy(keys...).NSmallest(3, "vf")}, {"nlargest 1", f.GroupBy(keys...).NLargest(1, "vf")}} {
			what := fmt.Sprintf("%s by %v", c.name, keys)
			restore := emulateDevice(t)
			deviceResults = false
			want, err := c.g.Compute()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			deviceResults = true
			got, err := c.g.Compute()
			restore()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if !strings.Contains(got.Path(), "top of each group from rows sorted by (code, value) on the GPU") {
				t.Fatalf("%s: Path %q", what, got.Path())
			}
			sameFrames(t, what, got, want, 0)
		}
	}
	// Aggregations finished on the host keep the host's result.
	restore := emulateDevice(t)
	defer restore()
	got, err := f0().GroupBy("kc").Agg(Std("vf"), Sum("vi")).Compute()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got.Path(), "the result kept on the GPU") {
		t.Fatalf("std: Path %q", got.Path())
	}
}

func f0() *Frame { return groupFrame(500, 2, 5) }
