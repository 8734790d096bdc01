// devsort_bench times the passes of kernels/sort.cu on one GPU, in several tile shapes, and
// checks each result: the device sort of package devsort without Go, to choose its shapes.
// Build and run on the GPU machine (nvcc), from the repository root:
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels -o devsort_bench bench/devsort_bench.cu
//   ./devsort_bench [n]
// What it measured chose the shapes and the ranking of sort.cu's kernels (bench/RESULTS.md,
// "Device sort: large tiles"). Rows: keys alone (a sort of n float64 normals, the first pass
// reading the values and the last writing them), pairs (an argsort's keys and positions, rounded normals with many ties), and
// 32-bit pairs (the line-number passes of a sort of many lines). Each: the median and the best of
// 7 runs after a warm-up, device events around the whole sort (the host's read of the NaN flag
// included), and the checks: ordered, stable, a permutation of the input.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#ifndef LAUNCH
#include <cuda_runtime.h>
#define LAUNCH(k, g, b, ...) k<<<(g), (b)>>>(__VA_ARGS__)
#endif
#include "sort.cu"

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));       \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

template <typename K, bool PAIRS, bool FROMX, int T, int I, int MATCH>
__global__ void __launch_bounds__(T) tile_kernel(const K* kin, const void* x, const u32* vin, K* kout, void* xout, u32* vout, u64 n, int shift, int type, int desc, u64 mask, const u32* counts, u64* status, u32* next) {
  radix_tile<K, PAIRS, FROMX, T, I, MATCH>(kin, x, vin, kout, xout, vout, n, shift, type, desc, mask, counts, status, next);
}

template <typename K, int MODE>
__global__ void __launch_bounds__(256) upfront_kernel(const void* x, const K* keys, u64 n, int type, int desc, u64 mask, int passes, u32* counts, u32* special) {
  radix_upfront<K, MODE>(x, keys, n, type, desc, mask, passes, counts, special);
}

__device__ u64 mix64(u64 z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// gen_normal writes n standard normals (ties: rounded after scaling by 3) from seed.
__global__ void gen_normal(double* x, u64 n, u64 seed, int ties) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const double u1 = ((double)(mix64(seed * 0x100000000ull + 2 * i) >> 11) + 1.0) * 0x1p-53;
    const double u2 = (double)(mix64(seed * 0x100000000ull + 2 * i + 1) >> 11) * 0x1p-53;
    double v = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    if (ties) v = rint(v * 3.0);
    x[i] = v;
  }
}

__global__ void gen_small(u32* k, u64 n, u64 seed, u32 m) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) k[i] = (u32)(mix64(seed * 0x100000000ull + i) % m);
}

// hash_sum adds mix64 of each word (or of each index, a null) into *acc: equal sums of the
// input and the output say (all but certainly) that one is a permutation of the other.
__global__ void hash_sum(const u64* a, const u32* b, u64 n, unsigned long long* acc) {
  u64 s = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) s += mix64(a ? a[i] : b ? (u64)b[i] : i);
  atomicAdd(acc, (unsigned long long)s);
}

// check_f64 counts the places where out is not in ascending order.
__global__ void check_f64(const double* out, u64 n, unsigned long long* bad) {
  u64 c = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i + 1 < n; i += (u64)gridDim.x * blockDim.x) c += out[i] > out[i + 1];
  if (c) atomicAdd(bad, (unsigned long long)c);
}

// check_pairs counts the places where the sorted keys (64-bit keys of float64 x, or 32-bit keys
// k32 as given) are out of order, unstable, or not the key of their payload's value.
__global__ void check_pairs(const u64* k64, const u32* k32, const u32* v, const double* x, const u32* korig, u64 n, unsigned long long* bad) {
  u64 c = 0;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const u64 k = k64 ? k64[i] : k32[i];
    u32 sp = 0;
    const u64 want = k64 ? key_f64(x[v[i]], &sp) : korig[v[i]];
    c += k != want;
    if (i + 1 < n) {
      const u64 k2 = k64 ? k64[i + 1] : k32[i + 1];
      c += k > k2 || (k == k2 && v[i] >= v[i + 1]);
    }
  }
  if (c) atomicAdd(bad, (unsigned long long)c);
}

static int nsm = 132;

struct Bufs {
  void *ka, *kb;
  u32 *va, *vb;
  u32* counts;
  u64* status;
  u32* next;
  u32* special;
  void* out;
};

static const char* shape_name(int T, int I, int M) {
  static char b[64];
  snprintf(b, sizeof b, "T%d I%d %s", T, I, M ? "ballot" : "match");
  return b;
}

// sort_run runs one whole sort (n keys, passes of 8 bits) of variant <K, PAIRS, T, I, MATCH>:
// from x (float64) or, x null, from the 32-bit keys at b.ka; keys alone write the values to
// b.out in the last pass. Returns the buffers holding the sorted keys and payloads.
template <typename K, bool PAIRS, int T, int I, int MATCH, int UMODE>
static void sort_run(const double* x, u64 n, int passes, Bufs& b, void** kres, u32** vres) {
  const u64 tile = (u64)T * I;
  const u64 nb = (n + tile - 1) / tile;
  CK(cudaMemsetAsync(b.counts, 0, 8 * 256 * 4));
  CK(cudaMemsetAsync(b.special, 0, 4));
  const int ublocks = (int)std::min<u64>((n + 1023) / 1024, (u64)nsm * 8);
  auto* up = upfront_kernel<K, UMODE>;
  LAUNCH(up, ublocks, 256, x, x ? (const K*)nullptr : (const K*)b.ka, n, x ? T_F64 : T_U32, 0, ~0ull, passes, b.counts, b.special);
  u32 sp = 0;
  CK(cudaMemcpy(&sp, b.special, 4, cudaMemcpyDeviceToHost));
  K* kin = x ? nullptr : (K*)b.ka;
  K* kout = (K*)(x ? b.ka : b.kb);
  u32* vin = nullptr;
  u32* vout = b.va;
  for (int p = 0; p < passes; ++p) {
    CK(cudaMemsetAsync(b.status, 0, nb * 256 * 8));
    CK(cudaMemsetAsync(b.next, 0, 4));
    const bool first = p == 0, last = p == passes - 1;
    void* xo = (!PAIRS && last && x) ? b.out : nullptr;
    auto* tk = (first && x) ? tile_kernel<K, PAIRS, true, T, I, MATCH> : tile_kernel<K, PAIRS, false, T, I, MATCH>;
    LAUNCH(tk, (int)nb, T, first ? kin : (const K*)kin, first ? (const void*)x : nullptr, first ? nullptr : vin, kout, xo, vout, n, 8 * p, x ? T_F64 : T_U32, 0,
           ~0ull, b.counts + 256 * p, b.status, b.next);
    CK(cudaGetLastError());
    K* nk = kin == nullptr ? (K*)b.kb : kin;
    kin = kout;
    kout = nk;
    if (PAIRS) {
      u32* nv = vin == nullptr ? b.vb : vin;
      vin = vout;
      vout = nv;
    }
  }
  *kres = kin;
  *vres = vin;
}

static unsigned long long* dacc;

static unsigned long long dev_hash(const u64* a, const u32* v, u64 n) {
  unsigned long long h = 0;
  CK(cudaMemset(dacc, 0, 8));
  LAUNCH(hash_sum, 1024, 256, a, v, n, dacc);
  CK(cudaMemcpy(&h, dacc, 8, cudaMemcpyDeviceToHost));
  return h;
}

static unsigned long long dev_bad() {
  unsigned long long h = 0;
  CK(cudaMemcpy(&h, dacc, 8, cudaMemcpyDeviceToHost));
  return h;
}

struct Row {
  std::string what;
  float med, best;
  unsigned long long bad;
  int regs, occ;
};
static std::vector<Row> rows;

template <typename F>
static void occupancy(F f, int T, int* regs, int* occ) {
  cudaFuncAttributes a;
  CK(cudaFuncGetAttributes(&a, f));
  *regs = a.numRegs;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(occ, f, T, 0));
}

template <typename F>
static void timed(const char* what, F run, float* med, float* best) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  run();
  CK(cudaDeviceSynchronize());
  std::vector<float> ms;
  for (int i = 0; i < 7; ++i) {
    CK(cudaEventRecord(e0));
    run();
    CK(cudaEventRecord(e1));
    CK(cudaEventSynchronize(e1));
    float m = 0;
    CK(cudaEventElapsedTime(&m, e0, e1));
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  *med = ms[ms.size() / 2];
  *best = ms[0];
  (void)what;
}

// keys_variant: the float64 sort with keys alone; checks the values written.
template <int T, int I, int MATCH, int UMODE>
static void keys_variant(const double* x, u64 n, Bufs& b, unsigned long long hin) {
  void* kr;
  u32* vr;
  float med, best;
  CK(cudaMemset(b.out, 0xFF, n * 8)); // poison: NaNs everywhere
  timed("keys", [&] { sort_run<u64, false, T, I, MATCH, UMODE>(x, n, 8, b, &kr, &vr); }, &med, &best);
  CK(cudaMemset(dacc, 0, 8));
  LAUNCH(check_f64, 1024, 256, (const double*)b.out, n, dacc);
  unsigned long long bad = dev_bad();
  if (dev_hash((const u64*)b.out, nullptr, n) != hin) bad += 1000000000ull;
  int regs, occ;
  occupancy(tile_kernel<u64, false, false, T, I, MATCH>, T, &regs, &occ);
  char w[128];
  snprintf(w, sizeof w, "f64 keys %s upfront%d", shape_name(T, I, MATCH), UMODE);
  rows.push_back({w, med, best, bad, regs, occ});
  printf("%-40s median %.3f ms best %.3f ms bad %llu regs %d blocks/SM %d\n", w, med, best, bad, regs, occ);
  fflush(stdout);
}

template <int T, int I, int MATCH>
static void pairs_variant(const double* x, u64 n, Bufs& b) {
  void* kr;
  u32* vr;
  float med, best;
  timed("pairs", [&] { sort_run<u64, true, T, I, MATCH, 1>(x, n, 8, b, &kr, &vr); }, &med, &best);
  CK(cudaMemset(dacc, 0, 8));
  LAUNCH(check_pairs, 1024, 256, (const u64*)kr, (const u32*)nullptr, vr, x, (const u32*)nullptr, n, dacc);
  unsigned long long bad = dev_bad();
  if (dev_hash(nullptr, vr, n) != dev_hash(nullptr, nullptr, n)) bad += 1000000000ull;
  int regs, occ;
  occupancy(tile_kernel<u64, true, false, T, I, MATCH>, T, &regs, &occ);
  char w[128];
  snprintf(w, sizeof w, "f64 pairs (ties) %s", shape_name(T, I, MATCH));
  rows.push_back({w, med, best, bad, regs, occ});
  printf("%-40s median %.3f ms best %.3f ms bad %llu regs %d blocks/SM %d\n", w, med, best, bad, regs, occ);
  fflush(stdout);
}

// seg_variant: 32-bit keys below m (2 passes) with positions, from keys at korig (copied into
// b.ka before each run).
template <int T, int I, int MATCH>
static void seg_variant(const u32* korig, u64 n, int passes, Bufs& b) {
  void* kr;
  u32* vr;
  float med, best;
  timed("seg", [&] {
    CK(cudaMemcpyAsync(b.ka, korig, n * 4, cudaMemcpyDeviceToDevice));
    sort_run<u32, true, T, I, MATCH, 1>(nullptr, n, passes, b, &kr, &vr);
  }, &med, &best);
  CK(cudaMemset(dacc, 0, 8));
  LAUNCH(check_pairs, 1024, 256, (const u64*)nullptr, (const u32*)kr, vr, (const double*)nullptr, korig, n, dacc);
  unsigned long long bad = dev_bad();
  if (dev_hash(nullptr, vr, n) != dev_hash(nullptr, nullptr, n)) bad += 1000000000ull;
  int regs, occ;
  occupancy(tile_kernel<u32, true, false, T, I, MATCH>, T, &regs, &occ);
  char w[128];
  snprintf(w, sizeof w, "u32 pairs, %d passes %s", passes, shape_name(T, I, MATCH));
  rows.push_back({w, med, best, bad, regs, occ});
  printf("%-40s median %.3f ms (with the copy of the keys) best %.3f ms bad %llu regs %d blocks/SM %d\n", w, med, best, bad, regs, occ);
  fflush(stdout);
}

// phases times the default shape's kernels one by one (events around each).
template <int T, int I, int MATCH, int UMODE>
static void phases(const double* x, u64 n, Bufs& b) {
  cudaEvent_t e[12];
  for (auto& v : e) CK(cudaEventCreate(&v));
  const u64 nb = (n + (u64)T * I - 1) / ((u64)T * I);
  for (int rep = 0; rep < 3; ++rep) {
    CK(cudaMemsetAsync(b.counts, 0, 8 * 256 * 4));
    CK(cudaEventRecord(e[0]));
    auto* up = upfront_kernel<u64, UMODE>;
    LAUNCH(up, (int)std::min<u64>((n + 1023) / 1024, (u64)nsm * 8), 256, (const void*)x, (const u64*)nullptr, n, T_F64, 0, ~0ull, 8, b.counts, b.special);
    CK(cudaEventRecord(e[1]));
    u64 *ki = nullptr, *ko = (u64*)b.ka;
    for (int p = 0; p < 8; ++p) {
      CK(cudaMemsetAsync(b.status, 0, nb * 256 * 8));
      CK(cudaMemsetAsync(b.next, 0, 4));
      CK(cudaEventRecord(e[2 + p]));
      auto* tk = p == 0 ? tile_kernel<u64, false, true, T, I, MATCH> : tile_kernel<u64, false, false, T, I, MATCH>;
      LAUNCH(tk, (int)nb, T, ki, p == 0 ? (const void*)x : nullptr, (const u32*)nullptr, ko, p == 7 ? b.out : nullptr, (u32*)nullptr, n, 8 * p, T_F64, 0, ~0ull, b.counts + 256 * p, b.status, b.next);
      u64* nk = ki == nullptr ? (u64*)b.kb : ki;
      ki = ko;
      ko = nk;
    }
    CK(cudaEventRecord(e[10]));
    CK(cudaEventSynchronize(e[10]));
    float m;
    printf("phases %s upfront%d rep %d: upfront", shape_name(T, I, MATCH), UMODE, rep);
    CK(cudaEventElapsedTime(&m, e[0], e[1]));
    printf(" %.3f", m);
    for (int p = 0; p < 8; ++p) {
      CK(cudaEventElapsedTime(&m, e[2 + p], e[p < 7 ? 3 + p : 10]));
      printf(" | pass %d %.3f", p, m);
    }
    printf(" ms (each pass with its status memset after it)\n");
  }
  fflush(stdout);
}

int main(int argc, char** argv) {
  const u64 n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 100000000ull;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  nsm = prop.multiProcessorCount;
  printf("device %s, %d SMs, n %llu\n", prop.name, nsm, (unsigned long long)n);
  Bufs b;
  double* x;
  double* xt;
  u32* korig;
  CK(cudaMalloc(&x, n * 8));
  CK(cudaMalloc(&xt, n * 8));
  CK(cudaMalloc(&korig, n * 4));
  CK(cudaMalloc(&b.ka, n * 8));
  CK(cudaMalloc(&b.kb, n * 8));
  CK(cudaMalloc(&b.va, n * 4));
  CK(cudaMalloc(&b.vb, n * 4));
  CK(cudaMalloc(&b.out, n * 8));
  CK(cudaMalloc(&b.counts, 8 * 256 * 4));
  CK(cudaMalloc(&b.status, ((n + 2047) / 2048) * 256 * 8));
  CK(cudaMalloc(&b.next, 4));
  CK(cudaMalloc(&b.special, 4));
  CK(cudaMalloc(&dacc, 8));
  LAUNCH(gen_normal, 4096, 256, x, n, 1, 0);
  LAUNCH(gen_normal, 4096, 256, xt, n, 2, 1);
  LAUNCH(gen_small, 4096, 256, korig, n, 3, 10000);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  const unsigned long long hin = dev_hash((const u64*)x, nullptr, n);

  // The shapes of sort.cu's kernels first, then alternatives measured against them.
  keys_variant<384, 12, 1, 1>(x, n, b, hin);
  keys_variant<384, 12, 0, 1>(x, n, b, hin);
  keys_variant<384, 12, 1, 0>(x, n, b, hin);
  keys_variant<256, 12, 1, 1>(x, n, b, hin);
  keys_variant<448, 10, 1, 1>(x, n, b, hin);
  pairs_variant<384, 10, 1>(xt, n, b);
  pairs_variant<384, 8, 1>(xt, n, b);
  seg_variant<384, 12, 1>(korig, n, 2, b);
  seg_variant<256, 16, 1>(korig, n, 2, b);
  phases<384, 12, 1, 1>(x, n, b);

  printf("\n| variant | median ms | best ms | regs | blocks/SM | check failures |\n|---|---|---|---|---|---|\n");
  for (auto& r : rows) printf("| %s | %.3f | %.3f | %d | %d | %llu |\n", r.what.c_str(), r.med, r.best, r.regs, r.occ, r.bad);
  return 0;
}
