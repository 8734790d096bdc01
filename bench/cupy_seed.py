"""GPU peers of the seed experiment for bench/gpu.sh and bench/gpu-scale.sh, run on the GPU machine
with its python3 (CuPy; dask optional).

    (x + 1)[::2, ::2].sum()  with  x ~ normal(10, 1), shape (N, N), chunks (C, C)

Figures, each printed as one JSON object when measured:
  cupy-pipeline  what dask.array on CuPy runs for each chunk (CuPy's generator fills the chunk,
                 add 1, the strided slice made contiguous as dask's getitem does, sum), looped
                 over the chunks on one GPU without dask's scheduler;
  dask+cupy      dask.array itself on CuPy chunks (only with --dask, and when dask imports);
  fused-kernel   one hand-written kernel (Philox4x32-10 counters, Box-Muller, add, reduce) that
                 never stores the array: about the fastest this work runs on the device.
Each figure is timed after an untimed warm-up (CUDA context, kernel compilation, plan caches).

Usage: python3 bench/cupy_seed.py --n 100000 [--chunk 10000] [--skip-pipeline] [--dask]
"""
import argparse
import json
import math
import time

import cupy as cp

# Philox4x32-10 (Salmon et al., SC'11) keyed by the seed and counted by the element's row-major
# index; the first Box-Muller normal of the four words is the element's value.
FUSED_SRC = r"""
struct ctr4 { unsigned int v[4]; };

__device__ ctr4 philox10(ctr4 c, unsigned int k0, unsigned int k1) {
    for (int round = 0; round < 10; round++) {
        unsigned int p0hi = __umulhi(0xD2511F53u, c.v[0]);
        unsigned int p0lo = 0xD2511F53u * c.v[0];
        unsigned int p1hi = __umulhi(0xCD9E8D57u, c.v[2]);
        unsigned int p1lo = 0xCD9E8D57u * c.v[2];
        ctr4 n;
        n.v[0] = p1hi ^ c.v[1] ^ k0;
        n.v[1] = p1lo;
        n.v[2] = p0hi ^ c.v[3] ^ k1;
        n.v[3] = p0lo;
        c = n;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return c;
}

// A uniform double in (0, 1) from two 32-bit words (53 bits).
__device__ double unit53(unsigned int hi, unsigned int lo) {
    unsigned long long bits = ((unsigned long long)(hi >> 5) << 26) | (unsigned long long)(lo >> 6);
    return ((double)bits + 0.5) * (1.0 / 9007199254740992.0);  // 2^-53
}

extern "C" __global__ void seed_sum_fused(long long n, unsigned int seed, double* out) {
    const long long side = (n + 1) / 2;      // kept rows and columns
    const long long kept = side * side;
    // Thread t visits kept elements t, t + stride, ...; (a, b) is the element's kept row and
    // column, advanced without a 64-bit division per element.
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long da = stride / side, db = stride % side;
    long long a = first / side, b = first % side;
    double acc = 0.0;
    for (long long k = first; k < kept; k += stride) {
        const unsigned long long idx = (unsigned long long)(2 * a) * (unsigned long long)n + (unsigned long long)(2 * b);
        ctr4 c;
        c.v[0] = (unsigned int)idx;
        c.v[1] = (unsigned int)(idx >> 32);
        c.v[2] = 0u;
        c.v[3] = 0u;
        c = philox10(c, seed, 0u);
        const double u1 = unit53(c.v[0], c.v[1]);
        const double u2 = unit53(c.v[2], c.v[3]);
        acc += 10.0 + sqrt(-2.0 * log(u1)) * cospi(2.0 * u2) + 1.0;
        a += da;
        b += db;
        if (b >= side) {
            b -= side;
            a++;
        }
    }
    for (int off = 16; off > 0; off /= 2) {
        acc += __shfl_down_sync(0xffffffffu, acc, off);
    }
    if ((threadIdx.x & 31) == 0) {
        atomicAdd(out, acc);
    }
}
"""


def emit(name, n, chunk, seconds, total, **extra):
    kept = ((n + 1) // 2) ** 2
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    row = {"peer": name, "gpu": props["name"].decode(), "cupy": cp.__version__, "n": n, "chunk": chunk,
           "seconds": round(seconds, 4), "sum": total, "expected": 11.0 * kept,
           "z": (total - 11.0 * kept) / math.sqrt(kept)}
    row.update(extra)
    print(json.dumps(row), flush=True)


def chunk_sum(state, rows, cols):
    x = state.normal(10, 1, size=(rows, cols))
    return cp.ascontiguousarray((x + 1)[::2, ::2]).sum()


def pipeline(n, chunk):
    if chunk % 2:
        # An odd chunk would start some chunks on an odd row, where [::2] keeps other elements.
        raise SystemExit("cupy_seed.py: --chunk must be even for the per-chunk pipeline")
    nb = (n + chunk - 1) // chunk
    chunk_sum(cp.random.RandomState(0), min(chunk, n), min(chunk, n))
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    total = cp.zeros((), dtype=cp.float64)
    for bi in range(nb):
        for bj in range(nb):
            rows, cols = min(chunk, n - bi * chunk), min(chunk, n - bj * chunk)
            # dask seeds each chunk's generator apart; a seed per chunk does the same here.
            part = chunk_sum(cp.random.RandomState(7919 * bi + bj + 1), rows, cols)
            total += part
    value = float(total)
    emit("cupy-pipeline (dask-like, per chunk)", n, chunk, time.perf_counter() - start, value)


def dask_cupy(n, chunk):
    try:
        import dask
        import dask.array as da
    except ImportError as err:
        print(json.dumps({"peer": "dask+cupy", "n": n, "skipped": f"dask not importable: {err}"}), flush=True)
        return

    def run(size):
        rs = da.random.RandomState(42, RandomState=cp.random.RandomState)
        x = rs.normal(10, 1, size=(size, size), chunks=chunk)
        return float((x + 1)[::2, ::2].sum().compute(scheduler="threads"))

    run(min(n, 2 * chunk))
    start = time.perf_counter()
    value = run(n)
    emit("dask+cupy", n, chunk, time.perf_counter() - start, value, dask=dask.__version__)


def fused(n, chunk):
    kernel = cp.RawKernel(FUSED_SRC, "seed_sum_fused", options=("--std=c++14",))
    dev = cp.cuda.Device()
    grid = 8 * dev.attributes["MultiProcessorCount"]
    out = cp.zeros(1, dtype=cp.float64)
    kernel((grid,), (256,), (cp.int64(min(n, 4096)), cp.uint32(42), out))
    dev.synchronize()
    out.fill(0)
    dev.synchronize()
    start = time.perf_counter()
    kernel((grid,), (256,), (cp.int64(n), cp.uint32(42), out))
    dev.synchronize()
    seconds = time.perf_counter() - start
    emit("fused-kernel (one kernel, Philox, no stores)", n, chunk, seconds, float(out[0]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--chunk", type=int, default=10000)
    ap.add_argument("--skip-pipeline", action="store_true", help="only the fused kernel (and --dask)")
    ap.add_argument("--dask", action="store_true", help="also dask.array on CuPy chunks")
    args = ap.parse_args()
    if not args.skip_pipeline:
        pipeline(args.n, args.chunk)
    if args.dask:
        dask_cupy(args.n, args.chunk)
    fused(args.n, args.chunk)


if __name__ == "__main__":
    main()
