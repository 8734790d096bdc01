package dataframe

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// Holistic aggregations (median, quantile, nunique, first, last) on a GPU, over the dense
// codes of the device groupby: the rows are sorted on the device by (code, value) with two
// stable argsorts (value first, then code) for median, quantile and nunique, or by code alone
// (keeping row order within a group) for first and last. The per-code counts of valid values,
// which the group-aggregate kernel computes anyway, give where each group's run of sorted rows
// starts, so the host picks the ranks it needs and only those values come back (two per group
// for a quantile, one for first and last). NUnique counts, on the device, the sorted rows that
// differ from the row before, with one more group-aggregate pass. A value that is null (or
// NaN) takes code -1, which sorts first, so no group's run holds it.
//
// Each result rides in an algebraic state that finalizes to it exactly (Max for a quantile,
// Count for nunique; First and Last keep their own), so Split, Sorted and the result columns
// treat it as the host's.

// sorted is one value column's rows sorted for the holistic step, computed once (kept where
// opts compute: on the device) for every aggregation of the column.
type sorted struct {
	vals, codes, perm *gpuarray.Array
	path              string // where the sort and gathers ran (Path of the sorted values)
}

// sortByValue sorts h's rows by (code, value) with two stable device argsorts (value, then
// code), each argsort's permutation applied by gathers on the device (taker).
func sortByValue(h *holisticInput, opts []gpuarray.ComputeOption) (*sorted, error) {
	var tk taker
	p1, err := computeOne(gpuarray.Argsort(h.vals, 0), opts)
	if err != nil {
		return nil, err
	}
	c1, err := tk.takeKept(h.codes, p1, opts)
	if err != nil {
		return nil, err
	}
	p2, err := computeOne(gpuarray.Argsort(c1, 0), opts)
	if err != nil {
		return nil, err
	}
	v1, err := tk.takeKept(h.vals, p1, opts)
	if err != nil {
		return nil, err
	}
	vals, err := tk.takeKept(v1, p2, opts)
	if err != nil {
		return nil, err
	}
	codes, err := tk.takeKept(c1, p2, opts)
	if err != nil {
		return nil, err
	}
	return &sorted{vals: vals, codes: codes, path: joinNotes(p2.Path(), tk.note())}, nil
}

// sortByCode sorts h's rows by code, row order kept within a code (a stable device argsort),
// the values gathered on the device.
func sortByCode(h *holisticInput, opts []gpuarray.ComputeOption) (*sorted, error) {
	var tk taker
	perm, err := computeOne(gpuarray.Argsort(h.codes, 0), opts)
	if err != nil {
		return nil, err
	}
	vals, err := tk.takeKept(h.vals, perm, opts)
	if err != nil {
		return nil, err
	}
	return &sorted{vals: vals, perm: perm, path: joinNotes(perm.Path(), tk.note())}, nil
}

// holisticOp reports whether op is an aggregation the device computes from sorted rows.
func holisticOp(op hashagg.Op) bool {
	switch op {
	case hashagg.First, hashagg.Last, hashagg.NUnique, hashagg.Median, hashagg.Quantile, hashagg.Top:
		return true
	}
	return false
}

// denseSpecs returns specs with each holistic one (and each Corr) replaced by a Count of its
// column, so that the dense plan keeps the per-code counts of valid values the holistic step
// needs; the step (corrState for a Corr) replaces the placeholder's state.
func denseSpecs(specs []hashagg.Spec) []hashagg.Spec {
	out := make([]hashagg.Spec, len(specs))
	for i, s := range specs {
		out[i] = s
		if holisticOp(s.Op) || s.Op == hashagg.Corr {
			out[i] = hashagg.Spec{Op: hashagg.Count, Col: s.Col}
		}
	}
	return out
}

// holisticInput is one value column's rows for the holistic step: vals (int64 or float64) and
// codes (-1 where the key or the value is null), with counts[c] the valid values of code c.
type holisticInput struct {
	vals   *gpuarray.Array
	codes  *gpuarray.Array
	counts []int64
	float  bool
}

// runs returns where each group's run of valid values starts in rows sorted by code (the rows
// of code -1 first); n is the number of rows.
func (h *holisticInput) runs(n int) []int64 {
	start := make([]int64, len(h.counts))
	at := int64(n)
	for _, c := range h.counts {
		at -= c
	}
	for g, c := range h.counts {
		start[g] = at
		at += c
	}
	return start
}

// deviceHolistic replaces the placeholder states of part (built from denseSpecs) with the
// holistic results of specs, computed with opts; codes are part's groups' dense codes in the
// order of its groups. The note says where the sorts ran (for Path).
func deviceHolistic(part *hashagg.Partial, specs []hashagg.Spec, groupCodes []int, in []*holisticInput, groups int, opts []gpuarray.ComputeOption) (note string, err error) {
	var notes []string
	byValue := map[int]*sorted{} // per value column, sorted by (code, value)
	byCode := map[int]*sorted{}  // sorted by code, row order kept
	defer func() {
		for _, m := range []map[int]*sorted{byValue, byCode} {
			for _, s := range m {
				if s.path != "" && !slices.Contains(notes, s.path) {
					notes = append(notes, s.path)
				}
			}
		}
		note = strings.Join(notes, "; ")
	}()
	for si, s := range specs {
		if !holisticOp(s.Op) {
			continue
		}
		h := in[s.Col]
		if h == nil {
			return "", fmt.Errorf("groupby on a GPU: %v of value column %d without its rows (internal)", s.Op, s.Col)
		}
		n := int(h.codes.Size())
		start := h.runs(n)
		var srt *sorted
		switch s.Op {
		case hashagg.First, hashagg.Last:
			if srt = byCode[s.Col]; srt == nil {
				var err error
				if srt, err = sortByCode(h, opts); err != nil {
					return "", fmt.Errorf("groupby on a GPU: sort value column %d by group: %w", s.Col, err)
				}
				byCode[s.Col] = srt
			}
		default:
			if srt = byValue[s.Col]; srt == nil {
				var err error
				if srt, err = sortByValue(h, opts); err != nil {
					return "", fmt.Errorf("groupby on a GPU: sort value column %d by (group, value): %w", s.Col, err)
				}
				byValue[s.Col] = srt
			}
		}
		st := hashagg.State{Spec: s, IsInt: !h.float, Cnt: make([]int64, part.N)}
		for g, c := range groupCodes {
			st.Cnt[g] = h.counts[c]
		}
		var err error
		switch s.Op {
		case hashagg.First, hashagg.Last:
			err = pickEnds(&st, srt.vals, srt.perm, start, groupCodes, h, opts)
		case hashagg.Top:
			err = pickTop(&st, srt.vals, start, groupCodes, h, opts)
		case hashagg.NUnique:
			st.Spec = hashagg.Spec{Op: hashagg.Count, Col: s.Col}
			err = countDistinct(&st, srt.vals, srt.codes, groupCodes, groups, n, opts)
		default:
			q := s.Q
			if s.Op == hashagg.Median {
				q = 0.5
			}
			st.Spec, st.IsInt = hashagg.Spec{Op: hashagg.Max, Col: s.Col}, false
			err = pickQuantiles(&st, srt.vals, start, groupCodes, h, q, opts)
		}
		if err != nil {
			return "", fmt.Errorf("groupby on a GPU: %v of value column %d: %w", s.Op, s.Col, err)
		}
		part.States[si] = st
	}
	return "", nil
}

// pickQuantiles sets st.SumF to the q-quantile of each group's sorted values (linear
// interpolation, as hashagg's host path: the low value plus the fraction times the step),
// taking only the two values of each group it needs from the device.
func pickQuantiles(st *hashagg.State, vals *gpuarray.Array, start []int64, groupCodes []int, h *holisticInput, q float64, opts []gpuarray.ComputeOption) error {
	st.SumF = make([]float64, len(groupCodes))
	idx := make([]int64, 0, 2*len(groupCodes))
	frac := make([]float64, len(groupCodes))
	for g, c := range groupCodes {
		cnt := h.counts[c]
		if cnt == 0 {
			idx = append(idx, 0, 0)
			continue
		}
		hq := q * float64(cnt-1)
		lo := int64(math.Floor(hq))
		hi := lo + 1
		if lo >= cnt-1 {
			lo, hi = cnt-1, cnt-1
			frac[g] = math.NaN() // the last value itself
		} else {
			frac[g] = hq - float64(lo)
		}
		idx = append(idx, start[c]+lo, start[c]+hi)
	}
	v, err := takeValues(vals, idx, h.float, opts)
	if err != nil {
		return err
	}
	for g, c := range groupCodes {
		if h.counts[c] == 0 {
			st.SumF[g] = math.NaN()
			continue
		}
		x, y := v[2*g], v[2*g+1]
		if math.IsNaN(frac[g]) {
			st.SumF[g] = x
			continue
		}
		st.SumF[g] = x + frac[g]*(y-x)
	}
	return nil
}

// takeValues gathers vals at idx on the device and returns them as float64s (int64 values
// converted after the gather, as the host path converts a group's values).
func takeValues(vals *gpuarray.Array, idx []int64, float bool, opts []gpuarray.ComputeOption) ([]float64, error) {
	if len(idx) == 0 {
		return nil, nil
	}
	var tk taker // the indices uploaded, the values gathered on the device: none of the rows come to the host
	t := tk.take(vals, gpuarray.FromSliceInt64(idx).Persist(opts...), opts)
	if tk.err != nil {
		return nil, tk.err
	}
	if float {
		return t.ToSlice(opts...)
	}
	v, err := t.ToSliceInt64(opts...)
	if err != nil {
		return nil, err
	}
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return f, nil
}

// pickEnds sets a First or Last state from rows sorted by code with row order kept: the first
// or last valid value of each group and its row.
func pickEnds(st *hashagg.State, vals, perm *gpuarray.Array, start []int64, groupCodes []int, h *holisticInput, opts []gpuarray.ComputeOption) error {
	idx := make([]int64, len(groupCodes))
	for g, c := range groupCodes {
		switch cnt := h.counts[c]; {
		case cnt == 0:
			idx[g] = 0
		case st.Spec.Op == hashagg.First:
			idx[g] = start[c]
		default:
			idx[g] = start[c] + cnt - 1
		}
	}
	st.Pos = make([]int64, len(groupCodes))
	if len(idx) == 0 {
		if h.float {
			st.SumF = []float64{}
		} else {
			st.SumI = []int64{}
		}
		return nil
	}
	var tk taker // as takeValues
	at := gpuarray.FromSliceInt64(idx).Persist(opts...)
	pos, err := tk.take(perm, at, opts).ToSliceInt64(opts...)
	if err != nil {
		return err
	}
	copy(st.Pos, pos)
	if h.float {
		st.SumF, err = tk.take(vals, at, opts).ToSlice(opts...)
	} else {
		st.SumI, err = tk.take(vals, at, opts).ToSliceInt64(opts...)
	}
	if err == nil {
		err = tk.err
	}
	if err != nil {
		return err
	}
	for g, c := range groupCodes { // no valid value: the state's zero, as the host's
		if h.counts[c] == 0 {
			st.Pos[g] = 0
			if h.float {
				st.SumF[g] = 0
			} else {
				st.SumI[g] = 0
			}
		}
	}
	return nil
}

// countDistinct sets st.Cnt to each group's number of distinct valid values: the rows sorted
// by (code, value) that start a group's run or differ from the row before, counted per code
// by the group-aggregate kernel.
func countDistinct(st *hashagg.State, vals, codes *gpuarray.Array, groupCodes []int, groups, n int, opts []gpuarray.ComputeOption) error {
	if n == 0 {
		clear(st.Cnt)
		return nil
	}
	prevCodes := gpuarray.Concat(gpuarray.FromSliceInt64([]int64{-2}), codes.Slice(gpuarray.Span(0, n-1)))
	prevVals := gpuarray.Concat(vals.Slice(gpuarray.Span(0, 1)), vals.Slice(gpuarray.Span(0, n-1)))
	starts := gpuarray.LogicalOr(codes.Ne(prevCodes), vals.Ne(prevVals))
	marked := gpuarray.Where(starts, codes, int64(-1))
	tables, _, err := groupAggregate(groups, []gpuarray.GroupAggColumn{{Codes: marked}}, opts...)
	if err != nil {
		return err
	}
	for g, c := range groupCodes {
		st.Cnt[g] = tables[0].Count[c]
	}
	return nil
}

// holisticRows returns the rows of value column c that the holistic step sorts: its values as
// int64 or float64 (nulls NaN) and the group codes, -1 where the key or the value is null or
// NaN (col is c's group-aggregate column, whose codes already skip null integers).
func holisticRows(c *column, codes *gpuarray.Array, col gpuarray.GroupAggColumn) *holisticInput {
	h := &holisticInput{float: c.dt.IsFloat(), codes: col.Codes}
	if h.float {
		h.vals = c.arr.AsType(gpuarray.Float64)
		if c.valid != nil {
			h.vals = gpuarray.Where(c.valid, h.vals, math.NaN())
		}
		h.codes = gpuarray.Where(gpuarray.IsNaN(h.vals), int64(-1), codes)
		return h
	}
	h.vals = c.arr.AsType(gpuarray.Int64)
	return h
}

// pickTop sets a Top state (st.Spec's N, largest or smallest) from rows sorted by (code,
// value): the last N valid values of each group's run, last first, or its first N, taking
// only those from the device.
func pickTop(st *hashagg.State, vals *gpuarray.Array, start []int64, groupCodes []int, h *holisticInput, opts []gpuarray.ComputeOption) error {
	k := st.Spec.N
	idx := make([]int64, 0, k*len(groupCodes))
	for g, c := range groupCodes {
		cnt := min(h.counts[c], int64(k))
		st.Cnt[g] = cnt
		for i := range int64(k) {
			switch {
			case i >= cnt:
				idx = append(idx, 0) // a slot the state leaves unset
			case st.Spec.Largest:
				idx = append(idx, start[c]+h.counts[c]-1-i)
			default:
				idx = append(idx, start[c]+i)
			}
		}
	}
	if st.IsInt {
		st.SumI = make([]int64, len(idx))
	} else {
		st.SumF = make([]float64, len(idx))
	}
	if len(idx) == 0 {
		return nil
	}
	var tk taker
	t := tk.take(vals, gpuarray.FromSliceInt64(idx).Persist(opts...), opts)
	if tk.err != nil {
		return tk.err
	}
	var err error
	if st.IsInt {
		st.SumI, err = t.ToSliceInt64(opts...)
	} else {
		st.SumF, err = t.ToSlice(opts...)
	}
	if err != nil {
		return err
	}
	for g := range groupCodes { // unset slots hold zeros, as the host's
		for i := st.Cnt[g]; i < int64(k); i++ {
			if st.IsInt {
				st.SumI[g*k+int(i)] = 0
			} else {
				st.SumF[g*k+int(i)] = 0
			}
		}
	}
	return nil
}

// topGPU computes a Top spec of column col by keys over t on the device (partialGPU); ok is
// false when it did not run. With keep, a result that can stay on the device is returned as
// held (deviceTop), part nil.
func topGPU(rc *runCtx, t *table, keys []string, col string, spec hashagg.Spec, keep bool) (part *hashagg.Partial, keyCols []*column, held *table, ok bool, err error) {
	part, keyCols, _, held, ok, err = partialGPU(rc, t, keys, &aggPlan{vals: []string{col}, specs: []hashagg.Spec{spec}}, keep)
	return part, keyCols, held, ok, err
}

// joinNotes joins the non-empty notes with "; ".
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" {
			out = append(out, n)
		}
	}
	return strings.Join(out, "; ")
}
