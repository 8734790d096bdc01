package gpuarray

import (
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Histograms and bincounts. Each chunk is counted on its own (a library call of the chunk's
// fused values: the bin of each element is elementwise work fused before it, and on a GPU
// the same kernel counts it), and the chunks' counts are summed: int64 counts are exact, so
// the result is the same for any chunking; weighted sums add each chunk's weights in a fixed
// order (on the CPU row by row, on a GPU as cuda's wbincount.go says), then the chunks' sums.

// bincountOf returns the number of occurrences of each value 0, 1, ... of the 1-d array x of
// non-negative integers, as numpy.bincount: int64 counts, or with weights (nil for none; x's
// shape) the float64 sums of the weights of each value. The result has length
// max(minlength, max(x)+1): with minlength 0 the maximum of x is computed first (as dask
// must); with minlength > 0 the result stays lazy with that length, and a value of x at or
// above it is an error when computed.
func bincountOf(x, weights *Array, minlength int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if weights != nil {
		if err := weights.Err(); err != nil {
			return errArray(err)
		}
	}
	if x.NDim() != 1 {
		return errArray(fmt.Errorf("Bincount: x of shape %s, want 1-d", expr.ShapeString(x.Shape())))
	}
	if dt := x.DType(); !dt.IsInteger() && dt != Bool {
		return errArray(fmt.Errorf("Bincount: x holds %v values, want integers", dt))
	}
	if minlength < 0 {
		return errArray(fmt.Errorf("Bincount: minlength %d must not be negative", minlength))
	}
	n := minlength
	if n == 0 {
		if expr.HasUnknown(x.Shape()) {
			return errArray(expr.ErrUnknown("Bincount without a minlength", x.Shape()))
		}
		n = 1 // numpy.bincount of no values has length 0; one zero bin is cut below
		if x.Shape()[0] > 0 {
			// Where x reads arrays held on GPUs, its maximum is computed there (the default
			// scheduler, the CPU unless the session set one, copied a persisted 1e8 int64
			// vector to the host and took its max there: 405 ms of bincount(iv) on an H200
			// against CuPy's 2.4 ms, bench/RESULTS.md).
			var opts []ComputeOption
			if devs := heldGPUs(x.n); len(devs) > 0 {
				opts = append(opts, OnGPUs(devs...))
			}
			m, err := x.Max().Float64(opts...)
			if err != nil {
				return errArray(fmt.Errorf("Bincount: the maximum of x: %w", err))
			}
			if m < 0 {
				return errArray(fmt.Errorf("Bincount: the value %v is negative", m))
			}
			n = int(m) + 1
		}
	}
	out := bincount(x, weights, n)
	if minlength == 0 && x.Shape()[0] == 0 {
		return out.Slice(Span(0, 0))
	}
	return out
}

// bincount counts the values 0..n-1 of the 1-d x (any dtype of integer values), or sums
// weights by them.
func bincount(x, weights *Array, n int) *Array {
	var node *expr.Node
	var err error
	if weights == nil {
		node, err = expr.NewBincount(x.n, n, false)
	} else {
		if weights.NDim() != 1 || (!expr.HasUnknown(x.Shape()) && weights.Shape()[0] != x.Shape()[0]) {
			return errArray(fmt.Errorf("Bincount: weights of shape %s for x of shape %s", expr.ShapeString(weights.Shape()), expr.ShapeString(x.Shape())))
		}
		if weights.DType().IsComplex() {
			return errArray(fmt.Errorf("Bincount: complex weights are not supported"))
		}
		// [value, weight] rows by a where over a broadcast column index: elementwise work fused
		// with what computes x and w (a stack would join them in a copy first).
		w := weights.rechunkSizes(x.Chunks()[0])
		rows := Where(Arange(0, 2, 1).Eq(0), ExpandDims(x.AsType(Float64), -1), ExpandDims(w.AsType(Float64), -1))
		if err := rows.Err(); err != nil {
			return errArray(fmt.Errorf("Bincount: %w", err))
		}
		node, err = expr.NewBincount(rows.n, n, true)
	}
	if err != nil {
		return errArray(fmt.Errorf("Bincount: %w", err))
	}
	per := wrap(node, nil)
	k := len(node.Chunks[0])
	if weights != nil {
		return per.Reshape(k, n).Sum(0)
	}
	// The chunks' int64 counts are summed as int64 (on a GPU in integer registers too).
	return per.Reshape(k, n).Sum(0)
}

// rechunkSizes rechunks a to the given chunk sizes per axis.
func (a *Array) rechunkSizes(sizes ...[]int) *Array {
	if err := a.Err(); err != nil {
		return a
	}
	return wrap(expr.NewRechunk(a.n, sizes))
}

// histogram returns the histogram of x's values (all of them, flattened) in bins equal bins
// over [lo, hi], and the bins' edges, as numpy.histogram(x, bins, range=(lo, hi),
// weights=weights): int64 counts, or the float64 sums of weights (nil for none; x's shape).
// Each bin holds lo+i*w <= v < lo+(i+1)*w, the last one hi too; values outside [lo, hi]
// (and NaN) are left out. With lo and hi both NaN the range is x's minimum and maximum,
// computed first (NumPy's range=None); lo == hi widens it by 0.5 on each side, as NumPy. Bins
// so narrow that their edges repeat in x's dtype are an error, as in NumPy.
func histogram(x *Array, bins int, lo, hi float64, weights *Array) (hist, edges *Array) {
	if err := x.Err(); err != nil {
		return errArray(err), errArray(err)
	}
	fail := func(err error) (*Array, *Array) {
		err = fmt.Errorf("Histogram: %w", err)
		return errArray(err), errArray(err)
	}
	if bins < 1 {
		return fail(fmt.Errorf("bins %d must be positive", bins))
	}
	if x.DType().IsComplex() {
		return fail(fmt.Errorf("%v values have no order", x.DType()))
	}
	if math.IsNaN(lo) && math.IsNaN(hi) {
		if size := expr.Size(x.Shape()); size == 0 {
			lo, hi = 0, 1
		} else if size > 0 {
			r, err := ComputeAll(x.Min(), x.Max())
			if err != nil {
				return fail(fmt.Errorf("the range of x: %w", err))
			}
			if lo, err = r[0].Float64(); err == nil {
				hi, err = r[1].Float64()
			}
			if err != nil {
				return fail(err)
			}
			if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
				return fail(fmt.Errorf("autodetected range of [%v, %v] is not finite", lo, hi))
			}
		}
	} else if lo > hi || math.IsNaN(lo) || math.IsNaN(hi) {
		return fail(fmt.Errorf("the range [%v, %v] is not increasing", lo, hi))
	} else if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return fail(fmt.Errorf("supplied range of [%v, %v] is not finite", lo, hi))
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	bt := Float64 // NumPy's bin type: float32 data keeps float32 edges
	if x.DType() == Float32 {
		bt = Float32
	}
	step := (hi - lo) / float64(bins) // as numpy.linspace: delta/div
	if !edgesIncrease(lo, hi, step, bins, bt) {
		return fail(fmt.Errorf("too many bins for data range: cannot create %d finite-sized bins (edges of %v over [%v, %v] repeat)", bins, bt, lo, hi))
	}
	edges = Linspace(lo, hi, bins+1, WithDType(bt))
	// Counts need no order: unweighted, the bins are counted chunk by chunk of x as it is
	// (a ravel would read across chunks: a persisted array's from the host).
	v := x.AsType(bt)
	if weights != nil || x.NDim() == 0 {
		v = v.Ravel()
	}
	return histogramOf(histogramBins(v, bins, lo, hi, step, bt), weights, x, bins), edges
}

// histogramBins returns the float64 bin numbers of the values v (of dtype bt) in bins equal
// bins of width step over [lo, hi], as numpy.histogram finds them; bins for values left out.
func histogramBins(v *Array, bins int, lo, hi, step float64, bt DType) *Array {
	nb := float64(bins)
	// edgeAt is edges[i] for a float64 array i of bin numbers below bins, as Linspace computes
	// them (the last edge, hi, is never needed below).
	edgeAt := func(i *Array) *Array { return i.Mul(step).Add(lo).AsType(bt) }
	keep := LogicalAnd(v.Ge(lo), v.Le(hi))
	if s := nb / (hi - lo); guessByProduct(lo, hi, step, s, bt) {
		// A product in place of NumPy's quotient (a division costs a GPU about ten fp64
		// operations), rounded to the nearest integer r by adding and taking away 1.5*2^52
		// (two additions, where a truncation takes the slower conversion unit). The edges'
		// bin is then r or r-1 (guessByProduct), as the edge r tells: one correction, and
		// the counts are NumPy's.
		const round = 0x1.8p52
		r := v.AsType(Float64).Sub(lo).Mul(s).Add(round).Sub(round)
		r = Where(r.Eq(nb), nb-1, r) // v in the last half of the last bin, which holds hi
		return Where(keep, Where(v.Lt(edgeAt(r)), r.Sub(1), r), nb)
	}
	// numpy.histogram's guess, then its corrections by the edges within one bin. For a kept
	// value the guess is in [0, bins-1] after the first Where, and stays there.
	idx := Trunc(v.AsType(Float64).Sub(lo).Div(hi - lo).Mul(nb))
	idx = Where(idx.Eq(nb), nb-1, idx)
	idx = Where(v.Lt(edgeAt(idx)), idx.Sub(1), idx)
	// At next == bins the test fails on idx == bins-1 whatever edgeAt(next) is.
	next := idx.Add(1)
	idx = Where(LogicalAnd(v.Ge(edgeAt(next)), idx.Ne(nb-1)), next, idx)
	// Values left out count in an extra last bin, dropped.
	idx = Where(keep, idx, nb)
	return idx
}

// edgesIncrease reports whether the bins+1 edges of a histogram over [lo, hi] (as Linspace
// computes them in bt: i*step + lo, the last hi) increase strictly; NumPy refuses to count
// into edges that do not. Bins wider than 64 units in the last place need no look.
func edgesIncrease(lo, hi, step float64, bins int, bt DType) bool {
	if guessByProduct(lo, hi, step, float64(bins)/(hi-lo), bt) && !histGuessQuotient {
		return true
	}
	edge := func(i int) float64 {
		e := hi
		if i < bins {
			e = float64(float64(i)*step) + lo // two roundings, as Linspace
		}
		if bt == Float32 {
			return float64(float32(e))
		}
		return e
	}
	prev := edge(0)
	for i := 1; i <= bins; i++ {
		e := edge(i)
		if !(e > prev) {
			return false
		}
		prev = e
	}
	return true
}

// histGuessQuotient (GPUNOTES_HIST_GUESS=quotient) keeps NumPy's guess for every range (to
// measure the product).
var histGuessQuotient = os.Getenv("GPUNOTES_HIST_GUESS") == "quotient"

// guessByProduct reports whether a histogram's first guess of a bin may be r, (v-lo)*s
// rounded to the nearest integer (s = bins/(hi-lo)), rather than NumPy's (v-lo)/(hi-lo)*bins
// truncated. Both products are then within 1/32 of a bin of v's exact place p (in bins from
// lo), and the edges (as Linspace computes them, in bt) within 1/16 of a bin of theirs, while
// a bin spans at least 64 units in the last place of the range's ends. So NumPy's guess is
// within one bin of the edges' bin, which its two corrections find; and |r - p| <= 1/2 +
// 1/32, so edge r+1 lies above v and edge r-1 below it: the edges' bin is r where v >= edge
// r, else r-1 (one correction). Narrower bins keep NumPy's arithmetic, whose guess can then
// be off by more.
func guessByProduct(lo, hi, step, s float64, bt DType) bool {
	if histGuessQuotient || math.IsInf(hi-lo, 0) || math.IsInf(s, 0) || math.IsNaN(s) {
		return false
	}
	m := max(math.Abs(lo), math.Abs(hi))
	ulp := math.Nextafter(m, math.Inf(1)) - m
	if bt == Float32 {
		m32 := float32(m)
		ulp = float64(math.Nextafter32(m32, float32(math.Inf(1)))) - float64(m32)
	}
	return !math.IsInf(ulp, 0) && !math.IsNaN(ulp) && step >= 64*ulp
}

// HistogramEdges returns the histogram of x's values (flattened) in the bins between the
// ascending edges (a 1-d array of at least two values), as numpy.histogram(x, bins=edges):
// bin i holds edges[i] <= v < edges[i+1], the last one its right edge too; int64 counts, or
// the float64 sums of weights (nil for none; x's shape). Each value is compared with every
// edge, fused with what computes x: meant for tens to hundreds of edges.
func HistogramEdges(x, edges, weights *Array) *Array {
	if err := firstErr([]*Array{x, edges}); err != nil {
		return errArray(err)
	}
	if edges.NDim() != 1 || edges.Shape()[0] < 2 {
		return errArray(fmt.Errorf("HistogramEdges: edges of shape %s, want 1-d with at least two", expr.ShapeString(edges.Shape())))
	}
	if x.DType().IsComplex() {
		return errArray(fmt.Errorf("HistogramEdges: %v values have no order", x.DType()))
	}
	bins := edges.Shape()[0] - 1
	dt := dtype.Promote(x.DType(), edges.DType())
	v := x.Ravel().AsType(dt)
	e := edges.AsType(dt)
	first := e.Slice(At(0))
	last := e.Slice(At(bins))
	nb := float64(bins)
	// The bin of v: how many edges are <= v, less one, a fused count over the edges (len(edges)
	// comparisons per value, fused with what computes x: no copy of x, as a binary search
	// would need).
	idx := e.Le(ExpandDims(v, -1)).Sum(-1).AsType(Float64).Sub(1)
	idx = Where(v.Eq(last), nb-1, idx)
	keep := LogicalAnd(v.Ge(first), v.Le(last))
	idx = Where(keep, idx, nb)
	return histogramOf(idx, weights, x, bins)
}

// histogramOf counts the float64 bin numbers idx (bins for values left out) and returns the
// first bins counts, or weights' sums.
func histogramOf(idx, weights, x *Array, bins int) *Array {
	var w *Array
	if weights != nil {
		if err := weights.Err(); err != nil {
			return errArray(err)
		}
		if !slices.Equal(weights.Shape(), x.Shape()) {
			return errArray(fmt.Errorf("Histogram: weights of shape %s for x of shape %s", expr.ShapeString(weights.Shape()), expr.ShapeString(x.Shape())))
		}
		w = weights.Ravel()
	}
	return bincount(idx, w, bins+1).Slice(Span(0, bins))
}

// heldGPUs returns the indexes of the GPUs that hold arrays n's graph reads (gpuChunks), in
// order, or none.
func heldGPUs(n *expr.Node) []int {
	var out []int
	for gc := range heldBelow(n) {
		for _, d := range gc.devs {
			if !slices.Contains(out, d.Info.Index) {
				out = append(out, d.Info.Index)
			}
		}
	}
	slices.Sort(out)
	return out
}
