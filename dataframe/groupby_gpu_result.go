package dataframe

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// A GPU groupby's result kept on the device: the group-aggregate kernels' tables stay in
// device memory (gpuarray.GroupAggColumn.Keep), the codes that are groups are selected there
// (a mask compacted on the device), each key is decoded from its code (or, for groups
// numbered by sorting, from the group's packed key words) and each aggregate finished (a mean
// is a sum over a count) by fused kernels, so only the result's length comes back; what is
// printed or asked for is copied later. The values are those the host's finalize makes from
// the same tables (DensePlan.Partial, finalTable): the same integer and float operations in
// the same order, row for row, the groups in code order.

// deviceResults lets a device groupby keep its result on the GPU; GPUNOTES_GPU_GROUPBY_RESULT=host
// builds it on the host as before (for comparisons; the tests set the variable).
var deviceResults = os.Getenv("GPUNOTES_GPU_GROUPBY_RESULT") != "host"

// deviceResultBlocker says why the result of a device groupby by keys of types keys with
// specs over value columns of types vals is built on the host, or "" when it can stay on the
// device.
func deviceResultBlocker(keys []DType, vals []DType, specs []hashagg.Spec) string {
	if !deviceResults {
		return "off"
	}
	for _, k := range keys {
		if k == String {
			return "string keys' dictionaries are built on the host"
		}
	}
	for _, s := range specs {
		switch s.Op {
		case hashagg.Size, hashagg.Count, hashagg.Sum, hashagg.Mean:
		case hashagg.Min, hashagg.Max:
			if vals[s.Col].IsFloat() {
				return "float minima and maxima are ordered words on the device"
			}
		case hashagg.Top:
			if !vals[s.Col].IsFloat() || len(specs) != 1 {
				return "the top of integers is picked on the host"
			}
		default:
			return fmt.Sprintf("%v is finished on the host", s.Op)
		}
	}
	return ""
}

// keptTables reports whether every table of tables stayed on the device.
func keptTables(tables []gpuarray.GroupAggTables) bool {
	for _, tb := range tables {
		if tb.DevCount == nil {
			return false
		}
	}
	return true
}

// tablesToHost copies the tables kept on the device to the host slices, as GroupAggregate
// returns them without Keep.
func tablesToHost(tables []gpuarray.GroupAggTables, opts []gpuarray.ComputeOption) error {
	ints := func(a *gpuarray.Array) ([]int64, error) {
		if a == nil {
			return nil, nil
		}
		return a.ToSliceInt64(opts...)
	}
	for i := range tables {
		tb := &tables[i]
		if tb.DevCount == nil {
			continue
		}
		var err error
		if tb.Count, err = ints(tb.DevCount); err != nil {
			return fmt.Errorf("group tables to the host: %w", err)
		}
		if s := tb.DevSum; s != nil {
			if s.DType() == gpuarray.Float64 {
				tb.SumF, err = s.ToSlice(opts...)
			} else {
				tb.SumI, err = s.ToSliceInt64(opts...)
			}
			if err != nil {
				return fmt.Errorf("group tables to the host: %w", err)
			}
		}
		if s := tb.DevSumSq; s != nil {
			if tb.SumSq, err = s.ToSlice(opts...); err != nil {
				return fmt.Errorf("group tables to the host: %w", err)
			}
		}
		if tb.MinI, err = ints(tb.DevMin); err != nil {
			return fmt.Errorf("group tables to the host: %w", err)
		}
		if tb.MaxI, err = ints(tb.DevMax); err != nil {
			return fmt.Errorf("group tables to the host: %w", err)
		}
		tb.DevCount, tb.DevSum, tb.DevSumSq, tb.DevMin, tb.DevMax = nil, nil, nil, nil, nil
	}
	return nil
}

// decodeDevice returns dk's values of codes (or packed words) v on the device: Min + v/stride
// % Card, as decodeKey does on the host; slowest is true for a key that varies slowest, whose
// quotient is below Card already.
func decodeDevice(v *gpuarray.Array, dk hashagg.DenseKey, stride int64, slowest bool) *gpuarray.Array {
	if stride != 1 {
		v = gpuarray.FloorDivide(v, stride)
	}
	if !slowest {
		v = gpuarray.Remainder(v, dk.Card)
	}
	if dk.Min != 0 {
		v = v.Add(dk.Min)
	}
	return v
}

// deviceTable builds the result of p's specs from tables kept on the device (tables[0] the
// rows of each code, tables[i+1] value column i's), with the keys of keyCols decoded from
// plan's codes or, when the groups were numbered by sorting, from sg's held key words; the
// arrays are computed with opts and stay on the GPU.
func deviceTable(keyCols, valCols []*column, p *aggPlan, plan *hashagg.DensePlan, tables []gpuarray.GroupAggTables, sg *sortedGroups, opts []gpuarray.ComputeOption) (*table, error) {
	rows := tables[0].DevCount
	var present *gpuarray.Array // nil: every code is a group (numbered by sorting)
	sel := func(a *gpuarray.Array) *gpuarray.Array {
		if present == nil {
			return a
		}
		return a.Mask(present)
	}
	keyArrs := make([]*gpuarray.Array, len(keyCols))
	if sg == nil {
		// Computed once (held on the device with opts), read by every selection.
		var err error
		if present, err = computeOne(rows.Gt(int64(0)), opts); err != nil {
			return nil, fmt.Errorf("groupby on a GPU: the groups of the codes: %w", err)
		}
		codes := sel(gpuarray.Arange(plan.Groups, gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes([]int{plan.Groups})))
		for i := range keyCols {
			keyArrs[i] = decodeDevice(codes, plan.Keys[i], plan.Strides[i], i == 0)
		}
	} else {
		for j, ks := range sg.words {
			for i, k := range ks {
				keyArrs[k] = decodeDevice(sg.held[j], sg.plans[j].Keys[i], sg.plans[j].Strides[i], i == 0)
			}
		}
	}
	var xs []any
	cols := make([]*column, 0, len(keyCols)+len(p.specs))
	for i, c := range keyCols {
		adt, ok := c.dt.array()
		if !ok {
			return nil, fmt.Errorf("groupby on a GPU: key %q: no array type for %s", c.name, c.dt)
		}
		cols = append(cols, &column{name: c.name, dt: c.dt, arr: keyArrs[i].AsType(adt), heap: c.heap})
	}
	// nulls[i] counts the groups of spec i with no value (a null result), where it can have any.
	nulls := map[int]*gpuarray.Array{}
	valid := map[int]*gpuarray.Array{}
	for si, s := range p.specs {
		ot := p.out[si]
		adt, ok := ot.array()
		if !ok {
			return nil, fmt.Errorf("groupby on a GPU: %s: no array type for %s", p.names[si], ot)
		}
		var v, cnt *gpuarray.Array
		if s.Op != hashagg.Size && (s.Col < 0 || s.Col+1 >= len(tables)) {
			return nil, fmt.Errorf("groupby on a GPU: spec %d reads value column %d of %d", si, s.Col, len(tables)-1)
		}
		switch s.Op {
		case hashagg.Size:
			v = rows
		case hashagg.Count:
			v = tables[s.Col+1].DevCount
		case hashagg.Sum:
			v = tables[s.Col+1].DevSum
		case hashagg.Mean:
			tb := tables[s.Col+1]
			cnt = tb.DevCount
			v = tb.DevSum.AsType(gpuarray.Float64).Div(cnt.AsType(gpuarray.Float64))
		case hashagg.Min, hashagg.Max:
			tb := tables[s.Col+1]
			cnt = tb.DevCount
			m := tb.DevMin
			if s.Op == hashagg.Max {
				m = tb.DevMax
			}
			v = gpuarray.Where(cnt.Gt(int64(0)), m, int64(0)) // no value: the zero state, as the host's
		default:
			return nil, fmt.Errorf("groupby on a GPU: %v has no device result (internal)", s.Op)
		}
		if v == nil {
			return nil, fmt.Errorf("groupby on a GPU: %v of value column %d: a table was not kept (internal)", s.Op, s.Col)
		}
		if cnt != nil && (valCols[s.Col].valid != nil || valCols[s.Col].dt.IsFloat()) {
			// Only columns with nulls or NaNs can leave a group without a value.
			valid[si] = sel(cnt.Gt(int64(0)))
			nulls[si] = sel(cnt.Eq(int64(0))).AsType(gpuarray.Int64).Sum()
		}
		cols = append(cols, &column{name: p.names[si], dt: ot, arr: sel(v).AsType(adt)})
	}
	for _, c := range cols {
		xs = append(xs, c.arr)
	}
	at := map[int]int{}
	for si := range p.specs {
		if nulls[si] != nil {
			at[si] = len(xs)
			xs = append(xs, nulls[si], valid[si])
		}
	}
	got, err := gpuarray.ComputeAll(append(xs, anyOpts(opts)...)...)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: the result on the device: %w", err)
	}
	for i, c := range cols {
		c.arr = got[i]
	}
	for si, j := range at {
		n, err := got[j].ToSliceInt64(opts...)
		if err != nil || len(n) != 1 {
			return nil, fmt.Errorf("groupby on a GPU: %s's nulls: %v", p.names[si], err)
		}
		if n[0] > 0 {
			cols[len(keyCols)+si].valid = got[j+1]
		}
	}
	n := 0
	if len(cols) > 0 {
		n = int(cols[0].arr.Size())
	}
	return &table{cols: cols, rows: resultRows(n)}, nil
}

// gpuTrace is GPUNOTES_GPU_TRACE=1, as gpuarray/cuda's trace: phase times on stderr.
var gpuTrace = os.Getenv("GPUNOTES_GPU_TRACE") == "1"

// phases times the phases of one step for the trace (nothing without it).
type phases struct {
	what  string
	start time.Time
	last  time.Time
	parts []string
}

func newPhases(what string) *phases {
	if !gpuTrace {
		return nil
	}
	now := time.Now()
	return &phases{what: what, start: now, last: now}
}

// mark ends the phase that started at the previous mark.
func (p *phases) mark(name string) {
	if p == nil {
		return
	}
	now := time.Now()
	p.parts = append(p.parts, fmt.Sprintf("%s %.4f s", name, now.Sub(p.last).Seconds()))
	p.last = now
}

// done prints the phases.
func (p *phases) done() {
	if p == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "gpunotes trace: %s: %.4f s: %s\n", p.what, time.Since(p.start).Seconds(), strings.Join(p.parts, "; "))
}

// deviceTop builds the n largest (or smallest) values of each group on the device, as
// topTable lays them out on the host: the groups in code order, each group's values largest
// (smallest) first, keys repeated. The rows are sorted by (code, value), the values negated
// first for the largest (exact for floats), and a row is kept where its code differs from the
// code n rows before it: the first n of its group's run. Only float values take it
// (deviceResultBlocker): an int64's negation overflows at its minimum.
func deviceTop(keyCols []*column, h *holisticInput, plan *hashagg.DensePlan, s hashagg.Spec, fd Field, opts []gpuarray.ComputeOption) (*table, error) {
	vals := h.vals
	if s.Largest {
		vals = vals.Neg()
	}
	srt, err := sortByValue(&holisticInput{vals: vals, codes: h.codes, float: h.float}, opts)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: sort by (group, value): %w", err)
	}
	n := int(srt.codes.Size())
	k := s.N
	row := gpuarray.Arange(n, gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes(srt.codes.Chunks()[0]))
	back := row.Sub(int64(k))
	at, err := computeOne(gpuarray.Where(back.Lt(int64(0)), int64(0), back), opts)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: top %d: %w", k, err)
	}
	var tk taker
	before, err := tk.takeKept(srt.codes, at, opts)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: top %d: %w", k, err)
	}
	keepRow := gpuarray.LogicalAnd(srt.codes.Ge(int64(0)), gpuarray.LogicalOr(row.Lt(int64(k)), before.Ne(srt.codes)))
	m, err := computeOne(keepRow, opts)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: top %d: %w", k, err)
	}
	codes := srt.codes.Mask(m)
	v := srt.vals.Mask(m)
	if s.Largest {
		v = v.Neg()
	}
	adt, ok := fd.DType.array()
	if !ok {
		return nil, fmt.Errorf("groupby on a GPU: %q: no array type for %s", fd.Name, fd.DType)
	}
	var xs []any
	cols := make([]*column, 0, len(keyCols)+1)
	for i, c := range keyCols {
		kdt, ok := c.dt.array()
		if !ok {
			return nil, fmt.Errorf("groupby on a GPU: key %q: no array type for %s", c.name, c.dt)
		}
		cols = append(cols, &column{name: c.name, dt: c.dt, arr: decodeDevice(codes, plan.Keys[i], plan.Strides[i], i == 0).AsType(kdt), heap: c.heap})
	}
	cols = append(cols, &column{name: fd.Name, dt: fd.DType, arr: v.AsType(adt)})
	for _, c := range cols {
		xs = append(xs, c.arr)
	}
	got, err := gpuarray.ComputeAll(append(xs, anyOpts(opts)...)...)
	if err != nil {
		return nil, fmt.Errorf("groupby on a GPU: top %d on the device: %w", k, err)
	}
	for i, c := range cols {
		c.arr = got[i]
	}
	return &table{cols: cols, rows: resultRows(int(cols[0].arr.Size()))}, nil
}

// resultRows is the row positions of a result of n rows, one partition.
func resultRows(n int) *gpuarray.Array {
	if n == 0 {
		return gpuarray.FromSliceInt64([]int64{})
	}
	return gpuarray.Arange(n, gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes([]int{n}))
}
