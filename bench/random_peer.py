"""NumPy's Generator (PCG64, one thread) drawing and summing 1e7 values of each distribution
that gpuarray's BenchmarkRandomSum draws: the peer of `go test ./gpuarray -bench RandomSum`."""
import time

import numpy as np

N = 10_000_000
rng = np.random.default_rng(1)
cases = {
    "normal": lambda: rng.normal(0, 1, N),
    "exponential": lambda: rng.exponential(1, N),
    "gamma2.5": lambda: rng.gamma(2.5, 1, N),
    "gamma0.5": lambda: rng.gamma(0.5, 1, N),
    "beta2,5": lambda: rng.beta(2, 5, N),
    "poisson4": lambda: rng.poisson(4, N),
    "poisson100": lambda: rng.poisson(100, N),
    "binomial50,0.3": lambda: rng.binomial(50, 0.3, N),
}
for name, f in cases.items():
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        f().sum()
        best = min(best, time.perf_counter() - t)
    print(f"{name:16s} {best * 1e3:8.1f} ms")
