package dataframe

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// column is one column of a table: arr holds the values (numeric, bool, datetime ticks),
// the int32 codes (category) or the int64 positions into heap (string); valid, when not nil,
// marks the rows that are not null (Arrow's validity); heap is the strings (string) or the
// dictionary (category).
type column struct {
	name  string
	dt    DType
	arr   *gpuarray.Array
	valid *gpuarray.Array
	heap  *strHeap
}

func (c *column) rename(name string) *column {
	d := *c
	d.name = name
	return &d
}

// table is a frame's columns as gpuarray arrays (lazy or computed) that share one
// partitioning, plus rows (the int64 position of each row in the frame it was read as, for
// First/Last and Head/Tail).
type table struct {
	cols []*column
	rows *gpuarray.Array
}

func (t *table) find(name string) (*column, error) {
	for _, c := range t.cols {
		if c.name == name {
			return c, nil
		}
	}
	return nil, missing(name, t.names())
}

func (t *table) names() []string {
	n := make([]string, len(t.cols))
	for i, c := range t.cols {
		n[i] = c.name
	}
	return n
}

func missing(name string, have []string) error {
	return fmt.Errorf("no column %q (the frame has %s)", name, quoteList(have))
}

func quoteList(names []string) string {
	if len(names) == 0 {
		return "no columns"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// with returns t with c replacing the column of its name, or appended.
func (t *table) with(c *column) *table {
	out := &table{cols: slices.Clone(t.cols), rows: t.rows}
	for i, o := range out.cols {
		if o.name == c.name {
			out.cols[i] = c
			return out
		}
	}
	out.cols = append(out.cols, c)
	return out
}

// mask applies the boolean array m (same layout as t) to every column.
func (t *table) mask(m *gpuarray.Array) *table {
	out := &table{cols: make([]*column, len(t.cols)), rows: t.rows.Mask(m)}
	for i, c := range t.cols {
		d := *c
		d.arr = c.arr.Mask(m)
		if c.valid != nil {
			d.valid = c.valid.Mask(m)
		}
		out.cols[i] = &d
	}
	return out
}

// runCtx is one Compute: its options, where they run, and the host steps taken.
type runCtx struct {
	opts   []gpuarray.ComputeOption
	target gpuarray.Target
	mu     sync.Mutex
	notes  []string
}

func newRun(opts []gpuarray.ComputeOption) (*runCtx, error) {
	t, err := gpuarray.TargetOf(opts...)
	if err != nil {
		return nil, err
	}
	return &runCtx{opts: opts, target: t}, nil
}

// host records a step that ran on the host (in this process). On a GPU or another scheduler
// it also warns: the work left the engine the options asked for.
func (rc *runCtx) host(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if slices.Contains(rc.notes, msg) {
		return
	}
	rc.notes = append(rc.notes, msg)
	if rc.target.Backend != "cpu" {
		fmt.Fprintf(os.Stderr, "dataframe warning: %s\n", msg)
	}
}

func (rc *runCtx) ctxErr() error {
	if rc.target.Context == nil {
		return nil
	}
	return rc.target.Context.Err()
}

// computeArrays computes arrays together with rc's options.
func (rc *runCtx) computeArrays(xs []*gpuarray.Array) ([]*gpuarray.Array, error) {
	args := make([]any, 0, len(xs)+len(rc.opts))
	for _, x := range xs {
		args = append(args, x)
	}
	for _, o := range rc.opts {
		args = append(args, o)
	}
	return gpuarray.ComputeAll(args...)
}

// materialize computes every array of t. Arrays already held on a GPU (gpuarray's
// HeldOnGPU: persisted there, or a device step's result such as a merge's gathered columns or
// a device groupby's table) stay there as they are, whatever rc computes with: a compute on
// the host would copy them there, and a later read copies what it asks for.
func (rc *runCtx) materialize(t *table) (*table, error) {
	var xs []*gpuarray.Array
	todo := func(a *gpuarray.Array) {
		if !a.HeldOnGPU() {
			xs = append(xs, a)
		}
	}
	for _, c := range t.cols {
		todo(c.arr)
		if c.valid != nil {
			todo(c.valid)
		}
	}
	todo(t.rows)
	var out []*gpuarray.Array
	if len(xs) > 0 {
		var err error
		if out, err = rc.computeArrays(xs); err != nil {
			return nil, err
		}
	}
	k := 0
	done := func(a *gpuarray.Array) *gpuarray.Array {
		if a.HeldOnGPU() {
			return a
		}
		k++
		return out[k-1]
	}
	res := &table{cols: make([]*column, len(t.cols))}
	for i, c := range t.cols {
		d := *c
		d.arr = done(c.arr)
		if c.valid != nil {
			d.valid = done(c.valid)
		}
		res.cols[i] = &d
	}
	res.rows = done(t.rows)
	return res, nil
}

// partLens returns the partition lengths of a computed table.
func partLens(t *table) []int {
	ch := t.rows.Chunks()
	if len(ch) == 0 {
		return nil
	}
	return ch[0]
}

// hostCol is a computed column's data on the host.
type hostCol struct {
	name  string
	dt    DType
	vals  dtype.Slice
	valid []bool
	heap  *strHeap
}

func (h *hostCol) isValid(i int) bool { return h.valid == nil || h.valid[i] }

// hostTable is a computed table on the host, with its partition lengths.
type hostTable struct {
	cols []*hostCol
	rows []int64
	lens []int
}

func (rc *runCtx) toHost(t *table) (*hostTable, error) {
	c, err := rc.materialize(t)
	if err != nil {
		return nil, err
	}
	return hostOf(c)
}

// hostOf copies a computed table to the host.
func hostOf(t *table) (*hostTable, error) {
	ht := &hostTable{lens: partLens(t)}
	rows, err := t.rows.ToSliceInt64()
	if err != nil {
		return nil, err
	}
	ht.rows = rows
	for _, c := range t.cols {
		v, err := c.arr.Values()
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", c.name, err)
		}
		h := &hostCol{name: c.name, dt: c.dt, vals: v, heap: c.heap}
		if c.valid != nil {
			if h.valid, err = c.valid.ToSliceBool(); err != nil {
				return nil, fmt.Errorf("column %q: %w", c.name, err)
			}
		}
		ht.cols = append(ht.cols, h)
	}
	return ht, nil
}

// tableOf wraps host data as a table partitioned by lens (nil: one partition).
func tableOf(ht *hostTable) (*table, error) {
	n := len(ht.rows)
	lens := ht.lens
	if len(lens) == 0 || n == 0 {
		lens = []int{n}
	}
	opts := []gpuarray.ArrayOption{gpuarray.ChunkSizes(lens)}
	t := &table{rows: gpuarray.WrapValues(dtype.OfInt64(ht.rows), opts...)}
	for _, h := range ht.cols {
		adt, ok := h.dt.array()
		if !ok {
			return nil, fmt.Errorf("column %q: no array type for %s", h.name, h.dt)
		}
		if h.vals.Len() != n {
			return nil, fmt.Errorf("column %q has %d rows, the frame %d", h.name, h.vals.Len(), n)
		}
		v := h.vals
		if v.DType() != adt {
			v = dtype.Convert(v, adt)
		}
		c := &column{name: h.name, dt: h.dt, arr: gpuarray.WrapValues(v, opts...), heap: h.heap}
		if h.valid != nil && !allTrue(h.valid) {
			c.valid = gpuarray.WrapValues(dtype.OfBool(h.valid), opts...)
		}
		if err := c.arr.Err(); err != nil {
			return nil, fmt.Errorf("column %q: %w", h.name, err)
		}
		t.cols = append(t.cols, c)
	}
	return t, nil
}

func allTrue(b []bool) bool {
	for _, x := range b {
		if !x {
			return false
		}
	}
	return true
}

func rowsArange(lens []int) []int64 {
	n := 0
	for _, l := range lens {
		n += l
	}
	r := make([]int64, n)
	// In chunks on every core: a result of ~1e7 groups (db-benchmark's q10) numbers its rows
	// here.
	const chunk = 1 << 18
	parallelDo((n+chunk-1)/chunk, runtime.GOMAXPROCS(0), func(c int) {
		lo := c * chunk
		for i := range r[lo:min(n, lo+chunk)] {
			r[lo+i] = int64(lo + i)
		}
	})
	return r
}
