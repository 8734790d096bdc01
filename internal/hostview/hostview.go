// Package hostview lets the packages of this module read a computed gpuarray array's host
// values in place, without the copy that gpuarray's exported Values makes. It is internal so
// that cells, which can only reach exported API, never get a writable view of an array: the
// callers here only read what they get (arrays are immutable).
package hostview

import "github.com/gpunotes/gpunotes/gpuarray/dtype"

// reader and ranger are installed by package gpuarray (Register in its init).
var (
	reader func(a any) (dtype.Slice, bool)
	ranger func(a any) (lo, hi int64, ok bool)
)

// Register installs the functions that Values and IntRange call; package gpuarray calls it
// once.
func Register(values func(a any) (dtype.Slice, bool), intRange func(a any) (lo, hi int64, ok bool)) {
	reader, ranger = values, intRange
}

// IntRange returns the smallest and largest value of a, a *gpuarray.Array of int32 or int64
// persisted in host memory, computed on the first call and kept with the array's chunks (its
// values never change); ok is false for other arrays, which the caller scans itself. Values
// at null rows count: callers use it for columns without nulls.
func IntRange(a any) (lo, hi int64, ok bool) {
	if ranger == nil {
		return 0, 0, false
	}
	return ranger(a)
}

// Values returns the values of a, a computed *gpuarray.Array, in place: ok is false when they
// are not Go memory of the host already (held on a GPU or elsewhere, not computed, or not an
// array), and the caller copies them then. The slice must not be written: it is the array's
// own memory, shared with every array and frame that holds it, and kept alive by the garbage
// collector like any Go slice.
func Values(a any) (v dtype.Slice, ok bool) {
	if reader == nil {
		return dtype.Slice{}, false
	}
	return reader(a)
}
