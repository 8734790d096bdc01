package plan

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Assemble turns the outputs of the stage's tasks (outs[i] for Tasks[i]) into the node's
// values, row-major. Reduction partials are combined in a fixed tree order.
func (st *Stage) Assemble(outs []*Output) (dtype.Slice, error) {
	if len(outs) != len(st.Tasks) {
		return dtype.Slice{}, fmt.Errorf("assemble: %d outputs for %d tasks", len(outs), len(st.Tasks))
	}
	for i, o := range outs {
		if o == nil {
			return dtype.Slice{}, fmt.Errorf("assemble: task %d returned no output", i)
		}
		if want := st.outShape(st.Tasks[i]); expr.Size(o.Shape) != expr.Size(want) || int64(o.Data.Len()) != expr.Size(want) {
			return dtype.Slice{}, fmt.Errorf("assemble: task %d returned shape %s with %d values, want %s", i, expr.ShapeString(o.Shape), o.Data.Len(), expr.ShapeString(want))
		}
		if st.Kernel.Reduce == nil && o.Data.DType() != st.Node.DType {
			return dtype.Slice{}, fmt.Errorf("assemble: task %d returned %v values for a %v array", i, o.Data.DType(), st.Node.DType)
		}
	}
	if st.Kernel.Reduce == nil {
		return st.place(outs, st.Node.Shape, nil), nil
	}
	return st.reduce(outs)
}

func (st *Stage) outShape(t *Task) []int {
	if c := st.Kernel.Call; c != nil {
		return c.OutShape(t.Shape)
	}
	s := append([]int(nil), t.Shape...)
	for k, r := range st.Kernel.Reduced() {
		if r {
			s[k] = 1
		}
	}
	return s
}

// place copies blocks into a row-major array of shape; keep says which axes of the
// iteration space the array has (nil: all).
func (st *Stage) place(outs []*Output, shape []int, keep []bool) dtype.Slice {
	// One task that covers the whole array: its output is the array (outputs are fresh
	// buffers no one else holds). Copying an 800 MB chunk into new memory cost about 3 s on
	// a 2-core VM, mostly first-touch page faults.
	if len(outs) == 1 && keep == nil && int64(outs[0].Data.Len()) == expr.Size(shape) && slices.Equal(outs[0].Shape, shape) {
		return outs[0].Data
	}
	dt := dtype.Float64
	if len(outs) > 0 {
		dt = outs[0].Data.DType()
	}
	res := dtype.Make(dt, int(expr.Size(shape)))
	for i, o := range outs {
		t := st.Tasks[i]
		if keep == nil && st.Kernel != nil && st.Kernel.Call != nil {
			// A call's output box differs from its task's along the axes it reads whole.
			copyBox(res, shape, o.Data, st.Kernel.Call.OutOffset(t.Offset, t.Index), o.Shape)
			continue
		}
		var off, shp []int
		for k := range t.Offset {
			if keep == nil || keep[k] {
				off = append(off, t.Offset[k])
				shp = append(shp, t.Shape[k])
			}
		}
		copyBox(res, shape, o.Data, off, shp)
	}
	return res
}

// copyBox writes src (row-major, shape shp) into dst (row-major, shape full) at off.
func copyBox(dst dtype.Slice, full []int, src dtype.Slice, off, shp []int) {
	r := len(full)
	if r == 0 {
		dtype.Copy(dst, src)
		return
	}
	n := expr.Size(shp)
	if n == 0 {
		return
	}
	strides := rowStrides(full)
	inner := shp[r-1]
	pos := make([]int, r)
	for o := int64(0); o < n; o += int64(inner) {
		d0 := 0
		for d := 0; d < r; d++ {
			d0 += (off[d] + pos[d]) * strides[d]
		}
		dtype.Copy(dst.Slice(d0, d0+inner), src.Slice(int(o), int(o)+inner))
		for d := r - 2; d >= 0; d-- {
			pos[d]++
			if pos[d] < shp[d] {
				break
			}
			pos[d] = 0
		}
	}
}

func (st *Stage) reduce(outs []*Output) (dtype.Slice, error) {
	red := st.Kernel.Reduced()
	rd := st.Kernel.Reduce.Red
	// Group tasks by their chunk position on the kept axes, in chunk order.
	rank := len(st.grid)
	groups := map[string][]int{}
	var order []string
	for i, t := range st.Tasks {
		key := ""
		for k := 0; k < rank; k++ {
			if !red[k] {
				key += fmt.Sprint(t.Offset[k], ",")
			}
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	combined := make([]*Output, 0, len(order))
	tasks := make([]*Task, 0, len(order))
	for _, key := range order {
		idx := groups[key]
		ps := make([]*Output, len(idx))
		for j, i := range idx {
			ps[j] = outs[i]
		}
		c, err := tree(rd, ps)
		if err != nil {
			return dtype.Slice{}, err
		}
		combined = append(combined, c)
		tasks = append(tasks, st.Tasks[idx[0]])
	}
	keep := make([]bool, rank)
	for k := range keep {
		keep[k] = !red[k]
	}
	sub := &Stage{Tasks: tasks}
	shape := st.Node.Shape
	total := int64(1)
	for k, r := range red {
		if r {
			total *= int64(st.Kernel.Shape[k])
		}
	}
	firstS := sub.place(combined, shape, keep)
	switch {
	case rd == expr.ArgMin || rd == expr.ArgMax:
		return dtype.Convert(sub.place(auxOf(combined, 0), shape, keep), st.Node.DType), nil
	case firstS.DType() == dtype.Int64 || firstS.DType() == dtype.Uint64:
		return dtype.Convert(firstS, st.Node.DType), nil // an integer Sum, Min or Max
	case firstS.DType() == dtype.Complex128: // a complex Sum or Mean
		if rd == expr.Mean {
			c := firstS.Complex128s()
			for i := range c {
				c[i] /= complex(float64(total), 0)
			}
		}
		return dtype.Convert(firstS, st.Node.DType), nil
	case firstS.DType() != dtype.Float64:
		return dtype.Slice{}, fmt.Errorf("assemble: %v partials in %v", rd, firstS.DType())
	}
	first := firstS.Float64s()
	switch rd {
	case expr.Mean:
		for i := range first {
			first[i] /= float64(total)
		}
	case expr.Var, expr.Std:
		m2 := sub.place(auxOf(combined, 1), shape, keep).Float64s()
		for i := range first {
			v := m2[i] / first[i]
			if rd == expr.Std {
				v = math.Sqrt(v)
			}
			first[i] = v
		}
	}
	return dtype.Convert(firstS, st.Node.DType), nil
}

func auxOf(outs []*Output, j int) []*Output {
	r := make([]*Output, len(outs))
	for i, o := range outs {
		r[i] = &Output{Shape: o.Shape, Data: dtype.OfFloat64(o.Aux[j])}
	}
	return r
}

// tree combines partials pairwise: the left half, the right half, then the two.
func tree(rd expr.Red, ps []*Output) (*Output, error) {
	if len(ps) == 1 {
		return ps[0], nil
	}
	h := len(ps) / 2
	a, err := tree(rd, ps[:h])
	if err != nil {
		return nil, err
	}
	b, err := tree(rd, ps[h:])
	if err != nil {
		return nil, err
	}
	return Combine(rd, a, b)
}

// Combine merges the partials b into a copy of a (b covers later chunks than a).
func Combine(rd expr.Red, a, b *Output) (*Output, error) {
	n := a.Data.Len()
	if b.Data.Len() != n {
		return nil, fmt.Errorf("combine %v partials: %d vs %d values", rd, n, b.Data.Len())
	}
	if a.Data.DType() != b.Data.DType() {
		return nil, fmt.Errorf("combine %v partials: %v and %v values", rd, a.Data.DType(), b.Data.DType())
	}
	if dt := a.Data.DType(); dt == dtype.Int64 || dt == dtype.Uint64 {
		return combineInts(rd, a, b)
	}
	if a.Data.DType() == dtype.Complex128 {
		if rd != expr.Sum && rd != expr.Mean {
			return nil, fmt.Errorf("combine %v partials of complex values", rd)
		}
		x, y := a.Data.Complex128s(), b.Data.Complex128s()
		c := make([]complex128, n)
		for i := range c {
			c[i] = x[i] + y[i]
		}
		return &Output{Shape: a.Shape, Data: dtype.OfComplex128(c)}, nil
	}
	ad, bd := a.Data.Float64s(), b.Data.Float64s()
	if ad == nil || bd == nil {
		return nil, fmt.Errorf("combine %v partials: %v values, want float64", rd, a.Data.DType())
	}
	need := map[expr.Red]int{expr.ArgMin: 1, expr.ArgMax: 1, expr.Var: 2, expr.Std: 2}[rd]
	if len(a.Aux) < need || len(b.Aux) < need {
		return nil, fmt.Errorf("combine %v partials: missing auxiliary partials", rd)
	}
	cd := make([]float64, n)
	c := &Output{Shape: a.Shape, Data: dtype.OfFloat64(cd)}
	for j := 0; j < need; j++ {
		c.Aux = append(c.Aux, make([]float64, n))
	}
	for i := 0; i < n; i++ {
		x, y := ad[i], bd[i]
		switch rd {
		case expr.Sum, expr.Mean:
			cd[i] = x + y
		case expr.Min, expr.Max:
			cd[i] = Extreme(rd == expr.Max, x, y)
		case expr.ArgMin, expr.ArgMax:
			if TakeSecond(rd == expr.ArgMax, x, a.Aux[0][i], y, b.Aux[0][i]) {
				cd[i], c.Aux[0][i] = y, b.Aux[0][i]
			} else {
				cd[i], c.Aux[0][i] = x, a.Aux[0][i]
			}
		case expr.Var, expr.Std:
			cd[i], c.Aux[0][i], c.Aux[1][i] = Chan(x, a.Aux[0][i], a.Aux[1][i], y, b.Aux[0][i], b.Aux[1][i])
		}
	}
	return c, nil
}

// Extreme returns the maximum (max) or minimum of x and y; NaN wins.
func Extreme(max bool, x, y float64) float64 {
	switch {
	case x != x:
		return x
	case y != y:
		return y
	case max == (y > x):
		if y == x {
			return x
		}
		return y
	}
	return x
}

// TakeSecond reports whether candidate (y, iy) beats (x, ix) for ArgMax (max) or ArgMin:
// more extreme, or as extreme with a smaller index; NaN beats numbers.
func TakeSecond(max bool, x, ix, y, iy float64) bool {
	xn, yn := x != x, y != y
	switch {
	case xn || yn:
		if xn && yn {
			return iy < ix
		}
		return yn
	case y == x:
		return iy < ix
	case max:
		return y > x
	}
	return y < x
}

// Chan merges two (count, mean, M2) partials (Chan, Golub and LeVeque).
func Chan(na, ma, m2a, nb, mb, m2b float64) (n, m, m2 float64) {
	if nb == 0 {
		return na, ma, m2a
	}
	if na == 0 {
		return nb, mb, m2b
	}
	n = na + nb
	d := mb - ma
	m = ma + d*(nb/n)
	m2 = m2a + m2b + d*d*(na*nb/n)
	return n, m, m2
}

// combineInts merges integer partials (int64, or uint64 for unsigned dtypes): sums wrap, and
// ties of ArgMin and ArgMax go to the smaller index.
func combineInts(rd expr.Red, a, b *Output) (*Output, error) {
	unsigned := a.Data.DType() == dtype.Uint64
	av, bv := dtype.Convert(a.Data, dtype.Int64).Int64s(), dtype.Convert(b.Data, dtype.Int64).Int64s()
	n := len(av)
	arg := rd == expr.ArgMin || rd == expr.ArgMax
	if arg && (len(a.Aux) < 1 || len(b.Aux) < 1) {
		return nil, fmt.Errorf("combine %v partials: missing indexes", rd)
	}
	cv := make([]int64, n)
	c := &Output{Shape: a.Shape}
	if arg {
		c.Aux = [][]float64{make([]float64, n)}
	}
	less := func(x, y int64) bool {
		if unsigned {
			return uint64(x) < uint64(y)
		}
		return x < y
	}
	for i := range n {
		x, y := av[i], bv[i]
		switch rd {
		case expr.Sum:
			cv[i] = x + y
		case expr.Min:
			cv[i] = x
			if less(y, x) {
				cv[i] = y
			}
		case expr.Max:
			cv[i] = x
			if less(x, y) {
				cv[i] = y
			}
		case expr.ArgMin, expr.ArgMax:
			ix, iy := a.Aux[0][i], b.Aux[0][i]
			second := less(y, x)
			if rd == expr.ArgMax {
				second = less(x, y)
			}
			if x == y {
				second = iy < ix
			}
			if second {
				cv[i], c.Aux[0][i] = y, iy
			} else {
				cv[i], c.Aux[0][i] = x, ix
			}
		default:
			return nil, fmt.Errorf("combine %v partials of integers (internal: the planner casts to float64 first)", rd)
		}
	}
	c.Data = dtype.Convert(dtype.OfInt64(cv), a.Data.DType())
	return c, nil
}
