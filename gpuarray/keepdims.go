package gpuarray

import "slices"

// KeepDims returns a marked so that the reduction called on it next keeps the reduced axes,
// with length 1 (the Array API's keepdims=True): x.KeepDims().Sum(1) of an (m, n) array has
// shape (m, 1), and broadcasts against x. Every reduction method takes the mark (Sum, Mean,
// Var, Std, Min, Max, ArgMin, ArgMax, Prod, Any, All, CountNonzero, the Nan and Ddof
// variants), and so do Quantile, Percentile, Median, Quantiles, VectorNorm and MatrixNorm;
// other operations ignore it, and their results carry no mark.
func (a *Array) KeepDims() *Array {
	if a.Err() != nil {
		return a
	}
	return &Array{n: a.n, keep: true}
}

// marked reports whether a carries the KeepDims mark.
func (a *Array) marked() bool { return a != nil && a.keep && a.err == nil }

// kept runs the reduction f over axes on a without its mark, then puts the reduced axes
// (all when none are given) back with length 1.
func (a *Array) kept(axes []int, f func(*Array, ...int) *Array) *Array {
	r := f(&Array{n: a.n}, axes...)
	if r.Err() != nil {
		return r
	}
	return keepAxes(r, axes, len(a.n.Shape))
}

// keepAxes inserts axes of length 1 into r where the reduction of a rank-rank array over axes
// removed them.
func keepAxes(r *Array, axes []int, rank int) *Array {
	ax, err := axisList("KeepDims", axes, rank)
	if err != nil {
		return errArray(err)
	}
	if len(ax) == 0 {
		return r
	}
	slices.Sort(ax)
	return ExpandDims(r, ax...)
}
