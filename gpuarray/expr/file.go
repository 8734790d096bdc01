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
	// Sel, when set, makes the array a selection of the stored one, one entry per axis: a
	// strided slice or a take reads only the parts it needs (see io/source). Shape stays the
	// stored array's; the node's shape is the selection's.
	Sel []Sel `json:",omitempty"`
}

// Sel picks the stored indices of one axis: position v is stored index Idx[v] where Idx is
// set, else Start + Step*v (Step 1 and Start 0 on an axis read whole).
type Sel struct {
	Start int
	Step  int
	Idx   []int `json:",omitempty"`
}

// At returns the stored index of position v.
func (s Sel) At(v int) int {
	if s.Idx != nil {
		return s.Idx[v]
	}
	return s.Start + s.Step*v
}

// Select returns f with axis d's positions picked by s, n of them (composed with what f
// selects there already): a file node built from it reads only the picked positions.
func (f *File) Select(d int, s Sel, n int) *File {
	c := *f
	c.Sel = slices.Clone(f.Sel)
	if c.Sel == nil {
		c.Sel = make([]Sel, len(f.Shape))
		for i := range c.Sel {
			c.Sel[i] = Sel{Step: 1}
		}
	}
	old := c.Sel[d]
	if s.Idx == nil && old.Idx == nil {
		c.Sel[d] = Sel{Start: old.Start + old.Step*s.Start, Step: old.Step * s.Step}
		return &c
	}
	idx := make([]int, n)
	for v := range idx {
		idx[v] = old.At(s.At(v))
	}
	c.Sel[d] = Sel{Idx: idx}
	return &c
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
