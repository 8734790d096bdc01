// Package source reads a box of a file-backed array (expr.File: .npy, raw binary, Zarr),
// the way a planned task reads its input: only the bytes of the box, with positioned reads
// straight into the task's buffer where the layout allows (C order, native byte order).
package source

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
	"github.com/gpunotes/gpunotes/gpuarray/io/zarr"
)

// DType returns gpuarray's dtype of stored elements of type t (float16 has none).
func DType(t elem.Type) (dtype.DType, error) {
	var dt dtype.DType
	switch t.Kind {
	case 'b':
		dt = dtype.Bool
	case 'i':
		dt = map[int]dtype.DType{1: dtype.Int8, 2: dtype.Int16, 4: dtype.Int32, 8: dtype.Int64}[t.Size]
	case 'u':
		dt = map[int]dtype.DType{1: dtype.Uint8, 2: dtype.Uint16, 4: dtype.Uint32, 8: dtype.Uint64}[t.Size]
	case 'f':
		if t.Size == 2 {
			return 0, fmt.Errorf("%s (float16) elements are not supported", t)
		}
		dt = map[int]dtype.DType{4: dtype.Float32, 8: dtype.Float64}[t.Size]
	case 'c':
		dt = map[int]dtype.DType{8: dtype.Complex64, 16: dtype.Complex128}[t.Size]
	default:
		return 0, fmt.Errorf("%s elements are not supported", t)
	}
	if dt.Size() != t.Size {
		return 0, fmt.Errorf("%s elements are not supported", t)
	}
	return dt, nil
}

// Read reads the box of f at origin with shape, C order, as values of the file's dtype. For
// a C-order file the positioned reads land in the values' memory directly.
func Read(f *expr.File, origin, shape []int) (dtype.Slice, error) {
	t, err := elem.Parse(f.Type)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("%s: %w", f.Path, err)
	}
	dt, err := DType(t)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("%s: %w", f.Path, err)
	}
	if len(f.Sel) > 0 {
		return readSel(f, dt, origin, shape)
	}
	if err := checkBox(f, origin, shape); err != nil {
		return dtype.Slice{}, err
	}
	out := dtype.Make(dt, int(expr.Size(shape)))
	b := out.Bytes()
	if len(b) == 0 {
		return out, nil
	}
	switch f.Format {
	case "zarr":
		a, err := zarrMeta(f)
		if err != nil {
			return dtype.Slice{}, err
		}
		if a.Type.Kind != t.Kind || a.Type.Size != t.Size {
			return dtype.Slice{}, fmt.Errorf("zarr %s: the store holds %s, the array was opened as %s", f.Path, a.Type, t)
		}
		err = a.ReadBoxInto(f.Path, origin, shape, b)
		return out, err
	case "npy", "raw":
		if f.Fortran {
			err = readFortran(f, t, origin, shape, b)
		} else {
			err = readFlat(f, t, origin, shape, b)
		}
		if err != nil {
			return dtype.Slice{}, err
		}
		t.ToNative(b)
		return out, nil
	}
	return dtype.Slice{}, fmt.Errorf("%s: unknown file format %q", f.Path, f.Format)
}

func checkBox(f *expr.File, origin, shape []int) error {
	if len(origin) != len(f.Shape) || len(shape) != len(f.Shape) {
		return fmt.Errorf("%s: box of %d axes for an array of %d", f.Path, len(shape), len(f.Shape))
	}
	for d := range shape {
		if origin[d] < 0 || shape[d] < 0 || origin[d]+shape[d] > f.Shape[d] {
			return fmt.Errorf("%s: box at %v of shape %v outside the array's shape %s", f.Path, origin, shape, expr.ShapeString(f.Shape))
		}
	}
	return nil
}

var metaCache sync.Map // metadata document -> *zarr.Array

func zarrMeta(f *expr.File) (*zarr.Array, error) {
	if a, ok := metaCache.Load(f.Meta); ok {
		return a.(*zarr.Array), nil
	}
	a, err := zarr.Parse([]byte(f.Meta))
	if err != nil {
		return nil, fmt.Errorf("zarr %s: %w", f.Path, err)
	}
	metaCache.Store(f.Meta, a)
	return a, nil
}

// readFlat reads a C-order box into b (raw bytes in the file's byte order), one positioned
// read per contiguous run: a run spans the trailing axes the box covers whole.
func readFlat(f *expr.File, t elem.Type, origin, shape []int, b []byte) error {
	fh, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	defer fh.Close()
	sz := int64(t.Size)
	return elem.BoxRuns(f.Shape, origin, shape, func(o, lin, n int64) error {
		return readAt(fh, f, b[o*sz:(o+n)*sz], f.Offset+lin*sz, origin, shape)
	})
}

// readFortran reads a box of a column-major file: runs along axis 0, placed into C order.
func readFortran(f *expr.File, t elem.Type, origin, shape []int, b []byte) error {
	fh, err := os.Open(f.Path)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Path, err)
	}
	defer fh.Close()
	r := len(shape)
	sz := t.Size
	if r == 0 {
		return readAt(fh, f, b, f.Offset, origin, shape)
	}
	fstr := make([]int64, r) // the file's element strides
	s := int64(1)
	for d := 0; d < r; d++ {
		fstr[d] = s
		s *= int64(f.Shape[d])
	}
	cstr := make([]int, r) // the box's C strides
	st := 1
	for d := r - 1; d >= 0; d-- {
		cstr[d] = st
		st *= shape[d]
	}
	run := make([]byte, shape[0]*sz)
	pos := make([]int, r) // pos[0] stays 0
	for {
		lin := int64(origin[0])
		dst := 0
		for d := 1; d < r; d++ {
			lin += int64(origin[d]+pos[d]) * fstr[d]
			dst += pos[d] * cstr[d]
		}
		if err := readAt(fh, f, run, f.Offset+lin*int64(sz), origin, shape); err != nil {
			return err
		}
		for i := 0; i < shape[0]; i++ {
			o := (dst + i*cstr[0]) * sz
			copy(b[o:o+sz], run[i*sz:(i+1)*sz])
		}
		d := 1
		for ; d < r; d++ {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
		if d == r {
			return nil
		}
	}
}

func readAt(fh *os.File, f *expr.File, b []byte, off int64, origin, shape []int) error {
	n, err := fh.ReadAt(b, off)
	if errors.Is(err, io.EOF) && n < len(b) {
		size := int64(-1)
		if st, e := fh.Stat(); e == nil {
			size = st.Size()
		}
		return fmt.Errorf("read %s: truncated file: %d bytes, the box at %v of shape %v needs bytes up to %d", f.Path, size, origin, shape, off+int64(len(b)))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: chunk at %v of shape %v: %w", f.Path, origin, shape, err)
	}
	return nil
}
