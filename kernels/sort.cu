// gpunotes device sort: a stable LSD radix sort of the lines of a row-major block along one
// axis, as package gpuarray/cpu sorts them (NumPy's stable sort: NaN last ascending, first
// descending, equal values, -0 and +0 included, in their original order).
//
// A module of its own (gen.sh compiles it to ptx/sort_*.ptx without -rdc): the fused kernels
// never call into it, so it need not be linked with them, and lib.cu stays untouched.
//
// The host (package gpuarray/cuda/devsort) drives it:
//  1. gpn_sort_keys maps each value to an unsigned key whose order is the sort's order (floats:
//     sign-flipped bits, -0 as +0, every NaN as the largest key; descending: the key's
//     complement) and numbers the elements 0..n-1 (their row-major position, the payload);
//  2. 8-bit passes, least significant digit first: gpn_radix_hist counts each tile's digits,
//     gpn_radix_scan turns the counts into each tile's start per digit, gpn_radix_scatter moves
//     the keys (and payloads) there, stably;
//  3. with several lines, more passes over the line number of each payload (gpn_sort_segkeys),
//     so that the lines come out one after another, each still in key order;
//  4. gpn_sort_out writes each line's values (read back at their original position, so the
//     bits of NaNs and zeros are kept) or their indices along the axis, all of them or the
//     positions a quantile keeps; gpn_sort_unkeys inverts the keys directly when there is one
//     line, no payload was needed (no NaN, no -0) and only the values are wanted.

typedef unsigned int u32;
typedef unsigned long long u64;
typedef unsigned short u16;
typedef unsigned char u8;

// Element types (the order of package devsort's constants).
enum { T_F64, T_F32, T_I64, T_I32, T_I16, T_I8, T_U64, T_U32, T_U16, T_U8 };

#define RT 256           // threads per radix block: one per digit value
#define RIPT 8           // elements per thread
#define RTILE (RT * RIPT) // elements per tile (block)
#define RWARPS (RT / 32)

// ---- keys ----

__device__ __forceinline__ u64 key_f64(double v, u32* special) {
  u64 b = (u64)__double_as_longlong(v);
  if (v != v) {
    *special = 1;
    return ~0ull;
  }
  if (b == 0x8000000000000000ull) {
    *special = 1;
    b = 0;
  }
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

__device__ __forceinline__ u32 key_f32(float v, u32* special) {
  u32 b = (u32)__float_as_int(v);
  if (v != v) {
    *special = 1;
    return ~0u;
  }
  if (b == 0x80000000u) {
    *special = 1;
    b = 0;
  }
  return (b >> 31) ? ~b : (b | 0x80000000u);
}

__device__ __forceinline__ u64 load_key(const void* x, u64 i, int type, u32* special) {
  switch (type) {
    case T_F64: return key_f64(((const double*)x)[i], special);
    case T_F32: return key_f32(((const float*)x)[i], special);
    case T_I64: return (u64)((const long long*)x)[i] ^ 0x8000000000000000ull;
    case T_I32: return (u32)((const int*)x)[i] ^ 0x80000000u;
    case T_I16: return (u32)(u16)((const short*)x)[i] ^ 0x8000u;
    case T_I8: return (u32)(u8)((const signed char*)x)[i] ^ 0x80u;
    case T_U64: return ((const u64*)x)[i];
    case T_U32: return ((const u32*)x)[i];
    case T_U16: return ((const u16*)x)[i];
    default: return ((const u8*)x)[i];
  }
}

// gpn_sort_keys writes the keys of the n values of x (element type, key width of 32 or 64
// bits: keys32 or keys64, the other null), complemented within mask for a descending sort,
// numbers the elements in idx (unless null), and sets *special when a NaN or -0 was seen.
extern "C" __global__ void gpn_sort_keys(u32* keys32, u64* keys64, u32* idx, const void* x, u64 n, int type, int desc, u64 mask, u32* special) {
  u32 sp = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    u64 k = load_key(x, i, type, &sp);
    if (desc) k ^= mask;
    if (keys64) keys64[i] = k; else keys32[i] = (u32)k;
    if (idx) idx[i] = (u32)i;
  }
  if (__any_sync(0xFFFFFFFFu, sp) && (threadIdx.x & 31) == 0) atomicOr(special, 1u);
}

// gpn_sort_unkeys writes the values whose keys are given (no NaN and no -0 among them): the
// m values at positions keep[0..m) of the sorted keys, or all of them (keep null, m = n).
extern "C" __global__ void gpn_sort_unkeys(void* out, const u32* keys32, const u64* keys64, const u32* keep, u64 m, int type, int desc, u64 mask) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
    const u64 at = keep ? (u64)keep[i] : i;
    u64 k = keys64 ? keys64[at] : (u64)keys32[at];
    if (desc) k ^= mask;
    switch (type) {
      case T_F64: ((u64*)out)[i] = (k >> 63) ? (k & 0x7FFFFFFFFFFFFFFFull) : ~k; break;
      case T_F32: {
        const u32 b = (u32)k;
        ((u32*)out)[i] = (b >> 31) ? (b & 0x7FFFFFFFu) : ~b;
        break;
      }
      case T_I64: ((u64*)out)[i] = k ^ 0x8000000000000000ull; break;
      case T_I32: ((u32*)out)[i] = (u32)k ^ 0x80000000u; break;
      case T_I16: ((u16*)out)[i] = (u16)((u32)k ^ 0x8000u); break;
      case T_I8: ((u8*)out)[i] = (u8)((u32)k ^ 0x80u); break;
      case T_U64: ((u64*)out)[i] = k; break;
      case T_U32: ((u32*)out)[i] = (u32)k; break;
      case T_U16: ((u16*)out)[i] = (u16)k; break;
      default: ((u8*)out)[i] = (u8)k; break;
    }
  }
}

// gpn_sort_narrow converts n float64 values (a fused kernel's output) to the dtype they stand
// for: kind 0 float32 (rounded to nearest, as Go's conversion), kind 1 bool (v != 0).
extern "C" __global__ void gpn_sort_narrow(void* out, const double* in, u64 n, int kind) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const double v = in[i];
    if (kind == 0) ((float*)out)[i] = __double2float_rn(v);
    else ((u8*)out)[i] = v != 0.0 ? 1 : 0;
  }
}

// gpn_sort_segkeys keys each payload (a row-major position in a block of lines of length len
// strided by inner) with its line number.
extern "C" __global__ void gpn_sort_segkeys(u32* keys, const u32* idx, u64 n, u64 len, u64 inner) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 p = idx[i];
    const u64 o = p / (len * inner);
    keys[i] = (u32)(o * inner + p % inner);
  }
}

// gpn_sort_out writes the payloads in line-major order (lines of len, strided by inner in the
// block) to their places in the row-major result, whose lines are klen long: positions
// keep[0..klen) of each sorted line, or all of them (keep null, klen = len). Each is the value
// at that payload's position of x (esize bytes), or with arg its index along the axis.
extern "C" __global__ void gpn_sort_out(void* out, const void* x, const u32* idx, u64 lines, u64 len, u64 inner, const u32* keep, u64 klen, int esize, int arg) {
  const u64 m = lines * klen;
  for (u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x; t < m; t += (u64)gridDim.x * blockDim.x) {
    const u64 s = t / klen, kk = t - s * klen;
    const u64 r = keep ? (u64)keep[kk] : kk;
    const u64 p = idx[s * len + r];
    const u64 o = s / inner, in = s - o * inner;
    const u64 dst = (o * klen + kk) * inner + in;
    if (arg) {
      ((long long*)out)[dst] = (long long)((p / inner) % len);
      continue;
    }
    switch (esize) {
      case 8: ((u64*)out)[dst] = ((const u64*)x)[p]; break;
      case 4: ((u32*)out)[dst] = ((const u32*)x)[p]; break;
      case 2: ((u16*)out)[dst] = ((const u16*)x)[p]; break;
      default: ((u8*)out)[dst] = ((const u8*)x)[p]; break;
    }
  }
}

// ---- radix passes ----

template <typename K>
__device__ __forceinline__ u32 digit_of(K k, int shift) { return (u32)(k >> shift) & 255u; }

// radix_hist counts the digits of the tile of block b into counts[d*nb + b]. Each warp counts
// its elements in a row of its own; peers holding the same digit add once (their leader).
template <typename K>
__device__ __forceinline__ void radix_hist(const K* keys, u64 n, int shift, u32* counts, u32 nb) {
  __shared__ u32 h[RWARPS][256];
  u32* hf = &h[0][0];
  for (int i = threadIdx.x; i < RWARPS * 256; i += RT) hf[i] = 0;
  __syncthreads();
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const u64 base = (u64)blockIdx.x * RTILE + (u64)w * 32 * RIPT + lane;
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    const bool ok = i < n;
    const u32 d = ok ? digit_of(keys[i], shift) : 0xFFFFFFFFu;
    const u32 peers = __match_any_sync(0xFFFFFFFFu, d);
    if (ok && lane == __ffs(peers) - 1) h[w][d] += __popc(peers);
    __syncwarp();
  }
  __syncthreads();
  const int t = threadIdx.x;
  u32 s = 0;
#pragma unroll
  for (int k = 0; k < RWARPS; ++k) s += h[k][t];
  counts[(u64)t * nb + blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_hist32(const u32* keys, u64 n, int shift, u32* counts, u32 nb) {
  radix_hist<u32>(keys, n, shift, counts, nb);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_hist64(const u64* keys, u64 n, int shift, u32* counts, u32 nb) {
  radix_hist<u64>(keys, n, shift, counts, nb);
}

#define SCAN_T 1024
#define SCAN_I 8

// gpn_radix_scan: block d scans counts[d*nb .. d*nb+nb) exclusively in place (each tile's
// start among the elements of digit d) and writes the digit's total to totals[d].
extern "C" __global__ void __launch_bounds__(SCAN_T) gpn_radix_scan(u32* counts, u32 nb, u32* totals) {
  __shared__ u32 ws[SCAN_T / 32];
  __shared__ u32 carry;
  u32* c = counts + (u64)blockIdx.x * nb;
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  if (t == 0) carry = 0;
  __syncthreads();
  for (u64 b0 = 0; b0 < nb; b0 += SCAN_T * SCAN_I) {
    u32 v[SCAN_I];
    u32 sum = 0;
    const u64 i0 = b0 + (u64)t * SCAN_I;
#pragma unroll
    for (int k = 0; k < SCAN_I; ++k) {
      v[k] = i0 + k < nb ? c[i0 + k] : 0;
      sum += v[k];
    }
    u32 x = sum;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
      const u32 y = __shfl_up_sync(0xFFFFFFFFu, x, o);
      if (lane >= o) x += y;
    }
    if (lane == 31) ws[w] = x;
    __syncthreads();
    u32 before = carry;
    for (int k = 0; k < w; ++k) before += ws[k];
    u32 total = 0;
    if (t == SCAN_T - 1) {
      for (int k = 0; k < SCAN_T / 32; ++k) total += ws[k];
    }
    u32 run = before + x - sum;
#pragma unroll
    for (int k = 0; k < SCAN_I; ++k) {
      if (i0 + k < nb) c[i0 + k] = run;
      run += v[k];
    }
    __syncthreads();
    if (t == SCAN_T - 1) carry += total;
    __syncthreads();
  }
  if (t == 0) totals[blockIdx.x] = carry;
}

// block_excl_scan returns the exclusive prefix sum of v over the RT threads of the block (all
// of them call it), using ws (RWARPS words).
__device__ __forceinline__ u32 block_excl_scan(u32 v, u32* ws) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  u32 x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u32 y = __shfl_up_sync(0xFFFFFFFFu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) ws[w] = x;
  __syncthreads();
  u32 before = 0;
  for (int k = 0; k < w; ++k) before += ws[k];
  __syncthreads();
  return before + x - v;
}

// radix_scatter moves the tile of block b to its place for the digit at shift, stably: each
// element's rank among its tile's elements of the same digit comes from the warps' counts
// (earlier warps, then earlier rounds of its warp, then lower lanes); the tile is ordered by
// digit in shared memory first, so that the writes of a digit's run are contiguous.
template <typename K, bool PAIRS>
__device__ __forceinline__ void radix_scatter(const K* kin, const u32* vin, K* kout, u32* vout, u64 n, int shift, const u32* counts, const u32* totals, u32 nb) {
  __shared__ u32 wc[RWARPS][256];
  __shared__ u32 tstart[256];
  __shared__ long long gdelta[256];
  __shared__ u32 ws[RWARPS];
  __shared__ K sk[RTILE];
  __shared__ u32 sv[PAIRS ? RTILE : 1];
  u32* wcf = &wc[0][0];
  for (int i = threadIdx.x; i < RWARPS * 256; i += RT) wcf[i] = 0;
  __syncthreads();
  const int t = threadIdx.x, w = t >> 5, lane = t & 31;
  const u64 tile0 = (u64)blockIdx.x * RTILE;
  const u64 base = tile0 + (u64)w * 32 * RIPT + lane;
  const u32 lt = (1u << lane) - 1u;
  K key[RIPT];
  u32 val[RIPT];
  u32 rank[RIPT];
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    key[r] = i < n ? kin[i] : (K)0;
    if (PAIRS) val[r] = i < n ? vin[i] : 0u;
  }
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    const bool ok = i < n;
    const u32 d = ok ? digit_of(key[r], shift) : 0xFFFFFFFFu;
    const u32 peers = __match_any_sync(0xFFFFFFFFu, d);
    const u32 pre = ok ? wc[w][d] : 0u;
    __syncwarp();
    if (ok && lane == __ffs(peers) - 1) wc[w][d] = pre + __popc(peers);
    __syncwarp();
    rank[r] = pre + __popc(peers & lt);
  }
  __syncthreads();
  u32 s = 0;
#pragma unroll
  for (int k = 0; k < RWARPS; ++k) {
    const u32 c = wc[k][t];
    wc[k][t] = s;
    s += c;
  }
  const u32 start = block_excl_scan(s, ws);
  const u32 dbase = block_excl_scan(totals[t], ws);
  tstart[t] = start;
  gdelta[t] = (long long)dbase + (long long)counts[(u64)t * nb + blockIdx.x] - (long long)start;
  __syncthreads();
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    if (i < n) {
      const u32 d = digit_of(key[r], shift);
      const u32 pos = tstart[d] + wc[w][d] + rank[r];
      sk[pos] = key[r];
      if (PAIRS) sv[pos] = val[r];
    }
  }
  __syncthreads();
  const u32 tn = (u32)min((u64)RTILE, n - tile0);
  for (u32 i = t; i < tn; i += RT) {
    const K k = sk[i];
    const u64 dst = (u64)(gdelta[digit_of(k, shift)] + (long long)i);
    kout[dst] = k;
    if (PAIRS) vout[dst] = sv[i];
  }
}

// One kernel per key width and payload: each instance's shared arrays are its own (two in
// one kernel would add up past the static limit of 48 KiB).
extern "C" __global__ void __launch_bounds__(RT) gpn_radix_scatter32(const u32* kin, const u32* vin, u32* kout, u32* vout, u64 n, int shift, const u32* counts, const u32* totals, u32 nb) {
  radix_scatter<u32, true>(kin, vin, kout, vout, n, shift, counts, totals, nb);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_scatter32k(const u32* kin, u32* kout, u64 n, int shift, const u32* counts, const u32* totals, u32 nb) {
  radix_scatter<u32, false>(kin, 0, kout, 0, n, shift, counts, totals, nb);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_scatter64(const u64* kin, const u32* vin, u64* kout, u32* vout, u64 n, int shift, const u32* counts, const u32* totals, u32 nb) {
  radix_scatter<u64, true>(kin, vin, kout, vout, n, shift, counts, totals, nb);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_scatter64k(const u64* kin, u64* kout, u64 n, int shift, const u32* counts, const u32* totals, u32 nb) {
  radix_scatter<u64, false>(kin, 0, kout, 0, n, shift, counts, totals, nb);
}

// ---- short lines: one block sorts a line in shared memory ----

// line_sort sorts line blockIdx.x (at most RTILE values, strided by inner) with the same stable
// 8-bit passes as the global sort, ranks and moves done in shared memory, then writes the line
// (or the positions keep[0..klen) of it) as gpn_sort_out does. Past the line's end the tile is
// padded with the largest key, which sorts after every value (equal keys keep index order).
template <typename K>
__device__ __forceinline__ void line_sort(void* out, const void* x, u64 len, u64 inner, int type, int desc, u64 mask, int keyBits, const u32* keep, u64 klen, int esize, int arg) {
  __shared__ u32 wc[RWARPS][256];
  __shared__ u32 tstart[256];
  __shared__ u32 ws[RWARPS];
  __shared__ K sk[RTILE];
  __shared__ u32 sv[RTILE];
  u32* wcf = &wc[0][0];
  const u64 s = blockIdx.x;
  const u64 o = s / inner, in = s - o * inner;
  const u64 base = o * len * inner + in;
  const int t = threadIdx.x, w = t >> 5, lane = t & 31;
  const u32 lt = (1u << lane) - 1u;
  u32 special = 0;
  K key[RIPT];
  u32 val[RIPT];
  u32 rank[RIPT];
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u32 j = (u32)(w * 32 * RIPT + r * 32 + lane);
    K k = ~(K)0;
    if (j < len) {
      k = (K)load_key(x, base + (u64)j * inner, type, &special);
      if (desc) k ^= (K)mask;
    }
    key[r] = k;
    val[r] = j;
  }
  for (int shift = 0; shift < keyBits; shift += 8) {
    for (int i = t; i < RWARPS * 256; i += RT) wcf[i] = 0;
    __syncthreads();
#pragma unroll
    for (int r = 0; r < RIPT; ++r) {
      const u32 d = digit_of(key[r], shift);
      const u32 peers = __match_any_sync(0xFFFFFFFFu, d);
      const u32 pre = wc[w][d];
      __syncwarp();
      if (lane == __ffs(peers) - 1) wc[w][d] = pre + __popc(peers);
      __syncwarp();
      rank[r] = pre + __popc(peers & lt);
    }
    __syncthreads();
    u32 c = 0;
#pragma unroll
    for (int k = 0; k < RWARPS; ++k) {
      const u32 v = wc[k][t];
      wc[k][t] = c;
      c += v;
    }
    tstart[t] = block_excl_scan(c, ws);
    __syncthreads();
#pragma unroll
    for (int r = 0; r < RIPT; ++r) {
      const u32 d = digit_of(key[r], shift);
      const u32 pos = tstart[d] + wc[w][d] + rank[r];
      sk[pos] = key[r];
      sv[pos] = val[r];
    }
    __syncthreads();
#pragma unroll
    for (int r = 0; r < RIPT; ++r) {
      const int j = w * 32 * RIPT + r * 32 + lane;
      key[r] = sk[j];
      val[r] = sv[j];
    }
    __syncthreads();
  }
  const u64 m = keep ? klen : len;
  for (u64 q = t; q < m; q += RT) {
    const u32 p = sv[keep ? keep[q] : q];
    const u64 dst = (o * m + q) * inner + in;
    if (arg) {
      ((long long*)out)[dst] = (long long)p;
      continue;
    }
    const u64 src = base + (u64)p * inner;
    switch (esize) {
      case 8: ((u64*)out)[dst] = ((const u64*)x)[src]; break;
      case 4: ((u32*)out)[dst] = ((const u32*)x)[src]; break;
      case 2: ((u16*)out)[dst] = ((const u16*)x)[src]; break;
      default: ((u8*)out)[dst] = ((const u8*)x)[src]; break;
    }
  }
}

// gpn_sort_lines32 and gpn_sort_lines64 sort lines of at most RTILE values, one block each
// (keys of 32 or 64 bits, keyBits of them significant): no global passes, no scratch arrays.
extern "C" __global__ void __launch_bounds__(RT) gpn_sort_lines32(void* out, const void* x, u64 len, u64 inner, int type, int desc, u64 mask, int keyBits, const u32* keep, u64 klen, int esize, int arg) {
  line_sort<u32>(out, x, len, inner, type, desc, mask, keyBits, keep, klen, esize, arg);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_sort_lines64(void* out, const void* x, u64 len, u64 inner, int type, int desc, u64 mask, int keyBits, const u32* keep, u64 klen, int esize, int arg) {
  line_sort<u64>(out, x, len, inner, type, desc, mask, keyBits, keep, klen, esize, arg);
}

// ---- one read per pass: counts of every pass up front, tile offsets by decoupled look-back ----

// gpn_radix_counts adds the digit counts of every pass (passes of 8 bits from bit 0) of the n
// keys into counts[pass*256 + digit], zeroed by the caller.
template <typename K>
__device__ __forceinline__ void radix_counts(const K* keys, u64 n, int passes, u32* counts) {
  __shared__ u32 h[8][256];
  u32* hf = &h[0][0];
  for (int i = threadIdx.x; i < 8 * 256; i += RT) hf[i] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  for (u64 i0 = (u64)blockIdx.x * RTILE; i0 < n; i0 += (u64)gridDim.x * RTILE) {
#pragma unroll
    for (int r = 0; r < RIPT; ++r) {
      const u64 i = i0 + (u64)r * RT + threadIdx.x;
      const bool ok = i < n;
      const K k = ok ? keys[i] : (K)0;
      for (int p = 0; p < passes; ++p) {
        const u32 d = ok ? digit_of(k, 8 * p) : 0xFFFFFFFFu;
        const u32 peers = __match_any_sync(0xFFFFFFFFu, d);
        if (ok && lane == __ffs(peers) - 1) atomicAdd(&h[p][d], (u32)__popc(peers));
      }
    }
  }
  __syncthreads();
  for (int i = threadIdx.x; i < passes * 256; i += RT) {
    if (hf[i]) atomicAdd(&counts[i], hf[i]);
  }
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_counts32(const u32* keys, u64 n, int passes, u32* counts) {
  radix_counts<u32>(keys, n, passes, counts);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_counts64(const u64* keys, u64 n, int passes, u32* counts) {
  radix_counts<u64>(keys, n, passes, counts);
}

#define LB_AGG 0x4000000000000000ull    // status: the tile's own count of the digit is there
#define LB_PREFIX 0x8000000000000000ull // status: the count of the digit up to the tile's end
#define LB_VALUE 0x3FFFFFFFFFFFFFFFull

// radix_onesweep is radix_scatter without a histogram pass: each tile takes the next number
// (tiles start in that order, so the tiles before it are running or done), publishes its
// digit counts in status, and sums its predecessors' backwards until one that published its
// inclusive prefix (decoupled look-back); the digit bases come from the up-front counts.
template <typename K, bool PAIRS>
__device__ __forceinline__ void radix_onesweep(const K* kin, const u32* vin, K* kout, u32* vout, u64 n, int shift, const u32* counts, u64* status, u32* next) {
  __shared__ u32 wc[RWARPS][256];
  __shared__ u32 tstart[256];
  __shared__ long long gdelta[256];
  __shared__ u32 ws[RWARPS];
  __shared__ u32 tile_s;
  __shared__ K sk[RTILE];
  __shared__ u32 sv[PAIRS ? RTILE : 1];
  u32* wcf = &wc[0][0];
  for (int i = threadIdx.x; i < RWARPS * 256; i += RT) wcf[i] = 0;
  if (threadIdx.x == 0) tile_s = atomicAdd(next, 1u);
  __syncthreads();
  const u32 tile = tile_s;
  const int t = threadIdx.x, w = t >> 5, lane = t & 31;
  const u64 tile0 = (u64)tile * RTILE;
  const u64 base = tile0 + (u64)w * 32 * RIPT + lane;
  const u32 lt = (1u << lane) - 1u;
  K key[RIPT];
  u32 val[RIPT];
  u32 rank[RIPT];
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    key[r] = i < n ? kin[i] : (K)0;
    if (PAIRS) val[r] = i < n ? vin[i] : 0u;
  }
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    const bool ok = i < n;
    const u32 d = ok ? digit_of(key[r], shift) : 0xFFFFFFFFu;
    const u32 peers = __match_any_sync(0xFFFFFFFFu, d);
    const u32 pre = ok ? wc[w][d] : 0u;
    __syncwarp();
    if (ok && lane == __ffs(peers) - 1) wc[w][d] = pre + __popc(peers);
    __syncwarp();
    rank[r] = pre + __popc(peers & lt);
  }
  __syncthreads();
  u32 s = 0;
#pragma unroll
  for (int k = 0; k < RWARPS; ++k) {
    const u32 c = wc[k][t];
    wc[k][t] = s;
    s += c;
  }
  // Publish this tile's count of digit t, then look back for the count before it.
  volatile u64* st = (volatile u64*)status;
  st[(u64)tile * 256 + t] = (tile == 0 ? LB_PREFIX : LB_AGG) | (u64)s;
  u64 before = 0;
  for (long long j = (long long)tile - 1; j >= 0; --j) {
    u64 v;
    do {
      v = st[(u64)j * 256 + t];
    } while ((v & (LB_AGG | LB_PREFIX)) == 0);
    before += v & LB_VALUE;
    if (v & LB_PREFIX) break;
  }
  if (tile > 0) st[(u64)tile * 256 + t] = LB_PREFIX | (before + s);
  const u32 start = block_excl_scan(s, ws);
  const u32 dbase = block_excl_scan(counts[t], ws);
  tstart[t] = start;
  gdelta[t] = (long long)dbase + (long long)before - (long long)start;
  __syncthreads();
#pragma unroll
  for (int r = 0; r < RIPT; ++r) {
    const u64 i = base + r * 32;
    if (i < n) {
      const u32 d = digit_of(key[r], shift);
      const u32 pos = tstart[d] + wc[w][d] + rank[r];
      sk[pos] = key[r];
      if (PAIRS) sv[pos] = val[r];
    }
  }
  __syncthreads();
  const u32 tn = (u32)min((u64)RTILE, n - tile0);
  for (u32 i = t; i < tn; i += RT) {
    const K k = sk[i];
    const u64 dst = (u64)(gdelta[digit_of(k, shift)] + (long long)i);
    kout[dst] = k;
    if (PAIRS) vout[dst] = sv[i];
  }
}

// counts: this pass's 256 up-front counts; status: nb*256 words, zeroed; next: zeroed.
extern "C" __global__ void __launch_bounds__(RT) gpn_radix_onesweep32(const u32* kin, const u32* vin, u32* kout, u32* vout, u64 n, int shift, const u32* counts, u64* status, u32* next) {
  radix_onesweep<u32, true>(kin, vin, kout, vout, n, shift, counts, status, next);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_onesweep32k(const u32* kin, u32* kout, u64 n, int shift, const u32* counts, u64* status, u32* next) {
  radix_onesweep<u32, false>(kin, 0, kout, 0, n, shift, counts, status, next);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_onesweep64(const u64* kin, const u32* vin, u64* kout, u32* vout, u64 n, int shift, const u32* counts, u64* status, u32* next) {
  radix_onesweep<u64, true>(kin, vin, kout, vout, n, shift, counts, status, next);
}

extern "C" __global__ void __launch_bounds__(RT) gpn_radix_onesweep64k(const u64* kin, u64* kout, u64 n, int shift, const u32* counts, u64* status, u32* next) {
  radix_onesweep<u64, false>(kin, 0, kout, 0, n, shift, counts, status, next);
}
