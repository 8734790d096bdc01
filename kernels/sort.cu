// gpunotes device sort: a stable LSD radix sort of the lines of a row-major block along one
// axis, as package gpuarray/cpu sorts them (NumPy's stable sort: NaN last ascending, first
// descending, equal values, -0 and +0 included, in their original order).
//
// A module of its own (gen.sh compiles it to ptx/sort_*.ptx without -rdc): the fused kernels
// never call into it, so it need not be linked with them, and lib.cu stays untouched.
//
// The host (package gpuarray/cuda/devsort) drives it:
//  1. gpn_radix_upfront reads the values once: it counts the digits of every 8-bit pass of
//     their keys (an unsigned key whose order is the sort's: floats' sign-flipped bits, -0 as
//     +0, every NaN as the largest key; descending: the key's complement) and flags a NaN or
//     -0; passes whose digit is the same for every key are left out;
//  2. one kernel a pass, least significant digit first (gpn_radix_tile*: decoupled look-back,
//     see "large tiles" below): the first reads the values and makes their keys (and numbers
//     them: the payloads, their row-major positions), the others move keys (and payloads)
//     stably; with keys alone (one line, values wanted, no NaN or -0, whose keys are shared
//     with other bit patterns) the last writes the values themselves;
//  3. with several lines, more passes over the line number of each payload (gpn_sort_segkeys),
//     so that the lines come out one after another, each still in key order;
//  4. gpn_sort_out writes each line's values (read back at their original position, so the
//     bits of NaNs and zeros are kept) or their indices along the axis, all of them or the
//     positions a quantile keeps (gpn_sort_unkeys, from the keys alone).
// Lines of 64 to 2048 values are sorted one block each in shared memory (gpn_sort_lines*).

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

// esize_of returns the bytes of a value of type.
__device__ __forceinline__ int esize_of(int type) {
  switch (type) {
    case T_F64: case T_I64: case T_U64: return 8;
    case T_F32: case T_I32: case T_U32: return 4;
    case T_I16: case T_U16: return 2;
  }
  return 1;
}

// key_of returns the key of the value of type whose bits (zero-extended) are raw, as load_key.
__device__ __forceinline__ u64 key_of(u64 raw, int type, u32* special) {
  switch (type) {
    case T_F64: return key_f64(__longlong_as_double((long long)raw), special);
    case T_F32: return key_f32(__int_as_float((int)(u32)raw), special);
    case T_I64: return raw ^ 0x8000000000000000ull;
    case T_I32: return (u32)raw ^ 0x80000000u;
    case T_I16: return (u32)(u16)raw ^ 0x8000u;
    case T_I8: return (u32)(u8)raw ^ 0x80u;
  }
  return raw;
}

// store_value writes the value whose key (already uncomplemented) is k to out[i], as type.
__device__ __forceinline__ void store_value(void* out, u64 i, u64 k, int type) {
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

// gpn_sort_unkeys writes the values whose keys are given (no NaN and no -0 among them): the
// m values at positions keep[0..m) of the sorted keys, or all of them (keep null, m = n).
extern "C" __global__ void gpn_sort_unkeys(void* out, const u32* keys32, const u64* keys64, const u32* keep, u64 m, int type, int desc, u64 mask) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += (u64)gridDim.x * blockDim.x) {
    const u64 at = keep ? (u64)keep[i] : i;
    u64 k = keys64 ? keys64[at] : (u64)keys32[at];
    if (desc) k ^= mask;
    store_value(out, i, k, type);
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

// Look-back status words of the passes (a tile and a digit each).
#define LB_AGG 0x4000000000000000ull    // status: the tile's own count of the digit is there
#define LB_PREFIX 0x8000000000000000ull // status: the count of the digit up to the tile's end
#define LB_VALUE 0x3FFFFFFFFFFFFFFFull

// ---- large tiles: fused key transform, early counts, ranking by warp-private counters ----
//
// The passes of the global sort. gpn_radix_upfront counts the digits of every pass in one read
// of the values (the key transform done on the fly; the NaN/-0 flag set), and each pass is one
// kernel, radix_tile: a block takes the next tile of T*I keys (warp-striped: warp w holds
// T*I/W consecutive keys, item r of lane l is the warp's key 32r+l), finds the lanes of its
// warp that share each key's digit (8 ballots per key, all independent), counts the tile's
// digits in per-warp counters and publishes them at once (early counts: a later tile's
// look-back finds them without waiting for this tile's ranking), then ranks each key by an
// atomic add on its warp's counter (the adds of a warp's items are issued back to back, so
// their latencies overlap instead of chaining), looks back for the keys of its digit in earlier
// tiles, orders the tile by digit in shared memory and writes each digit's run contiguously.
// The first pass reads the values (and numbers them) instead of keys; with keys alone, the last
// writes the values instead of keys: no separate key and value kernels, two reads and two
// writes of the block fewer.

// peers_of returns the lanes of the warp whose d equals this lane's (d < 256): by match.any
// (MATCH 0) or by a ballot of each of the 8 bits (MATCH 1). The ballots are faster on an H100:
// 7.7 against 9.7 ms for the passes and counts of 1e8 float64, since match.any takes longer
// the more distinct digits the lanes hold.
template <int MATCH>
__device__ __forceinline__ u32 peers_of(u32 d) {
  if (MATCH == 0) return __match_any_sync(0xFFFFFFFFu, d);
  u32 m = 0xFFFFFFFFu;
#pragma unroll
  for (int b = 0; b < 8; ++b) {
    const u32 bit = (d >> b) & 1u;
    const u32 v = __ballot_sync(0xFFFFFFFFu, bit);
    m &= bit ? v : ~v;
  }
  return m;
}

// block_excl_scan64 returns the exclusive prefix sum of v over the T threads of the block (all
// of them call it), using ws (T/32 words).
template <int T>
__device__ __forceinline__ u64 block_excl_scan64(u64 v, u64* ws) {
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  u64 x = v;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const u64 y = __shfl_up_sync(0xFFFFFFFFu, x, o);
    if (lane >= o) x += y;
  }
  if (lane == 31) ws[w] = x;
  __syncthreads();
  u64 before = 0;
  for (int k = 0; k < w; ++k) before += ws[k];
  __syncthreads();
  return before + x - v;
}

// radix_upfront adds the digit counts of every pass (8 bits each from bit 0) of the n keys into
// counts[pass*256 + digit] (zeroed by the caller): keys from x (element type, complemented
// within mask when desc; *special set on a NaN or -0) or, x null, from keys. MODE 0 adds once
// per group of lanes sharing a digit (a match each), MODE 1 adds one per key: 10x faster on
// an H100 (0.55 against 5.6 ms for 1e8 float64), match.any costing about one step per
// distinct value among the lanes.
template <typename K, int MODE>
__device__ __forceinline__ void radix_upfront(const void* x, const K* keys, u64 n, int type, int desc, u64 mask, int passes, u32* counts, u32* special) {
  __shared__ u32 h[8][256];
  u32* hf = &h[0][0];
  for (int i = threadIdx.x; i < 8 * 256; i += blockDim.x) hf[i] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  u32 sp = 0;
  const u64 stride = (u64)gridDim.x * blockDim.x * 4;
  for (u64 b = (u64)blockIdx.x * blockDim.x * 4; b < n; b += stride) {
    K k[4];
    bool ok[4];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const u64 i = b + (u64)r * blockDim.x + threadIdx.x;
      ok[r] = i < n;
      K v = 0;
      if (ok[r]) {
        if (x) {
          v = (K)load_key(x, i, type, &sp);
          if (desc) v ^= (K)mask;
        } else {
          v = keys[i];
        }
      }
      k[r] = v;
    }
#pragma unroll
    for (int r = 0; r < 4; ++r) {
#pragma unroll
      for (int p = 0; p < 8; ++p) {
        if (p < passes) {
          if (MODE == 0) {
            const u32 d = ok[r] ? digit_of(k[r], 8 * p) : 0xFFFFFFFFu;
            const u32 peers = __match_any_sync(0xFFFFFFFFu, d);
            if (ok[r] && lane == __ffs(peers) - 1) atomicAdd(&h[p][d], (u32)__popc(peers));
          } else if (ok[r]) {
            atomicAdd(&h[p][digit_of(k[r], 8 * p)], 1u);
          }
        }
      }
    }
  }
  if (__any_sync(0xFFFFFFFFu, sp) && lane == 0) atomicOr(special, 1u);
  __syncthreads();
  for (int i = threadIdx.x; i < passes * 256; i += blockDim.x) {
    if (hf[i]) atomicAdd(&counts[i], hf[i]);
  }
}

// radix_tile is one pass over a tile (see above). kin or, first pass, x (type, desc, mask):
// the keys; vin or, first pass, the positions: the payloads (PAIRS); kout or, with keys alone in
// the last pass, xout (type): where they go; counts: the pass's 256 digit totals of all tiles;
// status: nb*256 words, zeroed; next: zeroed.
template <typename K, bool PAIRS, bool FROMX, int T, int I, int MATCH>
__device__ __forceinline__ void radix_tile(const K* kin, const void* x, const u32* vin, K* kout, void* xout, u32* vout, u64 n, int shift, int type, int desc, u64 mask, const u32* counts, u64* status, u32* next) {
  constexpr int W = T / 32;
  constexpr int TILE = T * I;
  constexpr int KB = TILE * (int)sizeof(K);
  constexpr int CB = W * 256 * 4;
  constexpr int XB = KB > CB ? KB : CB;
  // The warps' digit counters while ranking, then the tile ordered by digit.
  __shared__ __align__(16) unsigned char xbuf[XB];
  __shared__ long long gdelta[256];
  __shared__ u64 ws[W];
  __shared__ u32 tile_s;
  u32* wc = reinterpret_cast<u32*>(xbuf); // wc[w*256 + d]
  K* sk = reinterpret_cast<K*>(xbuf);
  u32* sv = reinterpret_cast<u32*>(xbuf);
  const int t = threadIdx.x, w = t >> 5, lane = t & 31;
  for (int i = t; i < W * 256; i += T) wc[i] = 0;
  if (t == 0) tile_s = atomicAdd(next, 1u);
  __syncthreads();
  const u32 tile = tile_s;
  const u64 tile0 = (u64)tile * TILE;
  const u64 base = tile0 + (u64)w * 32 * I + lane;
  const K pad = ~(K)0; // past the end: the largest key, ranked after every real one
  K key[I];
  u32 val[I];
  u32 pe[I];
  u32 rank[I];
  if (FROMX) {
    // The values' bits first, every load in flight at once (one switch, outside the loops),
    // then their keys.
    switch (esize_of(type)) {
      case 8:
#pragma unroll
        for (int r = 0; r < I; ++r) {
          const u64 i = base + (u64)r * 32;
          key[r] = i < n ? (K)((const u64*)x)[i] : (K)0;
        }
        break;
      case 4:
#pragma unroll
        for (int r = 0; r < I; ++r) {
          const u64 i = base + (u64)r * 32;
          key[r] = i < n ? (K)((const u32*)x)[i] : (K)0;
        }
        break;
      case 2:
#pragma unroll
        for (int r = 0; r < I; ++r) {
          const u64 i = base + (u64)r * 32;
          key[r] = i < n ? (K)((const u16*)x)[i] : (K)0;
        }
        break;
      default:
#pragma unroll
        for (int r = 0; r < I; ++r) {
          const u64 i = base + (u64)r * 32;
          key[r] = i < n ? (K)((const u8*)x)[i] : (K)0;
        }
    }
    const K dm = desc ? (K)mask : (K)0;
#pragma unroll
    for (int r = 0; r < I; ++r) {
      u32 sp;
      key[r] = base + (u64)r * 32 < n ? (K)key_of((u64)key[r], type, &sp) ^ dm : pad;
    }
  } else {
#pragma unroll
    for (int r = 0; r < I; ++r) {
      const u64 i = base + (u64)r * 32;
      key[r] = i < n ? kin[i] : pad;
    }
  }
  if (PAIRS) {
#pragma unroll
    for (int r = 0; r < I; ++r) {
      const u64 i = base + (u64)r * 32;
      val[r] = (FROMX || !vin) ? (u32)i : (i < n ? vin[i] : 0u);
    }
  }
#pragma unroll
  for (int r = 0; r < I; ++r) pe[r] = peers_of<MATCH>(digit_of(key[r], shift));
  // Early counts: each group of peers adds its size once.
#pragma unroll
  for (int r = 0; r < I; ++r) {
    if (lane == 31 - __clz(pe[r])) atomicAdd(&wc[w * 256 + digit_of(key[r], shift)], (u32)__popc(pe[r]));
  }
  __syncthreads();
  // Digit t: the tile's count s, each warp's start among them, published for later tiles.
  u32 s = 0;
  volatile u64* st = (volatile u64*)status;
  if (t < 256) {
#pragma unroll
    for (int k = 0; k < W; ++k) {
      const u32 c = wc[k * 256 + t];
      wc[k * 256 + t] = s;
      s += c;
    }
    st[(u64)tile * 256 + t] = (tile == 0 ? LB_PREFIX : LB_AGG) | (u64)s;
  }
  // Both scans at once: the tile's start of digit t (low word), all tiles' (high word).
  const u64 both = block_excl_scan64<T>(t < 256 ? ((u64)counts[t] << 32 | s) : 0ull, ws);
  const u32 start = (u32)both, dbase = (u32)(both >> 32);
  if (t < 256) {
#pragma unroll
    for (int k = 0; k < W; ++k) wc[k * 256 + t] += start;
  }
  __syncthreads();
  // Ranks: the adds of the warp's items go out back to back; then each group's base is read
  // from its leader.
  const u32 lt = (1u << lane) - 1u;
#pragma unroll
  for (int r = 0; r < I; ++r) {
    u32 o = 0;
    if (lane == 31 - __clz(pe[r])) o = atomicAdd(&wc[w * 256 + digit_of(key[r], shift)], (u32)__popc(pe[r]));
    rank[r] = o;
  }
#pragma unroll
  for (int r = 0; r < I; ++r) rank[r] = __shfl_sync(0xFFFFFFFFu, rank[r], 31 - __clz(pe[r])) + __popc(pe[r] & lt);
  // Look back for digit t's count in the tiles before this one.
  if (t < 256) {
    u64 before = 0;
    if (tile > 0) {
      for (long long j = (long long)tile - 1; j >= 0; --j) {
        u64 v;
        do {
          v = st[(u64)j * 256 + t];
        } while ((v & (LB_AGG | LB_PREFIX)) == 0);
        before += v & LB_VALUE;
        if (v & LB_PREFIX) break;
      }
      st[(u64)tile * 256 + t] = LB_PREFIX | (before + s);
    }
    gdelta[t] = (long long)dbase + (long long)before - (long long)start;
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < I; ++r) sk[rank[r]] = key[r];
  __syncthreads();
  const u32 tn = (u32)min((u64)TILE, n - tile0);
  u32 dg[PAIRS ? I : 1];
#pragma unroll
  for (int j = 0; j < I; ++j) {
    const u32 i = (u32)(j * T + t);
    if (i < tn) {
      const K k = sk[i];
      const u32 d = digit_of(k, shift);
      const u64 dst = (u64)(gdelta[d] + (long long)i);
      if (xout) store_value(xout, dst, desc ? (u64)(k ^ (K)mask) : (u64)k, type);
      else kout[dst] = k;
      if (PAIRS) dg[j] = d;
    }
  }
  if (PAIRS) {
    __syncthreads();
#pragma unroll
    for (int r = 0; r < I; ++r) sv[rank[r]] = val[r];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < I; ++j) {
      const u32 i = (u32)(j * T + t);
      if (i < tn) vout[(u64)(gdelta[dg[j]] + (long long)i)] = sv[i];
    }
  }
}

// Tile shapes of the passes (threads, keys per thread), by key width and payload; package
// devsort's tile constants mirror them. The fastest of those measured on an H100 (1e8 keys,
// bench/devsort_bench.cu): 384 x 12 for 64-bit keys alone (7.7 ms against 8.0-9.2 for 256 x 8,
// 256 x 12, 256 x 16, 512 x 8, 320 x 14, 448 x 10), 384 x 10 with payloads (9.1 against 9.7-12.0),
// 384 x 12 for 32-bit keys with payloads (2.45 ms for 2 passes against 2.6-3.0).
#define TT 384
#define TI64K 12
#define TI64P 10
#define TI32K 12
#define TI32P 12

extern "C" __global__ void __launch_bounds__(256) gpn_radix_upfront32(const void* x, const u32* keys, u64 n, int type, int desc, u64 mask, int passes, u32* counts, u32* special) {
  radix_upfront<u32, 1>(x, keys, n, type, desc, mask, passes, counts, special);
}

extern "C" __global__ void __launch_bounds__(256) gpn_radix_upfront64(const void* x, const u64* keys, u64 n, int type, int desc, u64 mask, int passes, u32* counts, u32* special) {
  radix_upfront<u64, 1>(x, keys, n, type, desc, mask, passes, counts, special);
}

// gpn_radix_tile<bits>[k][x]: keys of 32 or 64 bits, k without payloads, x for the first pass
// (from the values).
#define TILE_KERNEL(name, K, PAIRS, FROMX, I)                                                                                                     \
  extern "C" __global__ void __launch_bounds__(TT) name(const K* kin, const void* x, const u32* vin, K* kout, void* xout, u32* vout, u64 n, int shift, \
                                                        int type, int desc, u64 mask, const u32* counts, u64* status, u32* next) {               \
    radix_tile<K, PAIRS, FROMX, TT, I, 1>(kin, x, vin, kout, xout, vout, n, shift, type, desc, mask, counts, status, next);                      \
  }
TILE_KERNEL(gpn_radix_tile32, u32, true, false, TI32P)
TILE_KERNEL(gpn_radix_tile32x, u32, true, true, TI32P)
TILE_KERNEL(gpn_radix_tile32k, u32, false, false, TI32K)
TILE_KERNEL(gpn_radix_tile32kx, u32, false, true, TI32K)
TILE_KERNEL(gpn_radix_tile64, u64, true, false, TI64P)
TILE_KERNEL(gpn_radix_tile64x, u64, true, true, TI64P)
TILE_KERNEL(gpn_radix_tile64k, u64, false, false, TI64K)
TILE_KERNEL(gpn_radix_tile64kx, u64, false, true, TI64K)
