package expr

import "fmt"

// NewDiagonal views the diagonal of a's last two axes with offset k (above the main diagonal
// for k > 0): the other axes, then the diagonal. It moves no data: both input axes read the
// new last axis.
func NewDiagonal(a *Node, k int) (*Node, error) {
	r := len(a.Shape)
	if r < 2 {
		return nil, fmt.Errorf("diagonal: an array of shape %s has fewer than two axes", ShapeString(a.Shape))
	}
	rows, cols := a.Shape[r-2], a.Shape[r-1]
	r0, c0 := max(0, -k), max(0, k)
	n := max(0, min(rows-r0, cols-c0))
	m := make([]AxisMap, r)
	shape := make([]int, 0, r-1)
	chunks := make([][]int, 0, r-1)
	for d := 0; d < r-2; d++ {
		m[d] = AxisMap{Axis: d, Step: 1}
		shape = append(shape, a.Shape[d])
		chunks = append(chunks, a.Chunks[d])
	}
	m[r-2] = AxisMap{Axis: r - 2, Off: r0, Step: 1}
	m[r-1] = AxisMap{Axis: r - 2, Off: c0, Step: 1}
	if n == 0 {
		// An empty diagonal reads nothing; keep the offsets in range.
		m[r-2].Off, m[r-1].Off = 0, 0
	}
	shape = append(shape, n)
	chunks = append(chunks, sliceChunks(a.Chunks[r-2], r0, 1, n))
	return newView(a, m, shape, chunks), nil
}
