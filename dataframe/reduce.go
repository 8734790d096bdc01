package dataframe

import (
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// reduceArrays computes algebraic whole-frame aggregations as gpuarray reductions: they fuse
// with the filters and expressions before them and run where rc's options say.
func reduceArrays(rc *runCtx, t *table, p *aggPlan) (*table, error) {
	var arrs []*gpuarray.Array
	for _, a := range p.aggs {
		var x, pres *gpuarray.Array
		var in DType = Int64
		if a.op != hashagg.Size {
			c, err := t.find(a.col)
			if err != nil {
				return nil, err
			}
			in, x, pres = c.dt, c.arr, present(c)
		}
		ones := t.rows.Ge(0)
		count := ones.AsType(gpuarray.Int64).Sum()
		if pres != nil {
			count = pres.AsType(gpuarray.Int64).Sum()
		}
		var r *gpuarray.Array
		switch a.op {
		case hashagg.Size, hashagg.Count:
			r = count
		case hashagg.Sum:
			acc := gpuarray.Int64
			if in.IsFloat() {
				acc = gpuarray.Float64
			}
			v := x.AsType(acc)
			if pres != nil {
				v = gpuarray.Where(pres, v, 0)
			}
			r = v.Sum()
		case hashagg.Mean:
			v := x.AsType(gpuarray.Float64)
			if pres != nil {
				v = gpuarray.Where(pres, v, 0)
			}
			r = v.Sum()
		case hashagg.Min, hashagg.Max:
			v := x.AsType(gpuarray.Float64)
			if in.IsInteger() || in.IsDatetime() {
				v = x.AsType(gpuarray.Int64)
			}
			fill := any(math.Inf(1))
			if a.op == hashagg.Max {
				fill = math.Inf(-1)
			}
			if v.DType() == gpuarray.Int64 {
				fill = int64(math.MaxInt64)
				if a.op == hashagg.Max {
					fill = int64(math.MinInt64)
				}
			}
			if pres != nil {
				v = gpuarray.Where(pres, v, fill)
			}
			if a.op == hashagg.Min {
				r = v.Min()
			} else {
				r = v.Max()
			}
		case hashagg.Var, hashagg.Std:
			// Two passes (the mean, then squared deviations), as NumPy's var.
			v := x.AsType(gpuarray.Float64)
			if pres != nil {
				v = gpuarray.Where(pres, v, 0)
			}
			mean := v.Sum().Div(count)
			d := v.Sub(mean)
			if pres != nil {
				d = gpuarray.Where(pres, d, 0)
			}
			r = d.Mul(d).Sum().Div(count.Sub(1))
		}
		arrs = append(arrs, r, count)
	}
	out, err := rc.computeArrays(arrs)
	if err != nil {
		return nil, err
	}
	ht := &hostTable{rows: []int64{0}, lens: []int{1}}
	for i, a := range p.aggs {
		r, cnt := out[2*i], out[2*i+1]
		n, err := cnt.ToSliceInt64()
		if err != nil {
			return nil, err
		}
		var valid []bool
		h := &hostCol{name: p.names[i], dt: p.out[i]}
		adt, _ := h.dt.array()
		switch a.op {
		case hashagg.Size, hashagg.Count:
			h.vals = dtype.OfInt64(n)
		case hashagg.Sum:
			v, err := r.Values()
			if err != nil {
				return nil, err
			}
			h.vals = dtype.Convert(v, adt)
		case hashagg.Mean:
			s, err := r.ToSlice()
			if err != nil {
				return nil, err
			}
			h.vals = dtype.OfFloat64([]float64{s[0] / float64(n[0])})
			if n[0] == 0 {
				valid = []bool{false}
			}
		case hashagg.Min, hashagg.Max:
			v, err := r.Values()
			if err != nil {
				return nil, err
			}
			h.vals = dtype.Convert(v, adt)
			if n[0] == 0 {
				valid = []bool{false}
				h.vals = dtype.Make(adt, 1)
				if h.dt.IsFloat() {
					h.vals = dtype.Convert(dtype.OfFloat64([]float64{math.NaN()}), adt)
				}
			}
		case hashagg.Var, hashagg.Std:
			s := []float64{math.NaN()}
			if n[0] > 1 {
				if s, err = r.ToSlice(); err != nil {
					return nil, err
				}
				if a.op == hashagg.Std {
					s[0] = math.Sqrt(s[0])
				}
			} else {
				valid = []bool{false}
			}
			h.vals = dtype.OfFloat64(s)
		}
		h.valid = valid
		ht.cols = append(ht.cols, h)
	}
	return tableOf(ht)
}

// numericColumns returns the names of the numeric (and bool) columns.
func (f *Frame) numericColumns() []string {
	var out []string
	for _, fd := range f.fields {
		if fd.DType.IsNumeric() {
			out = append(out, fd.Name)
		}
	}
	return out
}

func (f *Frame) reduceAll(mk func(string) Agg, cols []string) *Frame {
	if len(cols) == 0 {
		cols = f.numericColumns()
	}
	aggs := make([]Agg, len(cols))
	for i, c := range cols {
		aggs[i] = mk(c).As(c)
	}
	return f.Agg(aggs...)
}

// Sum is a one-row frame of the sum of each named column (all numeric columns when none are).
func (f *Frame) Sum(cols ...string) *Frame { return f.reduceAll(Sum, cols) }

// Mean is a one-row frame of the mean of each named column.
func (f *Frame) Mean(cols ...string) *Frame { return f.reduceAll(Mean, cols) }

// Min is a one-row frame of the minimum of each named column.
func (f *Frame) Min(cols ...string) *Frame { return f.reduceAll(Min, cols) }

// Max is a one-row frame of the maximum of each named column.
func (f *Frame) Max(cols ...string) *Frame { return f.reduceAll(Max, cols) }

// Count is a one-row frame of the non-null count of each named column (all columns when
// none are).
func (f *Frame) Count(cols ...string) *Frame {
	if len(cols) == 0 {
		cols = f.Columns()
	}
	return f.reduceAll(Count, cols)
}

// Std is a one-row frame of the standard deviation (ddof 1) of each named column.
func (f *Frame) Std(cols ...string) *Frame { return f.reduceAll(Std, cols) }

// Var is a one-row frame of the variance (ddof 1) of each named column.
func (f *Frame) Var(cols ...string) *Frame { return f.reduceAll(Var, cols) }

// NUnique is a one-row frame of the number of distinct values of each named column (all
// columns when none are).
func (f *Frame) NUnique(cols ...string) *Frame {
	if len(cols) == 0 {
		cols = f.Columns()
	}
	return f.reduceAll(NUnique, cols)
}

// Quantile is a one-row frame of the q-quantile of each named column.
func (f *Frame) Quantile(q float64, cols ...string) *Frame {
	return f.reduceAll(func(c string) Agg { return Quantile(c, q) }, cols)
}

// Describe summarizes the numeric columns as pandas' describe: rows count, mean, std, min,
// 25%, 50%, 75%, max (a "statistic" column names them), float64 values.
func (f *Frame) Describe() *Frame {
	if f.err != nil {
		return f
	}
	cols := f.numericColumns()
	if len(cols) == 0 {
		return errFrame(fmt.Errorf("Describe: no numeric columns (the frame has %s)", quoteList(f.Columns())))
	}
	stats := []string{"count", "mean", "std", "min", "25%", "50%", "75%", "max"}
	var aggs []Agg
	for i, c := range cols {
		aggs = append(aggs, Count(c).As(fmt.Sprint(i, "count")), Mean(c).As(fmt.Sprint(i, "mean")), Std(c).As(fmt.Sprint(i, "std")),
			Min(c).As(fmt.Sprint(i, "min")), Quantile(c, 0.25).As(fmt.Sprint(i, "q25")), Median(c).As(fmt.Sprint(i, "q50")),
			Quantile(c, 0.75).As(fmt.Sprint(i, "q75")), Max(c).As(fmt.Sprint(i, "max")))
	}
	one := f.Agg(aggs...)
	fields := []Field{{"statistic", String}}
	for _, c := range cols {
		fields = append(fields, Field{c, Float64})
	}
	g := one.step("describe", fields, passThrough(), func(rc *runCtx, t *table) (*table, error) {
		ht, err := rc.toHost(t)
		if err != nil {
			return nil, err
		}
		out := &hostTable{rows: rowsArange([]int{len(stats)}), lens: []int{len(stats)}}
		out.cols = append(out.cols, &hostCol{name: "statistic", dt: String, heap: heapOf(stats), vals: dtype.OfInt64(rowsArange([]int{len(stats)}))})
		for i, c := range cols {
			v := make([]float64, len(stats))
			for s := range stats {
				h := ht.cols[i*len(stats)+s]
				v[s] = dtype.Convert(h.vals, gpuarray.Float64).Float64s()[0]
				if !h.isValid(0) {
					v[s] = math.NaN()
				}
			}
			out.cols = append(out.cols, &hostCol{name: c, dt: Float64, vals: dtype.OfFloat64(v)})
		}
		return tableOf(out)
	})
	g.nrows = len(stats)
	return g
}

// ValueCounts counts the rows of each distinct non-null value of col, largest count first
// (pandas' value_counts): columns col and "count".
func (f *Frame) ValueCounts(col string) *Frame {
	g := f.GroupBy(col).Agg(Size().As("count"))
	if g.err != nil {
		return errFrame(fmt.Errorf("ValueCounts: %w", g.err))
	}
	h := g.step("sort by count", g.fields, passThrough(), func(rc *runCtx, t *table) (*table, error) {
		ht, err := rc.toHost(t)
		if err != nil {
			return nil, err
		}
		one, err := concatHost([]*hostTable{ht})
		if err != nil {
			return nil, err
		}
		one.lens = []int{len(one.rows)}
		sortTable(one, 1)
		cnt := one.cols[1].vals.Int64s()
		idx := make([]int, len(cnt))
		for i := range idx {
			idx[i] = i
		}
		stableSortDesc(idx, cnt)
		for i, c := range one.cols {
			one.cols[i] = c.gatherRows(idx)
		}
		return tableOf(one)
	})
	h.nparts = 1
	return h
}

func stableSortDesc(idx []int, key []int64) {
	// insertion into buckets would do; a stable sort keeps ties in key order
	sortStable(idx, func(a, b int) bool { return key[a] > key[b] })
}
