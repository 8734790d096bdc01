package dataframe

import (
	"fmt"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// host returns the frame computed with opts, on the host.
func (f *Frame) host(opts []gpuarray.ComputeOption) (*Frame, *hostTable, error) {
	c, err := f.Compute(opts...)
	if err != nil {
		return nil, nil, err
	}
	ht, err := hostOf(c.done)
	if err != nil {
		return nil, nil, err
	}
	return c, ht, nil
}

func (f *Frame) rowsFrame(what string, opts []gpuarray.ComputeOption, pick func(n int) (int, int)) (*Frame, error) {
	c, ht, err := f.host(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	lo, hi := pick(len(ht.rows))
	lo, hi = max(0, min(lo, len(ht.rows))), max(0, min(hi, len(ht.rows)))
	lo = min(lo, hi)
	t, err := tableOf(ht.slice(lo, hi))
	if err != nil {
		return nil, err
	}
	rc, _ := newRun(opts)
	rc.notes = c.path
	return rc.computed(f, t), nil
}

// Head computes the frame and returns its first n rows (one partition).
func (f *Frame) Head(n int, opts ...gpuarray.ComputeOption) (*Frame, error) {
	return f.rowsFrame("Head", opts, func(int) (int, int) { return 0, n })
}

// Tail computes the frame and returns its last n rows (one partition).
func (f *Frame) Tail(n int, opts ...gpuarray.ComputeOption) (*Frame, error) {
	return f.rowsFrame("Tail", opts, func(m int) (int, int) { return m - n, m })
}

// Len returns the number of rows, computing the frame's filters when they make it unknown.
func (f *Frame) Len(opts ...gpuarray.ComputeOption) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if f.nrows >= 0 {
		return f.nrows, nil
	}
	rc, err := newRun(opts)
	if err != nil {
		return 0, err
	}
	t, err := f.build(rc, map[string]bool{})
	if err != nil {
		return 0, err
	}
	out, err := rc.computeArrays([]*gpuarray.Array{t.rows.Ge(0).AsType(gpuarray.Int64).Sum()})
	if err != nil {
		return 0, err
	}
	n, err := out[0].ToSliceInt64()
	if err != nil {
		return 0, err
	}
	return int(n[0]), nil
}

// Shape returns the number of rows and columns.
func (f *Frame) Shape(opts ...gpuarray.ComputeOption) (rows, cols int, err error) {
	n, err := f.Len(opts...)
	return n, len(f.fields), err
}

func (f *Frame) hostCol(name string, opts []gpuarray.ComputeOption) (*hostCol, error) {
	if _, err := f.field(name); err != nil {
		return nil, err
	}
	_, ht, err := f.Select(name).host(opts)
	if err != nil {
		return nil, err
	}
	return ht.cols[0], nil
}

// Int64s computes the frame and returns column name as int64s (nulls as 0; see Valid).
func (f *Frame) Int64s(name string, opts ...gpuarray.ComputeOption) ([]int64, error) {
	h, err := f.hostCol(name, opts)
	if err != nil {
		return nil, err
	}
	if h.dt == String || h.dt == Category {
		return nil, fmt.Errorf("Int64s: column %q is %s", name, h.dt)
	}
	v := dtype.Convert(h.vals, gpuarray.Int64).Int64s()
	for i := range v {
		if !h.isValid(i) {
			v[i] = 0
		}
	}
	return v, nil
}

// Float64s computes the frame and returns column name as float64s (nulls as NaN).
func (f *Frame) Float64s(name string, opts ...gpuarray.ComputeOption) ([]float64, error) {
	h, err := f.hostCol(name, opts)
	if err != nil {
		return nil, err
	}
	if h.dt == String || h.dt == Category {
		return nil, fmt.Errorf("Float64s: column %q is %s", name, h.dt)
	}
	v := h.vals.ToFloat64()
	for i := range v {
		if !h.isValid(i) {
			v[i] = nan()
		}
	}
	return v, nil
}

// Bools computes the frame and returns column name as bools (nulls as false).
func (f *Frame) Bools(name string, opts ...gpuarray.ComputeOption) ([]bool, error) {
	h, err := f.hostCol(name, opts)
	if err != nil {
		return nil, err
	}
	if h.dt != Bool {
		return nil, fmt.Errorf("Bools: column %q is %s, want bool", name, h.dt)
	}
	v := dtype.Convert(h.vals, gpuarray.Bool).Bools()
	for i := range v {
		v[i] = v[i] && h.isValid(i)
	}
	return v, nil
}

// Strings computes the frame and returns column name as strings (nulls as "").
func (f *Frame) Strings(name string, opts ...gpuarray.ComputeOption) ([]string, error) {
	h, err := f.hostCol(name, opts)
	if err != nil {
		return nil, err
	}
	v := make([]string, h.vals.Len())
	for i := range v {
		if h.isValid(i) {
			v[i] = h.stringAt(i)
		}
	}
	return v, nil
}

// Times computes the frame and returns a datetime column as times in UTC (nulls as the zero
// time).
func (f *Frame) Times(name string, opts ...gpuarray.ComputeOption) ([]time.Time, error) {
	h, err := f.hostCol(name, opts)
	if err != nil {
		return nil, err
	}
	if !h.dt.IsDatetime() {
		return nil, fmt.Errorf("Times: column %q is %s, want a datetime", name, h.dt)
	}
	per := h.dt.unitTicks()
	v := make([]time.Time, h.vals.Len())
	for i, t := range h.vals.Int64s() {
		if h.isValid(i) {
			v[i] = time.Unix(t/per, (t%per)*(1e9/per)).UTC()
		}
	}
	return v, nil
}

// Valid computes the frame and returns which rows of column name are not null.
func (f *Frame) Valid(name string, opts ...gpuarray.ComputeOption) ([]bool, error) {
	h, err := f.hostCol(name, opts)
	if err != nil {
		return nil, err
	}
	v := make([]bool, h.vals.Len())
	for i := range v {
		v[i] = h.isValid(i)
	}
	return v, nil
}

// Array returns column name as a gpuarray array (values of numeric, bool and datetime
// columns; codes of categoricals; positions into the strings of string columns), lazy unless
// the frame is computed. Filters leave its length unknown (gpuarray's masks).
func (f *Frame) Array(name string) (*gpuarray.Array, error) {
	if _, err := f.field(name); err != nil {
		return nil, err
	}
	rc, err := newRun(nil)
	if err != nil {
		return nil, err
	}
	t, err := f.build(rc, map[string]bool{name: true})
	if err != nil {
		return nil, err
	}
	c, err := t.find(name)
	if err != nil {
		return nil, err
	}
	return c.arr, nil
}
