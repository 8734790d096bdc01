package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// groupTask runs a groupby task; resolve gives the values of its inputs.
func (w *worker) groupTask(ctx context.Context, t *taskMsg, resolve func(string) (any, error)) (any, error) {
	ins := make([]any, len(t.Spec.Inputs))
	for i, ref := range t.Spec.Inputs {
		v, err := resolve(ref)
		if err != nil {
			return nil, fmt.Errorf("groupby: input %d: %w", i, err)
		}
		ins[i] = v
	}
	var r *groupResult
	switch t.Spec.Kind {
	case kindGroupPartial:
		var sp groupSpec
		if err := gob.NewDecoder(bytes.NewReader(t.Spec.Chunk)).Decode(&sp); err != nil {
			return nil, fmt.Errorf("decode groupby task: %w", err)
		}
		p, where, err := w.groupPartial(ctx, sp, ins)
		if err != nil {
			return nil, fmt.Errorf("groupby partial: %w", err)
		}
		r = &groupResult{P: p, Where: map[string]int{w.cfg.Name + "\x00partitions " + where: 1}}
	case kindGroupCombine:
		ps := make([]*hashagg.Partial, len(ins))
		r = &groupResult{Where: map[string]int{w.cfg.Name + "\x00combines of partials on the CPU (hashagg.Combine)": 1}}
		for i, v := range ins {
			g, err := decodeGroupResult(v)
			if err != nil {
				return nil, fmt.Errorf("groupby combine: input %d: %w", i, err)
			}
			ps[i] = g.P
			mergeWhere(r.Where, g.Where)
		}
		p, err := hashagg.Combine(ps...)
		if err != nil {
			return nil, fmt.Errorf("groupby combine: %w", err)
		}
		r.P = p
	default:
		return nil, fmt.Errorf("unknown groupby task kind %q", t.Spec.Kind)
	}
	b, err := encodeGob(r)
	if err != nil {
		return nil, fmt.Errorf("groupby: encode partial: %w", err)
	}
	return b, nil
}

// groupPartial aggregates one partition: on this worker's GPU when it has one and the
// grouping is dense, else with hashagg on the CPU. where says which, for Path.
func (w *worker) groupPartial(ctx context.Context, sp groupSpec, ins []any) (*hashagg.Partial, string, error) {
	at := func(i int) (dtype.Slice, error) {
		if i < 0 || i >= len(ins) {
			return dtype.Slice{}, fmt.Errorf("input %d of %d", i, len(ins))
		}
		return keptValues(ins[i])
	}
	bools := func(i int) ([]bool, error) {
		if i < 0 {
			return nil, nil
		}
		s, err := at(i)
		if err != nil {
			return nil, err
		}
		if s.DType() != dtype.Bool {
			return nil, fmt.Errorf("validity input %d is %v", i, s.DType())
		}
		return s.Bools(), nil
	}
	keys := make([]hashagg.Key, len(sp.Keys))
	n := -1
	for j, k := range sp.Keys {
		s, err := at(k)
		if err != nil {
			return nil, "", fmt.Errorf("key %d: %w", j, err)
		}
		keys[j].Values = dtype.Convert(s, dtype.Int64).Int64s()
		if j < len(sp.KeyValid) {
			if keys[j].Valid, err = bools(sp.KeyValid[j]); err != nil {
				return nil, "", fmt.Errorf("key %d: %w", j, err)
			}
		}
		if n >= 0 && len(keys[j].Values) != n {
			return nil, "", fmt.Errorf("key %d has %d rows, key 0 %d", j, len(keys[j].Values), n)
		}
		n = len(keys[j].Values)
	}
	why := "no GPU on this worker"
	if w.cfg.GPU != "" {
		p, reason, err := w.groupPartialGPU(ctx, sp, ins, keys, n)
		if err != nil || p != nil {
			return p, reason, err
		}
		why = reason
	}
	vals := make([]hashagg.Values, len(sp.Vals))
	for j, c := range sp.Vals {
		s, err := at(c)
		if err != nil {
			return nil, "", fmt.Errorf("value column %d: %w", j, err)
		}
		vals[j] = hashagg.ValuesOf(s)
		if j < len(sp.ValValid) {
			if vals[j].Valid, err = bools(sp.ValValid[j]); err != nil {
				return nil, "", fmt.Errorf("value column %d: %w", j, err)
			}
		}
	}
	if sp.Pos >= 0 {
		s, err := at(sp.Pos)
		if err != nil {
			return nil, "", fmt.Errorf("row positions: %w", err)
		}
		pos := dtype.Convert(s, dtype.Int64).Int64s()
		for j := range vals {
			vals[j].Pos = pos
		}
	}
	g, err := hashagg.Group(keys)
	if err != nil {
		return nil, "", err
	}
	p, err := hashagg.Aggregate(g, sp.Specs, vals)
	if err != nil {
		return nil, "", err
	}
	return p, "aggregated on the CPU (hashagg; " + why + ")", nil
}

// groupPartialGPU aggregates one partition on this worker's GPU with the dense-code
// group-aggregate kernel (gpuarray/cuda's GroupAggChunks): each row's code is the mixed radix
// of its keys' offsets in this partition's key ranges, computed from the keys on the host and
// copied to the device; value columns held in device memory as int64 or float64 words are read
// there in place, others copied there first. It returns a nil partial and the reason when the
// grouping is not dense (an aggregation that needs the rows, keys spanning too many codes).
func (w *worker) groupPartialGPU(ctx context.Context, sp groupSpec, ins []any, keys []hashagg.Key, n int) (*hashagg.Partial, string, error) {
	if n <= 0 {
		return nil, "an empty partition", nil
	}
	dk := make([]hashagg.DenseKey, len(keys))
	for j, k := range keys {
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for i, x := range k.Values {
			if k.Valid == nil || k.Valid[i] {
				lo, hi = min(lo, x), max(hi, x)
			}
		}
		if lo > hi {
			dk[j] = hashagg.DenseKey{Min: 0, Card: 1}
			continue
		}
		card := uint64(hi) - uint64(lo) + 1
		if card == 0 || card > hashagg.MaxDenseGroups {
			return nil, fmt.Sprintf("key %d spans %d to %d, more than %d codes", j, lo, hi, hashagg.MaxDenseGroups), nil
		}
		dk[j] = hashagg.DenseKey{Min: lo, Card: int64(card)}
	}
	plan, err := hashagg.PlanDense(dk, sp.Specs, len(sp.Vals))
	if err != nil {
		return nil, err.Error(), nil
	}
	codes := make([]int64, n)
	for i := range codes {
		codes[i] = plan.Code(keys, i)
	}
	d, err := openDenseDevice()
	if err != nil {
		return nil, fmt.Sprintf("this worker's GPU: %v", err), nil
	}
	defer d.free()
	uploaded, inPlace := 0, 0
	upload := func(words []float64) (driver.DevicePtr, error) {
		p, err := d.upload(ctx, words)
		if err != nil {
			return 0, fmt.Errorf("copy %d words to GPU %d: %w", len(words), d.index(), err)
		}
		uploaded++
		return p, nil
	}
	codesPtr, err := upload(cuda.EncodeWords(dtype.OfInt64(codes)))
	if err != nil {
		return nil, "", err
	}
	run := func(codes, vals driver.DevicePtr, float bool, states ptx.GroupStates) (*cuda.GroupAggResult, error) {
		return d.fold(ctx, plan.Groups, float, states, codes, vals, int64(n))
	}
	size, err := run(codesPtr, codesPtr, false, ptx.GroupCount)
	if err != nil {
		return nil, "", fmt.Errorf("group-aggregate kernel: %w", err)
	}
	dense := make([]hashagg.DenseColumn, len(sp.Vals))
	for j, c := range sp.Vals {
		need := plan.Cols[j]
		if need == 0 {
			continue
		}
		var valid []bool
		if j < len(sp.ValValid) && sp.ValValid[j] >= 0 {
			s, err := keptValues(ins[sp.ValValid[j]])
			if err != nil {
				return nil, "", fmt.Errorf("value column %d's validity: %w", j, err)
			}
			valid = s.Bools()
		}
		dc, held := ins[c].(*devChunk)
		var dt dtype.DType
		if held {
			dt = dc.dt
		} else {
			s, err := keptValues(ins[c])
			if err != nil {
				return nil, "", fmt.Errorf("value column %d: %w", j, err)
			}
			dt = s.DType()
		}
		float := dt.IsFloat()
		colCodes, vals := codesPtr, codesPtr
		if valid != nil && !float {
			cc := make([]int64, n)
			for i, x := range codes {
				if valid[i] {
					cc[i] = x
				} else {
					cc[i] = -1
				}
			}
			if colCodes, err = upload(cuda.EncodeWords(dtype.OfInt64(cc))); err != nil {
				return nil, "", err
			}
			vals = colCodes
		}
		if need != hashagg.DenseCount || float {
			switch {
			case held && !dc.narrow && (dt == dtype.Int64 || dt == dtype.Float64) && (valid == nil || !float):
				if expr := dc.words(); expr != int64(n) {
					return nil, "", fmt.Errorf("value column %d holds %d words for %d rows", j, expr, n)
				}
				vals = dc.ptr
				inPlace++
			default:
				s, err := keptValues(ins[c])
				if err != nil {
					return nil, "", fmt.Errorf("value column %d: %w", j, err)
				}
				var words []float64
				if float {
					f := dtype.Convert(s, dtype.Float64).Float64s()
					if valid != nil {
						f = append([]float64(nil), f...)
						for i, ok := range valid {
							if !ok {
								f[i] = math.NaN()
							}
						}
					}
					words = cuda.EncodeWords(dtype.OfFloat64(f))
				} else {
					words = cuda.EncodeWords(dtype.Convert(s, dtype.Int64))
				}
				if vals, err = upload(words); err != nil {
					return nil, "", err
				}
			}
		}
		states := ptx.GroupCount
		for _, st := range []struct {
			on hashagg.DenseStates
			s  ptx.GroupStates
		}{{hashagg.DenseSum, ptx.GroupSum}, {hashagg.DenseSumSq, ptx.GroupSumSq}, {hashagg.DenseMin, ptx.GroupMin}, {hashagg.DenseMax, ptx.GroupMax}} {
			if need&st.on != 0 {
				states |= st.s
			}
		}
		tb, err := run(colCodes, vals, float, states)
		if err != nil {
			return nil, "", fmt.Errorf("group-aggregate kernel, value column %d: %w", j, err)
		}
		dense[j] = hashagg.DenseColumn{IsInt: !float, Count: tb.Count, SumI: tb.SumI, SumF: tb.SumF, SumSq: tb.SumSq,
			MinI: tb.MinI, MaxI: tb.MaxI, MinF: tb.MinF, MaxF: tb.MaxF}
	}
	p, err := plan.Partial(sp.Specs, size.Count, dense)
	if err != nil {
		return nil, "", err
	}
	where := fmt.Sprintf("aggregated on its GPU %d (dense-code group-aggregate kernel, %d codes; key codes computed on the host and copied there; %d value columns read in place from device memory, %d arrays copied from the host)",
		d.index(), plan.Groups, inPlace, uploaded-1)
	return p, where, nil
}

// denseDevice is what groupPartialGPU needs of this worker's GPU: copies to its memory and
// the group-aggregate kernel over them. A variable (openDenseDevice) so that tests without a
// GPU run the path over a host emulation of the kernel.
type denseDevice interface {
	index() int
	upload(ctx context.Context, words []float64) (driver.DevicePtr, error)
	fold(ctx context.Context, groups int, float bool, states ptx.GroupStates, codes, vals driver.DevicePtr, n int64) (*cuda.GroupAggResult, error)
	free() // gives back what upload took
}

var openDenseDevice = func() (denseDevice, error) {
	d, err := cuda.Open(0)
	if err != nil {
		return nil, err
	}
	return &cudaDense{d: d}, nil
}

// cudaDense is denseDevice on a CUDA device.
type cudaDense struct {
	d      *cuda.Device
	allocs []driver.DevicePtr
}

func (c *cudaDense) index() int { return c.d.Info.Index }

func (c *cudaDense) upload(ctx context.Context, words []float64) (driver.DevicePtr, error) {
	var p driver.DevicePtr
	err := c.d.Do(ctx, func() error {
		var err error
		if p, err = c.d.Pool().Alloc(uint64(max(len(words), 1)) * 8); err != nil {
			return err
		}
		c.allocs = append(c.allocs, p)
		return c.d.CopyToDevice(p, words)
	})
	return p, err
}

func (c *cudaDense) fold(ctx context.Context, groups int, float bool, states ptx.GroupStates, codes, vals driver.DevicePtr, n int64) (*cuda.GroupAggResult, error) {
	return cuda.GroupAggChunks(ctx, c.d, groups, float, states, []cuda.GroupAggChunk{{Codes: codes, Vals: vals, N: n}})
}

func (c *cudaDense) free() {
	_ = c.d.Do(context.Background(), func() error {
		for _, p := range c.allocs {
			c.d.Pool().Free(p)
		}
		return nil
	})
	c.allocs = nil
}
