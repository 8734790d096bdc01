package ptx

// UnrollLoads is how many elements a thread takes per pass of its element loop in kernels that
// read data and generate none: their loads are issued together, so each thread keeps that
// many in flight instead of one (one 8-byte load per thread in flight at a time left a sum of
// a persisted array at about 2.2 TB/s of the H100's 3.35).
const UnrollLoads = 4

// maxUnrolledInputs bounds the input leaves of an unrolled kernel (each pass holds
// UnrollLoads values of each in registers).
const maxUnrolledInputs = 4

// narrowUnroll is the elements per pass when every input is held narrow (Node.Narrow): twice
// the loads of half the bytes keep as many bytes in flight per thread as unrollLoads 8-byte
// loads do (four 4-byte loads left a float32 sum at 2.25 TB/s where the 8-byte one ran at 2.65).
const narrowUnroll = 2 * UnrollLoads

// maxNarrowUnrolledInputs bounds the inputs of a kernel unrolled narrowUnroll times (the
// registers the pass holds, as maxUnrolledInputs does for unrollLoads).
const maxNarrowUnrolledInputs = 2

// UnrollOf returns how many elements per pass the element loop of s takes: unrollLoads when
// s reads between 1 and maxUnrolledInputs inputs and draws no random numbers (generation is
// compute bound, and its code large), narrowUnroll when those are up to
// maxNarrowUnrolledInputs inputs all held narrow (Node.Narrow), smallUnroll when those are
// all of 1 or 2 bytes, 1 otherwise.
func UnrollOf(s *Spec) int {
	if s.Mirror != nil {
		return 1 // elementValues folds a mirrored element's two values
	}
	inputs, narrow, small := 0, 0, 0
	for _, nd := range s.Nodes {
		switch nd.Kind {
		case NRandom:
			return 1
		case NInput:
			inputs++
			if nd.Narrow {
				narrow++
				if nd.DType.Size() <= 2 {
					small++
				}
			}
		}
	}
	switch {
	case inputs == 0 || inputs > maxUnrolledInputs:
		return 1
	case small == inputs && inputs <= maxNarrowUnrolledInputs && opt.SmallUnroll > 0:
		return opt.SmallUnroll
	case narrow == inputs && inputs <= maxNarrowUnrolledInputs:
		return narrowUnroll
	}
	return UnrollLoads
}

// unrolled emits one pass of an element loop over u elements at once: elements e, e+step, …,
// e+(u-1)*step, at columns c, c+step, … of the current row. It branches to single (the loop's
// one-element body) unless all u are in the task's range (below hi) and in the current row
// (below dl), so the elements and their order are those of u one-element passes and the bits
// do not change. The input values of all u elements are loaded first, then each element's
// value is computed and handed to each in order; e and c advance by u*step.
func (g *gen) unrolled(s *Spec, lv []leafRegs, e, c, hi, dl string, step, u int, single string, each func(v val, e string) error) error {
	t, p := g.rd(), g.p()
	g.ins("add.u64 %s, %s, %d", t, e, (u-1)*step)
	g.ins("setp.ge.u64 %s, %s, %s", p, t, hi)
	g.ins("@%s bra %s", p, single)
	g.ins("add.u64 %s, %s, %d", t, c, (u-1)*step)
	g.ins("setp.ge.u64 %s, %s, %s", p, t, dl)
	g.ins("@%s bra %s", p, single)
	cs, es := make([]string, u), make([]string, u)
	pre := make([]map[int]val, u)
	for k := range u {
		cs[k], es[k] = c, e
		if k > 0 {
			cs[k], es[k] = g.rd(), g.rd()
			g.ins("add.u64 %s, %s, %d", cs[k], c, k*step)
			g.ins("add.u64 %s, %s, %d", es[k], e, k*step)
		}
		idx := g.leafIndices(lv, cs[k])
		pre[k] = map[int]val{}
		for i := range s.Nodes {
			if nd := &s.Nodes[i]; nd.Kind == NInput {
				pre[k][i] = g.input(nd, idx[nd.Leaf])
			}
		}
	}
	for k := range u {
		v, err := g.elementValueFrom(s, lv, cs[k], pre[k])
		if err != nil {
			return err
		}
		if err := each(v, es[k]); err != nil {
			return err
		}
	}
	g.ins("add.u64 %s, %s, %d", e, e, u*step)
	g.ins("add.u64 %s, %s, %d", c, c, u*step)
	return nil
}
