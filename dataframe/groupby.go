package dataframe

import (
	"cmp"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Agg is one aggregation of a column: Sum("v1"), Mean("v3"), Quantile("v2", 0.9), Size(), ...
type Agg struct {
	op   hashagg.Op
	col  string
	col2 string // Corr's second column
	q    float64
	as   string
}

// As names the aggregation's output column (default: the column's name, or name_op when
// several aggregations read one column).
func (a Agg) As(name string) Agg { a.as = name; return a }

// Sum is the sum of col (nulls skipped; 0 for a group of nulls, as pandas).
func Sum(col string) Agg { return Agg{op: hashagg.Sum, col: col} }

// Count is the number of non-null values of col.
func Count(col string) Agg { return Agg{op: hashagg.Count, col: col} }

// Size is the number of rows.
func Size() Agg { return Agg{op: hashagg.Size, col: ""} }

// Min is the smallest value of col.
func Min(col string) Agg { return Agg{op: hashagg.Min, col: col} }

// Max is the largest value of col.
func Max(col string) Agg { return Agg{op: hashagg.Max, col: col} }

// Mean is the mean of col.
func Mean(col string) Agg { return Agg{op: hashagg.Mean, col: col} }

// Var is the variance of col (ddof 1, as pandas).
func Var(col string) Agg { return Agg{op: hashagg.Var, col: col} }

// Std is the standard deviation of col (ddof 1, as pandas).
func Std(col string) Agg { return Agg{op: hashagg.Std, col: col} }

// First is the first non-null value of col, in row order.
func First(col string) Agg { return Agg{op: hashagg.First, col: col} }

// Last is the last non-null value of col, in row order.
func Last(col string) Agg { return Agg{op: hashagg.Last, col: col} }

// NUnique is the number of distinct non-null values of col.
func NUnique(col string) Agg { return Agg{op: hashagg.NUnique, col: col} }

// Median is the median of col.
func Median(col string) Agg { return Agg{op: hashagg.Median, col: col} }

// Quantile is the q-quantile of col (linear interpolation, as pandas).
func Quantile(col string, q float64) Agg { return Agg{op: hashagg.Quantile, col: col, q: q} }

// Corr is Pearson's correlation of columns x and y over the rows where both are valid
// (pandas' Series.corr; NaN for fewer than two rows or a constant column), computed in one
// pass from running means and co-moments, merged across partitions. The r² of db-benchmark's
// q9 is Corr squared: Assign("r2", Col("r").Mul(Col("r"))).
func Corr(x, y string) Agg { return Agg{op: hashagg.Corr, col: x, col2: y} }

// outType is the type of a's result over a column of type in.
func (a Agg) outType(in DType) (DType, error) {
	numeric := in.IsNumeric() || in == Bool
	switch a.op {
	case hashagg.Size, hashagg.Count, hashagg.NUnique:
		return Int64, nil
	case hashagg.Sum:
		if !numeric {
			return "", fmt.Errorf("sum of %q: a %s column, want a number", a.col, in)
		}
		if in.IsFloat() {
			return Float64, nil
		}
		return Int64, nil
	case hashagg.Mean, hashagg.Var, hashagg.Std, hashagg.Median, hashagg.Quantile, hashagg.Corr:
		if !numeric {
			return "", fmt.Errorf("%v of %q: a %s column, want a number", a.op, a.col, in)
		}
		return Float64, nil
	case hashagg.Min, hashagg.Max:
		if !numeric && !in.IsDatetime() {
			return "", fmt.Errorf("%v of %q: a %s column, want a number or a datetime", a.op, a.col, in)
		}
		return in, nil
	}
	return in, nil // First, Last
}

// GroupBy groups a frame's rows by key columns for Agg.
type GroupBy struct {
	f        *Frame
	keys     []string
	splitOut int
	sorted   bool
	err      error
}

// GroupBy groups the rows by the named key columns (integers, bools, datetimes, strings,
// categoricals). Rows with a null key are dropped, as pandas' dropna=True.
func (f *Frame) GroupBy(keys ...string) *GroupBy {
	g := &GroupBy{f: f, keys: keys, splitOut: 1, err: f.err}
	if len(keys) == 0 && g.err == nil {
		g.err = fmt.Errorf("GroupBy: no key columns")
	}
	for _, k := range keys {
		if g.err != nil {
			break
		}
		fd, err := f.field(k)
		if err != nil {
			g.err = fmt.Errorf("GroupBy: %w", err)
		} else if fd.DType.IsFloat() {
			g.err = fmt.Errorf("GroupBy: key %q is %s; group by integer, bool, datetime, string or category keys", k, fd.DType)
		}
	}
	return g
}

// SplitOut spreads the groups over n output partitions by key hash (for many groups), as
// dask's split_out.
func (g *GroupBy) SplitOut(n int) *GroupBy {
	h := *g
	h.splitOut = max(1, n)
	return &h
}

// Sorted sorts the result by its keys (one partition); by default groups come in no
// particular order, as dask's.
func (g *GroupBy) Sorted() *GroupBy {
	h := *g
	h.sorted = true
	return &h
}

// Sum is Agg(Sum(c)) for each column named (all non-key numeric columns when none are).
func (g *GroupBy) Sum(cols ...string) *Frame { return g.Agg(g.each(Sum, cols)...) }

// Mean is Agg(Mean(c)) for each column named (all non-key numeric columns when none are).
func (g *GroupBy) Mean(cols ...string) *Frame { return g.Agg(g.each(Mean, cols)...) }

// Min is Agg(Min(c)) for each column named (all non-key numeric columns when none are).
func (g *GroupBy) Min(cols ...string) *Frame { return g.Agg(g.each(Min, cols)...) }

// Max is Agg(Max(c)) for each column named (all non-key numeric columns when none are).
func (g *GroupBy) Max(cols ...string) *Frame { return g.Agg(g.each(Max, cols)...) }

// Count is Agg(Count(c)) for each column named (all non-key columns when none are).
func (g *GroupBy) Count(cols ...string) *Frame { return g.Agg(g.each(Count, cols)...) }

// Size is Agg(Size()): the rows of each group.
func (g *GroupBy) Size() *Frame { return g.Agg(Size()) }

func (g *GroupBy) each(f func(string) Agg, cols []string) []Agg {
	if len(cols) == 0 {
		for _, fd := range g.f.fields {
			if !slices.Contains(g.keys, fd.Name) && (fd.DType.IsNumeric() || f("").op == hashagg.Count) {
				cols = append(cols, fd.Name)
			}
		}
	}
	out := make([]Agg, len(cols))
	for i, c := range cols {
		out[i] = f(c)
	}
	return out
}

// aggPlan is the checked form of a list of Aggs.
type aggPlan struct {
	aggs   []Agg
	names  []string
	out    []DType
	vals   []string // value columns read, each once
	specs  []hashagg.Spec
	inType []DType
}

func planAggs(f *Frame, keys []string, aggs []Agg) (*aggPlan, error) {
	if len(aggs) == 0 {
		return nil, fmt.Errorf("no aggregations")
	}
	p := &aggPlan{aggs: aggs}
	uses := map[string]int{}
	for _, a := range aggs {
		if a.as == "" {
			uses[a.col]++
		}
	}
	valCol := func(name string) (int, DType, error) {
		fd, err := f.field(name)
		if err != nil {
			return 0, "", err
		}
		col := slices.Index(p.vals, name)
		if col < 0 {
			col = len(p.vals)
			p.vals = append(p.vals, name)
			p.inType = append(p.inType, fd.DType)
		}
		return col, fd.DType, nil
	}
	for _, a := range aggs {
		in := Int64
		col, col2 := -1, -1
		if a.op != hashagg.Size {
			var err error
			if col, in, err = valCol(a.col); err != nil {
				return nil, err
			}
		}
		if a.op == hashagg.Corr {
			c2, in2, err := valCol(a.col2)
			if err != nil {
				return nil, err
			}
			if _, err := (Agg{op: a.op, col: a.col2}).outType(in2); err != nil {
				return nil, err
			}
			col2 = c2
		}
		ot, err := a.outType(in)
		if err != nil {
			return nil, err
		}
		name := a.as
		switch {
		case name != "":
		case a.op == hashagg.Size:
			name = "size"
		case a.op == hashagg.Corr:
			name = "corr_" + a.col + "_" + a.col2
		case uses[a.col] > 1:
			name = a.col + "_" + a.op.String()
			if a.op == hashagg.Quantile {
				name = fmt.Sprintf("%s_q%g", a.col, a.q)
			}
		default:
			name = a.col
		}
		if slices.Contains(p.names, name) || slices.Contains(keys, name) {
			return nil, fmt.Errorf("two output columns named %q: name them with As", name)
		}
		p.names = append(p.names, name)
		p.out = append(p.out, ot)
		p.specs = append(p.specs, hashagg.Spec{Op: a.op, Col: col, Q: a.q, Col2: col2})
	}
	return p, nil
}

// Agg aggregates each group: one row per group, the keys then one column per Agg.
func (g *GroupBy) Agg(aggs ...Agg) *Frame {
	if g.err != nil {
		return errFrame(g.err)
	}
	p, err := planAggs(g.f, g.keys, aggs)
	if err != nil {
		return errFrame(fmt.Errorf("GroupBy(%s).Agg: %w", quoteList(g.keys), err))
	}
	var fields []Field
	for _, k := range g.keys {
		fd, _ := g.f.field(k)
		fields = append(fields, fd)
	}
	for i, n := range p.names {
		fields = append(fields, Field{n, p.out[i]})
	}
	uses := append(slices.Clone(g.keys), p.vals...)
	h := g.f.step(fmt.Sprintf("groupby %s agg", quoteList(g.keys)), fields, only(uses...), func(rc *runCtx, t *table) (*table, error) {
		if r, ok, err := aggregateOnWorkers(rc, t, g.keys, p, g.splitOut, g.sorted); ok {
			return r, err
		}
		if r, ok, err := aggregateGPU(rc, t, g.keys, p, g.splitOut, g.sorted); ok {
			return r, err
		}
		return aggregate(rc, t, g.keys, p, g.splitOut, g.sorted)
	})
	h.nrows = -1
	h.nparts = g.splitOut
	return h
}

// NLargest keeps the n largest values of col in each group (nulls and NaN skipped), as
// pandas' groupby(keys)[col].nlargest(n): up to n rows per group, the keys then col, a
// group's rows largest first (db-benchmark's q8). Groups come in no particular order unless
// Sorted; SplitOut spreads them as for Agg.
func (g *GroupBy) NLargest(n int, col string) *Frame { return g.top(n, col, true) }

// NSmallest keeps the n smallest values of col in each group, as NLargest.
func (g *GroupBy) NSmallest(n int, col string) *Frame { return g.top(n, col, false) }

func (g *GroupBy) top(n int, col string, largest bool) *Frame {
	what := "NSmallest"
	if largest {
		what = "NLargest"
	}
	if g.err != nil {
		return errFrame(g.err)
	}
	fd, err := g.f.field(col)
	switch {
	case err != nil:
		return errFrame(fmt.Errorf("GroupBy(%s).%s: %w", quoteList(g.keys), what, err))
	case !fd.DType.IsNumeric() && fd.DType != Bool:
		return errFrame(fmt.Errorf("GroupBy(%s).%s: %q is %s, want a number", quoteList(g.keys), what, col, fd.DType))
	case n < 1:
		return errFrame(fmt.Errorf("GroupBy(%s).%s: n = %d, want at least 1", quoteList(g.keys), what, n))
	case slices.Contains(g.keys, col):
		return errFrame(fmt.Errorf("GroupBy(%s).%s: %q is a key", quoteList(g.keys), what, col))
	}
	var fields []Field
	for _, k := range g.keys {
		kf, _ := g.f.field(k)
		fields = append(fields, kf)
	}
	fields = append(fields, fd)
	spec := hashagg.Spec{Op: hashagg.Top, Col: 0, N: n, Largest: largest}
	uses := append(slices.Clone(g.keys), col)
	h := g.f.step(fmt.Sprintf("groupby %s %s(%d, %q)", quoteList(g.keys), strings.ToLower(what), n, col), fields, only(uses...), func(rc *runCtx, t *table) (*table, error) {
		all, keyCols, held, ok, err := topGPU(rc, t, g.keys, col, spec, g.splitOut <= 1 && !g.sorted) // groupby_gpu_holistic.go
		if err != nil || held != nil {
			return held, err
		}
		if !ok {
			in, err := hostGroupInput(rc, t, g.keys, []string{col}, false)
			if err != nil {
				return nil, err
			}
			rc.host("groupby: top %d per group on the host (dataframe/hashagg) over %d partitions", n, in.parts)
			var codes []uint64
			if all, codes, err = cpuPartial(rc, in, []hashagg.Spec{spec}); err != nil {
				return nil, err
			}
			if codes != nil {
				all.Keys = in.decode(codes)
			}
			keyCols = in.keyCols
		}
		results := []*hashagg.Partial{all}
		if g.splitOut > 1 && !g.sorted {
			results = all.Split(g.splitOut)
		}
		var parts []*hostTable
		for _, r := range results {
			part := topTable(r, keyCols, fd)
			if g.sorted {
				sortTable(part, len(g.keys))
			}
			parts = append(parts, part)
		}
		ht, err := concatHost(parts)
		if err != nil {
			return nil, err
		}
		return tableOf(ht)
	})
	h.nrows = -1
	h.nparts = g.splitOut
	if g.sorted {
		h.nparts = 1
	}
	return h
}

// topTable expands a Top partial: one row per kept value, the group's keys repeated.
func topTable(r *hashagg.Partial, keyCols []*column, fd Field) *hostTable {
	res := r.Finalize()[0]
	k := res.PerGroup
	var at []int
	for i, ok := range res.Valid {
		if ok {
			at = append(at, i)
		}
	}
	ht := &hostTable{lens: []int{len(at)}, rows: rowsArange([]int{len(at)})}
	for i, c := range keyCols {
		v := make([]int64, len(at))
		for j, a := range at {
			v[j] = r.Keys[i][a/k]
		}
		ht.cols = append(ht.cols, decodeInts(c.name, c.dt, c.heap, v, nil))
	}
	if res.IsInt {
		v := make([]int64, len(at))
		for j, a := range at {
			v[j] = res.Int[a]
		}
		ht.cols = append(ht.cols, decodeInts(fd.Name, fd.DType, nil, v, nil))
		return ht
	}
	v := make([]float64, len(at))
	for j, a := range at {
		v[j] = res.Float[a]
	}
	adt, _ := fd.DType.array()
	ht.cols = append(ht.cols, &hostCol{name: fd.Name, dt: fd.DType, vals: dtype.Convert(dtype.OfFloat64(v), adt)})
	return ht
}

// Agg aggregates the whole frame: one row, one column per Agg.
func (f *Frame) Agg(aggs ...Agg) *Frame {
	if f.err != nil {
		return f
	}
	p, err := planAggs(f, nil, aggs)
	if err != nil {
		return errFrame(fmt.Errorf("Agg: %w", err))
	}
	var fields []Field
	for i, n := range p.names {
		fields = append(fields, Field{n, p.out[i]})
	}
	h := f.step("agg", fields, only(p.vals...), func(rc *runCtx, t *table) (*table, error) {
		if p.algebraic() {
			return reduceArrays(rc, t, p)
		}
		return aggregate(rc, t, nil, p, 1, false)
	})
	h.nrows, h.nparts = 1, 1
	return h
}

// needPos reports whether an aggregation reads rows' positions (First, Last).
func (p *aggPlan) needPos() bool {
	for _, s := range p.specs {
		if s.Op == hashagg.First || s.Op == hashagg.Last {
			return true
		}
	}
	return false
}

func (p *aggPlan) algebraic() bool {
	for _, s := range p.specs {
		switch s.Op {
		case hashagg.First, hashagg.Last, hashagg.NUnique, hashagg.Median, hashagg.Quantile, hashagg.Corr:
			return false
		}
	}
	return true
}

// keyArray returns column c as int64 codes for hashing, with its validity.
func keyArray(rc *runCtx, c *column) (*gpuarray.Array, error) {
	switch c.dt {
	case String:
		codes, _ := c.heap.encode()
		rc.host("string keys dictionary-encoded on the host (%d strings)", c.heap.len())
		return gather(rc, dtype.OfInt64(codes), c.arr)
	}
	return c.arr.AsType(gpuarray.Int64), nil
}

// aggregate runs the hash aggregation: key and value columns computed by the array engine
// (where rc's options say), then on the host (groupby_cpu.go), split by key hash for SplitOut.
func aggregate(rc *runCtx, t *table, keys []string, p *aggPlan, splitOut int, sorted bool) (*table, error) {
	in, err := hostGroupInput(rc, t, keys, p.vals, p.needPos())
	if err != nil {
		return nil, err
	}
	keyCols, valCols := in.keyCols, in.valCols
	where := rc.target.Backend
	if where == "scheduler" {
		where = "the scheduler's workers"
	}
	rc.host("groupby: hash aggregation on the host (dataframe/hashagg) over %d partitions, key and value columns computed on %s", in.parts, where)
	all, codes, err := cpuPartial(rc, in, p.specs)
	if err != nil {
		return nil, err
	}
	if err := rc.ctxErr(); err != nil {
		return nil, err
	}
	if codes != nil && len(keys) > 0 && splitOut <= 1 && !sorted {
		// One output partition in the groups' order: the key columns decoded from the codes
		// straight into their output types (with ~1e7 groups, db-benchmark's q10, the int64
		// keys and their conversion were a third of the time).
		ht, err := resultTable(all, in.keyColumns(codes), valCols, p)
		if err != nil {
			return nil, err
		}
		return tableOf(ht)
	}
	if codes != nil {
		all.Keys = in.decode(codes)
	}
	return finishAggregate(all, keyCols, valCols, p, len(keys) == 0, splitOut, sorted)
}

// finishAggregate turns the partial of all groups into the result table: split by key hash
// for SplitOut, or sorted by the keys for Sorted.
func finishAggregate(all *hashagg.Partial, keyCols, valCols []*column, p *aggPlan, noKeys bool, splitOut int, sorted bool) (*table, error) {
	partials := []*hashagg.Partial{all}
	buckets := [][]*hashagg.Partial{partials}
	if splitOut > 1 {
		buckets = make([][]*hashagg.Partial, splitOut)
		for _, pp := range partials {
			for b, s := range pp.Split(splitOut) {
				buckets[b] = append(buckets[b], s)
			}
		}
	}
	results := make([]*hashagg.Partial, len(buckets))
	for b, ps := range buckets {
		r, err := treeCombine(ps)
		if err != nil {
			return nil, err
		}
		results[b] = r
	}
	return finishResults(results, keyCols, valCols, p, noKeys, sorted)
}

// finishResults turns the combined partials of the output partitions into the result table,
// a partition each, or one sorted by the keys for Sorted.
func finishResults(results []*hashagg.Partial, keyCols, valCols []*column, p *aggPlan, noKeys bool, sorted bool) (*table, error) {
	if sorted && len(results) > 1 {
		r, err := hashagg.Combine(results...)
		if err != nil {
			return nil, err
		}
		results = []*hashagg.Partial{r}
	}
	ht := &hostTable{}
	for _, r := range results {
		part, err := finalTable(r, keyCols, valCols, p, noKeys)
		if err != nil {
			return nil, err
		}
		if sorted {
			sortTable(part, len(keyCols))
		}
		if ht.cols == nil {
			ht = part
			continue
		}
		if ht, err = concatHost([]*hostTable{ht, part}); err != nil {
			return nil, err
		}
	}
	return tableOf(ht)
}

// treeCombine combines partials pairwise, level by level, in a fixed order (as dask's tree
// reduction), so results do not depend on timing.
func treeCombine(ps []*hashagg.Partial) (*hashagg.Partial, error) {
	for len(ps) > 1 {
		var next []*hashagg.Partial
		for i := 0; i < len(ps); i += 2 {
			if i+1 == len(ps) {
				next = append(next, ps[i])
				continue
			}
			c, err := hashagg.Combine(ps[i], ps[i+1])
			if err != nil {
				return nil, err
			}
			next = append(next, c)
		}
		ps = next
	}
	return ps[0], nil
}

// finalTable turns a combined partial into host columns of the output types.
func finalTable(r *hashagg.Partial, keyCols, valCols []*column, p *aggPlan, noKeys bool) (*hostTable, error) {
	var keys []*hostCol
	if !noKeys {
		// One column per core: with many groups (db-benchmark q10, six keys of 1e7 groups)
		// the conversions are a serial part of the groupby's time.
		keys = make([]*hostCol, len(keyCols))
		parallelDo(len(keyCols), runtime.GOMAXPROCS(0), func(i int) {
			c := keyCols[i]
			keys[i] = decodeInts(c.name, c.dt, c.heap, r.Keys[i], nil)
		})
	}
	return resultTable(r, keys, valCols, p)
}

// resultTable is the host table of r's groups: the key columns keys (of the output types),
// then r's finalized states in the output types.
func resultTable(r *hashagg.Partial, keys []*hostCol, valCols []*column, p *aggPlan) (*hostTable, error) {
	ht := &hostTable{lens: []int{r.N}}
	ht.rows = rowsArange([]int{r.N})
	ht.cols = append(ht.cols, keys...)
	for i, res := range r.Finalize() {
		ot := p.out[i]
		var h *hostCol
		if res.IsInt {
			var heap *strHeap
			if s := p.specs[i]; s.Col >= 0 {
				vc := valCols[s.Col]
				heap = vc.heap
				if vc.dt == String {
					_, heap = vc.heap.encode()
				}
			}
			h = decodeInts(p.names[i], ot, heap, res.Int, res.Valid)
		} else {
			f := res.Float
			if ot == Float64 {
				h = &hostCol{name: p.names[i], dt: ot, vals: dtype.OfFloat64(f), valid: res.Valid}
			} else {
				adt, _ := ot.array()
				h = &hostCol{name: p.names[i], dt: ot, vals: dtype.Convert(dtype.OfFloat64(f), adt), valid: res.Valid}
			}
			if h.valid != nil && ot.IsFloat() {
				fs := dtype.Convert(h.vals, gpuarray.Float64).Float64s()
				for j, ok := range h.valid {
					if !ok {
						fs[j] = math.NaN()
					}
				}
				adt, _ := ot.array()
				h.vals = dtype.Convert(dtype.OfFloat64(fs), adt)
			}
		}
		ht.cols = append(ht.cols, h)
	}
	return ht, nil
}

// decodeInts builds a column of type dt from int64 codes or values (strings: codes of the
// heap's dictionary; category: codes of its dictionary).
func decodeInts(name string, dt DType, heap *strHeap, v []int64, valid []bool) *hostCol {
	h := &hostCol{name: name, dt: dt, valid: valid}
	switch dt {
	case String:
		_, dict := heap.encode()
		pos := slices.Clone(v)
		for i := range pos {
			if valid != nil && !valid[i] {
				pos[i] = 0
			}
		}
		if dict.len() == 0 {
			dict = heapOf([]string{""})
		}
		h.heap, h.vals = dict, dtype.OfInt64(pos)
	case Category:
		c := make([]int32, len(v))
		for i, x := range v {
			c[i] = int32(x)
		}
		s, _ := dtype.Of(c)
		h.heap, h.vals = heap, s
	default:
		adt, _ := dt.array()
		if adt == gpuarray.Int32 {
			c := make([]int32, len(v))
			for i, x := range v {
				c[i] = int32(x)
			}
			h.vals, _ = dtype.Of(c)
			break
		}
		h.vals = dtype.Convert(dtype.OfInt64(v), adt)
	}
	return h
}

// sortTable sorts a one-partition host table by its first nkeys columns (strings and
// categories by their text, as pandas sorts them; nulls last).
func sortTable(ht *hostTable, nkeys int) {
	n := len(ht.rows)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		for _, c := range ht.cols[:nkeys] {
			va, vb := c.isValid(a), c.isValid(b)
			if va != vb {
				if va {
					return -1
				}
				return 1
			}
			var r int
			switch c.dt {
			case String, Category:
				r = strings.Compare(c.stringAt(a), c.stringAt(b))
			default:
				r = cmp.Compare(c.vals.Float(a), c.vals.Float(b))
				if r == 0 && c.vals.DType() == gpuarray.Int64 {
					r = cmp.Compare(c.vals.Int64s()[a], c.vals.Int64s()[b])
				}
			}
			if r != 0 {
				return r
			}
		}
		return 0
	})
	for i, c := range ht.cols {
		ht.cols[i] = c.gatherRows(idx)
	}
}
