package dataframe

import (
	"fmt"
	"hash/maphash"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Option configures a frame's construction or a reader: NPartitions, PartitionRows, Columns,
// Filters, Delimiter, NoHeader, NullValues, Schema, DateColumns.
type Option func(*options)

type options struct {
	nparts   int
	partRows int
	columns  []string
	filters  []*Expr
	delim    rune
	noHeader bool
	nulls    []string
	hasNulls bool
	schema   []Field
	dates    []string
}

// NPartitions splits a frame built from memory into n partitions of equal length.
func NPartitions(n int) Option { return func(o *options) { o.nparts = n } }

// PartitionRows sets the rows per partition (CSV; frames built from memory).
func PartitionRows(n int) Option { return func(o *options) { o.partRows = n } }

// Columns reads only the named columns (Parquet, CSV).
func Columns(names ...string) Option { return func(o *options) { o.columns = names } }

// Filters are conditions pushed into a Parquet read: row groups whose statistics show that no
// row can pass are skipped, and the rows read are filtered (col op constant, joined by And).
func Filters(conds ...*Expr) Option {
	return func(o *options) { o.filters = append(o.filters, conds...) }
}

// Delimiter sets a CSV file's field separator (default ',').
func Delimiter(r rune) Option { return func(o *options) { o.delim = r } }

// NoHeader says a CSV file has no header line; columns are named "0", "1", ... unless Schema
// names them.
func NoHeader() Option { return func(o *options) { o.noHeader = true } }

// NullValues are the CSV fields read as null (default: "", "NA", "NaN", "null", "NULL").
func NullValues(vs ...string) Option { return func(o *options) { o.nulls, o.hasNulls = vs, true } }

// Schema gives a CSV file's column names and types instead of inferring them.
func Schema(fields ...Field) Option { return func(o *options) { o.schema = fields } }

// DateColumns parses the named CSV columns as datetimes (RFC 3339 or "2006-01-02[ 15:04:05]").
func DateColumns(names ...string) Option { return func(o *options) { o.dates = names } }

func applyOpts(opts []Option) options {
	o := options{delim: ','}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	return o
}

// splitLens splits n rows into partitions by the options (one when unset).
func (o options) splitLens(n int) []int {
	p := 1
	if o.nparts > 0 {
		p = o.nparts
	} else if o.partRows > 0 {
		p = (n + o.partRows - 1) / o.partRows
	}
	p = max(1, min(p, n))
	lens := make([]int, p)
	for i := range lens {
		lens[i] = n / p
		if i < n%p {
			lens[i]++
		}
	}
	return lens
}

// memFrame is a root frame over host data.
func memFrame(what string, ht *hostTable) *Frame {
	fields := make([]Field, len(ht.cols))
	for i, c := range ht.cols {
		fields[i] = Field{c.name, c.dt}
	}
	for i, c := range fields {
		if slices.ContainsFunc(fields[:i], func(f Field) bool { return f.Name == c.Name }) {
			return errFrame(fmt.Errorf("%s: column %q appears twice", what, c.Name))
		}
	}
	t, err := tableOf(ht)
	if err != nil {
		return errFrame(fmt.Errorf("%s: %w", what, err))
	}
	return &Frame{what: what, fields: fields, nparts: len(partLens(t)), nrows: len(ht.rows),
		read: func(rc *runCtx, need map[string]bool) (*table, error) { return t, nil }}
}

// FromArrays returns a frame of 1-D gpuarray arrays of one length, named by names; their
// chunks become the partitions (the first array's chunks; the others are rechunked to them).
func FromArrays(names []string, arrays ...*gpuarray.Array) *Frame {
	if len(names) != len(arrays) {
		return errFrame(fmt.Errorf("FromArrays: %d names for %d arrays", len(names), len(arrays)))
	}
	if len(arrays) == 0 {
		return errFrame(fmt.Errorf("FromArrays: no arrays"))
	}
	var fields []Field
	var t table
	var lens []int
	for i, a := range arrays {
		if err := a.Err(); err != nil {
			return errFrame(fmt.Errorf("FromArrays: column %q: %w", names[i], err))
		}
		if a.NDim() != 1 {
			return errFrame(fmt.Errorf("FromArrays: column %q has shape %v, want 1-D", names[i], a.Shape()))
		}
		dt, err := dtypeOfArray(a.DType())
		if err != nil {
			return errFrame(fmt.Errorf("FromArrays: column %q: %w", names[i], err))
		}
		if i == 0 {
			lens = a.Chunks()[0]
		} else if a.Shape()[0] != arrays[0].Shape()[0] {
			return errFrame(fmt.Errorf("FromArrays: column %q has %d rows, %q has %d", names[i], a.Shape()[0], names[0], arrays[0].Shape()[0]))
		} else if !slices.Equal(a.Chunks()[0], lens) {
			a = a.Rechunk(lens...)
		}
		if slices.ContainsFunc(fields, func(f Field) bool { return f.Name == names[i] }) {
			return errFrame(fmt.Errorf("FromArrays: column %q appears twice", names[i]))
		}
		fields = append(fields, Field{names[i], dt})
		t.cols = append(t.cols, &column{name: names[i], dt: dt, arr: a})
	}
	n := arrays[0].Shape()[0]
	if n < 0 {
		return errFrame(fmt.Errorf("FromArrays: %q has an unknown length (a mask): call ComputeChunkSizes first", names[0]))
	}
	t.rows = gpuarray.WrapValues(dtype.OfInt64(rowsArange(lens)), gpuarray.ChunkSizes(lens))
	return &Frame{what: "FromArrays", fields: fields, nparts: len(lens), nrows: n,
		read: func(rc *runCtx, need map[string]bool) (*table, error) { return &t, nil }}
}

// FromSlices returns a frame of Go slices named by names: []int64, []int, []int32, []float64,
// []float32, []bool, []string, []time.Time (datetime64[us]), a Nullable of one of them, or a
// Categorical.
func FromSlices(names []string, cols []any, opts ...Option) *Frame {
	if len(names) != len(cols) {
		return errFrame(fmt.Errorf("FromSlices: %d names for %d columns", len(names), len(cols)))
	}
	ht := &hostTable{}
	n := -1
	for i, c := range cols {
		h, err := hostColOf(names[i], c)
		if err != nil {
			return errFrame(fmt.Errorf("FromSlices: %w", err))
		}
		if n >= 0 && h.vals.Len() != n {
			return errFrame(fmt.Errorf("FromSlices: column %q has %d rows, %q has %d", names[i], h.vals.Len(), names[0], n))
		}
		n = h.vals.Len()
		ht.cols = append(ht.cols, h)
	}
	if n < 0 {
		n = 0
	}
	o := applyOpts(opts)
	ht.lens = o.splitLens(n)
	ht.rows = rowsArange(ht.lens)
	return memFrame("FromSlices", ht)
}

// FromMap is FromSlices with the columns of m, in the order of names (sorted names when none
// are given).
func FromMap(m map[string]any, names ...string) *Frame {
	if len(names) == 0 {
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
	}
	cols := make([]any, len(names))
	for i, n := range names {
		c, ok := m[n]
		if !ok {
			return errFrame(fmt.Errorf("FromMap: %w", missing(n, names)))
		}
		cols[i] = c
	}
	return FromSlices(names, cols)
}

// NullableColumn is a Go slice with a validity: row i is null where Valid[i] is false.
type NullableColumn struct {
	Values any
	Valid  []bool
}

// Nullable pairs a Go slice with its validity, for FromSlices.
func Nullable(values any, valid []bool) NullableColumn { return NullableColumn{values, valid} }

// CategoricalColumn is a categorical column given by its codes and categories, for FromSlices.
type CategoricalColumn struct {
	Codes      []int32
	Categories []string
}

// Categorical is a categorical column for FromSlices from codes into categories, as pandas'
// Categorical.from_codes: row i is categories[codes[i]], or null where the code is -1. The
// categories must be distinct. Rows hold no strings of their own, so a column of many rows and
// few categories costs its codes only.
func Categorical(codes []int32, categories []string) CategoricalColumn {
	return CategoricalColumn{codes, categories}
}

// hostCol returns the column's codes, dictionary and validity, checked.
func (c CategoricalColumn) hostCol(name string) (*hostCol, error) {
	if s, dup := duplicateString(c.Categories); dup {
		return nil, fmt.Errorf("column %q: category %q appears twice", name, s)
	}
	m := int32(len(c.Categories))
	codes := slices.Clone(c.Codes)
	var valid []bool
	for i, x := range codes {
		if x >= 0 && x < m {
			continue
		}
		if x != -1 {
			return nil, fmt.Errorf("column %q: row %d has code %d, want -1 (null) or 0..%d", name, i, x, m-1)
		}
		if valid == nil {
			valid = make([]bool, len(codes))
			for j := range valid {
				valid[j] = true
			}
		}
		valid[i], codes[i] = false, 0
	}
	vals, _ := dtype.Of(codes)
	return &hostCol{name: name, dt: Category, vals: vals, valid: valid, heap: heapOf(c.Categories)}, nil
}

func hostColOf(name string, c any) (*hostCol, error) {
	h := &hostCol{name: name}
	if cc, ok := c.(CategoricalColumn); ok {
		return cc.hostCol(name)
	}
	if nc, ok := c.(NullableColumn); ok {
		inner, err := hostColOf(name, nc.Values)
		if err != nil {
			return nil, err
		}
		if len(nc.Valid) != inner.vals.Len() {
			return nil, fmt.Errorf("column %q: %d validity entries for %d rows", name, len(nc.Valid), inner.vals.Len())
		}
		inner.valid = slices.Clone(nc.Valid)
		return inner, nil
	}
	switch v := c.(type) {
	case []string:
		h.dt, h.heap = String, heapOf(v)
		h.vals = dtype.OfInt64(rowsArange([]int{len(v)}))
		return h, nil
	case []time.Time:
		t := make([]int64, len(v))
		for i, x := range v {
			t[i] = x.UnixMicro()
		}
		h.dt, h.vals = DatetimeUS, dtype.OfInt64(t)
		return h, nil
	case []int:
		t := make([]int64, len(v))
		for i, x := range v {
			t[i] = int64(x)
		}
		h.dt, h.vals = Int64, dtype.OfInt64(t)
		return h, nil
	}
	s, err := dtype.Of(c)
	if err != nil {
		return nil, fmt.Errorf("column %q: %T is not a column (want a slice of numbers, bools, strings or times)", name, c)
	}
	h.vals = s.Clone()
	if h.dt, err = dtypeOfArray(s.DType()); err != nil {
		return nil, fmt.Errorf("column %q: %w", name, err)
	}
	return h, nil
}

// ComputeOption is gpuarray's ComputeOption (Threads, OnGPU, On a cluster client, ...).
type ComputeOption = gpuarray.ComputeOption

// duplicateString returns a string that appears twice in ss, if one does. Long lists are
// checked in parallel: each worker keeps the strings whose hash falls in its share.
func duplicateString(ss []string) (string, bool) {
	w := runtime.GOMAXPROCS(0)
	if len(ss) < 1<<16 || w == 1 {
		return duplicateStringSerial(ss)
	}
	seed := maphash.MakeSeed()
	hs := make([]uint64, len(ss))
	step := (len(ss) + w - 1) / w
	parallelDo(w, w, func(i int) {
		for j := i * step; j < min(len(ss), (i+1)*step); j++ {
			hs[j] = maphash.String(seed, ss[j])
		}
	})
	dups := make([]int, w)
	parallelDo(w, w, func(i int) {
		dups[i] = -1
		// An open-addressed table of this worker's hashes (0 marks a free slot) and rows.
		size := 1
		for size < 2*(len(ss)/w+1) {
			size <<= 1
		}
		hash, row := make([]uint64, size), make([]int, size)
		for j, h := range hs {
			if h%uint64(w) != uint64(i) {
				continue
			}
			h |= 1 << 63 // never 0
			at := int(h>>8) & (size - 1)
			for hash[at] != 0 && hash[at] != h {
				at = (at + 1) & (size - 1)
			}
			if hash[at] == h {
				// Equal strings, or (about never) two strings of one hash.
				dups[i] = j
				if ss[row[at]] != ss[j] {
					dups[i] = -2
				}
				return
			}
			hash[at], row[at] = h, j
		}
	})
	for _, j := range dups {
		if j == -2 {
			return duplicateStringSerial(ss)
		}
		if j >= 0 {
			return ss[j], true
		}
	}
	return "", false
}

func duplicateStringSerial(ss []string) (string, bool) {
	seen := make(map[string]struct{}, len(ss))
	for _, s := range ss {
		if _, ok := seen[s]; ok {
			return s, true
		}
		seen[s] = struct{}{}
	}
	return "", false
}
