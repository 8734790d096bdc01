package source

import (
	"errors"
	"fmt"
	"os"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// Streams reports whether ReadRange can read f's boxes piece by piece as float64 words: a
// C-order .npy or raw file of real numbers or bools (either byte order), read whole. Its pieces
// can then land in a device's pinned staging buffers straight from the file.
func Streams(f *expr.File) bool {
	if f == nil || f.Fortran || len(f.Sel) > 0 || f.Format != "npy" && f.Format != "raw" {
		return false
	}
	t, err := elem.Parse(f.Type)
	if err != nil {
		return false
	}
	dt, err := DType(t)
	return err == nil && !dt.IsComplex()
}

// errPast stops ReadRange's walk over the box's runs past the piece.
var errPast = errors.New("past the piece")

// ReadRange reads elements [from, from+len(dst)) of the box of f at origin with shape, in C
// order, into dst as float64 values (converted as gpuarray converts the file's dtype; f must
// satisfy Streams). For float64 files the piece's runs are read with positioned reads straight
// into dst.
func ReadRange(f *expr.File, origin, shape []int, from int64, dst []float64) error {
	if !Streams(f) {
		return fmt.Errorf("%s: %s %q elements cannot be streamed as float64 words", f.Path, f.Format, f.Type)
	}
	t, err := elem.Parse(f.Type)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	dt, err := DType(t)
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	if err := checkBox(f, origin, shape); err != nil {
		return err
	}
	to := from + int64(len(dst))
	if from < 0 || to > expr.Size(shape) {
		return fmt.Errorf("%s: elements [%d, %d) of a box of %d", f.Path, from, to, expr.Size(shape))
	}
	if from == to {
		return nil
	}
	vals := dtype.OfFloat64(dst)
	if dt != dtype.Float64 {
		vals = dtype.Make(dt, len(dst)) // read in the file's dtype, then converted into dst
	}
	b := vals.Bytes()
	sz := int64(t.Size)
	fh, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	defer fh.Close()
	err = elem.BoxRuns(f.Shape, origin, shape, func(o, lin, n int64) error {
		lo, hi := max(o, from), min(o+n, to)
		if lo >= hi {
			if o >= to {
				return errPast
			}
			return nil
		}
		return readAt(fh, f, b[(lo-from)*sz:(hi-from)*sz], f.Offset+(lin+lo-o)*sz, origin, shape)
	})
	if err != nil && !errors.Is(err, errPast) {
		return err
	}
	t.ToNative(b)
	if dt != dtype.Float64 {
		dtype.Copy(dtype.OfFloat64(dst), vals)
	}
	return nil
}
