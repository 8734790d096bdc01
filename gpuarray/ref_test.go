package gpuarray

import (
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// refEval is the naive reference: it materializes every node of the graph, element by element,
// with no fusion, no chunks and no shared code with the planner or the CPU executor.
func refEval(n *expr.Node) []float64 {
	size := int(expr.Size(n.Shape))
	out := make([]float64, size)
	r32 := func(v float64) float64 {
		if n.DType == expr.Float32 {
			return float64(float32(v))
		}
		return v
	}
	switch n.Kind {
	case expr.KConst:
		for i := range out {
			out[i] = n.Value
		}
	case expr.KRandom:
		k := rng.Key{K0: n.Rand.Key[0], K1: n.Rand.Key[1]}
		for i := range out {
			switch n.Rand.Dist {
			case expr.Normal:
				out[i] = r32(n.Rand.P0 + n.Rand.P1*k.Normal(uint64(i)))
			case expr.Uniform:
				out[i] = r32(n.Rand.P0 + (n.Rand.P1-n.Rand.P0)*k.Uniform(uint64(i)))
			case expr.Integers:
				out[i] = r32(n.Rand.P0 + float64(k.Integer(uint64(i), uint64(n.Rand.P1-n.Rand.P0))))
			}
		}
	case expr.KRange:
		for i := range out {
			out[i] = r32(n.Start + n.Step*float64(i))
			if n.Exact && i == size-1 {
				out[i] = r32(n.Stop)
			}
		}
	case expr.KData:
		copy(out, n.Data.ToFloat64())
	case expr.KUnary:
		a := refEval(n.Args[0])
		for i, x := range a {
			var v float64
			switch n.Op {
			case expr.OpNeg:
				v = -x
			case expr.OpAbs:
				v = math.Abs(x)
			case expr.OpExp:
				v = math.Exp(x)
			case expr.OpLog:
				v = math.Log(x)
			case expr.OpSqrt:
				v = math.Sqrt(x)
			case expr.OpSin:
				v = math.Sin(x)
			case expr.OpCos:
				v = math.Cos(x)
			case expr.OpTanh:
				v = math.Tanh(x)
			}
			out[i] = r32(v)
		}
	case expr.KBinary:
		a, b := refEval(n.Args[0]), refEval(n.Args[1])
		for i := range out {
			x, y := a[i], b[i]
			var v float64
			bf := func(c bool) float64 {
				if c {
					return 1
				}
				return 0
			}
			switch n.Op {
			case expr.OpAdd:
				v = x + y
			case expr.OpSub:
				v = x - y
			case expr.OpMul:
				v = x * y
			case expr.OpDiv:
				v = x / y
			case expr.OpPow:
				v = math.Pow(x, y)
			case expr.OpMax:
				v = math.Max(x, y)
			case expr.OpMin:
				v = math.Min(x, y)
			case expr.OpEq:
				v = bf(x == y)
			case expr.OpNe:
				v = bf(x != y)
			case expr.OpLt:
				v = bf(x < y)
			case expr.OpLe:
				v = bf(x <= y)
			case expr.OpGt:
				v = bf(x > y)
			case expr.OpGe:
				v = bf(x >= y)
			}
			out[i] = r32(v)
		}
	case expr.KWhere:
		c, x, y := refEval(n.Args[0]), refEval(n.Args[1]), refEval(n.Args[2])
		for i := range out {
			if c[i] != 0 {
				out[i] = r32(x[i])
			} else {
				out[i] = r32(y[i])
			}
		}
	case expr.KCast:
		a := refEval(n.Args[0])
		for i := range out {
			out[i] = r32(a[i])
		}
	case expr.KView:
		in := n.Args[0]
		a := refEval(in)
		for i := range out {
			o := unravel(i, n.Shape)
			src := make([]int, len(in.Shape))
			for d, m := range n.Map {
				src[d] = m.Off
				if m.Axis >= 0 {
					src[d] += m.Step * o[m.Axis]
				}
			}
			out[i] = a[ravel(src, in.Shape)]
		}
	case expr.KReduce:
		in := n.Args[0]
		a := refEval(in)
		red := map[int]bool{}
		for _, ax := range n.Axes {
			red[ax] = true
		}
		groups := make([][]float64, size)
		gidx := make([][]int, size)
		for i, x := range a {
			o := unravel(i, in.Shape)
			var keep, rshape, ridx []int
			for d := range o {
				if red[d] {
					rshape = append(rshape, in.Shape[d])
					ridx = append(ridx, o[d])
				} else {
					keep = append(keep, o[d])
				}
			}
			j := ravel(keep, n.Shape)
			groups[j] = append(groups[j], x)
			gidx[j] = append(gidx[j], ravel(ridx, rshape))
		}
		for j, g := range groups {
			var v float64
			switch n.Red {
			case expr.Sum, expr.Mean:
				for _, x := range g {
					v += x
				}
				if n.Red == expr.Mean {
					v /= float64(len(g))
				}
			case expr.Var, expr.Std:
				var m float64
				for _, x := range g {
					m += x
				}
				m /= float64(len(g))
				for _, x := range g {
					v += (x - m) * (x - m)
				}
				v /= float64(len(g))
				if n.Red == expr.Std {
					v = math.Sqrt(v)
				}
			case expr.Min, expr.Max, expr.ArgMin, expr.ArgMax:
				best := 0
				for k := range g {
					if (n.Red == expr.Min || n.Red == expr.ArgMin) && g[k] < g[best] || (n.Red == expr.Max || n.Red == expr.ArgMax) && g[k] > g[best] {
						best = k
					}
				}
				v = g[best]
				if n.Red == expr.ArgMin || n.Red == expr.ArgMax {
					v = float64(gidx[j][best])
				}
			}
			out[j] = r32(v)
		}
	}
	return out
}

func unravel(i int, shape []int) []int {
	o := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		o[d] = i % shape[d]
		i /= shape[d]
	}
	return o
}

func ravel(o, shape []int) int {
	i := 0
	for d := range shape {
		i = i*shape[d] + o[d]
	}
	return i
}
