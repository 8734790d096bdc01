package dataframe

import (
	"fmt"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// Many groups on a GPU: when the keys' mixed-radix codes number more than tables of every code
// hold (hashagg.MaxDenseGroups; db-benchmark's q10 groups by six keys whose codes multiply to
// about 1e20), the keys are packed into as few int64 words as hold them (each word a mixed
// radix under 2^53, exact in the device's constants), the rows are sorted on the device by the
// words with stable argsorts (last word first), and each run of equal words is one group,
// numbered by a scan of the runs' starts. The group-aggregate kernel then folds the sorted
// rows' values by those numbers (global atomics, a table word per group), and only the
// tables and each group's packed key words come back.

// maxPackedCodes bounds the codes one packed key word holds (2^53: the device's constants
// are float64s).
const maxPackedCodes = 1 << 53

// maxSortedGroups is the most groups the sort-based grouping numbers (the tables' words are
// in device memory, one per group and state).
const maxSortedGroups = 1 << 31

// sortedGroups is a grouping of rows sorted by their keys on the device.
type sortedGroups struct {
	perm   *gpuarray.Array // the rows in key order
	codes  *gpuarray.Array // each sorted row's group, -1 where a key is null
	groups int
	span   float64   // the product of the keys' ranges (for Path)
	keys   [][]int64 // each group's key values, per key
	path   string    // where the sort and the numbering ran (for Path)
}

// packWords splits keys into runs whose ranges multiply to at most maxPackedCodes, each a
// dense plan of its own (strides within the run); ok is false when one key's range alone is
// wider.
func packWords(dk []hashagg.DenseKey) (words [][]int, plans []*hashagg.DensePlan, ok bool) {
	var cur []int
	prod := int64(1)
	flush := func() {
		if len(cur) == 0 {
			return
		}
		p := &hashagg.DensePlan{Strides: make([]int64, len(cur)), Groups: 1}
		s := int64(1)
		for j := len(cur) - 1; j >= 0; j-- {
			k := dk[cur[j]]
			p.Keys = append([]hashagg.DenseKey{k}, p.Keys...)
			p.Strides[j] = s
			s *= k.Card
		}
		words, plans = append(words, cur), append(plans, p)
		cur, prod = nil, 1
	}
	for i, k := range dk {
		if k.Card <= 0 || k.Card > maxPackedCodes {
			return nil, nil, false
		}
		if prod > maxPackedCodes/k.Card {
			flush()
		}
		cur = append(cur, i)
		prod *= k.Card
	}
	flush()
	return words, plans, true
}

// sortGroups numbers the distinct keys of keyCols (ranges dk) by sorting the rows on the
// device with opts; the reason is set when it cannot (a key's range past 2^53, too many
// groups).
func sortGroups(keyCols []*column, dk []hashagg.DenseKey, opts []gpuarray.ComputeOption) (*sortedGroups, string, error) {
	words, plans, ok := packWords(dk)
	if !ok {
		return nil, "a key's range is wider than 2^53 codes", nil
	}
	span := 1.0
	for _, k := range dk {
		span *= float64(k.Card)
	}
	w := make([]*gpuarray.Array, len(words))
	var valid *gpuarray.Array
	for j, ks := range words {
		cols := make([]*column, len(ks))
		for i, k := range ks {
			cols[i] = keyCols[k]
		}
		w[j] = denseCodes(cols, plans[j])
		v := w[j].Ge(int64(0))
		if valid == nil {
			valid = v
		} else {
			valid = gpuarray.LogicalAnd(valid, v)
		}
	}
	if len(w) > 1 { // a row with a null key sorts first, whatever its other words
		w[0] = gpuarray.Where(valid, w[0], int64(-1))
	}
	perm := gpuarray.Argsort(w[len(w)-1], 0)
	for j := len(w) - 2; j >= 0; j-- {
		perm = perm.Take(gpuarray.Argsort(w[j].Take(perm), 0))
	}
	got, err := gpuarray.ComputeAll(append([]any{perm}, anyOpts(opts)...)...)
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: sort the keys: %w", err)
	}
	perm = got[0]
	n := int(perm.Size())
	sg := &sortedGroups{perm: perm, span: span, keys: make([][]int64, len(keyCols))}
	if n == 0 {
		sg.codes = gpuarray.FromSliceInt64(nil)
		for k := range sg.keys {
			sg.keys[k] = []int64{}
		}
		return sg, "", nil
	}
	sw := make([]*gpuarray.Array, len(w))
	var starts *gpuarray.Array
	for j := range w {
		sw[j] = w[j].Take(perm)
		prev := gpuarray.Concat(gpuarray.FromSliceInt64([]int64{-2}), sw[j].Slice(gpuarray.Span(0, n-1)))
		d := sw[j].Ne(prev)
		if starts == nil {
			starts = d
		} else {
			starts = gpuarray.LogicalOr(starts, d)
		}
	}
	ok0 := sw[0].Ge(int64(0))
	starts = gpuarray.LogicalAnd(starts, ok0)
	codes := gpuarray.Where(ok0, starts.AsType(gpuarray.Int64).Cumsum().Sub(int64(1)), int64(-1))
	args := []any{codes}
	for j := range sw {
		args = append(args, sw[j].Mask(starts))
	}
	got, err = gpuarray.ComputeAll(append(args, anyOpts(opts)...)...)
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: number the groups: %w", err)
	}
	sg.codes = got[0]
	sg.path = perm.Path()
	if p := got[0].Path(); p != sg.path {
		sg.path += "; " + p
	}
	for j, ks := range words {
		v, err := got[1+j].ToSliceInt64()
		if err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: the groups' keys: %w", err)
		}
		if j == 0 {
			sg.groups = len(v)
			if sg.groups > maxSortedGroups {
				return nil, fmt.Sprintf("%d groups, more than %d", sg.groups, maxSortedGroups), nil
			}
		}
		p := plans[j]
		for i, k := range ks {
			out := make([]int64, len(v))
			for g, c := range v {
				out[g] = p.Keys[i].Min + c/p.Strides[i]%p.Keys[i].Card
			}
			sg.keys[k] = out
		}
	}
	return sg, "", nil
}

// anyOpts returns opts as ComputeAll's arguments.
func anyOpts(opts []gpuarray.ComputeOption) []any {
	out := make([]any, len(opts))
	for i, o := range opts {
		out[i] = o
	}
	return out
}

// plan returns the dense plan of the sorted groups: a code per group (at least one, so that
// no rows still make tables) and no keys, whose values sg.keys holds (a plan's keys of each
// code would be built one group at a time).
func (sg *sortedGroups) plan(specs []hashagg.Spec, ncols int) (*hashagg.DensePlan, error) {
	p, err := hashagg.PlanDense([]hashagg.DenseKey{{Min: 0, Card: 1}}, specs, ncols)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: %w", err)
	}
	p.Keys, p.Strides, p.Groups = nil, nil, max(sg.groups, 1)
	return p, nil
}

// gather returns copies of cols whose values and validity are in the sorted rows' order.
func (sg *sortedGroups) gather(cols []*column) []*column {
	out := make([]*column, len(cols))
	for i, c := range cols {
		d := *c
		if d.dt != String && d.dt != Category {
			d.arr = c.arr.Take(sg.perm)
		}
		if d.valid != nil {
			d.valid = c.valid.Take(sg.perm)
		}
		out[i] = &d
	}
	return out
}
