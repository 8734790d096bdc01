package dataframe

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// GroupBy on a GPU. Where every key is a dense range of codes (categoricals, bools, integers
// and datetimes whose values span at most hashagg.MaxDenseGroups codes together) and every
// aggregation is algebraic (sum, mean, min, max, count, size, var, std), a row's group is the
// mixed radix of its keys' offsets, computed on the device as one fused expression over the
// key columns, and gpuarray.GroupAggregate folds the value columns into per-code tables in
// device memory; only the tables come back, and hashagg.DensePlan turns them into the partial
// that the host path's SplitOut, Sorted and result columns take. String keys are first
// dictionary-encoded on the device (encodeStringKeys, strings_gpu.go). Median, quantile,
// nunique, first and last sort the rows on the device by (code, value) and pick ranks per
// group (groupby_gpu_holistic.go). Anything else runs on the host (aggregate), which Path
// names with the reason.

// groupAggregate is the device call (a variable so that tests without a GPU can run the rest
// of the path over a host emulation of its tables).
var groupAggregate = gpuarray.GroupAggregate

// deviceOptsOf is deviceOpts (a variable for the same tests).
var deviceOptsOf = deviceOpts

// deviceOpts returns the options a device groupby computes with: rc's own when they name a
// GPU, OnGPU(N) when they name the CPU but every column read is held on GPU N (work goes
// where the chunks are); ok is false when neither.
func deviceOpts(rc *runCtx, cols []*column) (opts []gpuarray.ComputeOption, ok bool) {
	switch rc.target.Backend {
	case "gpu":
		return rc.opts, true
	case "cpu":
		where := ""
		for _, c := range cols {
			w := c.arr.Where()
			if !strings.HasPrefix(w, "gpu ") || (where != "" && w != where) {
				return nil, false
			}
			where = w
		}
		if n, err := strconv.Atoi(strings.TrimPrefix(where, "gpu ")); err == nil {
			return append(slices.Clone(rc.opts), gpuarray.OnGPU(n)), true
		}
	}
	return nil, false
}

// deviceBlocker says why a groupby of keys (their types) and specs over value columns of
// types vals cannot take the dense-code device path, or "" when it can (the key ranges are
// checked after, on the device). Corr folds sums of its two columns,
// their squares and their products (corrColumns).
func deviceBlocker(keys []DType, vals []DType, specs []hashagg.Spec) string {
	if len(keys) == 0 {
		return "no keys"
	}
	for _, k := range keys {
		switch {
		case k == String:
			return "string keys are dictionary-encoded on the host"
		case k == Category, k == Bool, k.IsInteger(), k.IsDatetime():
		default:
			return fmt.Sprintf("%s keys have no dense codes", k)
		}
	}
	for _, s := range specs {
		switch s.Op {
		case hashagg.Size:
			continue
		case hashagg.Top:
			if vals[s.Col] == Bool {
				return "top of a bool column"
			}
		case hashagg.Corr:
			if v := vals[s.Col2]; v == String || v == Category {
				return fmt.Sprintf("%v of a %s column", s.Op, v)
			}
		}
		if v := vals[s.Col]; (v == String || v == Category) && s.Op != hashagg.Count {
			return fmt.Sprintf("%v of a %s column", s.Op, v)
		}
	}
	return ""
}

// deviceStates returns the GroupAggColumn tables that states need.
func deviceStates(c *gpuarray.GroupAggColumn, states hashagg.DenseStates) {
	c.Sum = states&hashagg.DenseSum != 0
	c.SumSq = states&hashagg.DenseSumSq != 0
	c.Min = states&hashagg.DenseMin != 0
	c.Max = states&hashagg.DenseMax != 0
}

// denseCodes is the expression of each row's dense code under plan: the mixed radix of the
// keys' offsets from their minima, -1 where a key is null (or a categorical's code is outside
// its dictionary).
func denseCodes(keyCols []*column, plan *hashagg.DensePlan) *gpuarray.Array {
	var code, ok *gpuarray.Array
	and := func(m *gpuarray.Array) {
		if ok == nil {
			ok = m
		} else {
			ok = gpuarray.LogicalAnd(ok, m)
		}
	}
	for i, c := range keyCols {
		dk := plan.Keys[i]
		k := c.arr.AsType(gpuarray.Int64)
		if dk.Min != 0 {
			k = k.Sub(dk.Min)
		}
		if c.dt == Category {
			and(gpuarray.LogicalAnd(k.Ge(int64(0)), k.Lt(dk.Card)))
		}
		if c.valid != nil {
			and(c.valid)
		}
		if s := plan.Strides[i]; s != 1 {
			k = k.Mul(s)
		}
		if code == nil {
			code = k
		} else {
			code = code.Add(k)
		}
	}
	if ok != nil {
		code = gpuarray.Where(ok, code, int64(-1))
	}
	return code
}

// exactInt is 2^53: the device expressions' constants are float64s, exact for integers
// inside ±exactInt, so keys whose minimum lies outside take the host path.
const exactInt = 1 << 53

// keyRanges returns the dense range of each key: a categorical's dictionary, a bool's two
// values, else the key's smallest and largest non-null values, computed with opts (on the
// device). The reason is set when a range is too wide for dense codes: with nil ranges when a
// key reaches past ±2^53, else with every key's range (for the sort-based grouping).
func keyRanges(keyCols []*column, opts []gpuarray.ComputeOption) ([]hashagg.DenseKey, string, error) {
	out := make([]hashagg.DenseKey, len(keyCols))
	var reds []*gpuarray.Array
	var at []int
	for i, c := range keyCols {
		switch c.dt {
		case Category:
			out[i] = hashagg.DenseKey{Min: 0, Card: int64(max(c.heap.len(), 1))}
			continue
		case Bool:
			out[i] = hashagg.DenseKey{Min: 0, Card: 2}
			continue
		}
		k := c.arr.AsType(gpuarray.Int64)
		lo, hi := k, k
		if c.valid != nil {
			lo = gpuarray.Where(c.valid, k, int64(exactInt))
			hi = gpuarray.Where(c.valid, k, int64(-exactInt))
		}
		// One more element each keeps an empty frame's reductions defined: hi < lo then
		// says no key is set.
		reds = append(reds, gpuarray.Concat(lo, gpuarray.FromSliceInt64([]int64{exactInt})).Min(),
			gpuarray.Concat(hi, gpuarray.FromSliceInt64([]int64{-exactInt})).Max())
		at = append(at, i)
	}
	if len(reds) == 0 {
		return out, "", nil
	}
	args := make([]any, 0, len(reds)+len(opts))
	for _, r := range reds {
		args = append(args, r)
	}
	for _, o := range opts {
		args = append(args, o)
	}
	vals, err := gpuarray.ComputeAll(args...)
	if err != nil {
		return nil, "", fmt.Errorf("key ranges: %w", err)
	}
	wide := ""
	for j, i := range at {
		var v [2]int64
		for r := range v {
			s, err := vals[2*j+r].ToSliceInt64()
			if err != nil || len(s) != 1 {
				return nil, "", fmt.Errorf("key %q's range: %v", keyCols[i].name, err)
			}
			v[r] = s[0]
		}
		lo, hi := v[0], v[1]
		if hi < lo { // no non-null key: one code that no row takes
			out[i] = hashagg.DenseKey{Min: 0, Card: 1}
			continue
		}
		if lo <= -exactInt || hi >= exactInt {
			return nil, fmt.Sprintf("key %q reaches past ±2^53, which the device's constants do not hold exactly", keyCols[i].name), nil
		}
		card := hi - lo + 1
		if card > hashagg.MaxDenseGroups && wide == "" {
			wide = fmt.Sprintf("key %q spans %d to %d, more than %d codes", keyCols[i].name, lo, hi, hashagg.MaxDenseGroups)
		}
		out[i] = hashagg.DenseKey{Min: lo, Card: card}
	}
	return out, wide, nil
}

// computeLazy returns copies of keyCols and valCols whose lazy arrays are computed with
// opts (kept on the device): a filter's lengths are known only then, and the range padding
// and the code expression combine several columns. String and categorical values (counted
// only) need their validity alone.
func computeLazy(keyCols, valCols []*column, opts []gpuarray.ComputeOption) ([]*column, []*column, error) {
	var xs []any
	var set []**gpuarray.Array
	cp := func(cols []*column, key bool) []*column {
		out := make([]*column, len(cols))
		for i, c := range cols {
			d := *c
			out[i] = &d
			if d.arr.Where() == "" && (key || (d.dt != String && d.dt != Category)) {
				xs, set = append(xs, d.arr), append(set, &d.arr)
			}
			if d.valid != nil && d.valid.Where() == "" {
				xs, set = append(xs, d.valid), append(set, &d.valid)
			}
		}
		return out
	}
	keyCols, valCols = cp(keyCols, true), cp(valCols, false)
	if len(xs) == 0 {
		return keyCols, valCols, nil
	}
	for _, o := range opts {
		xs = append(xs, o)
	}
	got, err := gpuarray.ComputeAll(xs...)
	if err != nil {
		return nil, nil, fmt.Errorf("key and value columns: %w", err)
	}
	for i, p := range set {
		*p = got[i]
	}
	return keyCols, valCols, nil
}

// device records a step that ran where the options asked (no warning).
func (rc *runCtx) device(msg string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if !slices.Contains(rc.notes, msg) {
		rc.notes = append(rc.notes, msg)
	}
}

// aggregateGPU runs a groupby on the device when rc's options (or where t's columns are held)
// name a GPU and the keys and aggregations allow dense codes; ok is false when it did not
// run, and then the host path (aggregate) runs, its reason in Path and a warning.
func aggregateGPU(rc *runCtx, t *table, keys []string, p *aggPlan, splitOut int, sorted bool) (res *table, ok bool, err error) {
	part, keyCols, valCols, held, ok, err := partialGPU(rc, t, keys, p, splitOut <= 1 && !sorted)
	if !ok || err != nil || held != nil {
		return held, ok, err
	}
	results := []*hashagg.Partial{part}
	if splitOut > 1 && !sorted {
		results = part.Split(splitOut)
	}
	tr := newPhases("groupby on a GPU, host result")
	defer tr.done()
	ht := &hostTable{}
	for _, r := range results {
		h, err := finalTable(r, keyCols, valCols, p, false)
		if err != nil {
			return nil, true, err
		}
		if sorted {
			sortTable(h, len(keyCols))
		}
		if ht.cols == nil {
			ht = h
			continue
		}
		if ht, err = concatHost([]*hostTable{ht, h}); err != nil {
			return nil, true, err
		}
	}
	tr.mark("final table on the host")
	res, err = tableOf(ht)
	tr.mark("result columns")
	return res, true, err
}

// partialGPU computes the partial aggregation of p's specs by keys over t on the device, as
// aggregateGPU, with the key and value columns the result columns are built from (string keys
// dictionary-encoded); ok is false when it did not run (the reason in Path). With keep, a
// result that can stay on the GPU (deviceResultBlocker) is built there and returned as held,
// part nil.
func partialGPU(rc *runCtx, t *table, keys []string, p *aggPlan, keep bool) (part *hashagg.Partial, keyCols, valCols []*column, held *table, ok bool, err error) {
	var all []*column
	var keyTypes, valTypes []DType
	for _, k := range keys {
		c, err := t.find(k)
		if err != nil {
			return nil, nil, nil, nil, true, err
		}
		keyCols, keyTypes, all = append(keyCols, c), append(keyTypes, c.dt), append(all, c)
	}
	for _, v := range p.vals {
		c, err := t.find(v)
		if err != nil {
			return nil, nil, nil, nil, true, err
		}
		valCols, valTypes, all = append(valCols, c), append(valTypes, c.dt), append(all, c)
	}
	opts, on := deviceOptsOf(rc, all)
	if !on {
		return nil, nil, nil, nil, false, nil
	}
	keep = keep && deviceResultBlocker(keyTypes, valTypes, p.specs) == ""
	keyCols, keyTypes = encodeStringKeys(rc, keyCols, keyTypes, valTypes, p.specs, opts) // strings_gpu.go
	if why := deviceBlocker(keyTypes, valTypes, p.specs); why != "" {
		rc.host("groupby on a GPU: %s, so it aggregates on the host", why)
		return nil, nil, nil, nil, false, nil
	}
	if keyCols, valCols, err = computeLazy(keyCols, valCols, opts); err != nil {
		return nil, nil, nil, nil, true, err
	}
	tr := newPhases("groupby on a GPU")
	defer tr.done()
	dk, why, err := keyRanges(keyCols, opts)
	tr.mark("key and value columns computed, key ranges")
	if err != nil {
		return nil, nil, nil, nil, true, err
	}
	if dk == nil {
		rc.host("groupby on a GPU: %s, so it aggregates on the host", why)
		return nil, nil, nil, nil, false, nil
	}
	specs := denseSpecs(p.specs)
	var plan *hashagg.DensePlan
	if why == "" {
		plan, err = hashagg.PlanDense(dk, specs, len(p.vals))
	}
	var codes *gpuarray.Array
	var sg *sortedGroups
	if why != "" || err != nil {
		// Too many codes for tables of every code: number the distinct keys by sorting.
		keep = keep && !slices.ContainsFunc(p.specs, func(s hashagg.Spec) bool { return s.Op == hashagg.Top })
		sg, why, err = sortGroups(keyCols, dk, opts, keep)
		tr.mark("groups numbered by sorting")
		if err != nil {
			return nil, nil, nil, nil, true, err
		}
		if why != "" {
			rc.host("groupby on a GPU: %s, so it aggregates on the host", why)
			return nil, nil, nil, nil, false, nil
		}
		keep = keep && sg.held != nil
		if plan, err = sg.plan(specs, len(p.vals)); err != nil {
			return nil, nil, nil, nil, true, err
		}
		codes = sg.codes
		if valCols, err = sg.gather(valCols, opts); err != nil {
			return nil, nil, nil, nil, true, err
		}
		rc.device(fmt.Sprintf("groupby: %d groups numbered by sorting the keys on the GPU (%.3g codes are too many for tables of every code); %s", sg.groups, sg.span, sg.path))
	} else {
		codes = denseCodes(keyCols, plan)
	}
	cols := []gpuarray.GroupAggColumn{{Codes: codes, Keep: keep}} // the rows of each code: Size, and which codes are groups
	holistic := make([]bool, len(valCols))
	for _, s := range p.specs {
		if holisticOp(s.Op) {
			holistic[s.Col] = true
		}
	}
	hin := make([]*holisticInput, len(valCols))
	for i, c := range valCols {
		need := plan.Cols[i]
		col := gpuarray.GroupAggColumn{Codes: codes, Keep: keep}
		if need != 0 {
			switch {
			case c.dt.IsFloat():
				col.Values = c.arr.AsType(gpuarray.Float64)
				if c.valid != nil {
					col.Values = gpuarray.Where(c.valid, col.Values, math.NaN())
				}
			case need != hashagg.DenseCount:
				col.Values = c.arr.AsType(gpuarray.Int64)
			}
			if c.valid != nil && !c.dt.IsFloat() {
				col.Codes = gpuarray.Where(c.valid, codes, int64(-1))
			}
			deviceStates(&col, need)
		}
		cols = append(cols, col)
		if holistic[i] {
			hin[i] = holisticRows(c, codes, col)
		}
	}
	corrAt := make([]int, len(p.specs)) // where each Corr's two columns start in cols
	corrIn := make([]corrInput, len(p.specs))
	for si, s := range p.specs {
		if s.Op == hashagg.Corr {
			corrAt[si] = len(cols)
			corrIn[si] = corrRows(valCols[s.Col], valCols[s.Col2], codes)
			cols = append(cols, corrIn[si].firstPass()...)
		}
	}
	tables, note, err := groupAggregate(plan.Groups, cols, opts...)
	tr.mark(fmt.Sprintf("group-aggregate kernels over %d codes (kept: %v)", plan.Groups, keep))
	if err != nil {
		return nil, nil, nil, nil, true, err
	}
	rc.device("groupby: dense-code aggregation on the GPU, key codes and values computed there; " + note)
	if keep {
		if keptTables(tables) {
			var held *table
			var err error
			if len(p.specs) == 1 && p.specs[0].Op == hashagg.Top {
				held, err = deviceTop(keyCols, hin[0], plan, p.specs[0], Field{valCols[0].name, valCols[0].dt}, opts)
				rc.device("groupby: top of each group from rows sorted by (code, value) on the GPU, picked there")
			} else {
				held, err = deviceTable(keyCols, valCols, p, plan, tables, sg, opts)
			}
			tr.mark("result built on the device")
			if err != nil {
				return nil, nil, nil, nil, true, err
			}
			rc.device("groupby: the result kept on the GPU (groups selected, keys decoded and aggregates finished there; its length came back)")
			return nil, keyCols, valCols, held, true, nil
		}
		// Not every table stayed (chunks on several GPUs): the result is built on the host.
		if err := tablesToHost(tables, opts); err != nil {
			return nil, nil, nil, nil, true, err
		}
		if sg != nil {
			if err := sg.keysToHost(opts); err != nil {
				return nil, nil, nil, nil, true, err
			}
		}
	}
	dense := make([]hashagg.DenseColumn, len(valCols))
	for i, c := range valCols {
		tb := tables[i+1]
		dense[i] = hashagg.DenseColumn{IsInt: !c.dt.IsFloat(), Count: tb.Count, SumI: tb.SumI, SumF: tb.SumF, SumSq: tb.SumSq,
			MinI: tb.MinI, MaxI: tb.MaxI, MinF: tb.MinF, MaxF: tb.MaxF}
	}
	part, err = plan.Partial(specs, tables[0].Count, dense)
	tr.mark("partial on the host")
	if err != nil {
		return nil, nil, nil, nil, true, err
	}
	if sg != nil {
		part.Keys = sg.keys
	}
	for si, s := range p.specs {
		if s.Op == hashagg.Corr {
			st, err := corrIn[si].state(s, tables[0].Count, tables[corrAt[si]:corrAt[si]+2], plan.Groups, part.N, opts)
			if err != nil {
				return nil, nil, nil, nil, true, err
			}
			part.States[si] = st
			rc.device("groupby: corr from per-group sums on the GPU (means, then deviations from them: two passes)")
		}
	}
	if slices.Contains(holistic, true) {
		var groupCodes []int
		for c, r := range tables[0].Count {
			if r > 0 {
				groupCodes = append(groupCodes, c)
			}
		}
		for i, h := range hin {
			if h != nil {
				h.counts = tables[i+1].Count
			}
		}
		note, err := deviceHolistic(part, p.specs, groupCodes, hin, plan.Groups, opts)
		if err != nil {
			return nil, nil, nil, nil, true, err
		}
		rc.device("groupby: median, quantile, nunique, first, last and top from rows sorted by (code, value) on the GPU; " + note)
	}
	return part, keyCols, valCols, nil, true, nil
}

// corrInput is Corr(x, y)'s rows for the device: x and y as float64s and the rows' codes, -1
// where either is null or NaN. Integer columns convert exactly below 2^53.
type corrInput struct {
	x, y, codes *gpuarray.Array
}

// corrRows returns the rows of Corr(x, y) over codes.
func corrRows(x, y *column, codes *gpuarray.Array) corrInput {
	xv, yv := x.arr.AsType(gpuarray.Float64), y.arr.AsType(gpuarray.Float64)
	ok := gpuarray.LogicalNot(gpuarray.LogicalOr(gpuarray.IsNaN(xv), gpuarray.IsNaN(yv)))
	for _, c := range []*column{x, y} {
		if c.valid != nil {
			ok = gpuarray.LogicalAnd(ok, c.valid)
		}
	}
	return corrInput{x: xv, y: yv, codes: gpuarray.Where(ok, codes, int64(-1))}
}

// firstPass returns the group-aggregate columns of the first pass: the counts and sums of x
// and y, for each group's means.
func (c corrInput) firstPass() []gpuarray.GroupAggColumn {
	return []gpuarray.GroupAggColumn{{Codes: c.codes, Values: c.x, Sum: true}, {Codes: c.codes, Values: c.y, Sum: true}}
}

// state returns Corr spec s's state over the n groups (the codes whose rows count is not 0,
// in order) of groups codes, from the first pass's tables tb: each code's means go to the
// device, each row's group means are gathered there, and a second group-aggregate pass sums
// the deviations from them, their squares and their products. Sums of squares taken about
// the means keep the precision the host's running updates have (sums of raw squares lose it
// where a group's mean is large against its spread).
func (c corrInput) state(s hashagg.Spec, rows []int64, tb []gpuarray.GroupAggTables, groups, n int, opts []gpuarray.ComputeOption) (hashagg.State, error) {
	st := hashagg.State{Spec: s, Cnt: make([]int64, n), Mean: make([]float64, n), M2: make([]float64, n),
		MeanY: make([]float64, n), M2Y: make([]float64, n), CXY: make([]float64, n)}
	mx, my := make([]float64, groups), make([]float64, groups)
	for g := range groups {
		if cnt := tb[0].Count[g]; cnt > 0 {
			mx[g], my[g] = tb[0].SumF[g]/float64(cnt), tb[1].SumF[g]/float64(cnt)
		}
	}
	at := gpuarray.Where(c.codes.Lt(int64(0)), int64(0), c.codes) // in range for the gathers; the rows stay skipped
	var tk taker
	gx := tk.take(gpuarray.FromSlice(mx).Persist(opts...), at, opts)
	gy := tk.take(gpuarray.FromSlice(my).Persist(opts...), at, opts)
	if tk.err != nil {
		return st, fmt.Errorf("groupby on a GPU: corr's means: %w", tk.err)
	}
	dx, dy := c.x.Sub(gx), c.y.Sub(gy)
	t2, _, err := groupAggregate(groups, []gpuarray.GroupAggColumn{
		{Codes: c.codes, Values: dx, Sum: true, SumSq: true},
		{Codes: c.codes, Values: dy, Sum: true, SumSq: true},
		{Codes: c.codes, Values: dx.Mul(dy), Sum: true},
	}, opts...)
	if err != nil {
		return st, fmt.Errorf("groupby on a GPU: corr's deviations: %w", err)
	}
	g := 0
	for code, r := range rows {
		if r == 0 {
			continue
		}
		if cnt := tb[0].Count[code]; cnt > 0 {
			nf := float64(cnt)
			sx, sy := t2[0].SumF[code], t2[1].SumF[code] // about 0: what the means' rounding left
			st.Cnt[g] = cnt
			st.Mean[g], st.MeanY[g] = mx[code]+sx/nf, my[code]+sy/nf
			st.M2[g] = math.Max(0, t2[0].SumSq[code]-sx*sx/nf)
			st.M2Y[g] = math.Max(0, t2[1].SumSq[code]-sy*sy/nf)
			st.CXY[g] = t2[2].SumF[code] - sx*sy/nf
		}
		g++
	}
	return st, nil
}
