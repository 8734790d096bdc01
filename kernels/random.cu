// Random distributions beyond normal, uniform and integers, included by lib.cu after its Philox
// and ziggurat pieces. Each function is the standard draw of element idx under key (k0, k1), as
// package gpuarray/rng specifies (its doc.go, "Sub-streams, and the other distributions"):
// the same blocks, the same operations in the same order, each rounded on its own.

// gpn_block_w is block s of sub-stream w of element idx.
__device__ __forceinline__ gpn_block gpn_block_w(u64 idx, u32 s, u32 w, u32 k0, u32 k1) {
  return gpn_philox((u32)idx, (u32)(idx >> 32), s, w, k0, k1);
}

__device__ __forceinline__ double gpn_unit(u32 x0, u32 x1) { return __dmul_rn((double)gpn_u53(x0, x1), TWO_M53); }

__device__ __forceinline__ double gpn_open(u32 x0, u32 x1) {
  return __dmul_rn(__dadd_rn((double)gpn_u53(x0, x1), 0.5), TWO_M53);
}

// gpn_normal_w is the standard normal of element idx on sub-stream w: the ziggurat of
// gpn_normal with every block from sub-stream w.
__device__ double gpn_normal_w(u64 idx, u32 w, u32 k0, u32 k1) {
  gpn_block b = gpn_block_w(idx, 0u, w, k0, k1);
  u32 s = 1;
  for (;;) {
    const u64 u = gpn_u53(b.x0, b.x1);
    const u32 j = b.x2 & 255u;
    double z = __dmul_rn((double)u, __longlong_as_double(gpn_zig_w[j]));
    const bool neg = (b.x2 & 256u) != 0;
    if (u < gpn_zig_k[j]) {
      return neg ? -z : z;
    }
    if (j == 0) {
      for (;;) {
        const gpn_block y = gpn_block_w(idx, s, w, k0, k1);
        ++s;
        const double a = gpn_open(y.x0, y.x1);
        const double c = gpn_open(y.x2, y.x3);
        const double t = __ddiv_rn(-log(a), GPN_ZIG_R);
        const double e = -log(c);
        if (__dadd_rn(e, e) >= __dmul_rn(t, t)) {
          z = __dadd_rn(GPN_ZIG_R, t);
          return neg ? -z : z;
        }
      }
    }
    const double v = __dmul_rn((double)(((u64)b.x3 << 21) | (u64)(b.x2 >> 11)), TWO_M53);
    const double fj = __longlong_as_double(gpn_zig_f[j]), fj1 = __longlong_as_double(gpn_zig_f[j + 1]);
    if (__dadd_rn(fj, __dmul_rn(v, __dsub_rn(fj1, fj))) < exp(__ddiv_rn(-__dmul_rn(z, z), 2.0))) {
      return neg ? -z : z;
    }
    b = gpn_block_w(idx, s, w, k0, k1);
    ++s;
  }
}

// gpn_exponential is the standard exponential of element idx.
extern "C" __device__ double gpn_exponential(u64 idx, u32 k0, u32 k1) {
  const gpn_block b = gpn_block_w(idx, 0u, 0u, k0, k1);
  return -log(gpn_open(b.x0, b.x1));
}

// gpn_gamma is the standard gamma (scale 1) of shape a >= 0 of element idx.
extern "C" __device__ double gpn_gamma(u64 idx, u32 k0, u32 k1, double a) {
  if (a == 0.0) return 0.0;
  const bool boost = a < 1.0;
  const double inv = boost ? __ddiv_rn(1.0, a) : 0.0;
  const double shape = boost ? __dadd_rn(a, 1.0) : a;
  const double d = __dsub_rn(shape, 1.0 / 3.0);
  const double c = __ddiv_rn(1.0, sqrt(__dmul_rn(9.0, d)));
  double x;
  for (u32 t = 0;; ++t) {
    const double z = gpn_normal_w(idx, 1u + t, k0, k1);
    double v = __dadd_rn(1.0, __dmul_rn(c, z));
    if (v <= 0.0) continue;
    v = __dmul_rn(__dmul_rn(v, v), v);
    const gpn_block b = gpn_block_w(idx, 0u, 0x80000000u | t, k0, k1);
    const double u = gpn_open(b.x0, b.x1);
    const double zz = __dmul_rn(z, z);
    if (u < __dsub_rn(1.0, __dmul_rn(0.0331, __dmul_rn(zz, zz)))) {
      x = __dmul_rn(d, v);
      break;
    }
    if (log(u) < __dadd_rn(__dmul_rn(0.5, zz), __dmul_rn(d, __dadd_rn(__dsub_rn(1.0, v), log(v))))) {
      x = __dmul_rn(d, v);
      break;
    }
  }
  if (boost) {
    const gpn_block b = gpn_block_w(idx, 0u, 0u, k0, k1);
    x = __dmul_rn(x, pow(gpn_open(b.x0, b.x1), inv));
  }
  return x;
}

// gpn_poisson is the Poisson count of mean lam >= 0 of element idx.
extern "C" __device__ double gpn_poisson(u64 idx, u32 k0, u32 k1, double lam) {
  if (lam == 0.0) return 0.0;
  if (lam < 10.0) {
    const gpn_block b = gpn_block_w(idx, 0u, 0u, k0, k1);
    const double u = gpn_unit(b.x0, b.x1);
    double n = 0.0, pk = exp(-lam);
    double f = pk;
    while (u >= f && pk > 0.0) {
      n = __dadd_rn(n, 1.0);
      pk = __ddiv_rn(__dmul_rn(pk, lam), n);
      f = __dadd_rn(f, pk);
    }
    return n;
  }
  const double slam = sqrt(lam);
  const double loglam = log(lam);
  const double b = __dadd_rn(0.931, __dmul_rn(2.53, slam));
  const double a = __dadd_rn(-0.059, __dmul_rn(0.02483, b));
  const double a2 = __dmul_rn(2.0, a);
  const double lnInvAlpha = log(__dadd_rn(1.1239, __ddiv_rn(1.1328, __dsub_rn(b, 3.4))));
  const double vr = __dsub_rn(0.9277, __ddiv_rn(3.6224, __dsub_rn(b, 2.0)));
  for (u32 t = 0;; ++t) {
    const gpn_block y = gpn_block_w(idx, t, 0u, k0, k1);
    const double u = __dsub_rn(gpn_unit(y.x0, y.x1), 0.5);
    const double v = gpn_unit(y.x2, y.x3);
    const double us = __dsub_rn(0.5, fabs(u));
    const double n = floor(__dadd_rn(__dadd_rn(__dmul_rn(__dadd_rn(__ddiv_rn(a2, us), b), u), lam), 0.43));
    if (us >= 0.07 && v <= vr) return n;
    if (n < 0.0 || (us < 0.013 && v > us)) continue;
    const double lhs = __dsub_rn(__dadd_rn(log(v), lnInvAlpha), log(__dadd_rn(__ddiv_rn(a, __dmul_rn(us, us)), b)));
    const double rhs = __dsub_rn(__dadd_rn(-lam, __dmul_rn(n, loglam)), lgamma(__dadd_rn(n, 1.0)));
    if (lhs <= rhs) return n;
  }
}

// gpn_binomial_low is the binomial count of n trials of probability p <= 1/2 of element idx.
__device__ double gpn_binomial_low(u64 idx, u32 k0, u32 k1, double n, double p) {
  if (n == 0.0 || p == 0.0) return 0.0;
  const double q = __dsub_rn(1.0, p);
  const double np = __dmul_rn(n, p);
  if (np < 10.0) {
    const double qn = exp(__dmul_rn(n, log(q)));
    const double bound = fmin(n, __dadd_rn(np, __dmul_rn(10.0, sqrt(__dadd_rn(__dmul_rn(np, q), 1.0)))));
    u32 s = 0;
    gpn_block b = gpn_block_w(idx, s, 0u, k0, k1);
    double u = gpn_unit(b.x0, b.x1);
    double x = 0.0, px = qn;
    while (u > px) {
      x = __dadd_rn(x, 1.0);
      if (x > bound) {
        x = 0.0;
        px = qn;
        ++s;
        b = gpn_block_w(idx, s, 0u, k0, k1);
        u = gpn_unit(b.x0, b.x1);
        continue;
      }
      u = __dsub_rn(u, px);
      px = __ddiv_rn(__dmul_rn(__dmul_rn(__dadd_rn(__dsub_rn(n, x), 1.0), p), px), __dmul_rn(x, q));
    }
    return x;
  }
  const double spq = sqrt(__dmul_rn(np, q));
  const double bb = __dadd_rn(1.15, __dmul_rn(2.53, spq));
  const double a = __dadd_rn(__dadd_rn(-0.0873, __dmul_rn(0.0248, bb)), __dmul_rn(0.01, p));
  const double c = __dadd_rn(np, 0.5);
  const double vr = __dsub_rn(0.92, __ddiv_rn(4.2, bb));
  const double alpha = __dmul_rn(__dadd_rn(2.83, __ddiv_rn(5.1, bb)), spq);
  const double lpq = log(__ddiv_rn(p, q));
  const double m = floor(__dmul_rn(__dadd_rn(n, 1.0), p));
  const double h = __dadd_rn(lgamma(__dadd_rn(m, 1.0)), lgamma(__dadd_rn(__dsub_rn(n, m), 1.0)));
  for (u32 t = 0;; ++t) {
    const gpn_block y = gpn_block_w(idx, t, 0u, k0, k1);
    const double u = __dsub_rn(gpn_unit(y.x0, y.x1), 0.5);
    double v = gpn_unit(y.x2, y.x3);
    const double us = __dsub_rn(0.5, fabs(u));
    const double k = floor(__dadd_rn(__dmul_rn(__dadd_rn(__ddiv_rn(__dmul_rn(2.0, a), us), bb), u), c));
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0.0 || k > n) continue;
    v = log(__ddiv_rn(__dmul_rn(v, alpha), __dadd_rn(__ddiv_rn(a, __dmul_rn(us, us)), bb)));
    const double l1 = lgamma(__dadd_rn(k, 1.0));
    const double l2 = lgamma(__dadd_rn(__dsub_rn(n, k), 1.0));
    if (v <= __dadd_rn(__dsub_rn(__dsub_rn(h, l1), l2), __dmul_rn(__dsub_rn(k, m), lpq))) return k;
  }
}

// gpn_binomial is the binomial count of n trials of probability p of element idx.
extern "C" __device__ double gpn_binomial(u64 idx, u32 k0, u32 k1, double n, double p) {
  if (p > 0.5) return __dsub_rn(n, gpn_binomial_low(idx, k0, k1, n, __dsub_rn(1.0, p)));
  return gpn_binomial_low(idx, k0, k1, n, p);
}

// gpn_beta is the beta number of parameters a, b in (0, 1] of element idx, by Johnk's method
// (rng.Key.Beta): try t on block t, the log-space form when a power is below the smallest normal.
extern "C" __device__ double gpn_beta(u64 idx, u32 k0, u32 k1, double a, double b) {
  const double ia = __ddiv_rn(1.0, a), ib = __ddiv_rn(1.0, b);
  const double m = fmin(a, b);
  const double ma = __ddiv_rn(m, a), mb = __ddiv_rn(m, b);
  const double min_normal = 2.2250738585072014e-308;
  for (u32 t = 0;; ++t) {
    const gpn_block y = gpn_block_w(idx, t, 0u, k0, k1);
    const double u = gpn_open(y.x0, y.x1), v = gpn_open(y.x2, y.x3);
    const double x = pow(u, ia), w = pow(v, ib);
    const double s = __dadd_rn(x, w);
    if (!(s <= 1.0)) continue;
    if (x >= min_normal && w >= min_normal) return __ddiv_rn(x, s);
    const double d = __ddiv_rn(__dsub_rn(__dmul_rn(log(u), ma), __dmul_rn(log(v), mb)), m);
    if (d <= 0.0) {
      const double e = exp(d);
      return __ddiv_rn(e, __dadd_rn(1.0, e));
    }
    return __ddiv_rn(1.0, __dadd_rn(1.0, exp(-d)));
  }
}
