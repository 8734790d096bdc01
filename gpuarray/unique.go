package gpuarray

import "fmt"

// The Array API's set functions, over the flattened array: compositions of Sort (the ravelled
// array brought into one chunk) and Mask, so they run wherever Compute runs. Their lengths are
// unknown until computed (Shape reports -1, as for Mask); computing one sorts the array once
// for the mask and once for the values (UniqueInverse and UniqueAll sort more: argsorts).

// UniqueValues returns the sorted unique values of x, flattened, as the Array API's
// unique_values and numpy.unique_values: NaNs are distinct from each other (each is kept, at
// the end); -0 and +0 are one value (the first of them in x is kept).
func UniqueValues(x *Array) *Array {
	s, first, _, err := uniqueSorted(x, "UniqueValues")
	if err != nil {
		return errArray(err)
	}
	if first == nil {
		return s
	}
	return s.Mask(first)
}

// UniqueCounts returns UniqueValues(x) and how many times each occurs in x (int64), as the
// Array API's unique_counts (each NaN counts once).
func UniqueCounts(x *Array) (values, counts *Array) {
	s, first, last, err := uniqueSorted(x, "UniqueCounts")
	if err != nil {
		return errArray(err), errArray(err)
	}
	if first == nil {
		return s, s.AsType(Int64)
	}
	n := s.Shape()[0]
	pos := Arange(0, float64(n), 1, WithDType(Int64))
	// a value's run in the sorted array ends at its last position and starts at its first
	return s.Mask(first), pos.Mask(last).Sub(pos.Mask(first)).Add(1).AsType(Int64)
}

// uniqueSorted returns x flattened and sorted, and masks of the first and the last of each
// run of equal values in it (nil for an empty x).
func uniqueSorted(x *Array, name string) (s, first, last *Array, err error) {
	if err := x.Err(); err != nil {
		return nil, nil, nil, err
	}
	flat := x.Ravel()
	if x.NDim() == 0 {
		flat = x.Reshape(1)
	}
	s = Sort(flat, 0)
	if err := s.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	n := s.Shape()[0]
	if n == 0 {
		return s, nil, nil, nil
	}
	one := FromSliceBool([]bool{true}, Shape(1))
	differ := s.Slice(From(1)).Ne(s.Slice(Span(0, n-1))) // NaN differs from NaN
	first = Concat(one, differ)
	last = Concat(differ, one)
	if err := firstErr([]*Array{first, last}); err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	markRunBounds(first.n, s.n, false) // for a GPU compute (unique_gpu.go)
	markRunBounds(last.n, s.n, true)
	return s, first, last, nil
}

// UniqueInverse returns UniqueValues(x) and, for each element of x, the int64 index of its
// value among them (in x's shape), as the Array API's unique_inverse: values[inverse] is x.
func UniqueInverse(x *Array) (values, inverse *Array) {
	values, _, inverse, _ = uniqueAll(x, "UniqueInverse")
	return values, inverse
}

// UniqueAll returns UniqueValues(x), the index in the flattened x of each value's first
// occurrence, UniqueInverse's inverse and UniqueCounts' counts, as the Array API's unique_all.
func UniqueAll(x *Array) (values, indices, inverse, counts *Array) {
	return uniqueAll(x, "UniqueAll")
}

func uniqueAll(x *Array, name string) (values, indices, inverse, counts *Array) {
	s, first, last, err := uniqueSorted(x, name)
	if err != nil {
		e := errArray(err)
		return e, e, e, e
	}
	if first == nil {
		i := s.AsType(Int64)
		return s, i, i.Reshape(x.Shape()...), i
	}
	flat := s.Shape()[0]
	perm := Argsort(x.Reshape(flat), 0) // stable: each run starts at its first occurrence
	// the run of each sorted position, then back in x's order through the inverse permutation
	run := CumulativeSum(first.AsType(Int64), 0, false).Sub(1).AsType(Int64)
	inverse = Take(run, Argsort(perm, 0), 0).Reshape(x.Shape()...)
	pos := Arange(0, float64(flat), 1, WithDType(Int64))
	counts = pos.Mask(last).Sub(pos.Mask(first)).Add(1).AsType(Int64)
	return s.Mask(first), perm.Mask(first), inverse, counts
}
