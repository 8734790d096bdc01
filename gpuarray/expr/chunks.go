package expr

import (
	"fmt"
	"slices"
)

// RegularChunks splits shape into chunks of the given size per axis (the last chunk of an axis
// may be smaller; a size larger than the axis gives one chunk).
func RegularChunks(shape, size []int) ([][]int, error) {
	if len(size) != len(shape) {
		return nil, fmt.Errorf("chunks %v have %d axes, shape %s has %d", size, len(size), ShapeString(shape), len(shape))
	}
	out := make([][]int, len(shape))
	for ax, n := range shape {
		c := size[ax]
		if c <= 0 {
			return nil, fmt.Errorf("chunk size %d on axis %d must be positive (chunks %v)", c, ax, size)
		}
		out[ax] = splitAxis(n, c)
	}
	return out, nil
}

func splitAxis(n, c int) []int {
	if n == 0 {
		return []int{0}
	}
	var cs []int
	for n > 0 {
		k := min(c, n)
		cs = append(cs, k)
		n -= k
	}
	return cs
}

// CheckChunks verifies that explicit per-axis chunk sizes are positive and add up to shape.
func CheckChunks(shape []int, chunks [][]int) error {
	if len(chunks) != len(shape) {
		return fmt.Errorf("chunks %v have %d axes, shape %s has %d", chunks, len(chunks), ShapeString(shape), len(shape))
	}
	for ax, cs := range chunks {
		sum := 0
		for _, c := range cs {
			if c <= 0 && !(c == 0 && shape[ax] == 0) {
				return fmt.Errorf("chunk size %d on axis %d must be positive (chunks %v)", c, ax, cs)
			}
			sum += c
		}
		if sum != shape[ax] || len(cs) == 0 {
			return fmt.Errorf("chunks %v on axis %d add up to %d, not the axis length %d of shape %s", cs, ax, sum, shape[ax], ShapeString(shape))
		}
	}
	return nil
}

// AutoChunks chunks shape so that no chunk holds more than limit elements: trailing axes are
// kept whole while they fit, leading axes are split.
func AutoChunks(shape []int, limit int64) [][]int {
	size := make([]int, len(shape))
	rest := limit
	for ax := len(shape) - 1; ax >= 0; ax-- {
		n := int64(max(shape[ax], 1))
		switch {
		case rest >= n:
			size[ax] = int(n)
			rest /= n
		case rest > 1:
			size[ax] = int(rest)
			rest = 1
		default:
			size[ax] = 1
		}
	}
	cs, _ := RegularChunks(shape, size)
	return cs
}

// bounds returns the chunk boundaries 0, c0, c0+c1, ….
func bounds(cs []int) []int {
	b := make([]int, 1, len(cs)+1)
	for _, c := range cs {
		b = append(b, b[len(b)-1]+c)
	}
	return b
}

// unify returns the common refinement of two chunkings of one axis.
func unify(a, b []int) []int {
	ba, bb := bounds(a), bounds(b)
	all := append(slices.Clone(ba), bb...)
	slices.Sort(all)
	all = slices.Compact(all)
	out := make([]int, 0, len(all)-1)
	for i := 1; i < len(all); i++ {
		out = append(out, all[i]-all[i-1])
	}
	if len(out) == 0 {
		out = []int{0}
	}
	return out
}

// NumChunks returns the number of chunks of a grid.
func NumChunks(chunks [][]int) int {
	n := 1
	for _, cs := range chunks {
		n *= len(cs)
	}
	return n
}

// floorDiv is integer division rounding toward minus infinity.
func floorDiv(a, b int) int {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// sliceChunks maps the chunks of one axis through the progression start + t*step, t < n.
func sliceChunks(cs []int, start, step, n int) []int {
	if n == 0 {
		return []int{0}
	}
	b := bounds(cs)
	var out []int
	count := func(lo, hi int) int {
		var tlo, thi int
		if step > 0 {
			tlo = -floorDiv(-(lo - start), step) // ceil
			thi = -floorDiv(-(hi - start), step)
		} else {
			s := -step
			tlo = floorDiv(start-hi, s) + 1
			thi = floorDiv(start-lo, s) + 1
		}
		tlo = max(tlo, 0)
		thi = min(thi, n)
		return max(thi-tlo, 0)
	}
	if step > 0 {
		for i := 0; i < len(cs); i++ {
			if k := count(b[i], b[i+1]); k > 0 {
				out = append(out, k)
			}
		}
	} else {
		for i := len(cs) - 1; i >= 0; i-- {
			if k := count(b[i], b[i+1]); k > 0 {
				out = append(out, k)
			}
		}
	}
	return out
}
