package gpuarray

import (
	"fmt"
	"os"
	"reflect"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// This file holds NumPy's ndarray methods that had no Array method, with NumPy's defaults
// (apicov's NDArrayRows lists every ndarray method and its name here). Methods of ndarray
// that a lazy array cannot have are left out; apicov says why for each:
//   - fill, put, resize, setfield, setflags, byteswap(inplace): they change the array in
//     place, and an Array is an immutable expression (Where, Take and friends give new ones);
//   - view, getfield, base, data, ctypes, strides, flags, flat: they expose or reinterpret
//     one memory buffer, and a lazy chunked array has none until computed;
//   - dump, dumps: Python's pickle.

// sortMethod reads the arguments of the Sort and Argsort methods: an optional axis (default
// -1, as ndarray.sort) and SortOptions.
func sortMethod(a *Array, indices bool, what string, args []any) *Array {
	axis := -1
	var opts []SortOption
	seenAxis := false
	for i, v := range args {
		switch v := v.(type) {
		case int:
			if seenAxis {
				return errArray(fmt.Errorf("%s: two axes given (%v), want one", what, args))
			}
			axis, seenAxis = v, true
		case SortOption:
			opts = append(opts, v)
		default:
			return errArray(fmt.Errorf("%s: argument %d is a %T, want an axis (int) or a SortOption", what, i+1, v))
		}
	}
	if indices {
		return Argsort(a, axis, opts...)
	}
	return Sort(a, axis, opts...)
}

// takeMethod is ndarray.take: along axis, or from the flattened array when none is given.
func takeMethod(a *Array, indices *Array, axis []int) *Array {
	switch len(axis) {
	case 0:
		return Take(a.Ravel(), indices, 0)
	case 1:
		return Take(a, indices, axis[0])
	}
	return errArray(fmt.Errorf("Take: %d axes given, want at most one", len(axis)))
}

// offset is a diagonal's optional offset (default 0).
func offset(k []int) int {
	if len(k) == 0 {
		return 0
	}
	return k[0]
}

// scanMethod is ndarray.cumsum and cumprod: along axis, or over the flattened array when no
// axis is given.
func scanMethod(a *Array, what string, axis []int, scan func(*Array, int, bool) *Array) *Array {
	switch len(axis) {
	case 0:
		return scan(a.Ravel(), 0, false)
	case 1:
		return scan(a, axis[0], false)
	}
	return errArray(fmt.Errorf("%s: %d axes given, want at most one", what, len(axis)))
}

// Cumsum returns the cumulative sum along axis, or over the flattened array when no axis is
// given (ndarray.cumsum; CumulativeSum without the initial zero).
func (a *Array) Cumsum(axis ...int) *Array { return scanMethod(a, "Cumsum", axis, CumulativeSum) }

// Cumprod returns the cumulative product along axis, or over the flattened array when no axis
// is given (ndarray.cumprod).
func (a *Array) Cumprod(axis ...int) *Array {
	return scanMethod(a, "Cumprod", axis, CumulativeProd)
}

// Flatten returns a as a 1-d array (ndarray.flatten; the same as Ravel, since an Array is
// never changed in place, a copy and a view cannot be told apart).
func (a *Array) Flatten() *Array { return a.Ravel() }

// Copy returns a (ndarray.copy): an Array is an immutable expression, so a itself serves as
// its copy; Persist makes a computed copy.
func (a *Array) Copy() *Array { return a }

// Nonzero returns the indices of a's non-zero elements, one int64 array per axis
// (ndarray.nonzero; see the function).
func (a *Array) Nonzero() []*Array { return Nonzero(a) }

// Swapaxes returns a with axes axis1 and axis2 interchanged (ndarray.swapaxes; negative
// axes count from the end).
func (a *Array) Swapaxes(axis1, axis2 int) *Array {
	if err := a.Err(); err != nil {
		return a
	}
	r := a.NDim()
	i, j := axis1, axis2
	if i < 0 {
		i += r
	}
	if j < 0 {
		j += r
	}
	if i < 0 || i >= r || j < 0 || j >= r {
		return errArray(fmt.Errorf("Swapaxes: axes %d and %d out of range for an array of %d axes", axis1, axis2, r))
	}
	perm := make([]int, r)
	for k := range perm {
		perm[k] = k
	}
	perm[i], perm[j] = perm[j], perm[i]
	return a.Transpose(perm...)
}

// MT returns a with its last two axes swapped (ndarray.mT, the Array API's matrix_transpose).
func (a *Array) MT() *Array {
	if err := a.Err(); err != nil {
		return a
	}
	if a.NDim() < 2 {
		return errArray(fmt.Errorf("MT: array of shape %s has fewer than 2 axes", expr.ShapeString(a.Shape())))
	}
	return a.Swapaxes(-2, -1)
}

// Searchsorted returns the int64 positions where the values v would be inserted into the
// sorted 1-d array a to keep it sorted (ndarray.searchsorted): side "left" (the default) or
// "right".
func (a *Array) Searchsorted(v *Array, side ...string) *Array {
	switch len(side) {
	case 0:
		return Searchsorted(a, v, "left")
	case 1:
		return Searchsorted(a, v, side[0])
	}
	return errArray(fmt.Errorf("Searchsorted: %d sides given, want at most one", len(side)))
}

// Compress returns the slices of a along axis whose condition is true (ndarray.compress),
// or the selected elements of the flattened a when no axis is given. condition is a 1-d bool
// array; as NumPy, it may be shorter than the axis (the rest is not selected). The condition
// is computed when Compress is called: its true positions set the result's length.
func (a *Array) Compress(condition *Array, axis ...int) *Array {
	if err := firstErr([]*Array{a, condition}); err != nil {
		return errArray(err)
	}
	if condition.NDim() != 1 {
		return errArray(fmt.Errorf("Compress: condition of shape %s, want 1-d", expr.ShapeString(condition.Shape())))
	}
	idx, err := Nonzero(condition)[0].ComputeChunkSizes()
	if err != nil {
		return errArray(fmt.Errorf("Compress: the condition: %w", err))
	}
	return a.Take(idx, axis...)
}

// Conjugate returns the complex conjugate of a (ndarray.conjugate; Conj).
func (a *Array) Conjugate() *Array { return a.Conj() }

// Real returns the real part of a (ndarray.real; a itself for real dtypes).
func (a *Array) Real() *Array { return Real(a) }

// Imag returns the imaginary part of a (ndarray.imag; zeros for real dtypes).
func (a *Array) Imag() *Array { return Imag(a) }

// ItemSize returns the bytes of one element (ndarray.itemsize).
func (a *Array) ItemSize() int { return a.DType().Size() }

// Partition returns a sorted along axis (default -1), which is one arrangement that
// ndarray.partition(kth) allows: the element at kth is where it is in sorted order, the
// smaller ones before it, the larger after. kth is checked against the axis.
func (a *Array) Partition(kth int, axis ...int) *Array {
	ax, err := partitionAxis(a, "Partition", kth, axis)
	if err != nil {
		return errArray(err)
	}
	return Sort(a, ax)
}

// Argpartition returns the indices that sort a along axis (default -1), one arrangement that
// ndarray.argpartition(kth) allows (see Partition).
func (a *Array) Argpartition(kth int, axis ...int) *Array {
	ax, err := partitionAxis(a, "Argpartition", kth, axis)
	if err != nil {
		return errArray(err)
	}
	return Argsort(a, ax)
}

func partitionAxis(a *Array, what string, kth int, axis []int) (int, error) {
	if err := a.Err(); err != nil {
		return 0, err
	}
	ax := -1
	switch len(axis) {
	case 0:
	case 1:
		ax = axis[0]
	default:
		return 0, fmt.Errorf("%s: %d axes given, want at most one", what, len(axis))
	}
	r := a.NDim()
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return 0, fmt.Errorf("%s: axis %d out of range for an array of %d axes", what, ax, r)
	}
	if n := a.Shape()[ax]; n >= 0 && (kth < -n || kth >= n) {
		return 0, fmt.Errorf("%s: kth %d out of range for an axis of length %d", what, kth, n)
	}
	return ax, nil
}

// Item computes a one-element array and returns its value as float64 (ndarray.item(); see
// Float64). Integers above 2^53 lose precision: ToSliceInt64 keeps them exact.
func (a *Array) Item(opts ...ComputeOption) (float64, error) { return a.Float64(opts...) }

// ToList computes a and returns its values as nested Go slices shaped like a
// (ndarray.tolist): []float64 for floats, []int64 for integers, []bool, []complex128; a 0-d
// array gives the scalar.
func (a *Array) ToList(opts ...ComputeOption) (any, error) {
	if err := a.Err(); err != nil {
		return nil, err
	}
	c, err := a.Compute(opts...)
	if err != nil {
		return nil, fmt.Errorf("ToList: %w", err)
	}
	var flat any
	switch dt := c.DType(); {
	case dt == Bool:
		flat, err = c.ToSliceBool()
	case dt.IsInteger():
		flat, err = c.ToSliceInt64()
	case dt.IsComplex():
		flat, err = c.ToSliceComplex128()
	default:
		flat, err = c.ToSlice()
	}
	if err != nil {
		return nil, fmt.Errorf("ToList: %w", err)
	}
	v := reflect.ValueOf(flat)
	shape := c.Shape() // known lengths after a mask
	if len(shape) == 0 {
		return v.Index(0).Interface(), nil
	}
	out, _ := nest(v, shape, 0)
	return out.Interface(), nil
}

// nest shapes the flat values of v from offset off into nested slices of shape.
func nest(v reflect.Value, shape []int, off int) (reflect.Value, int) {
	if len(shape) == 1 {
		return v.Slice(off, off+shape[0]), off + shape[0]
	}
	var elem reflect.Type = v.Type()
	for range shape[1:] {
		elem = reflect.SliceOf(elem)
	}
	out := reflect.MakeSlice(elem, shape[0], shape[0])
	for i := range shape[0] {
		var s reflect.Value
		s, off = nest(v, shape[1:], off)
		out.Index(i).Set(s)
	}
	return out, off
}

// ToBytes computes a and returns its values' bytes in row-major order, each element in the
// machine's byte order (ndarray.tobytes()).
func (a *Array) ToBytes(opts ...ComputeOption) ([]byte, error) {
	if err := a.Err(); err != nil {
		return nil, err
	}
	c, err := a.computeHost(opts)
	if err != nil {
		return nil, fmt.Errorf("ToBytes: %w", err)
	}
	vals, err := c.n.Values()
	if err != nil {
		return nil, fmt.Errorf("ToBytes: %w", err)
	}
	return append([]byte(nil), vals.Bytes()...), nil
}

// ToFile computes a and writes its bytes (see ToBytes) to the file at path, with no header
// (ndarray.tofile; SaveNPY writes a .npy file that keeps the dtype and shape).
func (a *Array) ToFile(path string, opts ...ComputeOption) error {
	b, err := a.ToBytes(opts...)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("ToFile: %w", err)
	}
	return nil
}

// Choose returns, element by element, choices[a] (ndarray.choose): a holds integers in
// [0, len(choices)), and a and the choices broadcast together. Indices are not checked (that
// would compute a first): one out of range gives the last choice's value where NumPy raises.
func (a *Array) Choose(choices ...*Array) *Array {
	if err := firstErr(append([]*Array{a}, choices...)); err != nil {
		return errArray(err)
	}
	if len(choices) == 0 {
		return errArray(fmt.Errorf("Choose: no choices"))
	}
	if dt := a.DType(); !dt.IsInteger() {
		return errArray(fmt.Errorf("Choose: indices of dtype %v, want integers", dt))
	}
	out := choices[len(choices)-1]
	for i := len(choices) - 2; i >= 0; i-- {
		out = Where(a.Eq(i), choices[i], out)
	}
	return out
}

// Checked returns a and the error it holds (nil for a valid array), for the Go habit
// y, err := gpuarray.LoadNPY(path).Checked(): constructors and ops return *Array and hold
// their error so that expressions chain (README: "Errors").
func (a *Array) Checked() (*Array, error) { return a, a.Err() }
