// Package rng is the counter-based random number generation of gpuarray: Philox4x32-10 and the
// transforms to uniform and normal numbers. The CPU executor calls it directly; the GPU backend
// reproduces it from this description, so it is specified here exactly.
//
// # Counter and key
//
// Element i (the global row-major linear index of the element in the array as created, before any
// slicing) of an array drawn from a RandomState draws Philox4x32-10 blocks
//
//	(x0, x1, x2, x3) = Philox4x32-10(counter = (lo32(i), hi32(i), s, 0), key = (K0, K1))
//
// where K0 = lo32(seed), K1 = hi32(seed) + draw (mod 2^32; draw is how many arrays the
// RandomState produced before this one, 0 for the first), and s is the stream word: 0 for the
// first block of an element, 1, 2, … for the rare extra blocks the normal transform needs. So a
// value depends only on (seed, draw, i), never on chunking, scheduler or backend.
//
// # Uniform
//
// From a block, w = uint64(x1)<<32 | uint64(x0) and U = w >> 11 (53 bits). The uniform is
// u = float64(U) * 2^-53 in [0, 1), and Uniform(lo, hi) is lo + (hi-lo)*u, evaluated as
// (hi-lo)*u then + lo, in float64, without fused multiply-add.
//
// # Integers
//
// Integers(lo, hi) draws from [lo, hi): with w as above and n = hi-lo, the value is
// lo + hi64(w * n) (the high 64 bits of the 128-bit product; Lemire's multiply-shift, bias
// below n/2^64). Values are returned as floating point numbers.
//
// # Normal: a 256-layer ziggurat on counter streams
//
// Tables (see Tables): X[0..256], F[0..256], K[0..255], W[0..255], computed in float64 by
// deterministic Go code at package initialization; the GPU receives the very same bits. With
// R = 3.6541528853610088 and V = 0.00492867323399 (the layer area),
//
//	f(x) = exp(-x*x/2)
//	X[0] = V / f(R); X[1] = R; X[j+1] = sqrt(-2*log(V/X[j] + f(X[j]))) for j = 1..254; X[256] = 0
//	F[j] = f(X[j]) for j = 0..256 (F[0] = f(R) by definition, F[256] = 1)
//	K[j] = uint64(X[j+1]/X[j] * 2^53) (truncated), W[j] = X[j] * 2^-53
//
// Draw for element i (s starts at 0):
//
//	loop:
//	  (x0,x1,x2,x3) = block(i, s); s++
//	  U = (uint64(x1)<<32 | x0) >> 11      // 53 bits
//	  j = x2 & 255                         // layer
//	  neg = x2 & 256                       // sign
//	  z = float64(U) * W[j]                // exact conversion, one rounding
//	  if U < K[j]: return neg ? -z : z     // fast path, ~98.8% of draws
//	  V53 = (uint64(x3)<<21) | (x2>>11)    // 53 more bits of the same block
//	  if j == 0:                           // tail beyond R (Marsaglia 1964)
//	    repeat:
//	      (y0,y1,y2,y3) = block(i, s); s++
//	      a = (float64((uint64(y1)<<32|y0)>>11) + 0.5) * 2^-53   // in (0, 1)
//	      b = (float64((uint64(y3)<<32|y2)>>11) + 0.5) * 2^-53
//	      t = -log(a) / R; e = -log(b)
//	    until e + e >= t*t
//	    z = R + t; return neg ? -z : z
//	  // wedge of layer j (1..255)
//	  if F[j] + float64(V53)*2^-53 * (F[j+1] - F[j]) < exp(-z*z/2): return neg ? -z : z
//	  goto loop                            // rejected: a fresh candidate from the next stream
//
// Arithmetic is IEEE float64 with each operation rounded (no fused multiply-add). The fast path
// is integer work, a table lookup and one multiply, so it is bit-identical on every backend;
// fallbacks call exp and log, which may differ by an ulp between libraries. Normal(loc, scale)
// is loc + scale*z (scale*z rounded, then + loc). Float32 arrays round the float64 value.
//
// # Sub-streams, and the other distributions
//
// Sub-stream w of element i is the sequence of blocks with counter (lo32(i), hi32(i), s, w),
// s = 0, 1, …; everything above is sub-stream 0. The normal on sub-stream w is the ziggurat
// above with every block taken from sub-stream w. Below, unit(x0, x1) = U*2^-53 in [0, 1) and
// open(x0, x1) = (U+0.5)*2^-53 in (0, 1), U the 53 bits of x1:x0; blocks are of sub-stream 0
// unless said. Each value is a function of (key, i) alone, whatever the order of evaluation.
//
//   - Exponential(scale): scale * -log(open(block 0)).
//   - Gamma(a, scale), a >= 1 (Marsaglia and Tsang 2000): d = a - 1/3, c = 1/sqrt(9d); try
//     t = 0, 1, …: z = the normal of sub-stream 1+t, v = 1 + c*z (rejected if <= 0), v = v*v*v,
//     u = open(block 0 of sub-stream 2^31+t); accepted when u < 1 - 0.0331*(z*z)*(z*z) or
//     log(u) < 0.5*z*z + d*((1-v) + log(v)); the value is scale*(d*v). For a < 1 the draw of
//     shape a+1 is multiplied by pow(open(block 0), 1/a) before the scale; a = 0 gives 0.
//   - Poisson(lam): lam < 10 by inversion of u = unit(block 0): k = 0, p = exp(-lam), F = p;
//     while u >= F and p > 0: k++, p = p*lam/k, F += p. lam >= 10 by Hörmann's PTRS (1993),
//     try t on block t: U = unit(x0, x1) - 0.5, V = unit(x2, x3), with numpy's constants and
//     tests (lgamma for log k!).
//   - Binomial(n, p): with p > 1/2 the value is n - Binomial(n, 1-p). n*p < 10 by numpy's
//     inversion with its bound (a fresh uniform from block s+1 each time the search passes the
//     bound); else Hörmann's BTRS (1993), try t on block t (u from x0, x1; v from x2, x3), with
//     the exact acceptance log f(k)/f(m) through lgamma.
//   - Beta(a, b), 0 < a, b <= 1 (Johnk 1964, as numpy): m = min(a, b); try t on block t:
//     u = open(x0, x1), v = open(x2, x3), x = pow(u, 1/a), y = pow(v, 1/b), s = x + y; rejected
//     unless s <= 1; the value is x/s when x and y are both >= 2^-1022, else, from
//     d = (log(u)*(m/a) - log(v)*(m/b)) / m (never NaN: ±Inf at worst), e/(1+e) of e = exp(d)
//     when d <= 0 and 1/(1+exp(-d)) otherwise. Larger a or b: the gamma ratio (package gpuarray).
//
// Every operation is rounded on its own, in the order written (the GPU code uses the _rn
// intrinsics); log, exp, pow and lgamma may differ by an ulp between libraries, so a value can
// differ in its last bits, and a rejection sampler's decision very rarely, between backends.
package rng
