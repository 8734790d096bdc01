package dataframe

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// concatCols joins host columns of one type; strings get one heap, categoricals one
// dictionary (codes remapped).
func concatCols(parts []hostCol) (*hostCol, error) {
	c0 := parts[0]
	out := &hostCol{name: c0.name, dt: c0.dt}
	n := 0
	anyNull := false
	for _, p := range parts {
		n += p.vals.Len()
		anyNull = anyNull || p.valid != nil
	}
	if anyNull {
		out.valid = make([]bool, 0, n)
		for _, p := range parts {
			if p.valid != nil {
				out.valid = append(out.valid, p.valid...)
			} else {
				for i := 0; i < p.vals.Len(); i++ {
					out.valid = append(out.valid, true)
				}
			}
		}
	}
	switch c0.dt {
	case String:
		h := newHeap(n)
		pos := make([]int64, 0, n)
		for _, p := range parts {
			for i, x := range p.vals.Int64s() {
				if !p.isValid(i) {
					pos = append(pos, int64(h.len()))
					h.add("")
					continue
				}
				pos = append(pos, int64(h.len()))
				h.data = append(h.data, p.heap.bytesAt(x)...)
				h.offsets = append(h.offsets, int64(len(h.data)))
			}
		}
		out.heap, out.vals = h, dtype.OfInt64(pos)
		return out, nil
	case Category:
		dict := newHeap(0)
		at := map[string]int32{}
		codes := make([]int32, 0, n)
		for _, p := range parts {
			remap := make([]int32, p.heap.len())
			for i := range remap {
				s := p.heap.at(int64(i))
				c, ok := at[s]
				if !ok {
					c = int32(dict.len())
					at[s] = c
					dict.add(s)
				}
				remap[i] = c
			}
			for i, x := range p.vals.Int32s() {
				if p.isValid(i) {
					codes = append(codes, remap[x])
				} else {
					codes = append(codes, 0)
				}
			}
		}
		s, _ := dtype.Of(codes)
		out.heap, out.vals = dict, s
		return out, nil
	}
	v := dtype.Make(c0.vals.DType(), n)
	at := 0
	for _, p := range parts {
		if p.vals.DType() != c0.vals.DType() {
			return nil, fmt.Errorf("values of %v and %v", p.vals.DType(), c0.vals.DType())
		}
		dtype.Copy(v.Slice(at, at+p.vals.Len()), p.vals)
		at += p.vals.Len()
	}
	out.vals = v
	return out, nil
}

// stringAt returns row i of a string or category column.
func (h *hostCol) stringAt(i int) string {
	switch h.dt {
	case String:
		return h.heap.at(h.vals.Int64s()[i])
	case Category:
		return h.heap.at(int64(h.vals.Int32s()[i]))
	}
	return fmt.Sprint(h.vals.Elem(i))
}

// gatherRows returns rows at of h (a copy).
func (h *hostCol) gatherRows(at []int) *hostCol {
	out := &hostCol{name: h.name, dt: h.dt, heap: h.heap}
	out.vals = dtype.Make(h.vals.DType(), len(at))
	dtype.Gather(out.vals, h.vals, at)
	if h.valid != nil {
		out.valid = make([]bool, len(at))
		for i, a := range at {
			out.valid[i] = h.valid[a]
		}
	}
	return out
}

func sortStable(idx []int, less func(a, b int) bool) {
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
}

func nan() float64 { return math.NaN() }
