package cpu

import (
	"context"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// BlockLen is the length of the vectors a compiled kernel works on.
const BlockLen = 512

// operand is an instruction's value in the current block, in the lane of its dtype (see
// lanes.go): vec for floats, ivec for integers and bools, cvec for complex numbers. A float
// constant has isC and c (and vec filled with it).
type operand struct {
	dt    dtype.DType
	lane  lane
	vec   []float64
	ivec  []int64
	cvec  []complex128
	isC   bool
	c     float64
	alias bool // vec is set per block to a window on an input's data: read it, never write it
	leaf  *leaf
	apply func(n int) // fills the vector's first n values for the current block
}

type leaf struct {
	coef    []int64 // per axis of the (padded) iteration space
	base    int64
	rowBase int64 // base plus the outer axes' part, for the current row
	j0      int64 // global inner index of the current block
}

type program struct {
	rank   int
	ops    []*operand
	leaves []*leaf
}

// compile builds the closures of kernel k for task t.
func compile(t *plan.Task) (*program, error) {
	k := t.Kernel
	rank := max(len(k.Shape), 1)
	p := &program{rank: rank}
	for i := range k.Instrs {
		in := &k.Instrs[i]
		for _, a := range in.Args {
			if a < 0 || a >= i {
				return nil, fmt.Errorf("instruction %d (%v) uses %d, not an earlier instruction", i, in.Code, a)
			}
		}
		op, err := p.compileInstr(t, in)
		if err != nil {
			return nil, fmt.Errorf("instruction %d (%v): %w", i, in.Code, err)
		}
		p.ops = append(p.ops, op)
	}
	return p, nil
}

func (p *program) newLeaf(base int64, coef []int64) *leaf {
	c := make([]int64, p.rank)
	copy(c, coef)
	l := &leaf{base: base, coef: c}
	p.leaves = append(p.leaves, l)
	return l
}

func (p *program) compileInstr(t *plan.Task, in *plan.Instr) (*operand, error) {
	if !in.DType.Valid() {
		return nil, fmt.Errorf("invalid dtype %d", uint8(in.DType))
	}
	f32 := in.DType == expr.Float32
	o := &operand{dt: in.DType, lane: laneOf(in.DType)}
	args := make([]*operand, len(in.Args))
	allC := true
	for j, a := range in.Args {
		args[j] = p.ops[a]
		allC = allC && args[j].isC
	}
	want := map[plan.Code]int{plan.Unary: 1, plan.Binary: 2, plan.Where: 3, plan.Cast: 1, plan.Search: 1}[in.Code]
	if len(args) != want {
		return nil, fmt.Errorf("%d operands, want %d", len(args), want)
	}
	if in.Code.Leaf() && len(in.Map) != len(in.Src) {
		return nil, fmt.Errorf("map of %d axes for a source of shape %s", len(in.Map), expr.ShapeString(in.Src))
	}
	if in.Code == plan.Binary && len(args) == 2 && args[0].dt != args[1].dt {
		return nil, fmt.Errorf("%v of %v and %v operands (the planner casts them to one dtype)", in.Op, args[0].dt, args[1].dt)
	}
	if o.lane != laneF || in.Code == plan.Binary && in.Op.Comparison() || len(args) > 0 && args[len(args)-1].lane != laneF {
		allC = false // constants fold in the float lane only
	}
	if in.Code == plan.Const {
		if o.lane != laneF {
			return p.constant(o, in.Value), nil
		}
		o.isC, o.c = true, roundTo(in.Value, f32)
		o.vec = filled(o.c)
		return o, nil
	}
	switch in.Code {
	case plan.Unary, plan.Binary, plan.Cast, plan.Where:
		if allC {
			o.isC = true
			switch in.Code {
			case plan.Cast:
				o.c = roundTo(args[0].c, f32)
			case plan.Where:
				o.c = args[2].c
				if args[0].c != 0 {
					o.c = args[1].c
				}
				o.c = roundTo(o.c, f32)
			default:
				if (in.Code == plan.Unary) != in.Op.Unary() {
					return nil, fmt.Errorf("op %v does not fit %v", in.Op, in.Code)
				}
				cs := make([]float64, len(args))
				for j, a := range args {
					cs[j] = a.c
				}
				o.c = Scalar(in.Op, in.DType, cs...)
			}
			o.vec = filled(o.c)
			return o, nil
		}
	}
	if o.lane != laneF || in.Code == plan.Binary && in.Op.Comparison() || in.Code == plan.Cast && args[0].lane != laneF ||
		in.Code == plan.Unary && args[0].lane != laneF || in.Code == plan.Where && args[0].lane != laneF {
		return p.compileLanes(t, in, o, args)
	}
	o.vec = make([]float64, BlockLen)
	dst := o.vec
	switch in.Code {
	case plan.Random:
		base, coef := in.Linear(len(t.Kernel.Shape))
		l := p.newLeaf(base, coef)
		o.leaf = l
		key := rng.Key{K0: in.Rand.Key[0], K1: in.Rand.Key[1]}
		p0, p1 := in.Rand.P0, in.Rand.P1
		stride := l.coef[p.rank-1]
		switch in.Rand.Dist {
		case expr.Normal:
			o.apply = func(n int) { key.NormalStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0, p1) }
		case expr.Uniform:
			o.apply = func(n int) { key.UniformStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0, p1) }
		case expr.Integers:
			lo, span := int64(p0), uint64(int64(p1)-int64(p0))
			o.apply = func(n int) { key.IntegersStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, lo, span) }
		case expr.Exponential:
			o.apply = func(n int) { key.ExponentialStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0) }
		case expr.Gamma:
			o.apply = func(n int) { key.GammaStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0, p1) }
		case expr.Poisson:
			o.apply = func(n int) { key.PoissonStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0) }
		case expr.Binomial:
			o.apply = func(n int) { key.BinomialStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0, p1) }
		case expr.Beta:
			o.apply = func(n int) { key.BetaStrided(dst[:n], uint64(l.rowBase+l.j0*stride), stride, p0, p1) }
		default:
			return nil, fmt.Errorf("unknown distribution %d", in.Rand.Dist)
		}
	case plan.Range:
		base, coef := in.Linear(len(t.Kernel.Shape))
		l := p.newLeaf(base, coef)
		o.leaf = l
		start, step, stop, exact := in.Start, in.Step, in.Stop, in.Exact
		last := expr.Size(in.Src) - 1 // with Exact, the last element of the source is Stop
		stride := l.coef[p.rank-1]
		o.apply = func(n int) {
			idx := l.rowBase + l.j0*stride
			for i := range dst[:n] {
				if exact && idx == last {
					dst[i] = stop
				} else {
					dst[i] = float64(step*float64(idx)) + start
				}
				idx += stride
			}
		}
	case plan.Input:
		if in.Slot < 0 || in.Slot >= len(t.Inputs) {
			return nil, fmt.Errorf("input slot %d of %d", in.Slot, len(t.Inputs))
		}
		b := &t.Inputs[in.Slot]
		if len(b.Shape) != len(in.Map) || int64(b.Data.Len()) != expr.Size(b.Shape) {
			return nil, fmt.Errorf("input block of shape %s with %d values for a map of %d axes", expr.ShapeString(b.Shape), b.Data.Len(), len(in.Map))
		}
		base, coef := in.LinearIn(b, len(t.Kernel.Shape))
		l := p.newLeaf(base, coef)
		o.leaf = l
		stride := l.coef[p.rank-1]
		switch b.Data.DType() {
		case dtype.Float64:
			data := b.Data.Float64s()
			if stride == 1 && !f32 {
				// A contiguous run is read in place: the block's vector is a window on the
				// input, not a copy (a third of a pass on persisted data was this copy).
				o.alias = true
				o.apply = func(n int) {
					idx := l.rowBase + l.j0
					o.vec = data[idx : idx+int64(n) : idx+int64(n)]
				}
				return o, nil
			}
			o.apply = func(n int) {
				idx := l.rowBase + l.j0*stride
				for i := range dst[:n] {
					dst[i] = data[idx]
					idx += stride
				}
			}
		case dtype.Float32:
			data := b.Data.Float32s()
			o.apply = func(n int) {
				idx := l.rowBase + l.j0*stride
				for i := range dst[:n] {
					dst[i] = float64(data[idx])
					idx += stride
				}
			}
		default:
			data := b.Data
			o.apply = func(n int) {
				idx := l.rowBase + l.j0*stride
				for i := range dst[:n] {
					dst[i] = data.Float(int(idx))
					idx += stride
				}
			}
		}
	case plan.Unary:
		f := unaryFunc(in.Op)
		if f == nil {
			return nil, fmt.Errorf("unknown unary op %v", in.Op)
		}
		a := args[0]
		switch in.Op {
		case expr.OpNeg:
			o.apply = func(n int) {
				for i, x := range a.vec[:n] {
					dst[i] = -x
				}
			}
		case expr.OpAbs: // a call per element through the function value cost 20% of a pass
			o.apply = func(n int) { abs(dst[:n], a.vec) }
		case expr.OpSqrt:
			o.apply = func(n int) {
				for i, x := range a.vec[:n] {
					dst[i] = math.Sqrt(x)
				}
			}
		case expr.OpTrunc, expr.OpFloor, expr.OpCeil: // compiler intrinsics: a loop, no calls
			o.apply = roundLoop(in.Op, dst, a)
		default:
			o.apply = func(n int) {
				for i, x := range a.vec[:n] {
					dst[i] = f(x)
				}
			}
		}
	case plan.Binary:
		if binaryFunc(in.Op) == nil {
			return nil, fmt.Errorf("unknown binary op %v", in.Op)
		}
		a, b := args[0], args[1]
		switch {
		case in.Op == expr.OpNextafter && f32: // the next float32, not the next float64
			o.apply = func(n int) {
				for i := range dst[:n] {
					dst[i] = float64(math.Nextafter32(float32(a.vec[i]), float32(b.vec[i])))
				}
			}
		case b.isC:
			f, c := vsFunc(in.Op, false), b.c
			o.apply = func(n int) { f(dst[:n], a.vec, c) }
		case a.isC:
			f, c := vsFunc(in.Op, true), a.c
			o.apply = func(n int) { f(dst[:n], b.vec, c) }
		default:
			f := vvFunc(in.Op)
			o.apply = func(n int) { f(dst[:n], a.vec, b.vec) }
		}
	case plan.Cast:
		a := args[0]
		if !f32 {
			// Widening to float64 changes no value: share the operand's vector, no step
			// (one per block where that vector is a window on an input).
			o.vec = a.vec
			if a.alias {
				o.alias = true
				o.apply = func(int) { o.vec = a.vec }
			}
			return o, nil
		}
		o.apply = func(n int) { copy(dst[:n], a.vec[:n]) }
	case plan.Where:
		c, x, y := args[0], args[1], args[2]
		get := func(a *operand, i int) float64 {
			if a.isC {
				return a.c
			}
			return a.vec[i]
		}
		o.apply = func(n int) {
			for i := range dst[:n] {
				if get(c, i) != 0 {
					dst[i] = get(x, i)
				} else {
					dst[i] = get(y, i)
				}
			}
		}
	default:
		return nil, fmt.Errorf("unknown instruction code %d", in.Code)
	}
	if f32 {
		inner := o.apply
		o.apply = func(n int) { inner(n); round32(dst[:n]) }
	}
	return o, nil
}

// roundLoop is trunc, floor or ceil over a block.
func roundLoop(op expr.Op, dst []float64, a *operand) func(int) {
	if v := roundAsm(op); v != nil && useAVX {
		r := unaryFunc(op) // the tail's few values
		return func(n int) {
			m := n &^ 3
			v(dst[:m], a.vec[:m])
			for i := m; i < n; i++ {
				dst[i] = r(a.vec[i])
			}
		}
	}
	return roundGo(op, dst, a)
}

// roundGo is roundLoop's Go loop.
func roundGo(op expr.Op, dst []float64, a *operand) func(int) {
	switch op {
	case expr.OpTrunc:
		return func(n int) {
			for i, x := range a.vec[:n] {
				dst[i] = math.Trunc(x)
			}
		}
	case expr.OpFloor:
		return func(n int) {
			for i, x := range a.vec[:n] {
				dst[i] = math.Floor(x)
			}
		}
	}
	return func(n int) {
		for i, x := range a.vec[:n] {
			dst[i] = math.Ceil(x)
		}
	}
}

func roundTo(v float64, f32 bool) float64 {
	if f32 {
		return float64(float32(v))
	}
	return v
}

// Execute runs one task. It stops with ctx's error between rows when ctx is cancelled.
func Execute(ctx context.Context, t *plan.Task) (*plan.Output, error) {
	if t == nil || t.Kernel == nil {
		return nil, fmt.Errorf("cpu: task without kernel")
	}
	k := t.Kernel
	if len(t.Offset) != len(k.Shape) || len(t.Shape) != len(k.Shape) {
		return nil, fmt.Errorf("cpu: task region %v+%v does not match the iteration space %s", t.Offset, t.Shape, expr.ShapeString(k.Shape))
	}
	if k.Result < 0 || k.Result >= len(k.Instrs) {
		return nil, fmt.Errorf("cpu: result %d of %d instructions", k.Result, len(k.Instrs))
	}
	t, err := plan.LoadInputs(ctx, t) // blocks of file-backed arrays are read here, in the task
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	if k.Call != nil {
		return executeCall(ctx, t)
	}
	if swapsInner(t) {
		return executeSwapped(ctx, t)
	}
	return execute(ctx, t, nil)
}

// execute runs a task of an elementwise or reducing kernel whose inputs are loaded. With
// counts, each block of the result is counted into it (a bincount fused with the values:
// no block of values is stored), and the result is counts'.
func execute(ctx context.Context, t *plan.Task, counts *binCounts) (*plan.Output, error) {
	k := t.Kernel
	p, err := compile(t)
	if err != nil {
		return nil, fmt.Errorf("cpu: compile kernel: %w", err)
	}
	res := p.ops[k.Result] // a constant's vector is filled already
	// The steps to run per block: every non-constant instruction, in order.
	var steps []func(int)
	for _, o := range p.ops {
		if !o.isC && o.apply != nil {
			steps = append(steps, o.apply)
		}
	}

	rank := p.rank
	off := pad64(t.Offset, rank)
	shp := padInt(t.Shape, rank)
	reduced := make([]bool, rank)
	copy(reduced, k.Reduced())
	full := padInt(k.Shape, rank)

	out := &plan.Output{}
	var acc accumulator
	var iacc *intAcc
	var cacc *complexAcc
	if counts != nil {
		if k.Reduce != nil {
			return nil, fmt.Errorf("cpu: a bincount of a reduction's values")
		}
	} else if k.Reduce == nil {
		out.Shape = append([]int(nil), t.Shape...)
		out.Data = dtype.Make(k.Instrs[k.Result].DType, int(t.Size()))
	} else {
		out.Shape = append([]int(nil), t.Shape...)
		for i, r := range k.Reduced() {
			if r {
				out.Shape[i] = 1
			}
		}
		switch res.lane {
		case laneF:
			acc, err = newAccumulator(k.Reduce.Red, expr.Size(out.Shape))
		case laneI:
			iacc, err = newIntAcc(k.Reduce.Red, res.dt, expr.Size(out.Shape))
		case laneC:
			cacc, err = newComplexAcc(k.Reduce.Red, res.dt, expr.Size(out.Shape))
		default:
			err = fmt.Errorf("%v of %v values is not supported yet", k.Reduce.Red, res.dt)
		}
		if err != nil {
			return nil, fmt.Errorf("cpu: %w", err)
		}
	}
	if t.Size() == 0 {
		switch {
		case counts != nil:
			out.Data, out.Shape = counts.result()
		case acc != nil:
			out.Data, out.Aux = partials(acc)
		case iacc != nil:
			out.Data, out.Aux = iacc.result()
		case cacc != nil:
			out.Data = dtype.OfComplex128(cacc.s)
		}
		return out, nil
	}

	// Strides: of the local output block, of the partials, and of the flat index over the
	// reduced axes of the whole iteration space (for ArgMin/ArgMax).
	ostr := make([]int64, rank)
	pstr := make([]int64, rank)
	rstr := make([]int64, rank)
	so, sp, sr := int64(1), int64(1), int64(1)
	for d := rank - 1; d >= 0; d-- {
		ostr[d] = so
		so *= int64(shp[d])
		if reduced[d] {
			rstr[d] = sr
			sr *= int64(full[d])
		} else {
			pstr[d] = sp
			sp *= int64(shp[d])
		}
	}
	inner := int64(shp[rank-1])
	innerRed := reduced[rank-1]
	pos := make([]int64, rank) // local index of the current row (inner axis 0)
	rows := t.Size() / inner
	for row := int64(0); row < rows; row++ {
		if row&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var obase, pbase, rbase int64
		for d := 0; d < rank-1; d++ {
			g := off[d] + pos[d]
			obase += pos[d] * ostr[d]
			pbase += pos[d] * pstr[d]
			rbase += g * rstr[d]
		}
		for _, l := range p.leaves {
			rb := l.base
			for d := 0; d < rank-1; d++ {
				rb += l.coef[d] * (off[d] + pos[d])
			}
			l.rowBase = rb
		}
		for j := int64(0); j < inner; j += BlockLen {
			n := int(min(BlockLen, inner-j))
			g0 := off[rank-1] + j
			for _, l := range p.leaves {
				l.j0 = g0
			}
			for _, s := range steps {
				s(n)
			}
			switch {
			case counts != nil:
				if err := counts.add(res, n); err != nil {
					return nil, err
				}
			case iacc != nil && innerRed:
				iacc.fold(pbase, res.ivec[:n], rbase+g0*rstr[rank-1], rstr[rank-1])
			case iacc != nil:
				iacc.each(pbase+j, res.ivec[:n], rbase)
			case cacc != nil && innerRed:
				cacc.fold(pbase, res.cvec[:n])
			case cacc != nil:
				cacc.each(pbase+j, res.cvec[:n])
			case acc == nil:
				storeLane(out.Data, int(obase+j), res, n)
			case innerRed:
				acc.fold(pbase, res.vec[:n], rbase+g0*rstr[rank-1], rstr[rank-1])
			default:
				acc.each(pbase+j, res.vec[:n], rbase)
			}
		}
		for d := rank - 2; d >= 0; d-- {
			pos[d]++
			if pos[d] < int64(shp[d]) {
				break
			}
			pos[d] = 0
		}
	}
	switch {
	case counts != nil:
		out.Data, out.Shape = counts.result()
	case acc != nil:
		out.Data, out.Aux = partials(acc)
	case iacc != nil:
		out.Data, out.Aux = iacc.result()
	case cacc != nil:
		out.Data = dtype.OfComplex128(cacc.s)
	}
	return out, nil
}

// partials returns an accumulator's partials as an Output's Data and Aux (float64).
func partials(acc accumulator) (dtype.Slice, [][]float64) {
	d, aux := acc.result()
	return dtype.OfFloat64(d), aux
}

// store writes the lane values v into dst at off, in dst's dtype.
func store(dst dtype.Slice, off int, v []float64) {
	switch dst.DType() {
	case dtype.Float64:
		copy(dst.Float64s()[off:], v)
	case dtype.Float32:
		d := dst.Float32s()[off : off+len(v)]
		for i, x := range v {
			d[i] = float32(x)
		}
	default:
		dtype.Copy(dst.Slice(off, off+len(v)), dtype.OfFloat64(v))
	}
}

func pad64(v []int, rank int) []int64 {
	out := make([]int64, rank)
	for i, x := range v {
		out[i] = int64(x)
	}
	if len(v) == 0 {
		out[0] = 0
	}
	return out
}

func padInt(v []int, rank int) []int {
	out := make([]int, rank)
	copy(out, v)
	if len(v) == 0 {
		out[0] = 1
	}
	return out
}

// accumulator folds values into partials.
type accumulator interface {
	// fold reduces v into partial p; element i has flat reduced index r0 + i*rs.
	fold(p int64, v []float64, r0, rs int64)
	// each folds v[i] into partial p+i; all have flat reduced index r.
	each(p int64, v []float64, r int64)
	result() ([]float64, [][]float64)
}

func newAccumulator(rd expr.Red, n int64) (accumulator, error) {
	switch rd {
	case expr.Sum, expr.Mean:
		return &sumAcc{s: make([]float64, n)}, nil
	case expr.Min, expr.Max:
		a := &extAcc{max: rd == expr.Max, v: make([]float64, n)}
		inf := math.Inf(1)
		if a.max {
			inf = math.Inf(-1)
		}
		for i := range a.v {
			a.v[i] = inf
		}
		return a, nil
	case expr.ArgMin, expr.ArgMax:
		a := &argAcc{max: rd == expr.ArgMax, v: make([]float64, n), idx: make([]float64, n), set: make([]bool, n)}
		return a, nil
	case expr.Var, expr.Std:
		return &varAcc{n: make([]float64, n), m: make([]float64, n), m2: make([]float64, n)}, nil
	}
	return nil, fmt.Errorf("unknown reduction %d", rd)
}

type sumAcc struct{ s []float64 }

func (a *sumAcc) fold(p int64, v []float64, _, _ int64) {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		s0 += v[i]
		s1 += v[i+1]
		s2 += v[i+2]
		s3 += v[i+3]
	}
	for ; i < len(v); i++ {
		s0 += v[i]
	}
	a.s[p] += (s0 + s1) + (s2 + s3)
}

func (a *sumAcc) each(p int64, v []float64, _ int64) {
	s := a.s[p : p+int64(len(v))]
	for i, x := range v {
		s[i] += x
	}
}

func (a *sumAcc) result() ([]float64, [][]float64) { return a.s, nil }

type extAcc struct {
	max bool
	v   []float64
}

func (a *extAcc) fold(p int64, v []float64, _, _ int64) {
	m := a.v[p]
	for _, x := range v {
		m = plan.Extreme(a.max, m, x)
	}
	a.v[p] = m
}

func (a *extAcc) each(p int64, v []float64, _ int64) {
	for i, x := range v {
		a.v[p+int64(i)] = plan.Extreme(a.max, a.v[p+int64(i)], x)
	}
}

func (a *extAcc) result() ([]float64, [][]float64) { return a.v, nil }

type argAcc struct {
	max    bool
	v, idx []float64
	set    []bool
}

func (a *argAcc) put(p int64, x float64, r int64) {
	if !a.set[p] || plan.TakeSecond(a.max, a.v[p], a.idx[p], x, float64(r)) {
		a.v[p], a.idx[p], a.set[p] = x, float64(r), true
	}
}

func (a *argAcc) fold(p int64, v []float64, r0, rs int64) {
	for i, x := range v {
		a.put(p, x, r0+int64(i)*rs)
	}
}

func (a *argAcc) each(p int64, v []float64, r int64) {
	for i, x := range v {
		a.put(p+int64(i), x, r)
	}
}

func (a *argAcc) result() ([]float64, [][]float64) { return a.v, [][]float64{a.idx} }

type varAcc struct{ n, m, m2 []float64 }

func (a *varAcc) fold(p int64, v []float64, _, _ int64) {
	var s float64
	for _, x := range v {
		s += x
	}
	nb := float64(len(v))
	mb := s / nb
	var q float64
	for _, x := range v {
		d := x - mb
		q += d * d
	}
	a.n[p], a.m[p], a.m2[p] = plan.Chan(a.n[p], a.m[p], a.m2[p], nb, mb, q)
}

func (a *varAcc) each(p int64, v []float64, _ int64) {
	if len(v) == 0 {
		return
	}
	// Every partial of a call has seen the same rows (Execute walks whole rows), so the
	// count and its reciprocal are one: a multiply per element, not a divide.
	n := a.n[p : p+int64(len(v))]
	if c := n[0]; c == n[len(n)-1] {
		c++
		welford(n, a.m[p:], a.m2[p:], v, c, 1/c)
		return
	}
	for i, x := range v {
		j := p + int64(i)
		a.n[j]++
		d := x - a.m[j]
		a.m[j] += d / a.n[j]
		a.m2[j] += d * (x - a.m[j])
	}
}

func (a *varAcc) result() ([]float64, [][]float64) { return a.n, [][]float64{a.m, a.m2} }
