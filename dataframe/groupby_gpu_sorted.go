package dataframe

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// Many groups on a GPU: when the keys' mixed-radix codes number more than tables of every code
// hold (hashagg.MaxDenseGroups; db-benchmark's q10 groups by six keys whose codes multiply to
// about 1e20), the keys are packed into as few int64 words as hold them (each word a mixed
// radix under 2^53, exact in the device's constants), the rows are sorted on the device by the
// words with stable argsorts (last word first), and each run of equal words is one group,
// numbered by a scan of the runs' starts. The group-aggregate kernel then folds the sorted
// rows' values by those numbers (global atomics, a table word per group); each group's packed
// key words are gathered from its first row.

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
	keys   [][]int64 // each group's key values, per key (nil when held is set)
	path   string    // where the sort and the numbering ran (for Path)
	// held is each group's packed key words, per word, left on the GPU (sortGroups' keep);
	// words and plans say which keys each word packs and how.
	held  []*gpuarray.Array
	words [][]int
	plans []*hashagg.DensePlan
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
// groups). With keep, each group's packed key words stay on the GPU (sg.held) where the
// device can keep them, for a result kept there (deviceTable); else the keys come back.
func sortGroups(keyCols []*column, dk []hashagg.DenseKey, opts []gpuarray.ComputeOption, keep bool) (*sortedGroups, string, error) {
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
	var tk taker
	perm, err := computeOne(gpuarray.Argsort(w[len(w)-1], 0), opts)
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: sort the keys: %w", err)
	}
	for j := len(w) - 2; j >= 0; j-- {
		wj, err := tk.takeKept(w[j], perm, opts)
		if err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: sort the keys: %w", err)
		}
		p, err := computeOne(gpuarray.Argsort(wj, 0), opts)
		if err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: sort the keys: %w", err)
		}
		if perm, err = tk.takeKept(perm, p, opts); err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: sort the keys: %w", err)
		}
	}
	if tk.err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: sort the keys: %w", tk.err)
	}
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
	for j := range w {
		if sw[j], err = tk.takeKept(w[j], perm, opts); err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: the sorted keys: %w", err)
		}
	}
	// A run starts where a sorted row's words differ from the row before's, gathered on the
	// device (a Concat with a host element made the scan's input on the host: 1e8 rows
	// assembled, encoded and copied up at db-benchmark's q10).
	row := gpuarray.Arange(n, gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes(sw[0].Chunks()[0]))
	before, err := computeOne(gpuarray.Where(row.Gt(int64(0)), row.Sub(int64(1)), int64(0)), opts)
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: the sorted keys: %w", err)
	}
	starts := row.Eq(int64(0))
	for j := range w {
		prev, err := tk.takeKept(sw[j], before, opts)
		if err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: the sorted keys: %w", err)
		}
		starts = gpuarray.LogicalOr(starts, sw[j].Ne(prev))
	}
	if tk.err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: the sorted keys: %w", tk.err)
	}
	ok0 := sw[0].Ge(int64(0))
	first, err := computeOne(gpuarray.LogicalAnd(starts, ok0), opts) // each group's first sorted row
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: number the groups: %w", err)
	}
	codes, err := computeOne(gpuarray.Where(ok0, first.AsType(gpuarray.Int64).Cumsum().Sub(int64(1)), int64(-1)), opts)
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: number the groups: %w", err)
	}
	// Where each group's run starts, compacted on the device: its length is the number of
	// groups, and each group's packed key words are gathered there from its first row.
	at, err := computeOne(row.Mask(first), opts)
	if err != nil {
		return nil, "", fmt.Errorf("groupby on a GPU: the groups' first rows: %w", err)
	}
	sg.codes, sg.groups = codes, int(at.Size())
	if sg.groups > maxSortedGroups {
		return nil, fmt.Sprintf("%d groups, more than %d", sg.groups, maxSortedGroups), nil
	}
	sg.path = perm.Path()
	if p := codes.Path(); p != sg.path {
		sg.path = joinNotes(sg.path, p)
	}
	sg.words, sg.plans = words, plans
	if sg.groups == 0 {
		sg.path = joinNotes(sg.path, tk.note())
		for k := range sg.keys {
			sg.keys[k] = []int64{}
		}
		return sg, "", nil
	}
	held := make([]*gpuarray.Array, len(sw))
	for j := range sw {
		if held[j], err = tk.takeKept(sw[j], at, opts); err != nil {
			return nil, "", fmt.Errorf("groupby on a GPU: the groups' keys: %w", err)
		}
	}
	sg.path = joinNotes(sg.path, tk.note())
	sg.held = held
	if keep {
		return sg, "", nil
	}
	return sg, "", sg.keysToHost(opts)
}

// keysToHost copies sg's held key words to the host and decodes them into sg.keys (a result
// that could not stay on the device after all).
func (sg *sortedGroups) keysToHost(opts []gpuarray.ComputeOption) error {
	if sg.held == nil {
		return nil
	}
	for j, ks := range sg.words {
		v, err := sg.held[j].ToSliceInt64(opts...)
		if err != nil {
			return fmt.Errorf("groupby on a GPU: the groups' keys: %w", err)
		}
		p := sg.plans[j]
		for i, k := range ks {
			sg.keys[k] = decodeKey(v[:sg.groups], p.Keys[i].Min, p.Strides[i], p.Keys[i].Card)
		}
	}
	sg.held = nil
	return nil
}

// decodeKey returns the key values base + c/stride%card of packed words v, spread over the
// cores (two 64-bit divisions a word: about a second on one core for 1e8 groups).
func decodeKey(v []int64, base, stride, card int64) []int64 {
	out := make([]int64, len(v))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(v)/(1<<16)))
	var wg sync.WaitGroup
	step := (len(v) + workers - 1) / workers
	for lo := 0; lo < len(v); lo += step {
		hi := min(lo+step, len(v))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := lo; g < hi; g++ {
				out[g] = base + v[g]/stride%card
			}
		}()
	}
	wg.Wait()
	return out
}

// computeOne computes a with opts (kept on the device where they name one).
func computeOne(a *gpuarray.Array, opts []gpuarray.ComputeOption) (*gpuarray.Array, error) {
	got, err := gpuarray.ComputeAll(append([]any{a}, anyOpts(opts)...)...)
	if err != nil {
		return nil, err
	}
	return got[0], nil
}

// taker gathers rows on the device (gpuarray.TakeOnGPU), remembering the first error and
// where the gathers ran, for Path.
type taker struct {
	err             error
	device, general int
	why             string
}

// take returns x.Take(idx), gathered on the device where it can be.
func (t *taker) take(x, idx *gpuarray.Array, opts []gpuarray.ComputeOption) *gpuarray.Array {
	r, why, err := gpuarray.TakeOnGPU(x, idx, opts...)
	if err != nil {
		if t.err == nil {
			t.err = err
		}
		return x.Take(idx)
	}
	if why == "" {
		t.device++
	} else {
		t.general++
		if t.why == "" {
			t.why = why
		}
	}
	return r
}

// takeKept returns x.Take(idx) computed with opts: the device's gather itself where it ran
// (held on the GPU already: a compute of a held array would copy it to the host), else the
// general take computed.
func (t *taker) takeKept(x, idx *gpuarray.Array, opts []gpuarray.ComputeOption) (*gpuarray.Array, error) {
	before := t.device
	r := t.take(x, idx, opts)
	if t.err != nil {
		return nil, t.err
	}
	if t.device > before {
		return r, nil
	}
	return computeOne(r, opts)
}

// note says where the gathers ran.
func (t *taker) note() string {
	if t.general == 0 {
		return fmt.Sprintf("%d gathers on the device from held rows", t.device)
	}
	return fmt.Sprintf("%d gathers on the device, %d by the general take (%s)", t.device, t.general, t.why)
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

// gather returns copies of cols whose values and validity are in the sorted rows' order
// (int64 and float64 values gathered on the device, others by the general take).
func (sg *sortedGroups) gather(cols []*column, opts []gpuarray.ComputeOption) ([]*column, error) {
	out := make([]*column, len(cols))
	var tk taker
	for i, c := range cols {
		d := *c
		switch dt := c.arr.DType(); {
		case d.dt == String || d.dt == Category:
		case dt == gpuarray.Int64 || dt == gpuarray.Float64:
			d.arr = tk.take(c.arr, sg.perm, opts)
		default:
			d.arr = c.arr.Take(sg.perm)
		}
		if d.valid != nil {
			d.valid = c.valid.Take(sg.perm)
		}
		out[i] = &d
	}
	return out, tk.err
}
