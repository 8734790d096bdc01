"""CuPy peers of the linear-algebra benchmarks (issue 7), run on the GPU machine.

Each row times what gpunotes' benchmark of the same name does, input generation included:
  svd_seed   cupy.linalg.svd of a 10000 x 1000 uniform array (seed 001's SVD, gathered);
  svd_tall   a 1,000,000 x 1000 uniform array in chunks of 100000 x 1000 through TSQR written
             the way dask does it (QR per chunk, QR of the stacked R factors, SVD of R, U formed),
             with U, S, V left on the device and brought to the host (.get());
  matmul     cupy.matmul of two N x N standard normal arrays, on the device and then with the
             product brought to the host (.get()), as gpuarray.MatMul returns it;
  solve      cupy.linalg.solve of an N x N standard normal system with a normal right-hand
             side, generation included, the solution brought to the host (.get()), as
             gpuarray's BenchmarkSolveGPU does;
  rfft       cupy.fft.rfft of N standard normal float64 values, generation included, the
             spectrum brought to the host (.get()), as gpuarray's BenchmarkRfftGPU does.
Usage: python3 bench/cupy_linalg.py [svd_seed] [svd_tall] [matmul N] [solve N] [rfft N]
Prints one JSON object per row.
"""
import json
import sys
import time

import cupy as cp


def timed(f, repeat=2):
    """Runs f repeat times after a warm-up and returns the best wall time in seconds."""
    f()
    cp.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        cp.cuda.Device().synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def svd_seed():
    def run():
        x = cp.random.RandomState(42).random_sample((10000, 1000))
        u, s, v = cp.linalg.svd(x, full_matrices=False)
        return u, s, v
    return {"row": "svd_seed", "shape": [10000, 1000], "seconds": timed(run)}


def svd_tall(m=1_000_000, n=1000, c=100_000):
    def run():
        rs = cp.random.RandomState(42)
        qs, rs_ = [], []
        for _ in range(m // c):
            q, r = cp.linalg.qr(rs.random_sample((c, n)))
            qs.append(q)
            rs_.append(r)
        q2, r2 = cp.linalg.qr(cp.concatenate(rs_))
        ur, s, v = cp.linalg.svd(r2, full_matrices=False)
        # As dask: Q formed block by block (Q_i times its block of Q2), then U = Q * U_R.
        u = cp.concatenate([(qs[i] @ q2[i * n:(i + 1) * n]) @ ur for i in range(len(qs))])
        return u, s, v
    def run_host():
        u, s, v = run()
        return u.get(), s.get(), v.get()

    dev = timed(run, repeat=1)
    cp.get_default_memory_pool().free_all_blocks()
    host = timed(run_host, repeat=1)
    return {"row": "svd_tall", "shape": [m, n], "chunks": [c, n], "seconds": dev, "seconds_to_host": host}


def matmul(n):
    rs = cp.random.RandomState(42)

    def on_device():
        x = rs.standard_normal((n, n))
        y = rs.standard_normal((n, n))
        return cp.matmul(x, y)

    def to_host():
        return on_device().get()

    dev = timed(on_device, repeat=1)
    cp.get_default_memory_pool().free_all_blocks()
    host = timed(to_host, repeat=1)
    return {"row": "matmul", "n": n, "seconds_on_device": dev, "seconds_to_host": host}


def solve(n):
    def run():
        rs = cp.random.RandomState(42)
        a = rs.standard_normal((n, n))
        b = rs.standard_normal(n)
        return cp.linalg.solve(a, b).get()

    return {"row": "solve", "n": n, "seconds": timed(run, repeat=3)}


def rfft(n):
    def run():
        x = cp.random.RandomState(42).standard_normal(n)
        return cp.fft.rfft(x).get()

    return {"row": "rfft", "n": n, "seconds": timed(run, repeat=3)}


def main(argv):
    rows = argv or ["svd_seed", "svd_tall", "matmul", "40000"]
    i = 0
    while i < len(rows):
        name = rows[i]
        if name in ("matmul", "solve", "rfft"):
            n = int(rows[i + 1]) if i + 1 < len(rows) and rows[i + 1].isdigit() else {"matmul": 40000, "solve": 10000, "rfft": 1 << 26}[name]
            out = {"matmul": matmul, "solve": solve, "rfft": rfft}[name](n)
            i += 2 if i + 1 < len(rows) and rows[i + 1].isdigit() else 1
        else:
            out = {"svd_seed": svd_seed, "svd_tall": svd_tall}[name]()
            i += 1
        out["device"] = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
        out["cupy"] = cp.__version__
        print(json.dumps(out), flush=True)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main(sys.argv[1:])
