package dataframe

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Field is a column's name and type.
type Field struct {
	Name  string
	DType DType
}

// Frame is a partitioned table of named 1-D columns, lazy until Compute: each method returns a
// new Frame that records the step. Frames are immutable and safe for concurrent use. Errors
// made while building (a missing column, mismatched types) are kept in the frame and in every
// frame built from it: Err reports them, Compute returns them.
type Frame struct {
	parent *Frame
	// read produces the root's table, reading only the columns in need.
	read func(rc *runCtx, need map[string]bool) (*table, error)
	// op is this step, over the parent's table.
	op func(rc *runCtx, t *table) (*table, error)
	// needs maps the columns wanted from this step to those wanted from the parent.
	needs  func(out map[string]bool) map[string]bool
	what   string
	fields []Field
	nparts int
	nrows  int // -1: unknown until computed
	err    error

	// A computed frame's table and where its steps ran.
	done *table
	path []string

	layout *layout // index and partitioning (SetIndex, Shuffle; see sort.go)
}

func errFrame(err error) *Frame { return &Frame{err: err, nrows: -1} }

// Err returns the error made while building the frame, if any.
func (f *Frame) Err() error { return f.err }

// Columns returns the column names in order.
func (f *Frame) Columns() []string {
	n := make([]string, len(f.fields))
	for i, c := range f.fields {
		n[i] = c.Name
	}
	return n
}

// Dtypes returns the columns' names and types in order.
func (f *Frame) Dtypes() []Field { return slices.Clone(f.fields) }

// NPartitions returns the number of partitions.
func (f *Frame) NPartitions() int { return f.nparts }

// Computed reports whether the frame holds computed columns (Compute, Persist).
func (f *Frame) Computed() bool { return f.done != nil }

// Path names where a computed frame's steps ran: the host steps of dataframe (reads, string
// functions, hash aggregation) and the array engine's own notes. Empty for a lazy frame.
func (f *Frame) Path() string { return strings.Join(f.path, "; ") }

func (f *Frame) field(name string) (Field, error) {
	for _, c := range f.fields {
		if c.Name == name {
			return c, nil
		}
	}
	return Field{}, missing(name, f.Columns())
}

// step returns a child frame of f.
func (f *Frame) step(what string, fields []Field, needs func(map[string]bool) map[string]bool, op func(rc *runCtx, t *table) (*table, error)) *Frame {
	if f.err != nil {
		return f
	}
	return &Frame{parent: f, op: op, needs: needs, what: what, fields: fields, nparts: f.nparts, nrows: f.nrows}
}

func passThrough(uses ...string) func(map[string]bool) map[string]bool {
	return func(out map[string]bool) map[string]bool {
		m := maps.Clone(out)
		for _, u := range uses {
			m[u] = true
		}
		return m
	}
}

func only(uses ...string) func(map[string]bool) map[string]bool {
	return func(map[string]bool) map[string]bool {
		m := map[string]bool{}
		for _, u := range uses {
			m[u] = true
		}
		return m
	}
}

func (f *Frame) build(rc *runCtx, need map[string]bool) (*table, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := rc.ctxErr(); err != nil {
		return nil, err
	}
	if f.done != nil {
		return f.done, nil
	}
	if f.parent == nil {
		return f.read(rc, need)
	}
	t, err := f.parent.build(rc, f.needs(need))
	if err != nil {
		return nil, err
	}
	t, err = f.op(rc, t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.what, err)
	}
	return t, nil
}

func (f *Frame) need() map[string]bool {
	m := map[string]bool{}
	for _, c := range f.fields {
		m[c.Name] = true
	}
	return m
}

// Compute runs the frame's steps with opts (gpuarray's: Threads, OnGPU, a cluster client
// through gpuarray.On, a context) and returns a computed frame. Column expressions run in the
// array engine, fused per partition; reads, string functions and hash aggregation run in this
// process, named by Path (with a warning when opts ask for a GPU or a cluster).
func (f *Frame) Compute(opts ...gpuarray.ComputeOption) (*Frame, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.done != nil {
		return f, nil
	}
	rc, err := newRun(opts)
	if err != nil {
		return nil, err
	}
	t, err := f.build(rc, f.need())
	if err != nil {
		return nil, err
	}
	t, err = rc.materialize(t)
	if err != nil {
		return nil, err
	}
	return rc.computed(f, t), nil
}

func (rc *runCtx) computed(f *Frame, t *table) *Frame {
	path := slices.Clone(rc.notes)
	for _, c := range t.cols {
		for _, a := range []*gpuarray.Array{c.arr, c.valid} {
			if a == nil {
				continue
			}
			if p := a.Path(); p != "" && !slices.Contains(path, p) {
				path = append(path, p)
			}
		}
	}
	lens := partLens(t)
	n := 0
	for _, l := range lens {
		n += l
	}
	fields := make([]Field, len(t.cols))
	for i, c := range t.cols {
		fields[i] = Field{c.name, c.dt}
	}
	return &Frame{done: t, path: path, what: "computed", fields: fields, nparts: len(lens), nrows: n}
}

// Persist computes the frame and keeps its columns where they were computed (device memory
// for OnGPU, workers for a cluster, as gpuarray's Persist); later steps start from them. On a
// cluster partition i of every column goes to one worker, the i-th by name in turn. An
// error is kept in the frame (Err).
func (f *Frame) Persist(opts ...gpuarray.ComputeOption) *Frame {
	c, err := f.Compute(opts...)
	if err != nil {
		return errFrame(fmt.Errorf("Persist: %w", err))
	}
	tg, err := gpuarray.TargetOf(opts...)
	if err != nil {
		return errFrame(fmt.Errorf("Persist: %w", err))
	}
	popts := opts
	if _, ok := tg.Scheduler.(plan.Keeper); ok {
		// On a cluster, partition i of every column (and validity) goes to one worker, the
		// same whatever the workers' load, so a later step on a partition moves no data.
		popts = append(slices.Clone(opts), gpuarray.WithContext(plan.WithAlignedChunks(tg.Context)))
	}
	t := &table{rows: c.done.rows, cols: make([]*column, len(c.done.cols))}
	// The columns at once: a host column's chunks are converted and copied on the caller's
	// goroutine, one chunk after another, so one column at a time left the cores idle.
	parallelDo(len(t.cols), runtime.GOMAXPROCS(0), func(i int) {
		col := c.done.cols[i]
		d := *col
		d.arr = col.arr.Persist(popts...)
		if col.valid != nil {
			d.valid = col.valid.Persist(popts...)
		}
		t.cols[i] = &d
	})
	for _, col := range t.cols {
		if err := col.arr.Err(); err != nil {
			return errFrame(fmt.Errorf("Persist: column %q: %w", col.name, err))
		}
	}
	if err := persistHeaps(t, opts); err != nil {
		return errFrame(fmt.Errorf("Persist: %w", err))
	}
	// Compute returns a computed frame itself: copy it, so the caller's frame keeps its columns.
	out := *c
	out.done = t
	return &out
}

// Where says where a computed frame's columns are held: "host", a GPU, or the cluster
// workers holding any of them, counted once ("2 cluster workers"; gpuarray.WhereAll).
func (f *Frame) Where() string {
	if f.done == nil {
		return "not computed"
	}
	arrs := make([]*gpuarray.Array, len(f.done.cols))
	for i, c := range f.done.cols {
		arrs[i] = c.arr
	}
	if w := gpuarray.WhereAll(arrs...); w != "" {
		return w
	}
	return "host"
}

// Select keeps the named columns, in that order.
func (f *Frame) Select(names ...string) *Frame {
	fields := make([]Field, len(names))
	for i, n := range names {
		fd, err := f.field(n)
		if err != nil {
			return errFrame(fmt.Errorf("Select: %w", err))
		}
		fields[i] = fd
	}
	return f.step(fmt.Sprintf("select %s", quoteList(names)), fields, only(names...), func(rc *runCtx, t *table) (*table, error) {
		out := &table{rows: t.rows}
		for _, n := range names {
			c, err := t.find(n)
			if err != nil {
				return nil, err
			}
			out.cols = append(out.cols, c)
		}
		return out, nil
	})
}

// Drop removes the named columns.
func (f *Frame) Drop(names ...string) *Frame {
	for _, n := range names {
		if _, err := f.field(n); err != nil {
			return errFrame(fmt.Errorf("Drop: %w", err))
		}
	}
	var keep []string
	for _, c := range f.fields {
		if !slices.Contains(names, c.Name) {
			keep = append(keep, c.Name)
		}
	}
	return f.Select(keep...)
}

// Rename renames columns, old name to new name.
func (f *Frame) Rename(names map[string]string) *Frame {
	fields := slices.Clone(f.fields)
	for old, nw := range names {
		if _, err := f.field(old); err != nil {
			return errFrame(fmt.Errorf("Rename: %w", err))
		}
		for i := range fields {
			if fields[i].Name == old {
				fields[i].Name = nw
			}
		}
	}
	back := map[string]string{}
	for old, nw := range names {
		back[nw] = old
	}
	needs := func(out map[string]bool) map[string]bool {
		m := map[string]bool{}
		for n := range out {
			if o, ok := back[n]; ok {
				m[o] = true
			} else if _, renamed := names[n]; !renamed {
				m[n] = true
			}
		}
		return m
	}
	return f.step("rename", fields, needs, func(rc *runCtx, t *table) (*table, error) {
		out := &table{rows: t.rows}
		for _, c := range t.cols {
			if nw, ok := names[c.name]; ok {
				c = c.rename(nw)
			}
			out.cols = append(out.cols, c)
		}
		return out, nil
	})
}

// Assign adds (or replaces) column name with the value of e.
func (f *Frame) Assign(name string, e *Expr) *Frame {
	if f.err != nil {
		return f
	}
	dt, err := e.typeOf(f.fields)
	if err != nil {
		return errFrame(fmt.Errorf("Assign %q: %w", name, err))
	}
	fields := slices.Clone(f.fields)
	if i := slices.IndexFunc(fields, func(fd Field) bool { return fd.Name == name }); i >= 0 {
		fields[i].DType = dt
	} else {
		fields = append(fields, Field{name, dt})
	}
	return f.step(fmt.Sprintf("assign %s = %v", name, e), fields, passThrough(e.columns(nil)...), func(rc *runCtx, t *table) (*table, error) {
		c, err := e.eval(rc, t)
		if err != nil {
			return nil, err
		}
		return t.with(c.rename(name)), nil
	})
}

// AsType converts column name to dt.
func (f *Frame) AsType(name string, dt DType) *Frame { return f.Assign(name, Col(name).AsType(dt)) }

// FillNA replaces the nulls (and NaNs) of column name with v.
func (f *Frame) FillNA(name string, v any) *Frame { return f.Assign(name, Col(name).FillNA(v)) }

// Filter keeps the rows where cond (a bool expression) is true; a null condition drops the
// row. The partitions' lengths are unknown until computed, as dask's.
func (f *Frame) Filter(cond *Expr) *Frame {
	if f.err != nil {
		return f
	}
	dt, err := cond.typeOf(f.fields)
	if err != nil {
		return errFrame(fmt.Errorf("Filter: %w", err))
	}
	if dt != Bool {
		return errFrame(fmt.Errorf("Filter: %v is %s, want bool", cond, dt))
	}
	g := f.step(fmt.Sprintf("filter %v", cond), f.fields, passThrough(cond.columns(nil)...), func(rc *runCtx, t *table) (*table, error) {
		m, err := cond.eval(rc, t)
		if err != nil {
			return nil, err
		}
		mask := m.arr
		if m.valid != nil {
			mask = gpuarray.LogicalAnd(mask, m.valid)
		}
		return t.mask(mask), nil
	})
	g.nrows = -1
	return g
}

// DropNA drops the rows with a null (or NaN) in any of the named columns (all columns when
// none are named).
func (f *Frame) DropNA(names ...string) *Frame {
	if len(names) == 0 {
		names = f.Columns()
	}
	var cond *Expr
	for _, n := range names {
		if _, err := f.field(n); err != nil {
			return errFrame(fmt.Errorf("DropNA: %w", err))
		}
		c := Col(n).NotNull()
		if cond == nil {
			cond = c
		} else {
			cond = cond.And(c)
		}
	}
	if cond == nil {
		return f
	}
	return f.Filter(cond)
}

// MapPartitions calls fn on every partition (a computed frame of one partition) and joins
// the frames it returns, in order. fn runs in this process (a cell's function).
func (f *Frame) MapPartitions(fn func(part *Frame) (*Frame, error), opts ...gpuarray.ComputeOption) (*Frame, error) {
	c, err := f.Compute(opts...)
	if err != nil {
		return nil, err
	}
	ht, err := hostOf(c.done)
	if err != nil {
		return nil, err
	}
	var outs []*hostTable
	at := 0
	for p, l := range ht.lens {
		part, err := tableOf(ht.slice(at, at+l))
		if err != nil {
			return nil, err
		}
		at += l
		r, err := fn(&Frame{done: part, fields: c.fields, nparts: 1, nrows: l, what: "partition"})
		if err != nil {
			return nil, fmt.Errorf("MapPartitions: partition %d: %w", p, err)
		}
		if r == nil {
			return nil, fmt.Errorf("MapPartitions: partition %d: the function returned a nil frame", p)
		}
		rc2, err := r.Compute(opts...)
		if err != nil {
			return nil, fmt.Errorf("MapPartitions: partition %d: %w", p, err)
		}
		h, err := hostOf(rc2.done)
		if err != nil {
			return nil, err
		}
		outs = append(outs, h)
	}
	joined, err := concatHost(outs)
	if err != nil {
		return nil, fmt.Errorf("MapPartitions: %w", err)
	}
	t, err := tableOf(joined)
	if err != nil {
		return nil, err
	}
	rc, _ := newRun(opts)
	rc.notes = append(slices.Clone(c.path), "MapPartitions: the function ran in this process")
	return rc.computed(f, t), nil
}

// slice returns rows [lo, hi) of ht as one partition.
func (ht *hostTable) slice(lo, hi int) *hostTable {
	out := &hostTable{rows: ht.rows[lo:hi], lens: []int{hi - lo}}
	for _, c := range ht.cols {
		d := *c
		d.vals = c.vals.Slice(lo, hi)
		if c.valid != nil {
			d.valid = c.valid[lo:hi]
		}
		out.cols = append(out.cols, &d)
	}
	return out
}

// concatHost joins host tables of the same columns, one partition per input partition.
func concatHost(ts []*hostTable) (*hostTable, error) {
	if len(ts) == 0 {
		return nil, errors.New("no partitions")
	}
	out := &hostTable{}
	for ci, c0 := range ts[0].cols {
		var parts []hostCol
		for ti, t := range ts {
			if len(t.cols) != len(ts[0].cols) || t.cols[ci].name != c0.name || t.cols[ci].dt != c0.dt {
				return nil, fmt.Errorf("partition %d has columns %v, partition 0 %v", ti, t.names(), ts[0].names())
			}
			parts = append(parts, *t.cols[ci])
		}
		c, err := concatCols(parts)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c0.name, err)
		}
		out.cols = append(out.cols, c)
	}
	for _, t := range ts {
		out.rows = append(out.rows, t.rows...)
		out.lens = append(out.lens, t.lens...)
	}
	return out, nil
}

func (ht *hostTable) names() []string {
	n := make([]string, len(ht.cols))
	for i, c := range ht.cols {
		n[i] = c.name
	}
	return n
}
