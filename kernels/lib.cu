// gpunotes device library: the pieces that fused kernels generated at run time (package
// gpuarray/cuda) link against with the driver's JIT linker, plus a few stand-alone kernels.
//
// Compiled to PTX by gen.sh with relocatable device code (-rdc), so every extern "C" __device__
// function below is a .visible .func that generated PTX may call, and the ziggurat tables are
// .visible .global arrays it may read.
//
// The random number transforms follow package gpuarray/rng exactly (its doc.go is the
// specification): Philox4x32-10 with counter (lo32(i), hi32(i), stream, 0) and key (K0, K1);
// uniforms from the top 53 bits of x1:x0; normals from a 256-layer ziggurat on counter streams.
// Floating point operations are written with __dadd_rn/__dmul_rn where the CPU rounds each
// operation, so that the compiler cannot contract them into fused multiply-adds.

#include "zig_tables.h"

typedef unsigned int u32;
typedef unsigned long long u64;

struct gpn_block { u32 x0, x1, x2, x3; };

extern "C" __device__ gpn_block gpn_philox(u32 c0, u32 c1, u32 c2, u32 c3, u32 k0, u32 k1) {
#pragma unroll
  for (int r = 0; r < 10; ++r) {
    if (r > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
    const u32 hi0 = __umulhi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;
    const u32 hi1 = __umulhi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;
    const u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
  }
  gpn_block b = {c0, c1, c2, c3};
  return b;
}

__device__ __forceinline__ u64 gpn_u53(u32 x0, u32 x1) { return (((u64)x1 << 32) | x0) >> 11; }

#define TWO_M53 (1.0 / 9007199254740992.0)

// gpn_uniform is the uniform in [0, 1) of element idx.
extern "C" __device__ double gpn_uniform(u64 idx, u32 k0, u32 k1) {
  const gpn_block b = gpn_philox((u32)idx, (u32)(idx >> 32), 0u, 0u, k0, k1);
  return __dmul_rn((double)gpn_u53(b.x0, b.x1), TWO_M53);
}

// gpn_normal_slow finishes a normal draw of element idx whose first block (x0..x3, stream 0)
// left the ziggurat's fast path: wedge tests, the tail, and fresh candidates from streams 1, 2, …
extern "C" __device__ double gpn_normal_slow(u64 idx, u32 k0, u32 k1, u32 x0, u32 x1, u32 x2, u32 x3) {
  u32 s = 1;
  for (;;) {
    const u64 u = gpn_u53(x0, x1);
    const u32 j = x2 & 255u;
    double z = __dmul_rn((double)u, __longlong_as_double(gpn_zig_w[j]));
    const bool neg = (x2 & 256u) != 0;
    if (u < gpn_zig_k[j]) {
      return neg ? -z : z;
    }
    if (j == 0) {
      for (;;) {
        const gpn_block y = gpn_philox((u32)idx, (u32)(idx >> 32), s, 0u, k0, k1);
        ++s;
        const double a = __dmul_rn(__dadd_rn((double)gpn_u53(y.x0, y.x1), 0.5), TWO_M53);
        const double b = __dmul_rn(__dadd_rn((double)gpn_u53(y.x2, y.x3), 0.5), TWO_M53);
        const double t = __ddiv_rn(-log(a), GPN_ZIG_R);
        const double e = -log(b);
        if (__dadd_rn(e, e) >= __dmul_rn(t, t)) {
          z = __dadd_rn(GPN_ZIG_R, t);
          return neg ? -z : z;
        }
      }
    }
    const double v = __dmul_rn((double)(((u64)x3 << 21) | (u64)(x2 >> 11)), TWO_M53);
    const double fj = __longlong_as_double(gpn_zig_f[j]), fj1 = __longlong_as_double(gpn_zig_f[j + 1]);
    if (__dadd_rn(fj, __dmul_rn(v, __dsub_rn(fj1, fj))) < exp(__ddiv_rn(-__dmul_rn(z, z), 2.0))) {
      return neg ? -z : z;
    }
    const gpn_block nb = gpn_philox((u32)idx, (u32)(idx >> 32), s, 0u, k0, k1);
    ++s;
    x0 = nb.x0; x1 = nb.x1; x2 = nb.x2; x3 = nb.x3;
  }
}

// gpn_normal is the standard normal of element idx.
extern "C" __device__ double gpn_normal(u64 idx, u32 k0, u32 k1) {
  const gpn_block b = gpn_philox((u32)idx, (u32)(idx >> 32), 0u, 0u, k0, k1);
  const u64 u = gpn_u53(b.x0, b.x1);
  const u32 j = b.x2 & 255u;
  if (u < gpn_zig_k[j]) {
    const double z = __dmul_rn((double)u, __longlong_as_double(gpn_zig_w[j]));
    return (b.x2 & 256u) ? -z : z;
  }
  return gpn_normal_slow(idx, k0, k1, b.x0, b.x1, b.x2, b.x3);
}

#include "random.cu"

// Elementwise math that generated kernels call (the rest they emit as single instructions).
extern "C" __device__ double gpn_exp(double x) { return exp(x); }
extern "C" __device__ double gpn_log(double x) { return log(x); }
extern "C" __device__ double gpn_sin(double x) { return sin(x); }
extern "C" __device__ double gpn_cos(double x) { return cos(x); }
extern "C" __device__ double gpn_tanh(double x) { return tanh(x); }
extern "C" __device__ double gpn_pow(double x, double y) { return pow(x, y); }

// The op table's library bodies (gpuarray/optable). Transcendental functions are CUDA's libm,
// within a few ulp of Go's math (the tests state the bound); the others follow the CPU
// executor's algorithm operation by operation (round-to-nearest, no contraction), so they give
// its bits.
extern "C" __device__ double gpn_acos(double x) { return acos(x); }
extern "C" __device__ double gpn_acosh(double x) { return acosh(x); }
extern "C" __device__ double gpn_asin(double x) { return asin(x); }
extern "C" __device__ double gpn_asinh(double x) { return asinh(x); }
extern "C" __device__ double gpn_atan(double x) { return atan(x); }
extern "C" __device__ double gpn_atanh(double x) { return atanh(x); }
extern "C" __device__ double gpn_atan2(double y, double x) { return atan2(y, x); }
extern "C" __device__ double gpn_sinh(double x) { return sinh(x); }
extern "C" __device__ double gpn_cosh(double x) { return cosh(x); }
extern "C" __device__ double gpn_tan(double x) { return tan(x); }
extern "C" __device__ double gpn_expm1(double x) { return expm1(x); }
extern "C" __device__ double gpn_log1p(double x) { return log1p(x); }
extern "C" __device__ double gpn_log2(double x) { return log2(x); }
extern "C" __device__ double gpn_log10(double x) { return log10(x); }

// gpn_logaddexp is log(exp(x) + exp(y)) by NumPy's steps: x == y gives x + ln 2 (equal
// infinities too), otherwise the larger plus log1p(exp(-|x - y|)); NaN stays NaN.
extern "C" __device__ double gpn_logaddexp(double x, double y) {
  if (x == y) return __dadd_rn(x, 0.6931471805599453);
  const double d = __dsub_rn(x, y);
  if (d > 0) return __dadd_rn(x, log1p(exp(-d)));
  if (d <= 0) return __dadd_rn(y, log1p(exp(d)));
  return d;
}

// cmath-host: begin (gpn_cmath's host test compiles the parts between these marks with g++)
// gpn_hypot is sqrt(p*p + q*q) as Go's math.Hypot computes it on x86-64 (the CPU executor's):
// +Inf when either is infinite, NaN when either is NaN, 0 for two zeros, else
// max * sqrt(1 + (min/max)^2), each step rounded once.
extern "C" __device__ double gpn_hypot(double p, double q) {
  p = fabs(p);
  q = fabs(q);
  if (isinf(p) || isinf(q)) return __longlong_as_double(0x7FF0000000000000LL);
  if (isnan(p) || isnan(q)) return __longlong_as_double(0x7FF8000000000001LL);
  if (p == 0.0 && q == 0.0) return 0.0;
  const double hi = fmax(p, q), lo = fmin(p, q);
  const double r = __ddiv_rn(lo, hi);
  return __dmul_rn(hi, __dsqrt_rn(__dadd_rn(__dmul_rn(r, r), 1.0)));
}
// cmath-host: end

// gpn_nextafter is the next float64 after x toward y, as Go's math.Nextafter: NaN for a NaN,
// x when x == y, the smallest subnormal with y's sign after a zero.
extern "C" __device__ double gpn_nextafter(double x, double y) {
  if (isnan(x) || isnan(y)) return __longlong_as_double(0x7FF8000000000001LL);
  if (x == y) return x;
  if (x == 0.0) return copysign(__longlong_as_double(1LL), y);
  const long long b = __double_as_longlong(x);
  return __longlong_as_double((y > x) == (x > 0.0) ? b + 1 : b - 1);
}

// gpn_nextafterf is gpn_nextafter in float32 (Go's math.Nextafter32), for float32 arrays.
extern "C" __device__ double gpn_nextafterf(double xd, double yd) {
  const float x = (float)xd, y = (float)yd;
  if (isnan(x) || isnan(y)) return __longlong_as_double(0x7FF8000000000001LL);
  if (x == y) return (double)x;
  if (x == 0.0f) return (double)copysignf(__int_as_float(1), y);
  const int b = __float_as_int(x);
  return (double)__int_as_float((y > x) == (x > 0.0f) ? b + 1 : b - 1);
}

// gpn_divmod is NumPy's npy_divmod, the CPU executor's: the floored quotient (*div) and the
// remainder with y's sign (return value).
__device__ __forceinline__ double gpn_divmod(double x, double y, double* div) {
  double mod = fmod(x, y);
  if (y == 0.0) {
    *div = __ddiv_rn(x, y);
    return mod;
  }
  double d = __ddiv_rn(__dsub_rn(x, mod), y);
  if (mod != 0.0) {
    if ((y < 0.0) != (mod < 0.0)) {
      mod = __dadd_rn(mod, y);
      d = __dsub_rn(d, 1.0);
    }
  } else {
    mod = copysign(0.0, y);
  }
  if (d != 0.0) {
    double f = floor(d);
    if (__dsub_rn(d, f) > 0.5) f = __dadd_rn(f, 1.0);
    d = f;
  } else {
    d = copysign(0.0, __ddiv_rn(x, y));
  }
  *div = d;
  return mod;
}

extern "C" __device__ double gpn_remainder(double x, double y) {
  double d;
  return gpn_divmod(x, y, &d);
}

extern "C" __device__ double gpn_floor_divide(double x, double y) {
  double d;
  gpn_divmod(x, y, &d);
  return d;
}

// Integer lanes: values in 64 bits, wrapped to their dtype by the caller; u: unsigned.

// gpn_remainder_int is Python's % (0 for y == 0, as NumPy gives it).
extern "C" __device__ long long gpn_remainder_int(long long x, long long y, int u) {
  if (y == 0) return 0;
  if (u) return (long long)((u64)x % (u64)y);
  if (y == -1) return 0;
  long long r = x % y;
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

// gpn_floor_divide_int is Python's // (0 for y == 0; the minimum divided by -1 wraps).
extern "C" __device__ long long gpn_floor_divide_int(long long x, long long y, int u) {
  if (y == 0) return 0;
  if (u) return (long long)((u64)x / (u64)y);
  if (y == -1) return (long long)(0ULL - (u64)x);
  long long q = x / y;
  if (x % y != 0 && ((x < 0) != (y < 0))) --q;
  return q;
}

// gpn_power_int is x**y with wrap-around (square and multiply); a negative exponent of a signed
// type gives 1/x truncated toward zero, as the CPU executor does.
extern "C" __device__ long long gpn_power_int(long long x, long long y, int u) {
  if (y < 0 && !u) {
    if (x == 1) return 1;
    if (x == -1) return (y & 1) ? -1 : 1;
    return 0;
  }
  u64 r = 1, b = (u64)x, e = (u64)y;
  while (e > 0) {
    if (e & 1) r *= b;
    b *= b;
    e >>= 1;
  }
  return (long long)r;
}

// Complex lanes: pairs of float64.

// cmath-host: begin
// gpn_cdiv_re and gpn_cdiv_im are the parts of (a+bi)/(c+di) by Go's complex division (the
// CPU executor's): Smith's algorithm, then C99 Annex G's recovery of infinities and zeros where
// both parts came out NaN.
__device__ __forceinline__ double gpn_inf2one(double f) { return copysign(isinf(f) ? 1.0 : 0.0, f); }

__device__ __forceinline__ void gpn_cdiv(double a, double b, double c, double d, double* e, double* f) {
  if (fabs(c) >= fabs(d)) {
    const double ratio = __ddiv_rn(d, c);
    const double denom = __dadd_rn(c, __dmul_rn(ratio, d));
    *e = __ddiv_rn(__dadd_rn(a, __dmul_rn(b, ratio)), denom);
    *f = __ddiv_rn(__dsub_rn(b, __dmul_rn(a, ratio)), denom);
  } else {
    const double ratio = __ddiv_rn(c, d);
    const double denom = __dadd_rn(d, __dmul_rn(ratio, c));
    *e = __ddiv_rn(__dadd_rn(__dmul_rn(a, ratio), b), denom);
    *f = __ddiv_rn(__dsub_rn(__dmul_rn(b, ratio), a), denom);
  }
  if (isnan(*e) && isnan(*f)) {
    const double inf = __longlong_as_double(0x7FF0000000000000LL);
    if (c == 0.0 && d == 0.0 && (!isnan(a) || !isnan(b))) {
      *e = __dmul_rn(copysign(inf, c), a);
      *f = __dmul_rn(copysign(inf, c), b);
    } else if ((isinf(a) || isinf(b)) && isfinite(c) && isfinite(d)) {
      a = gpn_inf2one(a);
      b = gpn_inf2one(b);
      *e = __dmul_rn(inf, __dadd_rn(__dmul_rn(a, c), __dmul_rn(b, d)));
      *f = __dmul_rn(inf, __dsub_rn(__dmul_rn(b, c), __dmul_rn(a, d)));
    } else if ((isinf(c) || isinf(d)) && isfinite(a) && isfinite(b)) {
      c = gpn_inf2one(c);
      d = gpn_inf2one(d);
      *e = __dmul_rn(0.0, __dadd_rn(__dmul_rn(a, c), __dmul_rn(b, d)));
      *f = __dmul_rn(0.0, __dsub_rn(__dmul_rn(b, c), __dmul_rn(a, d)));
    }
  }
}

extern "C" __device__ double gpn_cdiv_re(double a, double b, double c, double d) {
  double e, f;
  gpn_cdiv(a, b, c, d, &e, &f);
  return e;
}

extern "C" __device__ double gpn_cdiv_im(double a, double b, double c, double d) {
  double e, f;
  gpn_cdiv(a, b, c, d, &e, &f);
  return f;
}
// cmath-host: end

// gpn_crecip_re and gpn_crecip_im are the parts of 1/(a+bi) by NumPy's reciprocal (Smith's,
// so that 1/(a+0i) has imaginary part -0), the CPU executor's.
__device__ __forceinline__ void gpn_crecip(double br, double bi, double* e, double* f) {
  if (fabs(br) >= fabs(bi)) {
    if (br == 0.0 && bi == 0.0) {
      *e = __ddiv_rn(1.0, fabs(br));
      *f = __ddiv_rn(1.0, fabs(bi));
      return;
    }
    const double rat = __ddiv_rn(bi, br);
    const double scl = __ddiv_rn(1.0, __dadd_rn(br, __dmul_rn(bi, rat)));
    *e = scl;
    *f = __dmul_rn(-rat, scl);
  } else if (bi == bi) {
    const double rat = __ddiv_rn(br, bi);
    const double scl = __ddiv_rn(1.0, __dadd_rn(bi, __dmul_rn(br, rat)));
    *e = __dmul_rn(rat, scl);
    *f = -scl;
  } else {
    *e = __longlong_as_double(0x7FF8000000000001LL);
    *f = *e;
  }
}

extern "C" __device__ double gpn_crecip_re(double a, double b) {
  double e, f;
  gpn_crecip(a, b, &e, &f);
  return e;
}

extern "C" __device__ double gpn_crecip_im(double a, double b) {
  double e, f;
  gpn_crecip(a, b, &e, &f);
  return f;
}

// cmath-host: begin
// Complex elementwise math, Go's math/cmplx (the CPU executor's) step by step: its special
// cases (infinities, NaNs, signed zeros, branch cuts) and its formulas, each operation rounded
// once (no contraction); the real functions it calls are CUDA's libm, within a few ulp of Go's
// math, so results are within the op table's stated bound of the CPU's, not its bits. Each op
// is a pair of functions, NAME_re and NAME_im, as a library call returns one value.
#define GPN_INF __longlong_as_double(0x7FF0000000000000LL)
#define GPN_NAN __longlong_as_double(0x7FF8000000000001LL)
#define GPN_PI 3.141592653589793
#define GPN_PI2 1.5707963267948966
#define GPN_PI4 0.7853981633974483

// gpn_cmul is Go's complex product (a+bi)(c+di): (ac - bd) + (ad + bc)i.
__device__ __forceinline__ void gpn_cmul(double a, double b, double c, double d, double* e, double* f) {
  *e = __dsub_rn(__dmul_rn(a, c), __dmul_rn(b, d));
  *f = __dadd_rn(__dmul_rn(a, d), __dmul_rn(b, c));
}

// gpn_sinhcosh is sinh and cosh of x, from one exp where |x| > 0.5.
__device__ __forceinline__ void gpn_sinhcosh(double x, double* sh, double* ch) {
  if (fabs(x) <= 0.5) {
    *sh = sinh(x);
    *ch = cosh(x);
    return;
  }
  double e = exp(x);
  const double ei = __ddiv_rn(0.5, e);
  e = __dmul_rn(e, 0.5);
  *sh = __dsub_rn(e, ei);
  *ch = __dadd_rn(e, ei);
}

__device__ __forceinline__ void gpn_cexp(double re, double im, double* e, double* f) {
  if (isinf(re)) {
    if (re > 0 && im == 0) {
      *e = re, *f = im;
      return;
    }
    if (isinf(im) || isnan(im)) {
      if (re < 0) {
        *e = 0.0, *f = copysign(0.0, im);
      } else {
        *e = GPN_INF, *f = GPN_NAN;
      }
      return;
    }
  } else if (isnan(re) && im == 0) {
    *e = GPN_NAN, *f = im;
    return;
  }
  const double r = exp(re);
  double s, c;
  sincos(im, &s, &c);
  *e = __dmul_rn(r, c);
  *f = __dmul_rn(r, s);
}

__device__ __forceinline__ void gpn_clog(double re, double im, double* e, double* f) {
  *e = log(gpn_hypot(re, im));
  *f = atan2(im, re);
}

__device__ __forceinline__ void gpn_clog10(double re, double im, double* e, double* f) {
  gpn_clog(re, im, e, f);
  const double log10e = __longlong_as_double(0x3FDBCB7B1526E50ELL); // Go's math.Log10E
  *e = __dmul_rn(log10e, *e);
  *f = __dmul_rn(log10e, *f);
}

// gpn_clog2 is log(z) / ln 2, by Go's complex division, as the CPU executor computes it.
__device__ __forceinline__ void gpn_clog2(double re, double im, double* e, double* f) {
  double a, b;
  gpn_clog(re, im, &a, &b);
  gpn_cdiv(a, b, __longlong_as_double(0x3FE62E42FEFA39EFLL), 0.0, e, f);
}

// gpn_csqrt scales the operand away from overflow (by 1/4) and underflow (by 2^54) before
// |z|, as Go does.
__device__ __forceinline__ void gpn_csqrt(double re, double im, double* e, double* f) {
  if (im == 0) {
    if (re == 0) {
      *e = 0.0, *f = im;
    } else if (re < 0) {
      *e = 0.0, *f = copysign(__dsqrt_rn(-re), im);
    } else {
      *e = __dsqrt_rn(re), *f = im;
    }
    return;
  }
  if (isinf(im)) {
    *e = GPN_INF, *f = im;
    return;
  }
  if (re == 0) {
    if (im < 0) {
      const double r = __dsqrt_rn(__dmul_rn(-0.5, im));
      *e = r, *f = -r;
    } else {
      const double r = __dsqrt_rn(__dmul_rn(0.5, im));
      *e = r, *f = r;
    }
    return;
  }
  double a = re, b = im, scale;
  if (fabs(a) > 4 || fabs(b) > 4) {
    a = __dmul_rn(a, 0.25);
    b = __dmul_rn(b, 0.25);
    scale = 2;
  } else {
    a = __dmul_rn(a, 1.8014398509481984e16);  // 2^54
    b = __dmul_rn(b, 1.8014398509481984e16);
    scale = 7.450580596923828125e-9;  // 2^-27
  }
  double r = gpn_hypot(a, b), t;
  if (a > 0) {
    t = __dsqrt_rn(__dadd_rn(__dmul_rn(0.5, r), __dmul_rn(0.5, a)));
    r = __dmul_rn(scale, fabs(__ddiv_rn(__dmul_rn(0.5, b), t)));
    t = __dmul_rn(t, scale);
  } else {
    r = __dsqrt_rn(__dsub_rn(__dmul_rn(0.5, r), __dmul_rn(0.5, a)));
    t = __dmul_rn(scale, fabs(__ddiv_rn(__dmul_rn(0.5, b), r)));
    r = __dmul_rn(r, scale);
  }
  *e = t;
  *f = b < 0 ? -r : r;
}

__device__ __forceinline__ void gpn_csin(double re, double im, double* e, double* f) {
  if (im == 0 && (isinf(re) || isnan(re))) {
    *e = GPN_NAN, *f = im;
    return;
  }
  if (isinf(im)) {
    if (re == 0) {
      *e = re, *f = im;
      return;
    }
    if (isinf(re) || isnan(re)) {
      *e = GPN_NAN, *f = im;
      return;
    }
  } else if (re == 0 && isnan(im)) {
    *e = re, *f = im;
    return;
  }
  double s, c, sh, ch;
  sincos(re, &s, &c);
  gpn_sinhcosh(im, &sh, &ch);
  *e = __dmul_rn(s, ch);
  *f = __dmul_rn(c, sh);
}

__device__ __forceinline__ void gpn_csinh(double re, double im, double* e, double* f) {
  if (re == 0 && (isinf(im) || isnan(im))) {
    *e = re, *f = GPN_NAN;
    return;
  }
  if (isinf(re)) {
    if (im == 0) {
      *e = re, *f = im;
      return;
    }
    if (isinf(im) || isnan(im)) {
      *e = re, *f = GPN_NAN;
      return;
    }
  } else if (im == 0 && isnan(re)) {
    *e = GPN_NAN, *f = im;
    return;
  }
  double s, c, sh, ch;
  sincos(im, &s, &c);
  gpn_sinhcosh(re, &sh, &ch);
  *e = __dmul_rn(c, sh);
  *f = __dmul_rn(s, ch);
}

__device__ __forceinline__ void gpn_ccos(double re, double im, double* e, double* f) {
  if (im == 0 && (isinf(re) || isnan(re))) {
    *e = GPN_NAN, *f = __dmul_rn(-im, copysign(0.0, re));
    return;
  }
  if (isinf(im)) {
    if (re == 0) {
      *e = GPN_INF, *f = __dmul_rn(-re, copysign(0.0, im));
      return;
    }
    if (isinf(re) || isnan(re)) {
      *e = GPN_INF, *f = GPN_NAN;
      return;
    }
  } else if (re == 0 && isnan(im)) {
    *e = GPN_NAN, *f = 0.0;
    return;
  }
  double s, c, sh, ch;
  sincos(re, &s, &c);
  gpn_sinhcosh(im, &sh, &ch);
  *e = __dmul_rn(c, ch);
  *f = __dmul_rn(-s, sh);
}

__device__ __forceinline__ void gpn_ccosh(double re, double im, double* e, double* f) {
  if (re == 0 && (isinf(im) || isnan(im))) {
    *e = GPN_NAN, *f = __dmul_rn(re, copysign(0.0, im));
    return;
  }
  if (isinf(re)) {
    if (im == 0) {
      *e = GPN_INF, *f = __dmul_rn(im, copysign(0.0, re));
      return;
    }
    if (isinf(im) || isnan(im)) {
      *e = GPN_INF, *f = GPN_NAN;
      return;
    }
  } else if (im == 0 && isnan(re)) {
    *e = GPN_NAN, *f = im;
    return;
  }
  double s, c, sh, ch;
  sincos(im, &s, &c);
  gpn_sinhcosh(re, &sh, &ch);
  *e = __dmul_rn(c, ch);
  *f = __dmul_rn(s, sh);
}

// gpn_reduce_pi is x reduced to [-pi/2, pi/2] by multiples of pi: Cody and Waite's three-part
// pi below 2^30, else Payne and Hanek's with the bits of 1/pi (x >= 0 there), as Go's tan
// series reduces.
__device__ __forceinline__ double gpn_reduce_pi(double x) {
  if (fabs(x) < 1073741824.0) {
    const double pi1 = __longlong_as_double(0x400921fb40000000LL);
    const double pi2 = __longlong_as_double(0x3e84442d00000000LL);
    const double pi3 = __longlong_as_double(0x3d08469898cc5170LL);
    double t = __dadd_rn(__ddiv_rn(x, GPN_PI), 0.5);
    t = (double)(long long)t;
    return __dsub_rn(__dsub_rn(__dsub_rn(x, __dmul_rn(t, pi1)), __dmul_rn(t, pi2)), __dmul_rn(t, pi3));
  }
  // The bits of 1/pi, 64 at a time, after a zero word.
  const u64 inv_pi[20] = {0x0000000000000000ULL, 0x517cc1b727220a94ULL, 0xfe13abe8fa9a6ee0ULL, 0x6db14acc9e21c820ULL,
                          0xff28b1d5ef5de2b0ULL, 0xdb92371d2126e970ULL, 0x0324977504e8c90eULL, 0x7f0ef58e5894d39fULL,
                          0x74411afa975da242ULL, 0x74ce38135a2fbf20ULL, 0x9cc8eb1cc1a99cfaULL, 0x4e422fc5defc941dULL,
                          0x8ffc4bffef02cc07ULL, 0xf79788c5ad05368fULL, 0xb69b3f6793e584dbULL, 0xa7a31fb34f2ff516ULL,
                          0xba93dd63f5f2f8bdULL, 0x9e839cfbc5294975ULL, 0x35fdafd88fc6ae84ULL, 0x2b0198237e3db5d5ULL};
  u64 ix = (u64)__double_as_longlong(x);
  const int ex = (int)((ix >> 52) & 0x7FF) - 1023 - 52;
  ix = (ix & ((1ULL << 52) - 1)) | (1ULL << 52);
  const unsigned digit = (unsigned)(ex + 64) / 64, sh = (unsigned)(ex + 64) % 64;
  // x >= 2^30 makes ex + 64 >= 42, and x finite keeps digit + 3 < 20.
  // (A shift by 64 is undefined in C++: sh == 0 takes the words as they are.)
  const u64 z0 = sh == 0 ? inv_pi[digit] : (inv_pi[digit] << sh) | (inv_pi[digit + 1] >> (64 - sh));
  const u64 z1 = sh == 0 ? inv_pi[digit + 1] : (inv_pi[digit + 1] << sh) | (inv_pi[digit + 2] >> (64 - sh));
  const u64 z2 = sh == 0 ? inv_pi[digit + 2] : (inv_pi[digit + 2] << sh) | (inv_pi[digit + 3] >> (64 - sh));
  const u64 z2hi = __umul64hi(z2, ix);
  const u64 z1hi = __umul64hi(z1, ix), z1lo = z1 * ix;
  const u64 z0lo = z0 * ix;
  const u64 lo = z1lo + z2hi;
  u64 hi = z0lo + z1hi + (lo < z1lo ? 1 : 0);
  if (hi == 0) return 0.0;  // x a multiple of pi to all the bits of the table
  const unsigned lz = (unsigned)__clzll((long long)hi);
  const u64 e = (u64)(1023 - (lz + 1));
  hi = lz == 63 ? lo : (hi << (lz + 1)) | (lo >> (64 - (lz + 1)));
  hi >>= 64 - 52;
  hi |= e << 52;
  double r = __longlong_as_double((long long)hi);
  if (r > 0.5) r = __dsub_rn(r, 1.0);
  return __dmul_rn(GPN_PI, r);
}

// gpn_tan_series is cos(2x) + cosh(2y) by its Taylor series where it cancels (|value| < 1/4).
__device__ __forceinline__ double gpn_tan_series(double re, double im) {
  double x = fabs(__dmul_rn(2, re)), y = fabs(__dmul_rn(2, im));
  x = gpn_reduce_pi(x);
  x = __dmul_rn(x, x);
  y = __dmul_rn(y, y);
  double x2 = 1, y2 = 1, fct = 1, rn = 0, d = 0;
  for (;;) {
    rn = __dadd_rn(rn, 1), fct = __dmul_rn(fct, rn);
    rn = __dadd_rn(rn, 1), fct = __dmul_rn(fct, rn);
    x2 = __dmul_rn(x2, x), y2 = __dmul_rn(y2, y);
    double t = __ddiv_rn(__dadd_rn(y2, x2), fct);
    d = __dadd_rn(d, t);
    rn = __dadd_rn(rn, 1), fct = __dmul_rn(fct, rn);
    rn = __dadd_rn(rn, 1), fct = __dmul_rn(fct, rn);
    x2 = __dmul_rn(x2, x), y2 = __dmul_rn(y2, y);
    t = __ddiv_rn(__dsub_rn(y2, x2), fct);
    d = __dadd_rn(d, t);
    if (!(fabs(__ddiv_rn(t, d)) > 1.1102230246251565e-16)) break;  // 2^-53
  }
  return d;
}

__device__ __forceinline__ void gpn_ctan(double re, double im, double* e, double* f) {
  if (isinf(im)) {
    if (isinf(re) || isnan(re)) {
      *e = copysign(0.0, re), *f = copysign(1.0, im);
    } else {
      *e = copysign(0.0, sin(__dmul_rn(2, re))), *f = copysign(1.0, im);
    }
    return;
  }
  if (re == 0 && isnan(im)) {
    *e = re, *f = im;
    return;
  }
  double d = __dadd_rn(cos(__dmul_rn(2, re)), cosh(__dmul_rn(2, im)));
  if (fabs(d) < 0.25) d = gpn_tan_series(re, im);
  if (d == 0) {
    *e = GPN_INF, *f = GPN_INF;
    return;
  }
  *e = __ddiv_rn(sin(__dmul_rn(2, re)), d);
  *f = __ddiv_rn(sinh(__dmul_rn(2, im)), d);
}

__device__ __forceinline__ void gpn_ctanh(double re, double im, double* e, double* f) {
  if (isinf(re)) {
    if (isinf(im) || isnan(im)) {
      *e = copysign(1.0, re), *f = copysign(0.0, im);
    } else {
      *e = copysign(1.0, re), *f = copysign(0.0, sin(__dmul_rn(2, im)));
    }
    return;
  }
  if (im == 0 && isnan(re)) {
    *e = re, *f = im;
    return;
  }
  const double d = __dadd_rn(cosh(__dmul_rn(2, re)), cos(__dmul_rn(2, im)));
  if (d == 0) {
    *e = GPN_INF, *f = GPN_INF;
    return;
  }
  *e = __ddiv_rn(sinh(__dmul_rn(2, re)), d);
  *f = __ddiv_rn(sin(__dmul_rn(2, im)), d);
}

// gpn_casin is -i log(iz + sqrt(1 - z*z)) past Go's special cases.
__device__ __forceinline__ void gpn_casin(double re, double im, double* e, double* f) {
  if (im == 0 && fabs(re) <= 1) {
    *e = asin(re), *f = im;
    return;
  }
  if (re == 0 && fabs(im) <= 1) {
    *e = re, *f = asinh(im);
    return;
  }
  if (isnan(im)) {
    if (re == 0) {
      *e = re, *f = GPN_NAN;
    } else if (isinf(re)) {
      *e = GPN_NAN, *f = re;
    } else {
      *e = GPN_NAN, *f = GPN_NAN;
    }
    return;
  }
  if (isinf(im)) {
    if (isnan(re)) {
      *e = re, *f = im;
    } else if (isinf(re)) {
      *e = copysign(GPN_PI4, re), *f = im;
    } else {
      *e = copysign(0.0, re), *f = im;
    }
    return;
  }
  if (isinf(re)) {
    *e = copysign(GPN_PI2, re), *f = copysign(re, im);
    return;
  }
  double xr, xi, sr, si, wr, wi;
  gpn_cmul(re, im, re, im, &xr, &xi);
  gpn_csqrt(__dsub_rn(1, xr), -xi, &sr, &si);
  gpn_clog(__dadd_rn(-im, sr), __dadd_rn(re, si), &wr, &wi);
  *e = wi, *f = -wr;
}

__device__ __forceinline__ void gpn_cacos(double re, double im, double* e, double* f) {
  double wr, wi;
  gpn_casin(re, im, &wr, &wi);
  *e = __dsub_rn(GPN_PI2, wr), *f = -wi;
}

__device__ __forceinline__ void gpn_cacosh(double re, double im, double* e, double* f) {
  if (re == 0 && im == 0) {
    *e = 0.0, *f = copysign(GPN_PI2, im);
    return;
  }
  double wr, wi;
  gpn_cacos(re, im, &wr, &wi);
  if (wi <= 0) {
    *e = -wi, *f = wr;
  } else {
    *e = wi, *f = -wr;
  }
}

// gpn_casinh is log(z + sqrt(1 + z*z)) past Go's special cases.
__device__ __forceinline__ void gpn_casinh(double re, double im, double* e, double* f) {
  if (im == 0 && fabs(re) <= 1) {
    *e = asinh(re), *f = im;
    return;
  }
  if (re == 0 && fabs(im) <= 1) {
    *e = re, *f = asin(im);
    return;
  }
  if (isinf(re)) {
    if (isinf(im)) {
      *e = re, *f = copysign(GPN_PI4, im);
    } else if (isnan(im)) {
      *e = re, *f = im;
    } else {
      *e = re, *f = copysign(0.0, im);
    }
    return;
  }
  if (isnan(re)) {
    if (im == 0) {
      *e = re, *f = im;
    } else if (isinf(im)) {
      *e = im, *f = re;
    } else {
      *e = GPN_NAN, *f = GPN_NAN;
    }
    return;
  }
  if (isinf(im)) {
    *e = copysign(im, re), *f = copysign(GPN_PI2, im);
    return;
  }
  double xr, xi, sr, si;
  gpn_cmul(re, im, re, im, &xr, &xi);
  gpn_csqrt(__dadd_rn(1, xr), xi, &sr, &si);
  gpn_clog(__dadd_rn(re, sr), __dadd_rn(im, si), e, f);
}

// gpn_catan is Go's: the real part from atan2 reduced by pi, the imaginary from a log of a
// ratio of squared distances to ±i.
__device__ __forceinline__ void gpn_catan(double re, double im, double* e, double* f) {
  if (im == 0) {
    *e = atan(re), *f = im;
    return;
  }
  if (re == 0 && fabs(im) <= 1) {
    *e = re, *f = atanh(im);
    return;
  }
  if (isinf(im) || isinf(re)) {
    *e = isnan(re) ? GPN_NAN : copysign(GPN_PI2, re), *f = copysign(0.0, im);
    return;
  }
  if (isnan(re) || isnan(im)) {
    *e = GPN_NAN, *f = GPN_NAN;
    return;
  }
  const double x2 = __dmul_rn(re, re);
  const double a = __dsub_rn(__dsub_rn(1, x2), __dmul_rn(im, im));
  if (a == 0) {
    *e = GPN_NAN, *f = GPN_NAN;
    return;
  }
  const double w = gpn_reduce_pi(__dmul_rn(0.5, atan2(__dmul_rn(2, re), a)));
  double t = __dsub_rn(im, 1);
  const double b = __dadd_rn(x2, __dmul_rn(t, t));
  if (b == 0) {
    *e = GPN_NAN, *f = GPN_NAN;
    return;
  }
  t = __dadd_rn(im, 1);
  const double c = __ddiv_rn(__dadd_rn(x2, __dmul_rn(t, t)), b);
  *e = w, *f = __dmul_rn(0.25, log(c));
}

__device__ __forceinline__ void gpn_catanh(double re, double im, double* e, double* f) {
  double wr, wi;
  gpn_catan(-im, re, &wr, &wi);
  *e = wi, *f = -wr;
}

// gpn_cpow is Go's x**y: |x|**y's real part times exp(-Im(y) arg x), at the angle
// Re(y) arg x + Im(y) log|x|; a zero base by Go's table.
__device__ __forceinline__ void gpn_cpow(double a, double b, double c, double d, double* e, double* f) {
  if (a == 0 && b == 0) {
    const bool nan = (isnan(c) || isnan(d)) && !isinf(c) && !isinf(d);
    if (nan) {
      *e = GPN_NAN, *f = GPN_NAN;
    } else if (c == 0) {
      *e = 1.0, *f = 0.0;
    } else if (c < 0) {
      *e = GPN_INF, *f = d == 0 ? 0.0 : GPN_INF;
    } else if (c > 0) {
      *e = 0.0, *f = 0.0;
    } else {
      *e = GPN_NAN, *f = GPN_NAN;  // NaN real part with an infinite imaginary one: Go panics
    }
    return;
  }
  const double modulus = gpn_hypot(a, b);
  if (modulus == 0) {
    *e = 0.0, *f = 0.0;
    return;
  }
  double r = pow(modulus, c);
  const double arg = atan2(b, a);
  double theta = __dmul_rn(c, arg);
  if (d != 0) {
    r = __dmul_rn(r, exp(__dmul_rn(-d, arg)));
    theta = __dadd_rn(theta, __dmul_rn(d, log(modulus)));
  }
  double s, co;
  sincos(theta, &s, &co);
  *e = __dmul_rn(r, co);
  *f = __dmul_rn(r, s);
}

#define GPN_CUNARY(name)                                                                  \
  extern "C" __device__ double name##_re(double a, double b) {                             \
    double e, f;                                                                          \
    name(a, b, &e, &f);                                                                   \
    return e;                                                                             \
  }                                                                                       \
  extern "C" __device__ double name##_im(double a, double b) {                             \
    double e, f;                                                                          \
    name(a, b, &e, &f);                                                                   \
    return f;                                                                             \
  }
GPN_CUNARY(gpn_cexp)
GPN_CUNARY(gpn_clog)
GPN_CUNARY(gpn_clog2)
GPN_CUNARY(gpn_clog10)
GPN_CUNARY(gpn_csqrt)
GPN_CUNARY(gpn_csin)
GPN_CUNARY(gpn_ccos)
GPN_CUNARY(gpn_ctan)
GPN_CUNARY(gpn_csinh)
GPN_CUNARY(gpn_ccosh)
GPN_CUNARY(gpn_ctanh)
GPN_CUNARY(gpn_casin)
GPN_CUNARY(gpn_cacos)
GPN_CUNARY(gpn_catan)
GPN_CUNARY(gpn_casinh)
GPN_CUNARY(gpn_cacosh)
GPN_CUNARY(gpn_catanh)
#undef GPN_CUNARY

extern "C" __device__ double gpn_cpow_re(double a, double b, double c, double d) {
  double e, f;
  gpn_cpow(a, b, c, d, &e, &f);
  return e;
}

extern "C" __device__ double gpn_cpow_im(double a, double b, double c, double d) {
  double e, f;
  gpn_cpow(a, b, c, d, &e, &f);
  return f;
}
// cmath-host: end

// Block reductions. Every thread of the block calls one with its own value; thread 0 stores the
// block's result at out. The order of combination is fixed (warp shuffles down, then warp 0 over
// the warps' results), so a block's result does not depend on timing. blockDim.x must be a
// multiple of 32, at most 1024.
__shared__ double gpn_red_v[32];
__shared__ long long gpn_red_i[32];

__device__ __forceinline__ double gpn_warp_sum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = __dadd_rn(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;
}

extern "C" __device__ void gpn_block_sum(double v, double* out) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = gpn_warp_sum(v);
  __syncthreads();  // gpn_red_v may still be read by an earlier call
  if (lane == 0) gpn_red_v[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < (int)(blockDim.x >> 5) ? gpn_red_v[lane] : 0.0;
    v = gpn_warp_sum(v);
    if (lane == 0) *out = v;
  }
}

// gpn_block_minmax reduces with min (isMax == 0) or max; NaN wins, as in NumPy.
__device__ __forceinline__ double gpn_pick(double a, double b, int isMax) {
  if (a != a) return a;
  if (b != b) return b;
  return isMax ? fmax(a, b) : fmin(a, b);
}

extern "C" __device__ void gpn_block_minmax(double v, int isMax, double* out) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = gpn_pick(v, __shfl_down_sync(0xffffffffu, v, o), isMax);
  __syncthreads();
  if (lane == 0) gpn_red_v[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < (int)(blockDim.x >> 5) ? gpn_red_v[lane] : gpn_red_v[0];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = gpn_pick(v, __shfl_down_sync(0xffffffffu, v, o), isMax);
    if (lane == 0) *out = v;
  }
}

// gpn_block_arg reduces (value, index) pairs to the first index of the minimum (isMax == 0) or
// maximum; the first NaN wins, as in NumPy. Threads with no element pass index -1.
__device__ __forceinline__ void gpn_arg_pick(double& v, long long& i, double v2, long long i2, int isMax) {
  if (i2 < 0) return;
  if (i < 0) { v = v2; i = i2; return; }
  const bool n1 = v != v, n2 = v2 != v2;
  bool take;
  if (n1 || n2) take = n2 && (!n1 || i2 < i);
  else if (v2 == v) take = i2 < i;
  else take = isMax ? v2 > v : v2 < v;
  if (take) { v = v2; i = i2; }
}

extern "C" __device__ void gpn_block_arg(double v, long long i, int isMax, double* vout, long long* iout) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const double v2 = __shfl_down_sync(0xffffffffu, v, o);
    const long long i2 = __shfl_down_sync(0xffffffffu, i, o);
    if (lane + o < 32) gpn_arg_pick(v, i, v2, i2, isMax);
  }
  __syncthreads();
  if (lane == 0) { gpn_red_v[w] = v; gpn_red_i[w] = i; }
  __syncthreads();
  if (w == 0) {
    const bool have = lane < (int)(blockDim.x >> 5);
    v = have ? gpn_red_v[lane] : 0.0;
    i = have ? gpn_red_i[lane] : -1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const double v2 = __shfl_down_sync(0xffffffffu, v, o);
      const long long i2 = __shfl_down_sync(0xffffffffu, i, o);
      if (lane + o < 32) gpn_arg_pick(v, i, v2, i2, isMax);
    }
    if (lane == 0) { *vout = v; *iout = i; }
  }
}

// gpn_block_welford combines per-thread (count, mean, M2) triples (Chan et al.) in a fixed
// order; thread 0 stores the block's triple at out[0..2].
__device__ __forceinline__ void gpn_welford_merge(double& n, double& m, double& q, double n2, double m2, double q2) {
  if (n2 == 0.0) return;
  if (n == 0.0) { n = n2; m = m2; q = q2; return; }
  const double nn = __dadd_rn(n, n2), d = __dsub_rn(m2, m);
  m = __dadd_rn(m, __dmul_rn(d, __ddiv_rn(n2, nn)));
  q = __dadd_rn(__dadd_rn(q, q2), __dmul_rn(__dmul_rn(d, d), __ddiv_rn(__dmul_rn(n, n2), nn)));
  n = nn;
}

__shared__ double gpn_red_w[3][32];

extern "C" __device__ void gpn_block_welford(double n, double m, double q, double* out) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const double n2 = __shfl_down_sync(0xffffffffu, n, o), m2 = __shfl_down_sync(0xffffffffu, m, o), q2 = __shfl_down_sync(0xffffffffu, q, o);
    if (lane + o < 32) gpn_welford_merge(n, m, q, n2, m2, q2);
  }
  __syncthreads();
  if (lane == 0) { gpn_red_w[0][w] = n; gpn_red_w[1][w] = m; gpn_red_w[2][w] = q; }
  __syncthreads();
  if (w == 0) {
    const bool have = lane < (int)(blockDim.x >> 5);
    n = have ? gpn_red_w[0][lane] : 0.0; m = have ? gpn_red_w[1][lane] : 0.0; q = have ? gpn_red_w[2][lane] : 0.0;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const double n2 = __shfl_down_sync(0xffffffffu, n, o), m2 = __shfl_down_sync(0xffffffffu, m, o), q2 = __shfl_down_sync(0xffffffffu, q, o);
      if (lane + o < 32) gpn_welford_merge(n, m, q, n2, m2, q2);
    }
    if (lane == 0) { out[0] = n; out[1] = m; out[2] = q; }
  }
}

// Stand-alone kernels.

// gpn_fill_random writes n values of a random array: element t is drawn for global index
// start + t*stride; dist 0 = normal(p0, p1), 1 = uniform(p0, p1).
extern "C" __global__ void gpn_fill_random(double* out, u64 n, u64 start, long long stride, u32 k0, u32 k1, int dist, double p0, double p1) {
  for (u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x; t < n; t += (u64)gridDim.x * blockDim.x) {
    const u64 idx = start + t * (u64)stride;
    double v;
    if (dist == 0) v = __dadd_rn(p0, __dmul_rn(p1, gpn_normal(idx, k0, k1)));
    else v = __dadd_rn(__dmul_rn(__dsub_rn(p1, p0), gpn_uniform(idx, k0, k1)), p0);
    out[t] = v;
  }
}

// gpn_gather2d copies a strided 2-d view: out[r*cols + c] = in[off + r*rs + c*cs].
extern "C" __global__ void gpn_gather2d(double* out, const double* __restrict__ in, long long off, long long rs, long long cs, long long rows, long long cols) {
  const long long n = rows * cols;
  for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n; t += (long long)gridDim.x * blockDim.x) {
    const long long r = t / cols, c = t - r * cols;
    out[t] = in[off + r * rs + c * cs];
  }
}

// gpn_transpose2d writes out (cols x rows) = transpose of in (rows x cols) through shared-memory
// tiles of 32 x 32 (blocks of 32 x 8 threads), so reads and writes are both coalesced.
extern "C" __global__ void gpn_transpose2d(double* out, const double* __restrict__ in, long long rows, long long cols) {
  __shared__ double tile[32][33];
  const long long bx = (long long)blockIdx.x * 32, by = (long long)blockIdx.y * 32;
  for (int k = threadIdx.y; k < 32; k += 8) {
    const long long r = by + k, c = bx + threadIdx.x;
    if (r < rows && c < cols) tile[k][threadIdx.x] = in[r * cols + c];
  }
  __syncthreads();
  for (int k = threadIdx.y; k < 32; k += 8) {
    const long long r = bx + k, c = by + threadIdx.x;  // r indexes out's rows (in's cols)
    if (r < cols && c < rows) out[r * rows + c] = tile[threadIdx.x][k];
  }
}

// gpn_reduce_sum sums n doubles into out[blockIdx.x], block b taking elements b, b+gridDim.x, …
// in a fixed order per thread.
extern "C" __global__ void gpn_reduce_sum(double* out, const double* __restrict__ in, u64 n) {
  double acc = 0.0;
  for (u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x; t < n; t += (u64)gridDim.x * blockDim.x) acc = __dadd_rn(acc, in[t]);
  gpn_block_sum(acc, out + blockIdx.x);
}

// gpn_dgemm_nn computes C = alpha*A*B + beta*C for row-major A (m x k, leading dimension lda),
// B (k x n, ldb) and C (m x n, ldc): the matrix product used when cuBLAS is absent. Each block
// of 256 threads computes a 64 x 64 tile of C, each thread 4 x 4 elements of it strided by 16
// (so a warp's stores to C are contiguous), through 16-deep slices of A and B staged in shared
// memory. With beta == 0, C is not read (it may hold anything).
extern "C" __global__ void __launch_bounds__(256) gpn_dgemm_nn(long long m, long long n, long long k, double alpha, const double* __restrict__ A, long long lda, const double* __restrict__ B, long long ldb, double beta, double* __restrict__ C, long long ldc) {
  __shared__ double As[16][64 + 1];  // As[kk][r] = A[row0 + r][k0 + kk]
  __shared__ double Bs[16][64 + 1];  // Bs[kk][c] = B[k0 + kk][col0 + c]
  const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const long long row0 = (long long)blockIdx.y * 64, col0 = (long long)blockIdx.x * 64;
  double acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.0;
  for (long long k0 = 0; k0 < k; k0 += 16) {
#pragma unroll
    for (int l = threadIdx.x; l < 64 * 16; l += 256) {
      const int ar = l / 16, ac = l % 16;  // 16 consecutive threads read one row of A
      const long long gar = row0 + ar, gac = k0 + ac;
      As[ac][ar] = (gar < m && gac < k) ? A[gar * lda + gac] : 0.0;
      const int br = l / 64, bc = l % 64;  // 64 consecutive threads read one row of B
      const long long gbr = k0 + br, gbc = col0 + bc;
      Bs[br][bc] = (gbr < k && gbc < n) ? B[gbr * ldb + gbc] : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < 16; ++kk) {
      double a[4], b[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) a[i] = As[kk][ty + 16 * i];
#pragma unroll
      for (int j = 0; j < 4; ++j) b[j] = Bs[kk][tx + 16 * j];
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const long long r = row0 + ty + 16 * i;
    if (r >= m) continue;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const long long c = col0 + tx + 16 * j;
      if (c >= n) continue;
      double* p = C + r * ldc + c;
      *p = beta == 0.0 ? alpha * acc[i][j] : fma(alpha, acc[i][j], beta * *p);
    }
  }
}
