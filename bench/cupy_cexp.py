"""CuPy peer of gpuarray's BenchmarkExpIThetaGPU (issue 20, complex math on the device):
exp(1j*x) summed over N standard normal float64 values, brought to the host.
  cupy-regen:    x generated for each run (cupy.random), as gpunotes' fused kernel does;
  cupy-resident: x generated once; each run reads it (CuPy's best case).
Best of 5 after a warm-up. Usage: python3 bench/cupy_cexp.py [--n 67108864]
Prints one JSON line per variant: {"peer","op","n","device","seconds","value"}.
"""
import argparse
import json
import time

import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=1 << 26)
a = p.parse_args()
dev = cp.cuda.Device()
GPU = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()
rs = cp.random.RandomState(42)
resident = rs.standard_normal(a.n)


def run(variant):
    x = rs.standard_normal(a.n) if variant == "cupy-regen" else resident
    return complex(cp.exp(1j * x).sum())


for variant in ("cupy-regen", "cupy-resident"):
    run(variant)
    best, value = float("inf"), None
    for _ in range(5):
        t = time.perf_counter()
        value = run(variant)
        best = min(best, time.perf_counter() - t)
    print(json.dumps({"peer": variant, "op": "exp(1j*x).sum()", "n": a.n, "device": GPU, "seconds": best,
                      "value": [value.real, value.imag]}))
