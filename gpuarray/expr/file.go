package expr

import (
	"fmt"
	"slices"
)

// File describes an array stored in a file or a Zarr store; tasks read the parts they need
// themselves (see gpuarray/io/source), so its values never pass through the planner. It is
// plain data: a cluster ships it to workers, which read the file when they see it.
type File struct {
	Format  string // "npy" and "raw": elements from Offset on; "zarr": a directory store
	Path    string
	Offset  int64  // npy, raw: where the elements start
	Type    string // NumPy type string of the stored elements, like "<f8"
	Fortran bool   // npy, raw: column-major elements
	Shape   []int
	Meta    string // zarr: the array's metadata document (zarr.json or .zarray)
}

// NewFile returns a node of shape f.Shape whose values are read from f.
func NewFile(f *File, dt DType, chunks [][]int) (*Node, error) {
	if f == nil {
		return nil, fmt.Errorf("file node: no file")
	}
	if err := CheckChunks(f.Shape, chunks); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Path, err)
	}
	return &Node{Kind: KFile, DType: dt, Shape: slices.Clone(f.Shape), Chunks: chunks, File: f}, nil
}
