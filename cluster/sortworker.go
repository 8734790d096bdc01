package cluster

import (
	"bytes"
	"cmp"
	"context"
	"encoding/gob"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Sort task kinds (taskSpec.Kind); their sortSpec is gob-encoded in taskSpec.Chunk.
const (
	kindSortSample = "sort-sample" // evenly spaced keys of an input partition, for the bounds
	kindSortPerm   = "sort-perm"   // the stable order of an output partition's rows, kept
	// kindDistinctRows keeps the rows of a partition whose keys do not repeat (sortSpec.Keep).
	kindDistinctRows = "distinct-rows"
)

// sortSpec says what one sort task does: the inputs are the partition's key columns then
// their validity columns, Keys and Valid index them (-1: none).
type sortSpec struct {
	Keys, Valid []int
	Desc        []bool
	NullsFirst  bool
	// Sample is the number of keys a sample task returns at most.
	Sample int
	// Keep is a distinct task's rows: "first", "last" or "none" of each key.
	Keep string
}

func encodeSortSpec(s sortSpec) ([]byte, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(s); err != nil {
		return nil, fmt.Errorf("encode sort task: %w", err)
	}
	return buf.Bytes(), nil
}

// orderKeys encodes a column for sorting as int64s that compare as its values do:
// integers, bools and datetimes as their values, uint64 with the sign bit flipped, floats as
// their bits made monotonic (-0 as 0). null marks nulls: invalid rows and NaNs.
func orderKeys(vals dtype.Slice, valid []bool) (k []int64, null []bool) {
	n := vals.Len()
	null = make([]bool, n)
	for i := range null {
		null[i] = valid != nil && !valid[i]
	}
	switch {
	case vals.DType().IsFloat():
		f := dtype.Convert(vals, dtype.Float64).Float64s()
		k = make([]int64, n)
		for i, x := range f {
			switch {
			case math.IsNaN(x):
				null[i] = true
			case x == 0:
				k[i] = 0
			default:
				b := math.Float64bits(x)
				if b>>63 == 1 {
					b = ^b
				} else {
					b |= 1 << 63
				}
				k[i] = int64(b ^ (1 << 63))
			}
		}
	case vals.DType() == dtype.Uint64:
		u := vals.Uint64s()
		k = make([]int64, n)
		for i, x := range u {
			k[i] = int64(x ^ (1 << 63))
		}
	default:
		k = slices.Clone(dtype.Convert(vals, dtype.Int64).Int64s())
	}
	for i, z := range null {
		if z {
			k[i] = 0
		}
	}
	return k, null
}

// sortInputs decodes a sort task's key columns.
func sortInputs(sp sortSpec, in []dtype.Slice) (keys [][]int64, nulls [][]bool, err error) {
	for j, c := range sp.Keys {
		if c < 0 || c >= len(in) {
			return nil, nil, fmt.Errorf("key column %d of %d", c, len(in))
		}
		var ok []bool
		if j < len(sp.Valid) && sp.Valid[j] >= 0 {
			v := sp.Valid[j]
			if v >= len(in) || in[v].DType() != dtype.Bool || in[v].Len() != in[c].Len() {
				return nil, nil, fmt.Errorf("validity column %d of key %d", v, j)
			}
			ok = in[v].Bools()
		}
		k, null := orderKeys(in[c], ok)
		keys, nulls = append(keys, k), append(nulls, null)
	}
	return keys, nulls, nil
}

// sortTask runs a sort task; resolve gives the values of its inputs.
func (w *worker) sortTask(ctx context.Context, t *taskMsg, resolve func(string) (any, error)) (any, error) {
	var sp sortSpec
	if err := gob.NewDecoder(bytes.NewReader(t.Spec.Chunk)).Decode(&sp); err != nil {
		return nil, fmt.Errorf("decode sort task: %w", err)
	}
	in := make([]dtype.Slice, len(t.Spec.Inputs))
	for i, ref := range t.Spec.Inputs {
		v, err := resolve(ref)
		if err == nil {
			in[i], err = keptValues(v)
		}
		if err != nil {
			return nil, fmt.Errorf("sort: input %d: %w", i, err)
		}
	}
	// The inputs and their encoded keys are in memory meanwhile.
	var room uint64
	for _, s := range in {
		room += uint64(len(s.Bytes()))
	}
	w.store.reserve(2 * room)
	defer w.store.unreserve(2 * room)
	if t.Spec.Kind == kindDistinctRows {
		return distinctRows(sp, in)
	}
	keys, nulls, err := sortInputs(sp, in)
	if err != nil {
		return nil, fmt.Errorf("sort: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch t.Spec.Kind {
	case kindSortSample:
		var vals []int64
		for i, k := range keys[0] {
			if !nulls[0][i] {
				vals = append(vals, k)
			}
		}
		m := max(1, sp.Sample)
		if len(vals) <= m {
			return append([]int64{}, vals...), nil
		}
		out := make([]int64, m)
		for i := range out {
			out[i] = vals[i*len(vals)/m]
		}
		return out, nil
	case kindSortPerm:
		n := len(keys[0])
		perm := make([]int32, n)
		for i := range perm {
			perm[i] = int32(i)
		}
		slices.SortStableFunc(perm, func(a, b int32) int {
			for j := range keys {
				na, nb := nulls[j][a], nulls[j][b]
				if na || nb {
					switch {
					case na && nb:
						continue
					case na == sp.NullsFirst:
						return -1
					}
					return 1
				}
				c := cmp.Compare(keys[j][a], keys[j][b])
				if j < len(sp.Desc) && sp.Desc[j] {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
		s, _ := dtype.Of(perm)
		o := &plan.Output{Shape: []int{n}, Data: s}
		return []*plan.Output{o, o}, nil
	}
	return nil, fmt.Errorf("unknown sort task kind %q", t.Spec.Kind)
}

// rangeParts returns each row's output partition of a range shuffle on the first key:
// len(bounds)+1 partitions, partition p holding the keys in [bounds[p-1], bounds[p]) (the
// reverse for desc), nulls in the first partition (nullsFirst) or the last.
func rangeParts(vals dtype.Slice, valid []bool, bounds []int64, desc, nullsFirst bool) []int32 {
	k, null := orderKeys(vals, valid)
	last := len(bounds)
	out := make([]int32, len(k))
	for i, x := range k {
		if null[i] {
			if !nullsFirst {
				out[i] = int32(last)
			}
			continue
		}
		p := sort.Search(len(bounds), func(j int) bool { return bounds[j] > x })
		if desc {
			p = last - p
		}
		out[i] = int32(p)
	}
	return out
}

// distinctRows returns the rows of a partition to keep (sp.Keep of each key; nulls equal to
// nulls), in order, as a pair of equal outputs for gather tasks.
func distinctRows(sp sortSpec, in []dtype.Slice) ([]*plan.Output, error) {
	k, err := shuffleKeys(in, sp.Keys, sp.Valid)
	if err != nil {
		return nil, fmt.Errorf("distinct: %w", err)
	}
	n := k.Len()
	var at []int32
	if n > 0 {
		t, err := hashjoin.Build(k)
		if err != nil {
			return nil, fmt.Errorf("distinct: %w", err)
		}
		first, err := t.First(k)
		if err != nil {
			return nil, fmt.Errorf("distinct: %w", err)
		}
		rev := make(hashjoin.Keys, len(k))
		for c := range k {
			rev[c] = slices.Clone(k[c])
			slices.Reverse(rev[c])
		}
		tr, err := hashjoin.Build(rev)
		if err != nil {
			return nil, fmt.Errorf("distinct: %w", err)
		}
		lastRev, err := tr.First(rev)
		if err != nil {
			return nil, fmt.Errorf("distinct: %w", err)
		}
		for i := 0; i < n; i++ {
			last := n - 1 - int(lastRev[n-1-i])
			isFirst := int(first[i]) == i
			if (sp.Keep == "first" && isFirst) || (sp.Keep == "last" && last == i) || (sp.Keep == "none" && isFirst && last == i) {
				at = append(at, int32(i))
			}
		}
	}
	s, _ := dtype.Of(at)
	if at == nil {
		s = dtype.Make(dtype.Int32, 0)
	}
	o := &plan.Output{Shape: []int{len(at)}, Data: s}
	return []*plan.Output{o, o}, nil
}
