package gpuarray

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// The distributions beyond normal, uniform and integers. Each is counter-based like those
// (see package gpuarray/rng): an element's value depends only on the seed, the draw and the
// element's index, so it is the same for any chunking and on the CPU, a GPU or a cluster
// worker. Distributions built from two others (Beta, StandardT) take two draws of the
// RandomState.

// Exponential returns exponential numbers of mean scale (> 0), as numpy's exponential.
func (r *RandomState) Exponential(scale float64, opts ...ArrayOption) *Array {
	if !(scale > 0) || math.IsInf(scale, 0) {
		return errArray(fmt.Errorf("Exponential: scale %v; want a finite number > 0", scale))
	}
	return r.random("Exponential", expr.Exponential, scale, 0, opts)
}

// Gamma returns gamma numbers of shape (>= 0) and scale (> 0), as numpy's gamma: mean
// shape*scale. Drawn by Marsaglia and Tsang's method (shape+1 and a power of a uniform below
// shape 1).
func (r *RandomState) Gamma(shape, scale float64, opts ...ArrayOption) *Array {
	if err := checkGamma("Gamma", shape, scale); err != nil {
		return errArray(err)
	}
	return r.random("Gamma", expr.Gamma, shape, scale, opts)
}

func checkGamma(what string, shape, scale float64) error {
	if !(shape >= 0) || math.IsInf(shape, 0) {
		return fmt.Errorf("%s: shape %v; want a finite number >= 0", what, shape)
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return fmt.Errorf("%s: scale %v; want a finite number > 0", what, scale)
	}
	return nil
}

// Chisquare returns chi-square numbers of df (> 0) degrees of freedom: Gamma(df/2, 2).
func (r *RandomState) Chisquare(df float64, opts ...ArrayOption) *Array {
	if !(df > 0) || math.IsInf(df, 0) {
		return errArray(fmt.Errorf("Chisquare: df %v; want a finite number > 0", df))
	}
	return r.random("Chisquare", expr.Gamma, df/2, 2, opts)
}

// Beta returns beta numbers of parameters a and b (> 0), as numpy's beta, and like it by two
// methods (two draws of r either way). With a and b both <= 1, Johnk's method: x = u^(1/a) and
// y = v^(1/b) of two uniforms, accepted when x+y <= 1, the value x/(x+y), worked out in
// logarithms when x or y underflows, so that no value is NaN even at a = b = 0.001. Else
// X/(X+Y) of X = Gamma(a, 1) and Y = Gamma(b, 1) drawn independently (the larger gamma is
// never 0), in float64 and halved first when a+b is so large that X+Y could overflow.
func (r *RandomState) Beta(a, b float64, opts ...ArrayOption) *Array {
	for _, v := range []float64{a, b} {
		if !(v > 0) || math.IsInf(v, 0) {
			return errArray(fmt.Errorf("Beta: a %v, b %v; want finite numbers > 0", a, b))
		}
	}
	if a <= 1 && b <= 1 {
		x := r.random("Beta", expr.Beta, a, b, opts)
		if x.Err() == nil {
			r.next() // the second draw, as the gamma ratio takes: later draws do not depend on a, b
		}
		return x
	}
	if a+b <= math.MaxFloat32/4 {
		x := r.random("Beta", expr.Gamma, a, 1, opts)
		y := r.random("Beta", expr.Gamma, b, 1, opts)
		if err := firstErr([]*Array{x, y}); err != nil {
			return errArray(err)
		}
		return x.Div(x.Add(y))
	}
	// Gammas beyond float32's range (or X+Y beyond float64's): the ratio in float64 of the
	// halved gammas, then the dtype asked for.
	_, _, dt, err := resolveDT("Beta", nil, Float64, opts)
	if err != nil {
		return errArray(err)
	}
	if !dt.IsFloat() {
		return errArray(fmt.Errorf("Beta: dtype %v; want float32 or float64", dt))
	}
	o64 := append(slices.Clip(opts), WithDType(Float64))
	x := r.random("Beta", expr.Gamma, a, 1, o64)
	y := r.random("Beta", expr.Gamma, b, 1, o64)
	if err := firstErr([]*Array{x, y}); err != nil {
		return errArray(err)
	}
	if a+b > math.MaxFloat64/4 {
		x, y = x.Mul(0.5), y.Mul(0.5)
	}
	v := x.Div(x.Add(y))
	if dt != Float64 {
		v = v.AsType(dt)
	}
	return v
}

// LogNormal returns numbers whose logarithm is normal of mean and standard deviation sigma
// (>= 0), as numpy's lognormal: exp(Normal(mean, sigma)).
func (r *RandomState) LogNormal(mean, sigma float64, opts ...ArrayOption) *Array {
	if !(sigma >= 0) || math.IsInf(sigma, 0) || math.IsNaN(mean) || math.IsInf(mean, 0) {
		return errArray(fmt.Errorf("LogNormal: mean %v, sigma %v; want finite numbers, sigma >= 0", mean, sigma))
	}
	return r.random("LogNormal", expr.Normal, mean, sigma, opts).Exp()
}

// StandardT returns Student's t numbers of df (> 0) degrees of freedom, as numpy's
// standard_t: Z / sqrt(C/df) of Z standard normal and C chi-square (two draws of r).
func (r *RandomState) StandardT(df float64, opts ...ArrayOption) *Array {
	if !(df > 0) || math.IsInf(df, 0) {
		return errArray(fmt.Errorf("StandardT: df %v; want a finite number > 0", df))
	}
	z := r.random("StandardT", expr.Normal, 0, 1, opts)
	c := r.random("StandardT", expr.Gamma, df/2, 2, opts)
	if err := firstErr([]*Array{z, c}); err != nil {
		return errArray(err)
	}
	return z.Div(c.Div(df).Sqrt())
}

// Poisson returns Poisson counts of mean lam (0 <= lam <= 1e18), as numpy's poisson: int64
// values unless WithDType says otherwise. Inversion below mean 10, Hörmann's PTRS above.
func (r *RandomState) Poisson(lam float64, opts ...ArrayOption) *Array {
	if !(lam >= 0 && lam <= 1e18) {
		return errArray(fmt.Errorf("Poisson: lam %v; want 0 <= lam <= 1e18", lam))
	}
	return r.random("Poisson", expr.Poisson, lam, 0, opts)
}

// Binomial returns binomial counts of n trials (0 <= n < 2^53) of probability p (0 <= p <= 1),
// as numpy's binomial: int64 values unless WithDType says otherwise. Inversion below n*p = 10,
// Hörmann's BTRS above (with p and 1-p swapped above 1/2).
func (r *RandomState) Binomial(n int64, p float64, opts ...ArrayOption) *Array {
	if n < 0 || n >= 1<<53 {
		return errArray(fmt.Errorf("Binomial: n %d; want 0 <= n < 2^53", n))
	}
	if !(p >= 0 && p <= 1) {
		return errArray(fmt.Errorf("Binomial: p %v; want 0 <= p <= 1", p))
	}
	return r.random("Binomial", expr.Binomial, float64(n), p, opts)
}

// Permutation returns a random permutation of 0, 1, …, n-1 (int64), as numpy's permutation(n):
// the argsort of n uniform keys, so it too depends only on the seed and the draw.
func (r *RandomState) Permutation(n int) *Array {
	if n < 0 {
		return errArray(fmt.Errorf("Permutation: n %d; want n >= 0", n))
	}
	keys := r.random("Permutation", expr.Uniform, 0, 1, []ArrayOption{Shape(n)})
	return Argsort(keys, 0)
}

// Shuffle returns x with its first axis in a random order, as numpy's permutation(x) (numpy's
// shuffle reorders in place; arrays here are immutable, so the result is a new array).
func (r *RandomState) Shuffle(x *Array) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if x.NDim() == 0 {
		return errArray(fmt.Errorf("Shuffle: a 0-d array has no axis to shuffle"))
	}
	if expr.HasUnknown(x.n.Shape) {
		return errArray(expr.ErrUnknown("Shuffle", x.n.Shape))
	}
	return x.Take(r.Permutation(x.Shape()[0]), 0)
}

// choice returns size elements drawn from the 1-d array a, as numpy's choice(a, size, replace,
// p): with replacement (replace true) each element independently, else size distinct
// positions (size <= len(a)). p gives the probability of each element of a (nil: all equal;
// else len(a) numbers >= 0 that sum to 1 within 1e-8). Weighted choice with replacement uses
// Walker's alias table (built here from p: constant work per draw for any len(a));
// without replacement it takes the size largest keys log(u)/p (Efraimidis and Spirakis),
// which is numpy's sequential rule in distribution.
func (r *RandomState) choice(a *Array, size int, replace bool, p []float64) *Array {
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if a.NDim() != 1 {
		return errArray(fmt.Errorf("Choice: a must be 1-d, not of shape %s", expr.ShapeString(a.Shape())))
	}
	if expr.HasUnknown(a.n.Shape) {
		return errArray(expr.ErrUnknown("Choice", a.n.Shape))
	}
	n := a.Shape()[0]
	switch {
	case size < 0:
		return errArray(fmt.Errorf("Choice: size %d; want size >= 0", size))
	case n == 0 && size > 0:
		return errArray(fmt.Errorf("Choice: a is empty; cannot take %d elements", size))
	case !replace && size > n:
		return errArray(fmt.Errorf("Choice: %d elements without replacement from %d", size, n))
	}
	var w []float64
	if p != nil {
		var err error
		if w, err = choiceWeights(p, n, size, replace); err != nil {
			return errArray(err)
		}
	}
	if size == 0 {
		return a.Take(FromSliceInt64(nil, Shape(0)), 0)
	}
	var idx *Array
	switch {
	case replace && w == nil:
		idx = r.random("Choice", expr.Integers, 0, float64(n), []ArrayOption{Shape(size)})
	case replace:
		// Walker's alias method (Vose's construction): a uniform position i, kept when a
		// uniform u falls below prob[i], else its alias; O(1) per draw for any len(a).
		prob, alias := aliasTable(w)
		i := r.random("Choice", expr.Integers, 0, float64(n), []ArrayOption{Shape(size)})
		u := r.random("Choice", expr.Uniform, 0, 1, []ArrayOption{Shape(size)})
		idx = Where(u.Lt(FromSlice(prob).Take(i, 0)), i, FromSliceInt64(alias).Take(i, 0))
	default:
		keys := r.random("Choice", expr.Uniform, 0, 1, []ArrayOption{Shape(n)})
		if w != nil {
			// log(u)/p: -Inf for p = 0, so those come last.
			keys = keys.Log().Div(FromSlice(w))
		}
		idx = ArgTopK(keys, size, 0)
	}
	return a.Take(idx, 0)
}

// aliasTable returns Walker's alias table of the probabilities w (summing to 1): position i
// is kept with probability prob[i], else alias[i] is taken.
func aliasTable(w []float64) (prob []float64, alias []int64) {
	n := len(w)
	prob, alias = make([]float64, n), make([]int64, n)
	scaled := make([]float64, n)
	var small, large []int
	for i, v := range w {
		scaled[i] = v * float64(n)
		alias[i] = int64(i)
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		l, g := small[len(small)-1], large[len(large)-1]
		small, large = small[:len(small)-1], large[:len(large)-1]
		prob[l], alias[l] = scaled[l], int64(g)
		scaled[g] = (scaled[g] + scaled[l]) - 1
		if scaled[g] < 1 {
			small = append(small, g)
		} else {
			large = append(large, g)
		}
	}
	// What is left has probability 1 up to rounding; a zero weight left over by rounding
	// must never be taken, so it points to the heaviest position.
	heaviest := 0
	for i, v := range w {
		if v > w[heaviest] {
			heaviest = i
		}
	}
	for _, i := range append(small, large...) {
		if w[i] > 0 {
			prob[i] = 1
		} else {
			alias[i] = int64(heaviest)
		}
	}
	return prob, alias
}

// choiceWeights checks p as numpy's choice does.
func choiceWeights(p []float64, n, size int, replace bool) ([]float64, error) {
	if len(p) != n {
		return nil, fmt.Errorf("Choice: %d probabilities for %d elements", len(p), n)
	}
	sum, nonzero := 0.0, 0
	for i, v := range p {
		if !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("Choice: probability %d is %v; want a finite number >= 0", i, v)
		}
		sum += v
		if v > 0 {
			nonzero++
		}
	}
	if math.Abs(sum-1) > 1e-8 {
		return nil, fmt.Errorf("Choice: probabilities sum to %v, not 1", sum)
	}
	if !replace && nonzero < size {
		return nil, fmt.Errorf("Choice: %d non-zero probabilities for %d elements without replacement", nonzero, size)
	}
	return p, nil
}
