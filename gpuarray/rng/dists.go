package rng

import "math"

// gammaUniformW marks the sub-streams of the Marsaglia-Tsang uniforms (one per try); the
// normals of the tries use sub-streams 1, 2, …, below it.
const gammaUniformW = 1 << 31

// unitU is the uniform in [0, 1) of a block's words x0, x1.
func unitU(x0, x1 uint32) float64 { return float64(u53(x0, x1)) * twoM53 }

// openU is the uniform in (0, 1) of a block's words x0, x1.
func openU(x0, x1 uint32) float64 { return (float64(u53(x0, x1)) + 0.5) * twoM53 }

// normalW returns the standard normal of element idx on sub-stream w (w = 0: Normal).
func (k Key) normalW(idx uint64, w uint32) float64 {
	x0, x1, x2, x3 := k.block(idx, 0, w)
	u := u53(x0, x1)
	j := x2 & 255
	if u < zig.K[j] {
		z := float64(u) * zig.W[j]
		if x2&256 != 0 {
			z = -z
		}
		return z
	}
	return k.normalSlow(idx, w, x0, x1, x2, x3)
}

// Exponential returns the standard exponential of element idx: -log(u), u in (0, 1).
func (k Key) Exponential(idx uint64) float64 {
	x0, x1, _, _ := k.block(idx, 0, 0)
	return exponential(x0, x1)
}

// exponential is the standard exponential of a first block's words x0, x1.
func exponential(x0, x1 uint32) float64 { return -math.Log(openU(x0, x1)) }

// Gamma holds the constants of a gamma draw of one shape.
type Gamma struct {
	shape float64
	d, c  float64 // Marsaglia-Tsang constants for the shape it draws (shape+1 below 1)
	inv   float64 // 1/shape when boosting (shape < 1), else 0
}

// NewGamma returns the constants for draws of shape (>= 0).
func NewGamma(shape float64) Gamma {
	g := Gamma{shape: shape}
	a := shape
	if shape < 1 {
		a = shape + 1
		g.inv = 1 / shape
	}
	g.d = a - 1.0/3.0
	g.c = 1 / math.Sqrt(float64(9*g.d))
	return g
}

// Gamma returns the standard gamma (scale 1) of element idx for g's shape.
func (k Key) Gamma(idx uint64, g Gamma) float64 {
	if g.shape == 0 {
		return 0
	}
	x := k.gammaMT(idx, g.d, g.c)
	if g.inv != 0 {
		x0, x1, _, _ := k.block(idx, 0, 0)
		x = float64(x * math.Pow(openU(x0, x1), g.inv))
	}
	return x
}

// gammaMT is Marsaglia and Tsang's method (2000) for shape d+1/3 >= 1; try t draws its normal
// from sub-stream 1+t and its uniform from sub-stream 2^31+t.
func (k Key) gammaMT(idx uint64, d, c float64) float64 { return k.gammaFrom(idx, d, c, 0) }

// gammaFrom is gammaMT from try t on.
func (k Key) gammaFrom(idx uint64, d, c float64, t uint32) float64 {
	for ; ; t++ {
		z := k.normalW(idx, 1+t)
		v := float64(1 + float64(c*z))
		if v <= 0 {
			continue
		}
		x0, x1, _, _ := k.block(idx, 0, gammaUniformW|t)
		if x, ok := gammaTry(z, v, x0, x1, d); ok {
			return x
		}
	}
}

// gammaTry finishes a Marsaglia-Tsang try of normal z (v = 1 + c*z > 0) with the uniform of
// block words x0, x1: the value and whether it is accepted.
func gammaTry(z, v float64, x0, x1 uint32, d float64) (float64, bool) {
	v = float64(float64(v*v) * v)
	u := openU(x0, x1)
	zz := float64(z * z)
	if u < float64(1-float64(0.0331*float64(zz*zz))) {
		return float64(d * v), true
	}
	if math.Log(u) < float64(float64(0.5*zz)+float64(d*float64(float64(1-v)+math.Log(v)))) {
		return float64(d * v), true
	}
	return 0, false
}

// Poisson holds the constants of Poisson draws of one mean.
type Poisson struct {
	lam, expm                        float64 // inversion (lam < 10)
	ptrs                             bool
	loglam, a2, a, b, lnInvAlpha, vr float64 // PTRS
}

// NewPoisson returns the constants for draws of mean lam (>= 0).
func NewPoisson(lam float64) Poisson {
	p := Poisson{lam: lam, expm: math.Exp(-lam), ptrs: lam >= 10}
	if p.ptrs {
		slam := math.Sqrt(lam)
		p.loglam = math.Log(lam)
		p.b = 0.931 + float64(2.53*slam)
		p.a = -0.059 + float64(0.02483*p.b)
		p.a2 = float64(2 * p.a)
		p.lnInvAlpha = math.Log(1.1239 + float64(1.1328/float64(p.b-3.4)))
		p.vr = 0.9277 - float64(3.6224/float64(p.b-2))
	}
	return p
}

// Poisson returns the Poisson count of element idx: by inversion of one uniform below mean 10,
// else Hörmann's PTRS (1993) with try t on block t.
func (k Key) Poisson(idx uint64, p Poisson) float64 {
	x0, x1, x2, x3 := k.block(idx, 0, 0)
	return k.poisson(idx, p, x0, x1, x2, x3)
}

// poisson is Poisson with element idx's first block (block 0 of sub-stream 0) given.
func (k Key) poisson(idx uint64, p Poisson, x0, x1, x2, x3 uint32) float64 {
	if p.lam == 0 {
		return 0
	}
	if !p.ptrs {
		u := unitU(x0, x1)
		n, pk := 0.0, p.expm
		f := pk
		for u >= f && pk > 0 {
			n++
			pk = float64(float64(pk*p.lam) / n)
			f = float64(f + pk)
		}
		return n
	}
	for t := uint32(0); ; t++ {
		if t > 0 {
			x0, x1, x2, x3 = k.block(idx, t, 0)
		}
		u := unitU(x0, x1) - 0.5
		v := unitU(x2, x3)
		us := 0.5 - math.Abs(u)
		n := math.Floor(float64(float64(float64(float64(p.a2/us)+p.b)*u)+p.lam) + 0.43)
		if us >= 0.07 && v <= p.vr {
			return n
		}
		if n < 0 || (us < 0.013 && v > us) {
			continue
		}
		lhs := float64(math.Log(v)+p.lnInvAlpha) - math.Log(float64(p.a/float64(us*us))+p.b)
		lg, _ := math.Lgamma(n + 1)
		rhs := float64(-p.lam+float64(n*p.loglam)) - lg
		if lhs <= rhs {
			return n
		}
	}
}

// Binomial holds the constants of binomial draws of one (n, p).
type Binomial struct {
	n, p, q                       float64 // p <= 1/2: flip draws n - X with 1-p
	flip                          bool
	btrs                          bool
	qn, bound                     float64 // inversion
	a, b, c, vr, alpha, lpq, m, h float64 // BTRS
}

// NewBinomial returns the constants for draws of n trials (an integer >= 0) of probability p.
func NewBinomial(n, p float64) Binomial {
	bn := Binomial{n: n, p: p}
	if p > 0.5 {
		bn.flip, bn.p = true, 1-p
	}
	bn.q = 1 - bn.p
	np := float64(n * bn.p)
	if np < 10 {
		bn.qn = math.Exp(float64(n * math.Log(bn.q)))
		bn.bound = math.Min(n, np+float64(10*math.Sqrt(float64(float64(np*bn.q)+1))))
		return bn
	}
	bn.btrs = true
	spq := math.Sqrt(float64(np * bn.q))
	bn.b = 1.15 + float64(2.53*spq)
	bn.a = float64(-0.0873+float64(0.0248*bn.b)) + float64(0.01*bn.p)
	bn.c = np + 0.5
	bn.vr = 0.92 - float64(4.2/bn.b)
	bn.alpha = float64(float64(2.83+float64(5.1/bn.b)) * spq)
	bn.lpq = math.Log(float64(bn.p / bn.q))
	bn.m = math.Floor(float64(float64(n+1) * bn.p))
	l1, _ := math.Lgamma(bn.m + 1)
	l2, _ := math.Lgamma(float64(n-bn.m) + 1)
	bn.h = l1 + l2
	return bn
}

// Binomial returns the binomial count of element idx: inversion below n*p = 10 (a fresh
// uniform from block s+1 when the search passes its bound), else Hörmann's BTRS (1993) with
// try t on block t.
func (k Key) Binomial(idx uint64, bn Binomial) float64 {
	x0, x1, x2, x3 := k.block(idx, 0, 0)
	return k.binomialFlip(idx, bn, x0, x1, x2, x3)
}

// binomialFlip is Binomial with element idx's first block given.
func (k Key) binomialFlip(idx uint64, bn Binomial, x0, x1, x2, x3 uint32) float64 {
	x := k.binomial(idx, bn, x0, x1, x2, x3)
	if bn.flip {
		return bn.n - x
	}
	return x
}

func (k Key) binomial(idx uint64, bn Binomial, x0, x1, x2, x3 uint32) float64 {
	if bn.n == 0 || bn.p == 0 {
		return 0
	}
	if !bn.btrs {
		s := uint32(0)
		u := unitU(x0, x1)
		x, px := 0.0, bn.qn
		for u > px {
			x++
			if x > bn.bound {
				x, px = 0, bn.qn
				s++
				x0, x1, _, _ = k.block(idx, s, 0)
				u = unitU(x0, x1)
				continue
			}
			u = float64(u - px)
			px = float64(float64(float64(float64(float64(bn.n-x)+1)*bn.p)*px) / float64(x*bn.q))
		}
		return x
	}
	for t := uint32(0); ; t++ {
		if t > 0 {
			x0, x1, x2, x3 = k.block(idx, t, 0)
		}
		u := unitU(x0, x1) - 0.5
		v := unitU(x2, x3)
		us := 0.5 - math.Abs(u)
		n := math.Floor(float64(float64(float64(float64(float64(2*bn.a)/us)+bn.b)*u) + bn.c))
		if us >= 0.07 && v <= bn.vr {
			return n
		}
		if n < 0 || n > bn.n {
			continue
		}
		v = math.Log(float64(float64(v*bn.alpha) / float64(float64(bn.a/float64(us*us))+bn.b)))
		l1, _ := math.Lgamma(n + 1)
		l2, _ := math.Lgamma(float64(bn.n-n) + 1)
		if v <= float64(float64(float64(bn.h-l1)-l2)+float64(float64(n-bn.m)*bn.lpq)) {
			return n
		}
	}
}

// strided0 sets dst[t] = f(idx, block 0 of idx) for idx = start + t*stride, computing the
// first blocks sixteen at a time (philox16: AVX2 where it pays).
func (k Key) strided0(dst []float64, start uint64, stride int64, f func(idx uint64, x0, x1, x2, x3 uint32) float64) {
	idx, st := start, uint64(stride)
	key := [2]uint32{k.K0, k.K1}
	var lo, hi [16]uint32
	var out [4][16]uint32
	t := 0
	for ; t+16 <= len(dst); t += 16 {
		for i := range lo {
			lo[i], hi[i] = uint32(idx), uint32(idx>>32)
			idx += st
		}
		philox16(&lo, &hi, &[2]uint32{}, &key, &out)
		d := dst[t : t+16]
		for i := range d {
			d[i] = f(uint64(hi[i])<<32|uint64(lo[i]), out[0][i], out[1][i], out[2][i], out[3][i])
		}
	}
	for ; t < len(dst); t++ {
		x0, x1, x2, x3 := k.block(idx, 0, 0)
		dst[t] = f(idx, x0, x1, x2, x3)
		idx += st
	}
}

// ExponentialStrided sets dst[t] = scale * Exponential(start + t*stride).
func (k Key) ExponentialStrided(dst []float64, start uint64, stride int64, scale float64) {
	// strided0's loop written out: a call through a function value per element was a third of
	// the draw's time next to its log.
	idx, st := start, uint64(stride)
	key := [2]uint32{k.K0, k.K1}
	var lo, hi [16]uint32
	var out [4][16]uint32
	t := 0
	for ; t+16 <= len(dst); t += 16 {
		for i := range lo {
			lo[i], hi[i] = uint32(idx), uint32(idx>>32)
			idx += st
		}
		philox16(&lo, &hi, &[2]uint32{}, &key, &out)
		d := dst[t : t+16]
		for i := range d {
			d[i] = float64(scale * exponential(out[0][i], out[1][i]))
		}
	}
	for ; t < len(dst); t++ {
		dst[t] = float64(scale * k.Exponential(idx))
		idx += st
	}
}

// GammaStrided sets dst[t] = scale * Gamma(start + t*stride) of shape.
func (k Key) GammaStrided(dst []float64, start uint64, stride int64, shape, scale float64) {
	g := NewGamma(shape)
	idx, st := start, uint64(stride)
	t := 0
	if g.shape != 0 {
		// The first try of sixteen elements at once: its normal's first blocks (sub-stream 1),
		// its uniforms' (sub-stream 2^31) and, boosting, the blocks of sub-stream 0, each
		// sixteen by philox16. A scalar Philox block per word group was half the draw's time.
		key := [2]uint32{k.K0, k.K1}
		var lo, hi [16]uint32
		var zb, ub, bb [4][16]uint32
		for ; t+16 <= len(dst); t += 16 {
			i0 := idx
			for i := range lo {
				lo[i], hi[i] = uint32(idx), uint32(idx>>32)
				idx += st
			}
			philox16(&lo, &hi, &[2]uint32{0, 1}, &key, &zb)
			philox16(&lo, &hi, &[2]uint32{0, gammaUniformW}, &key, &ub)
			if g.inv != 0 {
				philox16(&lo, &hi, &[2]uint32{}, &key, &bb)
			}
			d := dst[t : t+16]
			for i := range d {
				e := i0 + uint64(i)*st
				x0, x1, x2 := zb[0][i], zb[1][i], zb[2][i]
				var z float64
				if u, j := u53(x0, x1), x2&255; u < zig.K[j] {
					z = math.Float64frombits(math.Float64bits(float64(u)*zig.W[j]) ^ uint64(x2&256)<<55) // as NormalStrided
				} else {
					z = k.normalSlow(e, 1, x0, x1, x2, zb[3][i])
				}
				var x float64
				ok := false
				if v := float64(1 + float64(g.c*z)); v > 0 {
					x, ok = gammaTry(z, v, ub[0][i], ub[1][i], g.d)
				}
				if !ok {
					x = k.gammaFrom(e, g.d, g.c, 1)
				}
				if g.inv != 0 {
					x = float64(x * math.Pow(openU(bb[0][i], bb[1][i]), g.inv))
				}
				d[i] = float64(scale * x)
			}
		}
	}
	for ; t < len(dst); t++ {
		dst[t] = float64(scale * k.Gamma(idx, g))
		idx += st
	}
}

// PoissonStrided sets dst[t] = Poisson(start + t*stride) of mean lam.
func (k Key) PoissonStrided(dst []float64, start uint64, stride int64, lam float64) {
	p := NewPoisson(lam)
	k.strided0(dst, start, stride, func(i uint64, x0, x1, x2, x3 uint32) float64 { return k.poisson(i, p, x0, x1, x2, x3) })
}

// BinomialStrided sets dst[t] = Binomial(start + t*stride) of n trials of probability p.
func (k Key) BinomialStrided(dst []float64, start uint64, stride int64, n, p float64) {
	bn := NewBinomial(n, p)
	k.strided0(dst, start, stride, func(i uint64, x0, x1, x2, x3 uint32) float64 { return k.binomialFlip(i, bn, x0, x1, x2, x3) })
}

// minNormal is the smallest normal float64; below it a power loses bits.
const minNormal = 0x1p-1022

// Beta holds the constants of Johnk's beta draws of one (a, b), both in (0, 1].
type Beta struct {
	ia, ib    float64 // 1/a, 1/b (+Inf for subnormal a or b)
	m, ma, mb float64 // m = min(a, b), m/a, m/b: the log-space difference without overflow
}

// NewBeta returns the constants for Johnk's draws of parameters a and b (0 < a, b <= 1).
func NewBeta(a, b float64) Beta {
	m := math.Min(a, b)
	return Beta{ia: 1 / a, ib: 1 / b, m: m, ma: m / a, mb: m / b}
}

// Beta returns the beta number of element idx by Johnk's method: try t takes u = open(x0, x1)
// and v = open(x2, x3) of block t, accepted when x+y <= 1 for x = u^(1/a), y = v^(1/b); the
// value is x/(x+y), or, when x or y is below the smallest normal, 1/(1+exp(-d)) of
// d = log(x) - log(y) computed from log(u) and log(v), which never underflows.
func (k Key) Beta(idx uint64, bt Beta) float64 {
	x0, x1, x2, x3 := k.block(idx, 0, 0)
	return k.beta(idx, bt, x0, x1, x2, x3)
}

// beta is Beta with element idx's first block given.
func (k Key) beta(idx uint64, bt Beta, x0, x1, x2, x3 uint32) float64 {
	for t := uint32(0); ; t++ {
		if t > 0 {
			x0, x1, x2, x3 = k.block(idx, t, 0)
		}
		u, v := openU(x0, x1), openU(x2, x3)
		x, y := math.Pow(u, bt.ia), math.Pow(v, bt.ib)
		s := float64(x + y)
		if !(s <= 1) {
			continue
		}
		if x >= minNormal && y >= minNormal {
			return float64(x / s)
		}
		// (log(u)*(m/a) - log(v)*(m/b)) / m: finite terms, so ±Inf at worst, never NaN.
		d := float64(float64(float64(math.Log(u)*bt.ma)-float64(math.Log(v)*bt.mb)) / bt.m)
		if d <= 0 {
			e := math.Exp(d)
			return float64(e / float64(1+e))
		}
		return float64(1 / float64(1+math.Exp(-d)))
	}
}

// BetaStrided sets dst[t] = Beta(start + t*stride) of parameters a, b (both in (0, 1]).
func (k Key) BetaStrided(dst []float64, start uint64, stride int64, a, b float64) {
	bt := NewBeta(a, b)
	k.strided0(dst, start, stride, func(i uint64, x0, x1, x2, x3 uint32) float64 { return k.beta(i, bt, x0, x1, x2, x3) })
}
