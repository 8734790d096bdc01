package ptx

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// MirrorLeaves returns the nodes of s's two leaves, first the one read straight, and whether
// kernel k is mirrored: a full reduction other than argmin/argmax (a mirrored value is folded
// into another element's partial, and its index would be wrong) over the whole N x N iteration
// space of two reads of one N x N array, one straight and one transposed, and no other leaf:
// two random reads of the same distribution and key (regenerated), or two float64 inputs of
// the same array (stored: Instr.Alias), which then are not tiled, so that both walk the same
// elements in the same order and give the same bits.
func MirrorLeaves(k *plan.Kernel, s *Spec) (a, b int, ok bool) {
	if !opt.Mirror || k.Reduce == nil || s.Kept > 0 || s.Tile || len(k.Shape) != 2 || k.Shape[0] != k.Shape[1] || len(k.Reduce.Axes) != 2 {
		return 0, 0, false
	}
	if s.Reduce != RSum && s.Reduce != RMin && s.Reduce != RMax && s.Reduce != RWelford {
		return 0, 0, false
	}
	straight := []expr.AxisMap{{Axis: 0, Step: 1}, {Axis: 1, Step: 1}}
	swapped := []expr.AxisMap{{Axis: 1, Step: 1}, {Axis: 0, Step: 1}}
	a, b = -1, -1
	for i, in := range k.Instrs {
		switch in.Code {
		case plan.Random, plan.Input:
			if !slices.Equal(in.Src, k.Shape) || (in.Code == plan.Input && in.DType != dtype.Float64) {
				return 0, 0, false
			}
			switch {
			case a < 0 && slices.Equal(in.Map, straight):
				a = i
			case b < 0 && slices.Equal(in.Map, swapped):
				b = i
			default:
				return 0, 0, false
			}
		case plan.Range, plan.Search:
			return 0, 0, false
		}
	}
	if a < 0 || b < 0 || k.Instrs[a].Code != k.Instrs[b].Code {
		return 0, 0, false
	}
	ia, ib := &k.Instrs[a], &k.Instrs[b]
	if ia.Code == plan.Random && ia.Rand != ib.Rand {
		return 0, 0, false
	}
	// Stored: the two read one array (the planner's alias), so a task holds both x's block and
	// the mirrored one.
	if ia.Code == plan.Input && ia.Alias != b+1 && ib.Alias != a+1 {
		return 0, 0, false
	}
	return a, b, true
}

// elementValues emits an element's values at column c: its one value, or for a mirrored spec
// (s.Mirror) its value and the mirrored element's. skip[i] is a predicate under which value i
// must not be folded in ("" for none), and end a label the caller places after folding them
// in: a mirrored element past the diagonal branches there before drawing anything.
func (g *gen) elementValues(s *Spec, lv []leafRegs, c string) (vals []val, skip []string, end string, err error) {
	idx := g.leafIndices(lv, c)
	if s.StoredMirror() {
		// The last map is the element's row minus column in the whole array (mirrorPosition).
		return g.mirroredValues(s, idx, idx[len(idx)-1], "0")
	}
	return g.elementValuesAt(s, idx)
}

// mirrorPosition returns, for a mirrored kernel of stored inputs, a map that the element loop
// walks like a leaf's (row bases, then the column): the element's row minus column in the
// whole array, from the task's MirrorBase (descriptor word w of d) and its dims: rank 2 (i, j)
// strides (1, -1), rank 3, strips of the columns (mirrorStrips: (s, i, w) at column s*W + w),
// (-W, 1, -1).
func (g *gen) mirrorPosition(d string, dims []string, w int) leafRegs {
	p := leafRegs{off: g.rd(), rb: g.rd()}
	g.ins("ld.global.nc.u64 %s, [%s+%d]", p.off, d, 8*w)
	zero, one, minus := g.rd(), g.rd(), g.rd()
	g.ins("mov.u64 %s, 0", zero)
	g.ins("mov.u64 %s, 1", one)
	g.ins("sub.u64 %s, %s, %s", minus, zero, one)
	if len(dims) == 3 {
		mw := g.rd()
		g.ins("sub.u64 %s, %s, %s", mw, zero, dims[2])
		p.str = append(p.str, mw)
	}
	p.str = append(p.str, one, minus)
	return p
}

// elementValuesAt is elementValues at the element whose leaves' source indices are idx.
func (g *gen) elementValuesAt(s *Spec, idx []string) (vals []val, skip []string, end string, err error) {
	if s.Mirror == nil {
		v, err := g.valueAt(s, idx, nil)
		return []val{v}, []string{""}, "", err
	}
	if s.StoredMirror() {
		return nil, nil, "", fmt.Errorf("kernel spec: a mirrored spec of stored inputs placed by leaf indices (internal)")
	}
	// (i, j) reads x[i,j] at idx[la] = i*N + j and x[j,i] at idx[lb] = j*N + i: i > j exactly
	// when idx[la] > idx[lb].
	return g.mirroredValues(s, idx, idx[s.Nodes[s.Mirror[0]].Leaf], idx[s.Nodes[s.Mirror[1]].Leaf])
}

// mirroredValues emits a mirrored element's values (elementValues) where it lies past the
// diagonal (row > column) exactly when a > b, on it when a == b (signed).
func (g *gen) mirroredValues(s *Spec, idx []string, a, b string) (vals []val, skip []string, end string, err error) {
	na, nb := s.Mirror[0], s.Mirror[1]
	past, diag := g.p(), g.p()
	end = g.label("mirrored")
	g.ins("setp.gt.s64 %s, %s, %s", past, a, b)
	g.ins("@%s bra %s", past, end)
	g.ins("setp.eq.s64 %s, %s, %s", diag, a, b)
	nv := make([]val, len(s.Nodes))
	for i := range s.Nodes {
		if nv[i], err = g.node(s, i, nv, idx); err != nil {
			return nil, nil, "", err
		}
	}
	// The value at (j, i): the same nodes with the two draws swapped.
	mv, err := g.valueAt(s, idx, map[int]val{na: nv[nb], nb: nv[na]})
	if err != nil {
		return nil, nil, "", err
	}
	return []val{nv[len(nv)-1], mv}, []string{"", diag}, end, nil
}

// foldValues hands each value to each unless its skip predicate (or also, when not "", the
// predicate slow) is set, then places end.
func (g *gen) foldValues(vals []val, skip []string, end, slow, e string, each func(val, string) error) error {
	for i, v := range vals {
		p := skip[i]
		if slow != "" {
			if p == "" {
				p = slow
			} else {
				q := g.p()
				g.ins("or.pred %s, %s, %s", q, p, slow)
				p = q
			}
		}
		if p == "" {
			if err := each(v, e); err != nil {
				return err
			}
			continue
		}
		over := g.label("skip")
		g.ins("@%s bra %s", p, over)
		if err := each(v, e); err != nil {
			return err
		}
		g.put(over)
	}
	if end != "" {
		g.put(end)
	}
	return nil
}
