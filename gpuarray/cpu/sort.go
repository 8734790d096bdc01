package cpu

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/internal/parallel"
)

// applySort sorts the lines of a block (row-major, shape) along c.Axis in the values' own
// dtype, stably, NaN last ascending (first descending) as NumPy's stable sort and the Array
// API's descending sort: the sorted values in place of in, or their int64 indices.
func applySort(ctx context.Context, c *plan.CallStep, in dtype.Slice, shape []int) (dtype.Slice, []int, error) {
	l, err := fft.Split(shape, c.Axis)
	if err != nil {
		return dtype.Slice{}, nil, fmt.Errorf("%v: %w", c.Fn, err)
	}
	if in.Len() != l.Count()*l.N {
		return dtype.Slice{}, nil, fmt.Errorf("%v: block of %d values for shape %s", c.Fn, in.Len(), expr.ShapeString(shape))
	}
	o := sortOrder{desc: c.Fn == expr.FnSortDesc || c.Fn == expr.FnArgsortDesc, arg: c.Fn == expr.FnArgsort || c.Fn == expr.FnArgsortDesc}
	var res dtype.Slice
	switch in.DType() {
	case dtype.Float64:
		res, err = sortLines(ctx, in.Float64s(), l, o)
	case dtype.Float32:
		res, err = sortLines(ctx, in.Float32s(), l, o)
	case dtype.Int64:
		res, err = sortLines(ctx, in.Int64s(), l, o)
	case dtype.Int32:
		res, err = sortLines(ctx, in.Int32s(), l, o)
	case dtype.Int16:
		res, err = sortLines(ctx, in.Int16s(), l, o)
	case dtype.Int8:
		res, err = sortLines(ctx, in.Int8s(), l, o)
	case dtype.Uint64:
		res, err = sortLines(ctx, in.Uint64s(), l, o)
	case dtype.Uint32:
		res, err = sortLines(ctx, in.Uint32s(), l, o)
	case dtype.Uint16:
		res, err = sortLines(ctx, in.Uint16s(), l, o)
	case dtype.Uint8:
		res, err = sortLines(ctx, in.Uint8s(), l, o)
	case dtype.Bool: // false < true, as uint8
		res, err = sortLines(ctx, dtype.Convert(in, dtype.Uint8).Uint8s(), l, o)
	default:
		return dtype.Slice{}, nil, fmt.Errorf("%v: %v values have no order (sort real numbers)", c.Fn, in.DType())
	}
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	if res.DType() != c.DType {
		res = dtype.Convert(res, c.DType)
	}
	if len(c.Keep) > 0 {
		return keepPositions(res, l, c.Keep), c.OutShape(shape), nil
	}
	return res, slices.Clone(shape), nil
}

// keepPositions returns the values at positions keep of each line of x (lines l), row-major
// with the axis len(keep) long.
func keepPositions(x dtype.Slice, l fft.Lines, keep []int) dtype.Slice {
	k := len(keep)
	out := dtype.Make(x.DType(), l.Count()*k)
	for o := 0; o < l.Outer; o++ {
		for j, p := range keep {
			src := (o*l.N + p) * l.Inner
			dst := (o*k + j) * l.Inner
			dtype.Copy(out.Slice(dst, dst+l.Inner), x.Slice(src, src+l.Inner))
		}
	}
	return out
}

type sortOrder struct{ desc, arg bool }

type number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// compareNaNLast orders numbers with NaN above everything (NaNs equal), as NumPy's sort.
func compareNaNLast[T cmp.Ordered](a, b T) int {
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// sortLines sorts each line of x along l: in place, or into the indices for o.arg.
func sortLines[T number](ctx context.Context, x []T, l fft.Lines, o sortOrder) (dtype.Slice, error) {
	var idxOut []int64
	if o.arg {
		idxOut = make([]int64, len(x))
	}
	float := T(1)/T(2) != 0 // a float type: the index path keeps the order of signed zeros
	err := parallel.ForEach(ctx, l.Count(), func() func(int) {
		buf := make([]T, l.N)
		idx := make([]int64, l.N)
		var nans, zeros []T
		var tmp []byte // radix scratch
		var keys, ktmp []uint64
		var itmp []int64
		less := func(i, j int64) int {
			c := compareNaNLast(buf[i], buf[j])
			if o.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
			return cmp.Compare(i, j) // stable: a total order, so the unstable sort is exact
		}
		return func(k int) {
			oi, ii := k/l.Inner, k%l.Inner
			s, st := oi*l.N*l.Inner+ii, l.Inner
			for j := range buf {
				buf[j] = x[s+j*st]
			}
			if !o.arg && !float { // equal integers are identical: sort the values themselves
				sortNumbers(buf, &tmp)
				if o.desc {
					slices.Reverse(buf)
				}
				for j, v := range buf {
					x[s+j*st] = v
				}
				return
			}
			if !o.arg {
				sortFloats(buf, &nans, &zeros, &tmp, o.desc)
				for j, v := range buf {
					x[s+j*st] = v
				}
				return
			}
			if l.N >= radixMin {
				argsortRadix(buf, o.desc, idx, &keys, &ktmp, &itmp)
			} else {
				for j := range idx {
					idx[j] = int64(j)
				}
				slices.SortFunc(idx, less)
			}
			for j, i := range idx {
				if o.arg {
					idxOut[s+j*st] = i
				} else {
					x[s+j*st] = buf[i]
				}
			}
		}
	})
	if err != nil {
		return dtype.Slice{}, err
	}
	if o.arg {
		return dtype.OfInt64(idxOut), nil
	}
	s, err := dtype.Of(x)
	return s, err
}

// sortFloats sorts the floats of v as the stable sort by compareNaNLast would (reversed for
// desc), faster: the NaNs set aside in their order, the numbers by sortNumbers, and the run
// of zeros, which it may reorder (-0 == +0), rewritten in their original order.
func sortFloats[T number](v []T, nans, zeros *[]T, tmp *[]byte, desc bool) {
	*nans, *zeros = (*nans)[:0], (*zeros)[:0]
	k := 0
	for _, f := range v {
		switch {
		case f != f:
			*nans = append(*nans, f)
			continue
		case f == 0:
			*zeros = append(*zeros, f)
		}
		v[k] = f
		k++
	}
	num := v[:k]
	sortNumbers(num, tmp)
	if desc {
		slices.Reverse(num)
	}
	if len(*zeros) > 1 {
		at := slices.Index(num, 0) // the run of zeros: all compare equal
		copy(num[at:], *zeros)
	}
	if !desc {
		copy(v[k:], *nans)
		return
	}
	copy(v[len(*nans):], num) // NaN first: move the numbers up, then the NaNs in front
	copy(v, *nans)
}
