package source

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// gapBytes is how many unneeded bytes a read may take in between needed ones rather than
// issuing another read: below a page cluster, one larger read is cheaper than two.
const gapBytes = 64 << 10

// span is a run of box positions along one axis whose stored indices lie in [lo, hi].
type span struct{ p0, p1, lo, hi int }

// readSel reads the box (origin, shape) of a selection of f (f.Sel): per axis, the box's
// positions are cut into spans whose stored indices are close, each combination of spans is
// read as one box of the stored array, and the picked elements are copied out. A strided
// slice or a take thus reads only the rows it needs (plus small gaps), never the whole file.
func readSel(f *expr.File, dt dtype.DType, origin, shape []int) (dtype.Slice, error) {
	r := len(shape)
	if len(f.Sel) != r {
		return dtype.Slice{}, fmt.Errorf("%s: a selection of %d axes for an array of %d", f.Path, len(f.Sel), r)
	}
	stored := *f
	stored.Sel = nil
	sz := dt.Size()
	idx := make([][]int, r)
	spans := make([][]span, r)
	after := int64(sz) // bytes of one position of axis d: the box's extents after d
	for d := r - 1; d >= 0; d-- {
		idx[d] = make([]int, shape[d])
		for v := range idx[d] {
			i := f.Sel[d].At(origin[d] + v)
			if i < 0 || i >= f.Shape[d] {
				return dtype.Slice{}, fmt.Errorf("%s: selected index %d outside axis %d of length %d", f.Path, i, d, f.Shape[d])
			}
			idx[d][v] = i
		}
		allow := int(gapBytes / after) // stored positions a span may read without needing them
		var ss []span
		for v, i := range idx[d] {
			if n := len(ss); n > 0 {
				s := &ss[n-1]
				lo, hi := min(s.lo, i), max(s.hi, i)
				if (hi-lo+1)-(v+1-s.p0) <= allow {
					s.p1, s.lo, s.hi = v+1, lo, hi
					continue
				}
			}
			ss = append(ss, span{p0: v, p1: v + 1, lo: i, hi: i})
		}
		spans[d] = ss
		after *= int64(max(shape[d], 1))
	}
	out := dtype.Make(dt, int(expr.Size(shape)))
	if out.Len() == 0 {
		return out, nil
	}
	ob := out.Bytes()
	ostr := make([]int, r) // the box's C strides, in elements
	st := 1
	for d := r - 1; d >= 0; d-- {
		ostr[d] = st
		st *= shape[d]
	}
	pick := make([]int, r) // the current span of each axis
	so, ss := make([]int, r), make([]int, r)
	for {
		for d := range r {
			s := spans[d][pick[d]]
			so[d], ss[d] = s.lo, s.hi-s.lo+1
		}
		vals, err := Read(&stored, so, ss)
		if err != nil {
			return dtype.Slice{}, err
		}
		copyPicked(ob, vals.Bytes(), sz, idx, spans, pick, so, ss, ostr)
		d := r - 1
		for ; d >= 0; d-- {
			pick[d]++
			if pick[d] < len(spans[d]) {
				break
			}
			pick[d] = 0
		}
		if d < 0 {
			return out, nil
		}
	}
}

// copyPicked copies the elements of one combination of spans from the stored box (origin so,
// shape ss, C order) to their places in the output box.
func copyPicked(ob, sb []byte, sz int, idx [][]int, spans [][]span, pick, so, ss, ostr []int) {
	r := len(so)
	sstr := make([]int, r)
	st := 1
	for d := r - 1; d >= 0; d-- {
		sstr[d] = st
		st *= ss[d]
	}
	in := spans[r-1][pick[r-1]]
	inner := idx[r-1][in.p0:in.p1]
	contiguous := true // the inner span's stored indices are consecutive ascending
	for k, i := range inner {
		contiguous = contiguous && i == in.lo+k
	}
	pos := make([]int, r) // positions within the spans of the outer axes
	for {
		o, s := in.p0*ostr[r-1], 0
		for d := 0; d < r-1; d++ {
			sp := spans[d][pick[d]]
			v := sp.p0 + pos[d]
			o += v * ostr[d]
			s += (idx[d][v] - so[d]) * sstr[d]
		}
		if contiguous {
			n := len(inner) * sz
			copy(ob[o*sz:o*sz+n], sb[(s+inner[0]-so[r-1])*sz:])
		} else {
			for k, i := range inner {
				e := (s + i - so[r-1]) * sz
				copy(ob[(o+k)*sz:(o+k+1)*sz], sb[e:e+sz])
			}
		}
		d := r - 2
		for ; d >= 0; d-- {
			pos[d]++
			sp := spans[d][pick[d]]
			if sp.p0+pos[d] < sp.p1 {
				break
			}
			pos[d] = 0
		}
		if d < 0 {
			return
		}
	}
}
