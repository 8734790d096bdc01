package dataframe

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// Merge on a GPU. When a merge computes with OnGPU, its hash join runs on the device
// (gpuarray.HashJoin, HashPartition): the same strategies as the host's (broadcast, aligned,
// shuffle) and the same steps, each a device call that gives what dataframe/hashjoin gives
// (the same partitions, the same pairs in the same order), so the result is equal to the
// CPU's bit for bit. The sides are computed onto the GPU; where every output column can be
// gathered there (no coalesced key, no nulls, elements of 4 or 8 bytes), only the key columns
// come to the host, the key codes are encoded there (strings and categoricals through one
// dictionary of both sides), and the output columns are gathered on the GPU at the joined
// rows (gpuarray.TakeRowsOnGPU), so the joined frame stays there; otherwise the sides come to
// the host and the output is gathered there. Path names the host steps, with a warning, as it
// names a build side whose rows of a long key run the host laid out (gpuarray.JoinPairs'
// HostNote).

// hashJoinDevice and hashPartitionDevice are the device calls (variables so that tests without
// a GPU can run the rest of the path over host emulations of them).
var (
	hashJoinDevice      = gpuarray.HashJoin
	hashPartitionDevice = gpuarray.HashPartition
)

// mergeDeviceOpts returns the options a device merge computes with: rc's when they name a
// GPU; ok is false otherwise (a variable for the same tests).
var mergeDeviceOpts = func(rc *runCtx) ([]gpuarray.ComputeOption, bool) {
	return rc.opts, rc.target.Backend == "gpu"
}

// deviceJoin is the GPU's joinEngine.
type deviceJoin struct {
	opts []gpuarray.ComputeOption

	mu        sync.Mutex
	notes     []string // the device calls' notes, once each
	hostNotes []string // the steps of device calls that ran on the host, once each
}

// newDeviceJoin returns the device engine of a merge when rc computes on a GPU.
func newDeviceJoin(rc *runCtx) (*deviceJoin, bool) {
	opts, ok := mergeDeviceOpts(rc)
	if !ok {
		return nil, false
	}
	return &deviceJoin{opts: opts}, true
}

// mergeHostSteps names the steps of a device merge on keys that run on the host: the copy of
// the sides there (only their key columns when g gathered the output on the GPU), the encoding
// of key codes (with the dictionary of both sides where string or categorical keys need one),
// and the gather of the output columns unless g ran it on the GPU.
func mergeHostSteps(keys []keyPair, g *heldGather) string {
	var dict []string
	for _, k := range keys {
		l, r := k.l.DType, k.r.DType
		switch {
		case l == String || r == String:
			dict = append(dict, fmt.Sprintf("%q (strings)", k.l.Name))
		case l == Category && r == Category:
			// Categoricals: codes of the one dictionary both sides share, or of a dictionary
			// unified over the two.
			dict = append(dict, fmt.Sprintf("%q (categoricals)", k.l.Name))
		}
	}
	s := "sides copied to the host, key codes encoded there"
	if g != nil {
		s = "key columns copied to the host, key codes encoded there"
	}
	if len(dict) > 0 {
		s += " (one dictionary of both sides for " + strings.Join(dict, ", ") + ")"
	}
	switch {
	case g != nil && g.why == "":
		return s + ", the joined rows copied back to " + g.where + " for the output columns' gather there"
	case g != nil:
		return s + ", output columns gathered there at the joined rows (not on the GPU: " + g.why + ")"
	}
	return s + ", output columns gathered there at the joined rows"
}

// note records a device call's note n, and the step it ran on the host (host, when not "").
func (e *deviceJoin) note(n, host string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.notes, n) {
		e.notes = append(e.notes, n)
	}
	if host != "" && !slices.Contains(e.hostNotes, host) {
		e.hostNotes = append(e.hostNotes, host)
	}
}

// record writes the merge's notes into rc's Path: the device join (with its strategy) and the
// host steps (a warning).
func (e *deviceJoin) record(rc *runCtx, strategy string, keys []keyPair, g *heldGather) {
	e.mu.Lock()
	defer e.mu.Unlock()
	what := "no device call (nothing to join)"
	if len(e.notes) > 0 {
		what = strings.Join(e.notes, ", ")
	}
	rc.device(fmt.Sprintf("merge: %s, %s; sides computed on %s", what, strategy, rc.target.Backend))
	rc.host("merge: %s (the join on the GPU)", mergeHostSteps(keys, g))
	for _, h := range e.hostNotes {
		rc.host("merge: %s", h)
	}
}

func (e *deviceJoin) partition(k hashjoin.Keys, n int) ([]int32, error) {
	part, note, err := hashPartitionDevice(k, n, e.opts...)
	if err != nil {
		return nil, err
	}
	e.note(note, "")
	return part, nil
}

// probe runs one device join, noting it.
func (e *deviceJoin) probe(build, probe hashjoin.Keys, mode gpuarray.JoinMode, part int) (*gpuarray.JoinPairs, error) {
	r, note, err := hashJoinDevice(build, probe, mode, part, e.opts...)
	if err != nil {
		return nil, err
	}
	e.note(note, r.HostNote)
	return r, nil
}

// join is hashjoin.Join on the device: build on the side whose order does not lead (the
// right one but for right joins), probe with the other, so that the pairs come in
// hashjoin.Join's order; outer joins add the right rows no left row matched, in order.
func (e *deviceJoin) join(p int, l, r hashjoin.Keys, how hashjoin.How) ([]int32, []int32, error) {
	build, probe, mode := r, l, gpuarray.JoinKeep
	switch how {
	case hashjoin.Inner:
		mode = gpuarray.JoinInner
	case hashjoin.Semi:
		mode = gpuarray.JoinSemi
	case hashjoin.Anti:
		mode = gpuarray.JoinAnti
	case hashjoin.Right:
		build, probe = l, r
	case hashjoin.Left, hashjoin.Outer:
	default:
		return nil, nil, fmt.Errorf("device join: %v", how)
	}
	res, err := e.probe(build, probe, mode, p)
	if err != nil {
		return nil, nil, fmt.Errorf("partition %d: %w", p, err)
	}
	switch how {
	case hashjoin.Semi, hashjoin.Anti:
		return res.Probe, nil, nil
	case hashjoin.Right:
		return res.Build, res.Probe, nil
	case hashjoin.Outer:
		li, ri := res.Probe, res.Build
		for j, m := range res.Matched {
			if !m {
				li, ri = append(li, -1), append(ri, int32(j))
			}
		}
		return li, ri, nil
	}
	return res.Probe, res.Build, nil
}

// broadcast is broadcastJoin on the device: one probe of the whole big side against the small
// one, its pairs (in probe row order) split at the big side's partitions.
func (e *deviceJoin) broadcast(big, small hashjoin.Keys, lens []int, how hashjoin.How, swapped bool) ([]pairs, error) {
	mode := gpuarray.JoinInner
	switch how {
	case hashjoin.Semi:
		mode = gpuarray.JoinSemi
	case hashjoin.Anti:
		mode = gpuarray.JoinAnti
	case hashjoin.Left, hashjoin.Right:
		mode = gpuarray.JoinKeep
	}
	res, err := e.probe(small, big, mode, 0)
	if err != nil {
		return nil, err
	}
	out := make([]pairs, len(lens))
	at, end := 0, 0
	for p, n := range lens {
		end += n
		from := at
		// The pairs come in probe row order: the partition's end by a binary search.
		at = from + sort.Search(len(res.Probe)-from, func(i int) bool { return int(res.Probe[from+i]) >= end })
		pi := res.Probe[from:at:at]
		switch {
		case how == hashjoin.Semi:
			out[p] = pairs{l: pi}
		case how == hashjoin.Anti:
			r := make([]int32, len(pi))
			for i := range r {
				r[i] = -1
			}
			out[p] = pairs{l: pi, r: r}
		case swapped:
			out[p] = pairs{l: res.Build[from:at:at], r: pi}
		default:
			out[p] = pairs{l: pi, r: res.Build[from:at:at]}
		}
	}
	return out, nil
}

// takeRowsDevice is the device row gather (a variable so that tests without a GPU can run the
// rest of the path over a host emulation of it).
var takeRowsDevice = gpuarray.TakeRowsOnGPU

// heldGather is a device merge's output gather on the GPU: the sides' columns (computed, held
// on the GPU) are gathered there at the join's rows, so that the joined frame stays there and
// only the key columns come to the host (for the key codes the device join reads).
type heldGather struct {
	lt, rt *table // the sides, computed
	plan   []outCol
	how    hashjoin.How
	why    string // why the gather fell back to the host ("" when it ran on the device)
	where  string // the GPU it ran on
}

// heldGatherable reports whether every output column of plan can be gathered on the device
// (no coalesced key, no nulls in the source, elements of 4 or 8 bytes); why says what cannot.
func heldGatherable(lt, rt *table, plan []outCol) (ok bool, why string) {
	sides := [2]*table{lt, rt}
	for _, oc := range plan {
		if oc.coalesce != "" {
			return false, fmt.Sprintf("key %q is coalesced from both sides", oc.name)
		}
		c, err := sides[oc.side].find(oc.src)
		if err != nil {
			return false, err.Error()
		}
		if c.valid != nil {
			return false, fmt.Sprintf("column %q has nulls", oc.src)
		}
		if s := c.arr.DType().Size(); (s != 4 && s != 8) || c.arr.DType().IsComplex() {
			return false, fmt.Sprintf("column %q is %s", oc.src, c.dt)
		}
	}
	return true, ""
}

// keyTable is t with only its key columns names (for the host's copy of them).
func keyTable(t *table, names []string) (*table, error) {
	out := &table{rows: t.rows}
	for _, n := range names {
		if slices.ContainsFunc(out.cols, func(c *column) bool { return c.name == n }) {
			continue
		}
		c, err := t.find(n)
		if err != nil {
			return nil, err
		}
		out.cols = append(out.cols, c)
	}
	return out, nil
}

// keysToHost copies t's columns (the keys of a device merge) to the host at once, without its
// rows (a merge numbers its output rows anew); n is its number of rows.
func keysToHost(t *table) (*hostTable, int, error) {
	ht := &hostTable{lens: partLens(t), cols: make([]*hostCol, len(t.cols))}
	n := 0
	for _, l := range ht.lens {
		n += l
	}
	err := parallel(len(t.cols), func(i int) error {
		c := t.cols[i]
		v, err := c.arr.Values()
		if err != nil {
			return fmt.Errorf("column %q: %w", c.name, err)
		}
		h := &hostCol{name: c.name, dt: c.dt, vals: v, heap: c.heap}
		if c.valid != nil {
			if h.valid, err = c.valid.ToSliceBool(); err != nil {
				return fmt.Errorf("column %q: %w", c.name, err)
			}
		}
		ht.cols[i] = h
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return ht, n, nil
}

// heldSides prepares a device merge's gather on the GPU: it computes the sides (their columns
// stay on the GPU) and, when every output column can be gathered there (heldGatherable),
// returns the sides' key columns alone, for the host, and the gather; otherwise lt and rt
// as they were and a nil gather.
func heldSides(rc *runCtx, lt, rt *table, keys []keyPair, how hashjoin.How, plan []outCol) (lk, rk *table, g *heldGather, err error) {
	if ok, _ := heldGatherable(lt, rt, plan); !ok {
		return lt, rt, nil, nil
	}
	if lt, err = rc.materialize(lt); err != nil {
		return nil, nil, nil, err
	}
	if rt, err = rc.materialize(rt); err != nil {
		return nil, nil, nil, err
	}
	if lk, err = keyTable(lt, keyNames(keys, 0)); err != nil {
		return nil, nil, nil, err
	}
	if rk, err = keyTable(rt, keyNames(keys, 1)); err != nil {
		return nil, nil, nil, err
	}
	return lk, rk, &heldGather{lt: lt, rt: rt, plan: plan, how: how}, nil
}

// anyMissing reports whether a piece of rows has a -1 (no row), the pieces at once.
func anyMissing(rows [][]int32) bool {
	var found atomic.Bool
	_ = parallel(len(rows), func(p int) error {
		if slices.ContainsFunc(rows[p], func(r int32) bool { return r < 0 }) {
			found.Store(true)
		}
		return nil
	})
	return found.Load()
}

// gather writes the merge's output columns at the pairs of parts on the GPU (takeRowsDevice),
// a partition per non-empty output partition; a -1 row (no row of that side) is null, its
// validity computed on the GPU from the rows there. ok is false, with g.why, where the
// device gathered nothing (an empty result, a column not held on one GPU): the caller gathers
// on the host then.
func (g *heldGather) gather(rc *runCtx, parts []pairs) (t *table, ok bool, err error) {
	total := 0
	idx := [2][][]int32{make([][]int32, len(parts)), make([][]int32, len(parts))}
	var lens []int
	for p, pr := range parts {
		total += len(pr.l)
		idx[0][p], idx[1][p] = pr.l, pr.r
		if len(pr.l) > 0 {
			lens = append(lens, len(pr.l))
		}
	}
	if total == 0 {
		g.why = "no rows joined"
		return nil, false, nil
	}
	sides := [2]*table{g.lt, g.rt}
	out := &table{cols: make([]*column, len(g.plan))}
	for side := range 2 {
		var at []int
		var xs []*gpuarray.Array
		var srcs []*column
		for k, oc := range g.plan {
			if oc.side != side {
				continue
			}
			c, err := sides[side].find(oc.src)
			if err != nil {
				return nil, false, err
			}
			at, xs, srcs = append(at, k), append(xs, c.arr), append(srcs, c)
		}
		if len(xs) == 0 {
			continue
		}
		// A left row is always there (right and outer merges gather on the host); a right
		// row can be missing in left and anti merges.
		nulls := side == 1 && (g.how == hashjoin.Left || g.how == hashjoin.Anti) && anyMissing(idx[side])
		got, index, why, err := takeRowsDevice(xs, idx[side], nulls, rc.opts...)
		if err != nil {
			return nil, false, err
		}
		if why != "" {
			g.why = why
			return nil, false, nil
		}
		var valid *gpuarray.Array
		if nulls {
			valid = index.Ge(int32(0))
		}
		for j, k := range at {
			out.cols[k] = &column{name: g.plan[k].name, dt: srcs[j].dt, arr: got[j], valid: valid, heap: srcs[j].heap}
			if g.where == "" {
				g.where = got[j].Where()
			}
		}
	}
	out.rows = gpuarray.Arange(0, total, 1, gpuarray.ChunkSizes(lens), gpuarray.WithDType(gpuarray.Int64))
	return out, true, nil
}
