package dataframe

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// SortOption configures SortValues, NLargest, NSmallest and SetIndex.
type SortOption func(*sortOpts)

type sortOpts struct {
	asc        []bool
	nullsFirst bool
}

// Ascending sets the direction of every key, in order (one value applies to all keys);
// the default is ascending.
func Ascending(asc ...bool) SortOption { return func(o *sortOpts) { o.asc = asc } }

// NullsFirst puts null keys (and NaNs) first; the default puts them last, as pandas'
// na_position="last", whatever the direction.
func NullsFirst() SortOption { return func(o *sortOpts) { o.nullsFirst = true } }

// hostStep is a frame whose step runs on the host over f's computed table.
func (f *Frame) hostStep(what string, fields []Field, fn func(rc *runCtx, ht *hostTable) (*hostTable, error)) *Frame {
	if f.err != nil {
		return f
	}
	return &Frame{what: what, fields: fields, nparts: f.nparts, nrows: -1,
		read: func(rc *runCtx, need map[string]bool) (*table, error) {
			t, err := f.build(rc, f.need())
			if err != nil {
				return nil, err
			}
			ht, err := rc.toHost(t)
			if err != nil {
				return nil, err
			}
			out, err := fn(rc, ht)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			return tableOf(out)
		}}
}

// sortKey is one key column in a comparable form.
type sortKey struct {
	null []bool
	i    []int64
	f    []float64
	s    []string
	desc bool
}

func sortKeyOf(h *hostCol, desc bool) sortKey {
	k := sortKey{desc: desc}
	n := h.vals.Len()
	if h.valid != nil {
		k.null = make([]bool, n)
		for i, v := range h.valid {
			k.null[i] = !v
		}
	}
	switch {
	case h.dt == String:
		k.s = make([]string, n)
		for i := range k.s {
			k.s[i] = h.stringAt(i)
		}
	case h.dt == Category:
		// pandas sorts categoricals by their categories' order, the dictionary's.
		k.i = slices.Clone(dtype.Convert(h.vals, dtype.Int64).Int64s())
	case h.dt.IsFloat():
		k.f = dtype.Convert(h.vals, dtype.Float64).Float64s()
		for i, x := range k.f {
			if math.IsNaN(x) {
				if k.null == nil {
					k.null = make([]bool, n)
				}
				k.null[i] = true
			}
		}
	case h.vals.DType() == dtype.Uint64:
		// order-preserving: flip the sign bit.
		u := h.vals.Uint64s()
		k.i = make([]int64, n)
		for i, x := range u {
			k.i[i] = int64(x ^ (1 << 63))
		}
	default:
		k.i = slices.Clone(dtype.Convert(h.vals, dtype.Int64).Int64s())
	}
	return k
}

func (k *sortKey) cmp(a, b int, nullsFirst bool) int {
	na, nb := k.null != nil && k.null[a], k.null != nil && k.null[b]
	if na || nb {
		switch {
		case na && nb:
			return 0
		case na == nullsFirst:
			return -1
		}
		return 1
	}
	var c int
	switch {
	case k.s != nil:
		c = cmp.Compare(k.s[a], k.s[b])
	case k.f != nil:
		c = cmp.Compare(k.f[a], k.f[b])
	default:
		c = cmp.Compare(k.i[a], k.i[b])
	}
	if k.desc {
		return -c
	}
	return c
}

func sortKeys(ht *hostTable, by []string, o sortOpts) ([]sortKey, error) {
	if len(o.asc) > 1 && len(o.asc) != len(by) {
		return nil, fmt.Errorf("%d directions for %d keys", len(o.asc), len(by))
	}
	keys := make([]sortKey, len(by))
	for i, name := range by {
		h, err := ht.col(name)
		if err != nil {
			return nil, err
		}
		asc := true
		if len(o.asc) == 1 {
			asc = o.asc[0]
		} else if len(o.asc) > 1 {
			asc = o.asc[i]
		}
		keys[i] = sortKeyOf(h, !asc)
	}
	return keys, nil
}

// order returns the rows idx sorted stably by keys.
func order(idx []int, keys []sortKey, nullsFirst bool) {
	slices.SortStableFunc(idx, func(a, b int) int {
		for k := range keys {
			if c := keys[k].cmp(a, b, nullsFirst); c != 0 {
				return c
			}
		}
		return 0
	})
}

// take returns the rows at of ht, partitioned by lens.
func (ht *hostTable) take(at []int, lens []int) *hostTable {
	out := &hostTable{lens: slices.DeleteFunc(slices.Clone(lens), func(l int) bool { return l == 0 })}
	out.rows = rowsArange(out.lens)
	for _, c := range ht.cols {
		out.cols = append(out.cols, c.gatherRows(at))
	}
	return out
}

func evenLens(n, parts int) []int {
	parts = max(1, min(parts, n))
	lens := make([]int, parts)
	for i := range lens {
		lens[i] = n / parts
		if i < n%parts {
			lens[i]++
		}
	}
	return lens
}

func (f *Frame) checkCols(what string, names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("%s: no columns named", what)
	}
	for _, n := range names {
		if _, err := f.field(n); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	return nil
}

// SortValues sorts the rows by the columns by, stably: Ascending sets the direction per key,
// NullsFirst where nulls go. Categoricals sort by their dictionary's order, as pandas sorts
// them by their categories. The result keeps the number of partitions, in sorted order. On a
// cluster (On(c)), keys that are not strings sort on the workers (cluster.Client.SortColumns):
// range partitions by sampled quantiles, as many or fewer, of uneven lengths.
func (f *Frame) SortValues(by []string, opts ...SortOption) *Frame {
	if err := f.checkCols("SortValues", by); err != nil {
		return errFrame(err)
	}
	var o sortOpts
	for _, fn := range opts {
		fn(&o)
	}
	nparts := f.nparts
	onCluster := func(rc *runCtx) (*table, bool, error) { return clusterSort(rc, f, by, o, nparts) }
	return f.clusterOrHost(fmt.Sprintf("sort by %s", quoteList(by)), f.fields, onCluster, func(rc *runCtx, ht *hostTable) (*hostTable, error) {
		keys, err := sortKeys(ht, by, o)
		if err != nil {
			return nil, err
		}
		idx := make([]int, len(ht.rows))
		for i := range idx {
			idx[i] = i
		}
		order(idx, keys, o.nullsFirst)
		rc.host("sort: a stable sort on the host over %d rows", len(idx))
		return ht.take(idx, evenLens(len(idx), nparts)), nil
	})
}

func (f *Frame) nBy(what string, n int, by []string, asc bool) *Frame {
	if err := f.checkCols(what, by); err != nil {
		return errFrame(err)
	}
	return f.hostStep(fmt.Sprintf("%s %d by %s", what, n, quoteList(by)), f.fields, func(rc *runCtx, ht *hostTable) (*hostTable, error) {
		keys, err := sortKeys(ht, by, sortOpts{asc: []bool{asc}})
		if err != nil {
			return nil, err
		}
		// pandas' nlargest and nsmallest drop null keys (unless n covers every row: then they
		// sort, nulls last); ties keep the first rows.
		idx := make([]int, 0, len(ht.rows))
		for i := range ht.rows {
			null := false
			for _, k := range keys {
				null = null || (k.null != nil && k.null[i])
			}
			if !null || n >= len(ht.rows) {
				idx = append(idx, i)
			}
		}
		order(idx, keys, false)
		idx = idx[:min(n, len(idx))]
		rc.host("%s: a sort on the host over %d rows", what, len(ht.rows))
		return ht.take(idx, []int{len(idx)}), nil
	})
}

// NLargest returns the n rows with the largest values of the columns by (the first key
// first), in descending order; ties keep the earlier rows, null keys are dropped unless n
// covers every row (pandas' nlargest with keep="first").
func (f *Frame) NLargest(n int, by ...string) *Frame { return f.nBy("NLargest", n, by, false) }

// NSmallest returns the n rows with the smallest values of the columns by, in ascending
// order (pandas' nsmallest with keep="first").
func (f *Frame) NSmallest(n int, by ...string) *Frame { return f.nBy("NSmallest", n, by, true) }

// rowKeys encodes the columns names of ht as hashjoin keys (nulls equal to nulls).
func rowKeys(ht *hostTable, names []string) (hashjoin.Keys, error) {
	cols := make([]*hostCol, len(names))
	for i, n := range names {
		c, err := ht.col(n)
		if err != nil {
			return nil, err
		}
		cols[i] = c
	}
	k, _, err := joinKeys(cols, cols)
	return k, err
}

// DropDuplicates drops the rows whose values in subset (every column when empty) repeat an
// earlier row's (keep "first"), a later row's ("last"), or any other row's ("none", pandas'
// keep=False). Nulls equal nulls. The rows keep their order and partitions; on a cluster
// (On(c)) the rows are hash-partitioned on subset worker to worker and each partition drops
// its repeats there, the rows keeping their order within a partition.
func (f *Frame) DropDuplicates(subset []string, keep string) *Frame {
	if len(subset) == 0 {
		subset = f.Columns()
	}
	if err := f.checkCols("DropDuplicates", subset); err != nil {
		return errFrame(err)
	}
	if keep == "" {
		keep = "first"
	}
	if keep != "first" && keep != "last" && keep != "none" {
		return errFrame(fmt.Errorf("DropDuplicates: keep %q (want first, last or none)", keep))
	}
	nparts := f.nparts
	onCluster := func(rc *runCtx) (*table, bool, error) { return clusterDistinct(rc, f, subset, keep, nparts) }
	return f.clusterOrHost(fmt.Sprintf("drop duplicates of %s", quoteList(subset)), f.fields, onCluster, func(rc *runCtx, ht *hostTable) (*hostTable, error) {
		k, err := rowKeys(ht, subset)
		if err != nil {
			return nil, err
		}
		n := len(ht.rows)
		at := make([]int, 0, n)
		lens := slices.Clone(ht.lens)
		if n > 0 {
			t, err := hashjoin.Build(k)
			if err != nil {
				return nil, err
			}
			first, err := t.First(k)
			if err != nil {
				return nil, err
			}
			rev := make(hashjoin.Keys, len(k))
			for c := range k {
				rev[c] = slices.Clone(k[c])
				slices.Reverse(rev[c])
			}
			tr, err := hashjoin.Build(rev)
			if err != nil {
				return nil, err
			}
			lastRev, err := tr.First(rev)
			if err != nil {
				return nil, err
			}
			p, end := 0, 0
			for i := 0; i < n; i++ {
				for p < len(lens) && i >= end+ht.lens[p] {
					end += ht.lens[p]
					p++
				}
				last := n - 1 - int(lastRev[n-1-i])
				ok := (keep == "first" && int(first[i]) == i) || (keep == "last" && last == i) ||
					(keep == "none" && int(first[i]) == i && last == i)
				if ok {
					at = append(at, i)
				} else {
					lens[p]--
				}
			}
		}
		rc.host("drop duplicates: hash table on the host (dataframe/hashjoin) over %d rows", n)
		return ht.take(at, lens), nil
	})
}

// Repartition splits the frame into n partitions of (nearly) equal length, keeping the rows'
// order. It rechunks the columns in the array engine (on a GPU they stay there).
func (f *Frame) Repartition(n int) *Frame {
	if f.err != nil {
		return f
	}
	if n < 1 {
		return errFrame(fmt.Errorf("Repartition: %d partitions", n))
	}
	g := f.step(fmt.Sprintf("repartition into %d", n), f.fields, passThrough(), func(rc *runCtx, t *table) (*table, error) {
		c, err := rc.materialize(t)
		if err != nil {
			return nil, err
		}
		rows := 0
		for _, l := range partLens(c) {
			rows += l
		}
		size := max(1, (rows+n-1)/n)
		out := &table{rows: c.rows.Rechunk(size)}
		for _, col := range c.cols {
			d := *col
			d.arr = col.arr.Rechunk(size)
			if col.valid != nil {
				d.valid = col.valid.Rechunk(size)
			}
			out.cols = append(out.cols, &d)
		}
		return out, nil
	})
	g.nparts = n
	return g
}

// Shuffle hash-partitions the rows on the columns on into n partitions (the frame's count
// when n < 1): equal keys land in one partition. A Merge of two frames shuffled on their keys
// into the same number of partitions joins them partition by partition, with no shuffle.
// Within a partition the rows keep their order.
func (f *Frame) Shuffle(on []string, n int, opts ...ComputeOption) (*Frame, error) {
	if err := f.checkCols("Shuffle", on); err != nil {
		return nil, err
	}
	if n < 1 {
		n = f.nparts
	}
	if c, full, err := f.clusterShuffle(on, n, opts); err != nil {
		return nil, fmt.Errorf("Shuffle: %w", err)
	} else if c != nil {
		if full {
			c.layout = &layout{hashedOn: slices.Clone(on)}
		}
		return c, nil
	}
	full := false
	g := f.hostStep(fmt.Sprintf("shuffle on %s", quoteList(on)), f.fields, func(rc *runCtx, ht *hostTable) (*hostTable, error) {
		k, err := partitionKeys(ht, on)
		if err != nil {
			return nil, err
		}
		parts, err := hashSplit(hostJoin{}, k, n)
		if err != nil {
			return nil, err
		}
		var at []int
		lens := make([]int, n)
		for p, rows := range parts {
			for _, r := range rows {
				at = append(at, int(r))
			}
			lens[p] = len(rows)
		}
		rc.host("shuffle: hash partitioning on the host (dataframe/hashjoin) into %d partitions", n)
		// Empty buckets are dropped (a partition is never empty); then partition p is no
		// longer bucket p, and the frame is not marked as hash-partitioned.
		full = !slices.Contains(lens, 0)
		return ht.take(at, lens), nil
	})
	c, err := g.Compute(opts...)
	if err != nil {
		return nil, fmt.Errorf("Shuffle: %w", err)
	}
	if full {
		c.layout = &layout{hashedOn: slices.Clone(on)}
	}
	return c, nil
}

// SetIndex sorts the frame on column name and makes it the index, as dask's set_index: it
// samples the column for quantiles that become the divisions of n partitions (the frame's
// count when n < 1), range-partitions the rows by them and sorts each partition (stable,
// nulls last). On a cluster (On(c)) and a key that is not a string, all of it runs on the
// workers, the rows moving worker to worker. The index stays a column too. Loc selects ranges of it, and Join joins on it.
func (f *Frame) SetIndex(name string, n int, opts ...ComputeOption) (*Frame, error) {
	if err := f.checkCols("SetIndex", []string{name}); err != nil {
		return nil, err
	}
	if n < 1 {
		n = f.nparts
	}
	var divisions []any
	sorted := false
	onCluster := func(rc *runCtx) (*table, bool, error) {
		t, ok, err := clusterSort(rc, f, []string{name}, sortOpts{}, n)
		sorted = ok
		return t, ok, err
	}
	g := f.clusterOrHost(fmt.Sprintf("set index %q", name), f.fields, onCluster, func(rc *runCtx, ht *hostTable) (*hostTable, error) {
		h, err := ht.col(name)
		if err != nil {
			return nil, err
		}
		key := sortKeyOf(h, false)
		rows := len(ht.rows)
		var valid []int
		var nulls []int
		for i := 0; i < rows; i++ {
			if key.null != nil && key.null[i] {
				nulls = append(nulls, i)
			} else {
				valid = append(valid, i)
			}
		}
		// A sample of up to 100 rows per partition, evenly spaced, gives the quantiles.
		step := max(1, len(valid)/(100*n))
		var sample []int
		for i := 0; i < len(valid); i += step {
			sample = append(sample, valid[i])
		}
		order(sample, []sortKey{key}, false)
		var bounds []int // rows whose keys start partitions 1..n-1
		for p := 1; p < n && len(sample) > 0; p++ {
			b := sample[p*len(sample)/n]
			if len(bounds) == 0 || key.cmp(bounds[len(bounds)-1], b, false) < 0 {
				bounds = append(bounds, b)
			}
		}
		parts := make([][]int, len(bounds)+1)
		for _, i := range valid {
			p := sort.Search(len(bounds), func(j int) bool { return key.cmp(bounds[j], i, false) > 0 })
			parts[p] = append(parts[p], i)
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], nulls...)
		var at, lens []int
		for _, part := range parts {
			order(part, []sortKey{key}, false)
			at = append(at, part...)
			lens = append(lens, len(part))
		}
		out := ht.take(at, lens)
		oh, _ := out.col(name)
		divisions = nil
		off := 0
		for _, l := range out.lens {
			divisions = append(divisions, valueAt(oh, off))
			off += l
		}
		if len(at) > 0 {
			last := len(at) - 1
			for last > 0 && !oh.isValid(last) {
				last--
			}
			divisions = append(divisions, valueAt(oh, last))
		}
		rc.host("set index: sampled quantiles, range partitioning and sorts on the host over %d rows", rows)
		return out, nil
	})
	c, err := g.Compute(opts...)
	if err != nil {
		return nil, fmt.Errorf("SetIndex: %w", err)
	}
	if sorted {
		if divisions, err = clusterDivisions(c, name, opts); err != nil {
			return nil, fmt.Errorf("SetIndex: divisions: %w", err)
		}
	}
	c.layout = &layout{index: name, divisions: divisions}
	return c, nil
}

// valueAt is row i of h as a Go value for divisions: int64, uint64, float64, string, a time.
func valueAt(h *hostCol, i int) any {
	if !h.isValid(i) {
		return nil
	}
	switch {
	case h.dt == String || h.dt == Category:
		return h.stringAt(i)
	case h.dt.IsDatetime():
		per := h.dt.unitTicks()
		t := h.vals.Int64s()[i]
		return time.Unix(t/per, (t%per)*(1e9/per)).UTC()
	case h.dt.IsFloat():
		return dtype.Convert(h.vals.Slice(i, i+1), dtype.Float64).Float64s()[0]
	case h.vals.DType() == dtype.Uint64:
		return h.vals.Uint64s()[i]
	}
	return dtype.Convert(h.vals.Slice(i, i+1), dtype.Int64).Int64s()[0]
}

// Index returns the name of the frame's index column (SetIndex), or "".
func (f *Frame) Index() string {
	if f.layout == nil {
		return ""
	}
	return f.layout.index
}

// Divisions returns the index value that starts every partition, then the last value (as
// dask's divisions); nil for a frame without an index.
func (f *Frame) Divisions() []any {
	if f.layout == nil {
		return nil
	}
	return slices.Clone(f.layout.divisions)
}

// compareTo compares x (a division) with v, a value given by the user.
func compareTo(x, v any) (int, error) {
	switch a := x.(type) {
	case int64:
		switch b := v.(type) {
		case int:
			return cmp.Compare(a, int64(b)), nil
		case int64:
			return cmp.Compare(a, b), nil
		case int32:
			return cmp.Compare(a, int64(b)), nil
		case float64:
			return cmp.Compare(float64(a), b), nil
		}
	case uint64:
		switch b := v.(type) {
		case int:
			if b < 0 {
				return 1, nil
			}
			return cmp.Compare(a, uint64(b)), nil
		case uint64:
			return cmp.Compare(a, b), nil
		}
	case float64:
		switch b := v.(type) {
		case int:
			return cmp.Compare(a, float64(b)), nil
		case int64:
			return cmp.Compare(a, float64(b)), nil
		case float64:
			return cmp.Compare(a, b), nil
		}
	case string:
		if b, ok := v.(string); ok {
			return cmp.Compare(a, b), nil
		}
	case time.Time:
		if b, ok := v.(time.Time); ok {
			return a.Compare(b), nil
		}
	}
	return 0, fmt.Errorf("cannot compare the index's %T with %T", x, v)
}

// Loc returns the rows whose index (SetIndex) lies in [lo, hi], both ends included as in
// pandas' .loc; nil for lo or hi leaves that end open. The divisions pick the partitions to
// read; only those are filtered.
func (f *Frame) Loc(lo, hi any, opts ...ComputeOption) (*Frame, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.layout == nil || f.layout.index == "" {
		return nil, fmt.Errorf("Loc: the frame has no index (SetIndex first)")
	}
	c, ht, err := f.host(opts)
	if err != nil {
		return nil, fmt.Errorf("Loc: %w", err)
	}
	h, err := ht.col(f.layout.index)
	if err != nil {
		return nil, err
	}
	inside := func(v any) (bool, error) {
		if v == nil {
			return false, nil
		}
		if lo != nil {
			c, err := compareTo(v, lo)
			if err != nil || c < 0 {
				return false, err
			}
		}
		if hi != nil {
			c, err := compareTo(v, hi)
			if err != nil || c > 0 {
				return false, err
			}
		}
		return true, nil
	}
	div := f.layout.divisions
	var at, lens []int
	var kept []any
	off := 0
	read := 0
	for p, l := range ht.lens {
		// partition p holds [div[p], div[p+1]]: skip it when the range misses it.
		if p+1 < len(div) && div[p] != nil && div[p+1] != nil {
			if hi != nil {
				if c, err := compareTo(div[p], hi); err != nil {
					return nil, fmt.Errorf("Loc: %w", err)
				} else if c > 0 {
					off += l
					continue
				}
			}
			if lo != nil {
				if c, err := compareTo(div[p+1], lo); err != nil {
					return nil, fmt.Errorf("Loc: %w", err)
				} else if c < 0 && p+1 < len(ht.lens) {
					off += l
					continue
				}
			}
		}
		read++
		n := 0
		for i := off; i < off+l; i++ {
			ok, err := inside(valueAt(h, i))
			if err != nil {
				return nil, fmt.Errorf("Loc: %w", err)
			}
			if ok {
				at = append(at, i)
				n++
			}
		}
		if n > 0 {
			kept = append(kept, valueAt(h, at[len(at)-n]))
			lens = append(lens, n)
		}
		off += l
	}
	out := ht.take(at, lens)
	t, err := tableOf(out)
	if err != nil {
		return nil, err
	}
	rc, _ := newRun(opts)
	rc.notes = append(slices.Clone(c.path), fmt.Sprintf("loc: %d of %d partitions read, filtered on the host", read, len(ht.lens)))
	r := rc.computed(f, t)
	if len(at) > 0 {
		kept = append(kept, valueAt(h, at[len(at)-1]))
	}
	r.layout = &layout{index: f.layout.index, divisions: kept}
	return r, nil
}

// partitionKeys encodes columns for hash partitioning by their values alone, so that two
// frames shuffled apart put equal keys in partitions of the same number: integers, bools and
// datetimes as their values, floats as canonical bits, strings and categoricals as the FNV-1a
// hash of their bytes, and always a null flag column.
func partitionKeys(ht *hostTable, names []string) (hashjoin.Keys, error) {
	var k hashjoin.Keys
	for _, name := range names {
		h, err := ht.col(name)
		if err != nil {
			return nil, err
		}
		var v []int64
		var null []bool
		switch {
		case h.dt == String || h.dt == Category:
			v = make([]int64, h.vals.Len())
			for i := range v {
				if h.isValid(i) {
					v[i] = fnv(h.stringAt(i))
				}
			}
			null = nullsOf(h, v)
		case h.dt.IsFloat():
			v, null = floatCodes(h)
		default:
			v, null = intCodes(h)
		}
		k = append(k, v, flags(null, len(v)))
	}
	return k, nil
}

func fnv(s string) int64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return int64(h)
}
