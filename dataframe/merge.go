package dataframe

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// MergeOption configures Merge and Join.
type MergeOption func(*mergeOpts)

type mergeOpts struct {
	on, leftOn, rightOn []string
	how                 string
	suffixes            [2]string
	broadcast           int
}

// DefaultBroadcastRows is the largest side, in rows, that Merge broadcasts to every partition
// of the other side instead of hash-partitioning both (BroadcastRows overrides it).
const DefaultBroadcastRows = 1 << 20

// On names the key columns that both sides have.
func On(keys ...string) MergeOption { return func(o *mergeOpts) { o.on = keys } }

// LeftOn names the left side's key columns (with RightOn, when the names differ).
func LeftOn(keys ...string) MergeOption { return func(o *mergeOpts) { o.leftOn = keys } }

// RightOn names the right side's key columns.
func RightOn(keys ...string) MergeOption { return func(o *mergeOpts) { o.rightOn = keys } }

// How sets the join kind: "inner" (Merge's default), "left" (Join's default), "right",
// "outer", "semi" (left rows with a match) or "anti" (left rows without one; pandas 3's
// "left_anti").
func How(kind string) MergeOption { return func(o *mergeOpts) { o.how = kind } }

// Suffixes sets what is appended to the names of non-key columns that both sides have
// (pandas' default "_x", "_y").
func Suffixes(left, right string) MergeOption {
	return func(o *mergeOpts) { o.suffixes = [2]string{left, right} }
}

// BroadcastRows sets the broadcast threshold: a side of at most n rows is joined against
// every partition of the other side (where the join kind allows it); 0 never broadcasts.
func BroadcastRows(n int) MergeOption { return func(o *mergeOpts) { o.broadcast = n } }

// Merge joins left and right on key columns, as pandas' merge: On (or LeftOn and RightOn)
// names the keys (one or more; integers, bools, floats, datetimes of one unit, strings and
// categoricals, whose dictionaries are unified), How the kind, Suffixes the renaming of
// shared columns. Null keys match null keys, as in pandas. A side of at most BroadcastRows
// rows is broadcast to the other's partitions; otherwise both sides are hash-partitioned on
// the key and joined partition by partition (dataframe/hashjoin builds on the smaller side of
// each and probes with the larger); sides already hash-partitioned on their keys by Shuffle
// into the same number of partitions are joined without a shuffle. On the host, an inner,
// left, semi or anti merge on one integer key whose right values span at most a few slots per
// right row (dense ids), or on one categorical key, looks the left rows up in a direct-address
// table of the right side instead, whatever its size (not with BroadcastRows(0)), with the
// rows a broadcast gives. Rows come in no global
// order (as dask's); within a partition, inner and left joins keep the left rows' order.
// With OnGPU the hash partitioning and the joins run on the GPU (gpuarray.HashJoin), in the
// same strategies and the same row order as on the CPU (merge_gpu.go; Path names the steps
// left on the host); with GPUNOTES_GPU_JOIN=device (not yet the default: no GPU has run it)
// an inner, left, semi or anti merge on int32, int64 or categorical keys without nulls, whose
// output gathers on the GPU, reads its keys where the GPU holds them and keeps the joined rows
// there (merge_gpu_held.go), which Path names; on a cluster, a heavy key's shuffled partition
// is split (JoinColumns).
func Merge(left, right *Frame, opts ...MergeOption) *Frame {
	o := mergeOpts{how: "inner", suffixes: [2]string{"_x", "_y"}, broadcast: DefaultBroadcastRows}
	for _, f := range opts {
		f(&o)
	}
	return merge(left, right, o)
}

// Merge is Merge(f, right, opts...).
func (f *Frame) Merge(right *Frame, opts ...MergeOption) *Frame { return Merge(f, right, opts...) }

// Join joins f and other on their indexes (SetIndex), a left join unless How says otherwise,
// as pandas' DataFrame.join; other's index column is dropped from the result.
func (f *Frame) Join(other *Frame, opts ...MergeOption) *Frame {
	if f.err != nil {
		return f
	}
	if other.err != nil {
		return other
	}
	if f.layout == nil || f.layout.index == "" {
		return errFrame(fmt.Errorf("Join: the left frame has no index (SetIndex first)"))
	}
	if other.layout == nil || other.layout.index == "" {
		return errFrame(fmt.Errorf("Join: the right frame has no index (SetIndex first)"))
	}
	o := mergeOpts{how: "left", suffixes: [2]string{"", ""}, broadcast: DefaultBroadcastRows}
	for _, fn := range opts {
		fn(&o)
	}
	o.on, o.leftOn, o.rightOn = nil, []string{f.layout.index}, []string{other.layout.index}
	li, ri := f.layout.index, other.layout.index
	if li != ri {
		// pandas' join drops the other side's index.
		var keep []string
		for _, c := range other.Columns() {
			if c != ri {
				keep = append(keep, c)
			}
		}
		o.rightOn = []string{"\x00" + ri}
		other = other.Rename(map[string]string{ri: "\x00" + ri}).Select(append([]string{"\x00" + ri}, keep...)...)
	}
	g := merge(f, other, o)
	if li != ri && g.err == nil {
		g = g.Drop("\x00" + ri)
	}
	return g
}

type keyPair struct {
	l, r Field
	same bool // one output column (the names are equal)
}

func merge(left, right *Frame, o mergeOpts) *Frame {
	if left.err != nil {
		return left
	}
	if right.err != nil {
		return right
	}
	how, err := hashjoin.ParseHow(o.how)
	if err != nil {
		return errFrame(fmt.Errorf("Merge: %w", err))
	}
	lk, rk := o.leftOn, o.rightOn
	if len(o.on) > 0 {
		if len(lk) > 0 || len(rk) > 0 {
			return errFrame(fmt.Errorf("Merge: give On or LeftOn and RightOn, not both"))
		}
		lk, rk = o.on, o.on
	}
	if len(lk) == 0 && len(rk) == 0 {
		// pandas: the columns both sides have.
		for _, c := range left.Columns() {
			if slices.Contains(right.Columns(), c) {
				lk = append(lk, c)
			}
		}
		rk = lk
		if len(lk) == 0 {
			return errFrame(fmt.Errorf("Merge: no key columns given and no column in both sides"))
		}
	}
	if len(lk) != len(rk) {
		return errFrame(fmt.Errorf("Merge: %d left keys (%s) and %d right keys (%s)", len(lk), quoteList(lk), len(rk), quoteList(rk)))
	}
	var keys []keyPair
	for i := range lk {
		lf, err := left.field(lk[i])
		if err != nil {
			return errFrame(fmt.Errorf("Merge: left: %w", err))
		}
		rf, err := right.field(rk[i])
		if err != nil {
			return errFrame(fmt.Errorf("Merge: right: %w", err))
		}
		if _, err := keyKind(lf.DType, rf.DType); err != nil {
			return errFrame(fmt.Errorf("Merge: key %q (%s) and %q (%s): %w", lf.Name, lf.DType, rf.Name, rf.DType, err))
		}
		keys = append(keys, keyPair{lf, rf, lf.Name == rf.Name})
	}
	fields, plan := mergeFields(left, right, keys, how, o.suffixes)
	for i, c := range fields {
		if slices.ContainsFunc(fields[:i], func(f Field) bool { return f.Name == c.Name }) {
			return errFrame(fmt.Errorf("Merge: column %q appears twice in the result (give Suffixes)", c.Name))
		}
	}
	what := fmt.Sprintf("merge %s on %s", how, quoteList(lk))
	nparts := max(left.nparts, right.nparts)
	return &Frame{what: what, fields: fields, nparts: nparts, nrows: -1,
		read: func(rc *runCtx, need map[string]bool) (*table, error) {
			if t, ok, err := clusterMerge(rc, left, right, keys, how, o, plan, fields); err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			} else if ok {
				return t, nil
			}
			t, err := runMerge(rc, left, right, keys, how, o, plan)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", what, err)
			}
			return t, nil
		}}
}

// outCol says where an output column comes from: side 0 (left) or 1 (right), its source
// column, and for coalesced keys (On keys of right and outer joins) the other side's column.
type outCol struct {
	name     string
	side     int
	src      string
	coalesce string
}

func mergeFields(left, right *Frame, keys []keyPair, how hashjoin.How, suf [2]string) ([]Field, []outCol) {
	isKeyL := map[string]bool{}
	sameR := map[string]string{}
	for _, k := range keys {
		isKeyL[k.l.Name] = true
		if k.same {
			sameR[k.r.Name] = k.l.Name
		}
	}
	var fields []Field
	var plan []outCol
	if how == hashjoin.Semi {
		for _, c := range left.fields {
			fields = append(fields, c)
			plan = append(plan, outCol{name: c.Name, side: 0, src: c.Name})
		}
		return fields, plan
	}
	rnames := map[string]bool{}
	for _, c := range right.fields {
		if _, ok := sameR[c.Name]; !ok {
			rnames[c.Name] = true
		}
	}
	lnames := map[string]bool{}
	for _, c := range left.fields {
		if !(isKeyL[c.Name] && slices.ContainsFunc(keys, func(k keyPair) bool { return k.same && k.l.Name == c.Name })) {
			lnames[c.Name] = true
		}
	}
	for _, c := range left.fields {
		oc := outCol{name: c.Name, side: 0, src: c.Name}
		if k := slices.IndexFunc(keys, func(k keyPair) bool { return k.same && k.l.Name == c.Name }); k >= 0 {
			if how == hashjoin.Right || how == hashjoin.Outer {
				oc.coalesce = keys[k].r.Name
			}
			if how == hashjoin.Right {
				oc.side, oc.src, oc.coalesce = 1, keys[k].r.Name, c.Name
			}
		} else if rnames[c.Name] {
			oc.name = c.Name + suf[0]
		}
		dt := c.DType
		if oc.coalesce != "" {
			dt = coalescedType(c.DType, right.fieldType(keys[slices.IndexFunc(keys, func(k keyPair) bool { return k.l.Name == c.Name })].r.Name))
		}
		fields = append(fields, Field{oc.name, dt})
		plan = append(plan, oc)
	}
	for _, c := range right.fields {
		if _, ok := sameR[c.Name]; ok {
			continue
		}
		oc := outCol{name: c.Name, side: 1, src: c.Name}
		if lnames[c.Name] {
			oc.name = c.Name + suf[1]
		}
		fields = append(fields, Field{oc.name, c.DType})
		plan = append(plan, oc)
	}
	return fields, plan
}

func (f *Frame) fieldType(name string) DType {
	fd, _ := f.field(name)
	return fd.DType
}

func coalescedType(a, b DType) DType {
	if a == b {
		return a
	}
	ka, _ := keyKind(a, b)
	switch ka {
	case "string":
		return String
	case "float":
		return Float64
	}
	return Int64
}

// keyKind is how two key types are compared: "string" (strings and categoricals), "float",
// "int" (integers and bools), or "time" (datetimes of one unit).
func keyKind(a, b DType) (string, error) {
	str := func(t DType) bool { return t == String || t == Category }
	switch {
	case str(a) && str(b):
		return "string", nil
	case str(a) || str(b):
		return "", fmt.Errorf("cannot join %s with %s", a, b)
	case a.IsDatetime() || b.IsDatetime():
		if a != b {
			return "", fmt.Errorf("cannot join %s with %s (cast to one unit)", a, b)
		}
		return "time", nil
	case a.IsFloat() || b.IsFloat():
		return "float", nil
	}
	return "int", nil
}

// joinKeys encodes the key columns of both sides as hashjoin keys: shared codes, and a null
// flag column where a side has nulls (nulls match nulls, as in pandas).
func joinKeys(lc, rc []*hostCol) (hashjoin.Keys, hashjoin.Keys, error) {
	var lk, rk hashjoin.Keys
	for i := range lc {
		kind, err := keyKind(lc[i].dt, rc[i].dt)
		if err != nil {
			return nil, nil, fmt.Errorf("key %q and %q: %w", lc[i].name, rc[i].name, err)
		}
		var l, r []int64
		var ln, rn []bool
		switch kind {
		case "string":
			dict := map[string]int64{}
			l, ln = stringCodes(lc[i], dict)
			r, rn = stringCodes(rc[i], dict)
		case "float":
			l, ln = floatCodes(lc[i])
			r, rn = floatCodes(rc[i])
		default:
			l, ln = intCodes(lc[i])
			r, rn = intCodes(rc[i])
		}
		lk, rk = append(lk, l), append(rk, r)
		if ln != nil || rn != nil {
			lk, rk = append(lk, flags(ln, len(l))), append(rk, flags(rn, len(r)))
		}
	}
	return lk, rk, nil
}

func flags(null []bool, n int) []int64 {
	f := make([]int64, n)
	for i, b := range null {
		if b {
			f[i] = 1
		}
	}
	return f
}

func stringCodes(h *hostCol, dict map[string]int64) ([]int64, []bool) {
	n := h.vals.Len()
	var dictCodes []int64
	var rows []int64
	switch h.dt {
	case String:
		codes, d := h.heap.encode()
		dictCodes = make([]int64, d.len())
		for j := range dictCodes {
			dictCodes[j] = unify(dict, d.at(int64(j)))
		}
		pos := h.vals.Int64s()
		rows = make([]int64, n)
		for i, p := range pos {
			rows[i] = dictCodes[codes[p]]
		}
	case Category:
		dictCodes = make([]int64, h.heap.len())
		for j := range dictCodes {
			dictCodes[j] = unify(dict, h.heap.at(int64(j)))
		}
		rows = make([]int64, n)
		for i, c := range h.vals.Int32s() {
			if h.isValid(i) {
				rows[i] = dictCodes[c]
			}
		}
	}
	return rows, nullsOf(h, rows)
}

func unify(dict map[string]int64, s string) int64 {
	c, ok := dict[s]
	if !ok {
		c = int64(len(dict))
		dict[s] = c
	}
	return c
}

// nullsOf returns h's nulls (nil when none), zeroing the codes of null rows.
func nullsOf(h *hostCol, codes []int64) []bool {
	if h.valid == nil {
		return nil
	}
	null := make([]bool, len(codes))
	any := false
	for i, v := range h.valid {
		if !v {
			null[i], codes[i], any = true, 0, true
		}
	}
	if !any {
		return nil
	}
	return null
}

func intCodes(h *hostCol) ([]int64, []bool) {
	var v []int64
	switch h.vals.DType() {
	case dtype.Int64:
		v = slices.Clone(h.vals.Int64s())
	case dtype.Int32:
		// One typed widening pass (Convert goes element by element through the dtype), in
		// blocks on every core (1e8 keys of a GPU merge took 0.3 s on one).
		src := h.vals.Int32s()
		v = make([]int64, len(src))
		forBlocks((len(src)+denseBlockRows-1)/denseBlockRows, func(b int) {
			lo, hi := b*denseBlockRows, min(len(src), (b+1)*denseBlockRows)
			for i, x := range src[lo:hi] {
				v[lo+i] = int64(x)
			}
		})
	default:
		v = dtype.Convert(h.vals, dtype.Int64).Int64s()
	}
	return v, nullsOf(h, v)
}

func floatCodes(h *hostCol) ([]int64, []bool) {
	f := dtype.Convert(h.vals, dtype.Float64).Float64s()
	v := make([]int64, len(f))
	var null []bool
	for i, x := range f {
		switch {
		case !h.isValid(i) || math.IsNaN(x):
			if null == nil {
				null = make([]bool, len(f))
			}
			null[i] = true
		case x == 0:
			v[i] = 0
		default:
			v[i] = int64(math.Float64bits(x))
		}
	}
	return v, null
}

func (ht *hostTable) col(name string) (*hostCol, error) {
	for _, c := range ht.cols {
		if c.name == name {
			return c, nil
		}
	}
	return nil, missing(name, ht.names())
}

// pairs is one output partition's row pairs (global rows of each side, -1 for none).
type pairs struct{ l, r []int32 }

func runMerge(rc *runCtx, left, right *Frame, keys []keyPair, how hashjoin.How, o mergeOpts, plan []outCol) (*table, error) {
	lt, err := left.build(rc, left.need())
	if err != nil {
		return nil, err
	}
	rt, err := right.build(rc, right.need())
	if err != nil {
		return nil, err
	}
	dev, onDevice := newDeviceJoin(rc)
	// On a GPU the output columns are gathered there (merge_gpu.go) where they can be: only
	// the key columns come to the host then.
	var held *heldGather
	if onDevice {
		if lt, rt, held, err = heldSides(rc, lt, rt, keys, how, plan); err != nil {
			return nil, err
		}
		// GPUNOTES_GPU_JOIN=device: the join on the keys where they are held (merge_gpu_held.go).
		if heldJoinOn {
			why := ""
			if held == nil {
				_, why = heldGatherable(lt, rt, plan)
			} else {
				t, w, err := heldMerge(rc, left, right, held, keys, how, o)
				if err != nil {
					return nil, err
				}
				if w == "" {
					return t, nil
				}
				why = w
			}
			rc.host("merge: the join on the keys held on the GPU (GPUNOTES_GPU_JOIN=device) not taken: %s", why)
		}
	}
	// The sides are only read: values already in host memory are read in place.
	toHost := rc.toHostView
	if held != nil {
		toHost = func(t *table) (*hostTable, int, error) { return keysToHost(t) }
	}
	lh, nl, err := toHost(lt)
	if err != nil {
		return nil, err
	}
	rh, nr, err := toHost(rt)
	if err != nil {
		return nil, err
	}
	var lc, rcs []*hostCol
	for _, k := range keys {
		l, err := lh.col(k.l.Name)
		if err != nil {
			return nil, err
		}
		r, err := rh.col(k.r.Name)
		if err != nil {
			return nil, err
		}
		lc, rcs = append(lc, l), append(rcs, r)
	}
	aligned := left.layout != nil && right.layout != nil && slices.Equal(left.layout.hashedOn, keyNames(keys, 0)) &&
		slices.Equal(right.layout.hashedOn, keyNames(keys, 1)) && len(lh.lens) == len(rh.lens) && sameEncoding(keys)
	// On the host, a right side whose one key's values span at most a few slots per row is
	// looked up in a direct-address table by every left partition, small or not (unless
	// BroadcastRows(0) or the sides are already partitioned alike).
	if !onDevice && nl > 0 && nr > 0 && o.broadcast > 0 && (nr <= o.broadcast || !aligned) &&
		(how == hashjoin.Inner || how == hashjoin.Left || how == hashjoin.Semi || how == hashjoin.Anti) {
		if t, probe, ok := denseJoinPlan(lc, rcs, nr); ok {
			rc.host("merge: direct-address join on the host (dataframe), right side (%d rows) broadcast to %d left partitions as a table of %d key slots; sides computed on %s",
				nr, max(1, len(lh.lens)), len(t.first), rc.target.Backend)
			return tableOfErr(denseJoin(lh, nl, nr, t, probe, how, plan, rh))
		}
	}
	lk, rk, err := joinKeys(lc, rcs)
	if err != nil {
		return nil, err
	}
	var eng joinEngine = hostJoin{}
	if onDevice {
		eng = dev
	}
	var parts []pairs
	var strategy string
	switch {
	case nl == 0 || nr == 0:
		strategy = "empty side"
		parts = []pairs{emptyJoin(nl, nr, how)}
	case o.broadcast > 0 && nr <= o.broadcast && how != hashjoin.Right && how != hashjoin.Outer:
		strategy = fmt.Sprintf("right side (%d rows) broadcast to %d left partitions", nr, len(lh.lens))
		parts, err = eng.broadcast(lk, rk, lh.lens, how, false)
	case o.broadcast > 0 && nl <= o.broadcast && (how == hashjoin.Right || how == hashjoin.Inner):
		strategy = fmt.Sprintf("left side (%d rows) broadcast to %d right partitions", nl, len(rh.lens))
		parts, err = eng.broadcast(rk, lk, rh.lens, how, true)
	case aligned:
		strategy = fmt.Sprintf("both sides hash-partitioned on the key (%d partitions), no shuffle", len(lh.lens))
		parts, err = partitionJoin(eng, lk, rk, splitByLens(lh.lens), splitByLens(rh.lens), how)
	default:
		n := max(len(lh.lens), len(rh.lens))
		strategy = fmt.Sprintf("both sides hash-partitioned on the key into %d partitions", n)
		var lp, rp [][]int32
		if lp, err = hashSplit(eng, lk, n); err == nil {
			if rp, err = hashSplit(eng, rk, n); err == nil {
				parts, err = partitionJoin(eng, lk, rk, lp, rp, how)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if !onDevice {
		rc.host("merge: hash join on the host (dataframe/hashjoin), %s; sides computed on %s", strategy, rc.target.Backend)
		return tableOfErr(gatherMerge(lh, rh, parts, plan))
	}
	if held != nil {
		t, ok, err := held.gather(rc, parts)
		if err != nil {
			return nil, err
		}
		dev.record(rc, strategy, keys, held)
		if ok {
			return t, nil
		}
		// Gathered on the host after all: the sides' other columns come there too.
		if lh, _, err = rc.toHostView(held.lt); err != nil {
			return nil, err
		}
		if rh, _, err = rc.toHostView(held.rt); err != nil {
			return nil, err
		}
	} else {
		dev.record(rc, strategy, keys, nil)
	}
	return tableOfErr(gatherMerge(lh, rh, parts, plan))
}

// tableOfErr is tableOf of a host table an error did not stop.
func tableOfErr(ht *hostTable, err error) (*table, error) {
	if err != nil {
		return nil, err
	}
	return tableOf(ht)
}

func keyNames(keys []keyPair, side int) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		if side == 0 {
			out[i] = k.l.Name
		} else {
			out[i] = k.r.Name
		}
	}
	return out
}

func emptyJoin(nl, nr int, how hashjoin.How) pairs {
	var p pairs
	switch how {
	case hashjoin.Left, hashjoin.Outer, hashjoin.Anti:
		for i := 0; i < nl; i++ {
			p.l, p.r = append(p.l, int32(i)), append(p.r, -1)
		}
	}
	if how == hashjoin.Right || how == hashjoin.Outer {
		for j := 0; j < nr; j++ {
			p.l, p.r = append(p.l, -1), append(p.r, int32(j))
		}
	}
	return p
}

func splitByLens(lens []int) [][]int32 {
	out := make([][]int32, len(lens))
	at := 0
	for p, l := range lens {
		out[p] = make([]int32, l)
		for i := range out[p] {
			out[p][i] = int32(at + i)
		}
		at += l
	}
	return out
}

// joinEngine runs a merge's hash join steps: on the host (hostJoin, dataframe/hashjoin) or on
// a GPU (deviceJoin, merge_gpu.go). Both give the same partitions and the same pairs in the
// same order.
type joinEngine interface {
	// partition is hashjoin.Partition.
	partition(k hashjoin.Keys, n int) ([]int32, error)
	// join is hashjoin.Join of partition p.
	join(p int, l, r hashjoin.Keys, how hashjoin.How) (li, ri []int32, err error)
	// broadcast is broadcastJoin.
	broadcast(big, small hashjoin.Keys, lens []int, how hashjoin.How, swapped bool) ([]pairs, error)
}

// hostJoin is the host's joinEngine.
type hostJoin struct{}

func (hostJoin) partition(k hashjoin.Keys, n int) ([]int32, error) { return hashjoin.Partition(k, n) }

func (hostJoin) join(_ int, l, r hashjoin.Keys, how hashjoin.How) ([]int32, []int32, error) {
	return hashjoin.Join(l, r, how)
}

func (hostJoin) broadcast(big, small hashjoin.Keys, lens []int, how hashjoin.How, swapped bool) ([]pairs, error) {
	return broadcastJoin(big, small, lens, how, swapped)
}

func hashSplit(eng joinEngine, k hashjoin.Keys, n int) ([][]int32, error) {
	part, err := eng.partition(k, n)
	if err != nil {
		return nil, err
	}
	count := make([]int, n)
	for _, p := range part {
		count[p]++
	}
	out := make([][]int32, n)
	for p := range out {
		out[p] = make([]int32, 0, count[p])
	}
	for i, p := range part {
		out[p] = append(out[p], int32(i))
	}
	return out, nil
}

func subKeys(k hashjoin.Keys, rows []int32) hashjoin.Keys {
	out := make(hashjoin.Keys, len(k))
	for c := range k {
		out[c] = make([]int64, len(rows))
		for i, r := range rows {
			out[c][i] = k[c][r]
		}
	}
	return out
}

func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = fn(i)
		}(i)
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// partitionJoin joins left rows lp[p] with right rows rp[p] for every partition p.
func partitionJoin(eng joinEngine, lk, rk hashjoin.Keys, lp, rp [][]int32, how hashjoin.How) ([]pairs, error) {
	out := make([]pairs, len(lp))
	err := parallel(len(lp), func(p int) error {
		if len(lp[p]) == 0 || len(rp[p]) == 0 {
			e := emptyJoin(len(lp[p]), len(rp[p]), how)
			out[p] = pairs{remap(e.l, lp[p]), remap(e.r, rp[p])}
			return nil
		}
		li, ri, err := eng.join(p, subKeys(lk, lp[p]), subKeys(rk, rp[p]), how)
		if err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
		if how == hashjoin.Anti {
			ri = make([]int32, len(li))
			for i := range ri {
				ri[i] = -1
			}
		}
		out[p] = pairs{remap(li, lp[p]), remap(ri, rp[p])}
		return nil
	})
	return out, err
}

func remap(idx, rows []int32) []int32 {
	if idx == nil {
		return nil
	}
	out := make([]int32, len(idx))
	for i, x := range idx {
		if x < 0 {
			out[i] = -1
		} else {
			out[i] = rows[x]
		}
	}
	return out
}

// broadcastJoin builds on the small side once and probes it with every partition of the big
// side (lens). swapped: the big side is the right one.
func broadcastJoin(big, small hashjoin.Keys, lens []int, how hashjoin.How, swapped bool) ([]pairs, error) {
	t, err := hashjoin.Build(small)
	if err != nil {
		return nil, err
	}
	rows := splitByLens(lens)
	starts := make([]int, len(lens))
	for p := 1; p < len(lens); p++ {
		starts[p] = starts[p-1] + lens[p-1]
	}
	out := make([]pairs, len(lens))
	err = parallel(len(lens), func(p int) error {
		// A partition's rows are a range: its keys are a view, not a copy.
		pk := make(hashjoin.Keys, len(big))
		for c := range big {
			pk[c] = big[c][starts[p] : starts[p]+lens[p]]
		}
		if how == hashjoin.Semi || how == hashjoin.Anti {
			in, err := t.Contains(pk)
			if err != nil {
				return err
			}
			for i, ok := range in {
				if ok == (how == hashjoin.Semi) {
					out[p].l = append(out[p].l, rows[p][i])
					if how == hashjoin.Anti {
						out[p].r = append(out[p].r, -1)
					}
				}
			}
			return nil
		}
		pi, si, _, err := t.Probe(pk, how == hashjoin.Left || how == hashjoin.Right)
		if err != nil {
			return err
		}
		pi = remap(pi, rows[p])
		if swapped {
			out[p] = pairs{si, pi}
		} else {
			out[p] = pairs{pi, si}
		}
		return nil
	})
	return out, err
}

// gatherRowsNull is gatherRows with -1 for a null row.
func (h *hostCol) gatherRowsNull(at []int32) *hostCol {
	if out, ok := h.gatherTyped(at); ok {
		return out
	}
	idx := make([]int, len(at))
	var valid []bool
	for i, a := range at {
		if a < 0 {
			if valid == nil {
				valid = make([]bool, len(at))
				for j := range valid {
					valid[j] = true
				}
			}
			valid[i] = false
			continue
		}
		idx[i] = int(a)
		if h.valid != nil && !h.valid[a] {
			if valid == nil {
				valid = make([]bool, len(at))
				for j := range valid {
					valid[j] = true
				}
			}
			valid[i] = false
		}
	}
	out := &hostCol{name: h.name, dt: h.dt, heap: h.heap, valid: valid}
	out.vals = dtype.Make(h.vals.DType(), len(at))
	if h.vals.Len() > 0 {
		dtype.Gather(out.vals, h.vals, idx)
	}
	return out
}

// gatherTyped is gatherRowsNull for the common 4- and 8-byte dtypes, in one typed pass over
// the int32 rows (no []int copy of them); ok is false for other dtypes.
func (h *hostCol) gatherTyped(at []int32) (*hostCol, bool) {
	dt := h.vals.DType()
	if h.vals.Len() == 0 {
		return nil, false
	}
	out := &hostCol{name: h.name, dt: h.dt, heap: h.heap, vals: dtype.Make(dt, len(at))}
	switch dt {
	case dtype.Float64:
		gatherWords(out.vals.Float64s(), h.vals.Float64s(), at)
	case dtype.Int64:
		gatherWords(out.vals.Int64s(), h.vals.Int64s(), at)
	case dtype.Int32:
		gatherWords(out.vals.Int32s(), h.vals.Int32s(), at)
	case dtype.Uint64:
		gatherWords(out.vals.Uint64s(), h.vals.Uint64s(), at)
	case dtype.Uint32:
		gatherWords(out.vals.Uint32s(), h.vals.Uint32s(), at)
	default:
		return nil, false
	}
	for i, a := range at {
		if a < 0 || (h.valid != nil && !h.valid[a]) {
			if out.valid == nil {
				out.valid = make([]bool, len(at))
				for j := range out.valid {
					out.valid[j] = true
				}
			}
			out.valid[i] = false
		}
	}
	return out, true
}

func gatherWords[T any](dst, src []T, at []int32) {
	for i, a := range at {
		if a >= 0 {
			dst[i] = src[a]
		}
	}
}

// coalesceCols takes a where the row is not -1 in ai, b otherwise, in type dt.
func coalesceCols(name string, dt DType, a, b *hostCol, ai, bi []int32) *hostCol {
	ga, gb := a.gatherRowsNull(ai), b.gatherRowsNull(bi)
	n := len(ai)
	out := &hostCol{name: name, dt: dt}
	var valid []bool
	take := func(i int) *hostCol {
		if ai[i] >= 0 {
			return ga
		}
		return gb
	}
	for i := 0; i < n; i++ {
		if !take(i).isValid(i) {
			if valid == nil {
				valid = make([]bool, n)
				for j := range valid {
					valid[j] = true
				}
			}
			valid[i] = false
		}
	}
	out.valid = valid
	if a.dt == b.dt && a.heap == b.heap {
		out.heap = a.heap
		out.vals = dtype.Make(ga.vals.DType(), n)
		for i := 0; i < n; i++ {
			dtype.Copy(out.vals.Slice(i, i+1), take(i).vals.Slice(i, i+1))
		}
		return out
	}
	if dt == Category {
		dict := newHeap(0)
		at := map[string]int32{}
		codes := make([]int32, n)
		for i := 0; i < n; i++ {
			if c := take(i); c.isValid(i) {
				s := c.stringAt(i)
				code, ok := at[s]
				if !ok {
					code = int32(dict.len())
					at[s] = code
					dict.add(s)
				}
				codes[i] = code
			}
		}
		out.heap = dict
		out.vals, _ = dtype.Of(codes)
		return out
	}
	if dt == String {
		h := newHeap(n)
		pos := make([]int64, n)
		for i := 0; i < n; i++ {
			pos[i] = int64(i)
			if c := take(i); c.isValid(i) {
				h.add(c.stringAt(i))
			} else {
				h.add("")
			}
		}
		out.heap, out.vals = h, dtype.OfInt64(pos)
		return out
	}
	adt, _ := dt.array()
	ca, cb := dtype.Convert(ga.vals, adt), dtype.Convert(gb.vals, adt)
	out.vals = dtype.Make(adt, n)
	for i := 0; i < n; i++ {
		src := cb
		if ai[i] >= 0 {
			src = ca
		}
		dtype.Copy(out.vals.Slice(i, i+1), src.Slice(i, i+1))
	}
	return out
}

func gatherMerge(lh, rh *hostTable, parts []pairs, plan []outCol) (*hostTable, error) {
	total := 0
	for _, pr := range parts {
		total += len(pr.l)
	}
	li, ri := make([]int32, 0, total), make([]int32, 0, total)
	lens := make([]int, len(parts))
	for p, pr := range parts {
		li = append(li, pr.l...)
		ri = append(ri, pr.r...)
		lens[p] = len(pr.l)
	}
	lens = slices.DeleteFunc(lens, func(l int) bool { return l == 0 })
	out := &hostTable{lens: lens, rows: rowsArange(lens)}
	sides := [2]*hostTable{lh, rh}
	idx := [2][]int32{li, ri}
	// Columns gather independently: one goroutine each, as many at once as there are CPUs.
	out.cols = make([]*hostCol, len(plan))
	err := parallel(len(plan), func(k int) error {
		oc := plan[k]
		src, err := sides[oc.side].col(oc.src)
		if err != nil {
			return err
		}
		var c *hostCol
		if oc.coalesce != "" {
			other, err := sides[1-oc.side].col(oc.coalesce)
			if err != nil {
				return err
			}
			dt := coalescedType(src.dt, other.dt)
			if oc.side == 1 {
				dt = coalescedType(other.dt, src.dt)
			}
			c = coalesceCols(oc.name, dt, src, other, idx[oc.side], idx[1-oc.side])
		} else {
			c = src.gatherRowsNull(idx[oc.side])
			c.name = oc.name
		}
		out.cols[k] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// String names a merge option set, for error messages.
func (o mergeOpts) String() string {
	return fmt.Sprintf("how=%s on=%s", o.how, strings.Join(o.on, ","))
}

// sameEncoding reports whether Shuffle encodes both sides' keys alike (partitionKeys), so that
// equal keys are in partitions of the same number.
func sameEncoding(keys []keyPair) bool {
	for _, k := range keys {
		if k.l.DType.IsFloat() != k.r.DType.IsFloat() {
			return false
		}
	}
	return true
}
