"""CuPy peers of `gpunotes bench ops` (issue 20), for the GPU machine (its python3 has CuPy).

The same table of ops on an N x N standard normal array, in up to three variants:
  cupy-regen:    the array is generated for each op (cupy.random, float64; the float32 row
                 generates float32), then the op runs: what a graph that regenerates its
                 input does, without dask's chunking;
  cupy-resident: the array is generated once and stays in device memory; each op reads it
                 (CuPy's best case);
  dask-cupy:     dask.array with CuPy chunks of C x C, regenerated per op as dask does (only
                 where dask is importable; the float32 row generates float64 and casts).
The int32 and bool rows read int32(1000 x) and x > 0 of the float64 array (derived per op by
cupy-regen and dask-cupy; by cupy-resident once per op, outside the timing).
Every variant brings the result to the host (float() or .get()), as gpunotes' Compute does,
except with --on-device, where array results stay in device memory (as a Compute with OnGPU
leaves them; "seconds" of gpunotes bench ops) and only their first element is read.
Each figure is the best of 3 after a warm-up.
The call rows (--calls) that read a 1e8 vector (--vn) or a matrix (--mn, --sn) run in
cupy-resident alone, their inputs made resident before the timing.
Usage: python3 bench/cupy_ops.py --n 40000 [--chunk 10000] [--variants cupy-regen,cupy-resident,dask-cupy]
Prints one JSON line per op and variant: {"peer","op","n","chunk","device","seconds","value"}.
"""
import argparse
import json
import re
import time

import cupy as cp

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=40000)
p.add_argument("--chunk", type=int, default=10000)
p.add_argument("--variants", default="cupy-regen,cupy-resident,dask-cupy")
p.add_argument("--op", default="", help="run only this op")
p.add_argument("--match", default="", help="run only the ops whose names match this regular expression (re.search)")
p.add_argument("--calls", action="store_true",
               help="run the call rows too (sorts, scans, transforms), as gpunotes bench ops --calls")
p.add_argument("--vn", type=int, default=100000000, help="length of the vector the 1-d call rows read")
p.add_argument("--mn", type=int, default=8192, help="side of the matrix product's matrix")
p.add_argument("--sn", type=int, default=4096, help="side of the solve's and inverse's matrix")
p.add_argument("--on-device", action="store_true",
               help="leave array results in device memory (read one element), as gpunotes' Compute with OnGPU does")
a = p.parse_args()
N, C = a.n, a.chunk
dev = cp.cuda.Device()
GPU = cp.cuda.runtime.getDeviceProperties(dev.id)["name"].decode()

# The op table, in the order of gpunotes' opsTable; xp is cupy or dask.array.
OPS = [
    ("sum", lambda x, xp: x.sum()),
    ("mean", lambda x, xp: x.mean()),
    ("std", lambda x, xp: x.std()),
    ("max", lambda x, xp: x.max()),
    ("argmax", lambda x, xp: x.argmax()),
    ("sum(axis=0)", lambda x, xp: x.sum(axis=0)),
    ("mean(axis=0)", lambda x, xp: x.mean(axis=0)),
    ("std(axis=0)", lambda x, xp: x.std(axis=0)),
    ("sum(axis=1)", lambda x, xp: x.sum(axis=1)),
    ("mean(axis=1)", lambda x, xp: x.mean(axis=1)),
    ("std(axis=1)", lambda x, xp: x.std(axis=1)),
    ("sum(x + x.T)", lambda x, xp: (x + x.T).sum()),
    ("sum(exp(x) + sin(x))", lambda x, xp: (xp.exp(x) + xp.sin(x)).sum()),
    ("sum(where(x > 0, x, -x))", lambda x, xp: xp.where(x > 0, x, -x).sum()),
    ("mean(x[::2, ::3])", lambda x, xp: x[::2, ::3].mean()),
    ("sum(float32)", lambda x, xp: x.sum()),
    ("sum(int32)", lambda x, xp: x.sum()),
    ("sum(bool)", lambda x, xp: x.sum()),
    ("sum(arange(n*n))", None),
    ("mean(x[x > 1])", lambda x, xp: x[x > 1].mean()),
    ("sum(x.reshape(n/2, 2, n), axis=1)", lambda x, xp: x.reshape(N // 2, 2, N).sum(axis=1)),
    ("sum(concat([x, x]))", lambda x, xp: xp.concatenate([x, x]).sum()),
    ("sum(Elementwise: where(x > 0, x * x, exp(x)) + 1)", lambda x, xp: user_kernel(x, xp).sum()),
    ("histogram(x, 100, range=(-5, 5))", lambda x, xp: xp.histogram(x, bins=100, range=(-5, 5))[0]),
]

# The call rows (issue 32), run with --calls, as gpunotes bench ops --calls.
CALLS = [
    ("cumsum(axis=1)", lambda x, xp: xp.cumsum(x, axis=1)),
    ("cumsum(axis=0)", lambda x, xp: xp.cumsum(x, axis=0)),
    ("sort(axis=1)", lambda x, xp: xp.sort(x, axis=1)),
    ("argsort(axis=1)", lambda x, xp: xp.argsort(x, axis=1)),
    ("sort(axis=1)[:, :10]", lambda x, xp: xp.sort(x, axis=1)[:, :10]),
    ("fft(axis=1)", lambda x, xp: xp.fft.fft(x, axis=1)),
    ("sum(abs(fft(axis=1)))", lambda x, xp: xp.abs(xp.fft.fft(x, axis=1)).sum()),
    ("rfft(axis=0)", lambda x, xp: xp.fft.rfft(x, axis=0)),
    ("sum(cumsum(axis=1))", lambda x, xp: xp.cumsum(x, axis=1).sum()),
    ("nonzero(x > 1)[0]", lambda x, xp: xp.nonzero(x > 1)[0]),
    ("argwhere(x > 2)", lambda x, xp: xp.argwhere(x > 2)),
    ("unique(rint(10 x))", lambda x, xp: xp.unique(xp.rint(x * 10))),
    ("median(axis=1)", lambda x, xp: xp.median(x, axis=1)),
    # The rest of issue 32's rows (gpunotes bench ops --persisted), on the inputs of INPUTS.
    ("sort(v)", lambda x, xp: xp.sort(x)),
    ("argsort(v)", lambda x, xp: xp.argsort(x)),
    ("topk(v, 10)", lambda x, xp: xp.sort(xp.partition(x, x.size - 10)[-10:])[::-1]),
    ("sum(abs(fft(v)))", lambda x, xp: xp.abs(xp.fft.fft(x)).sum()),
    ("diff(axis=1)", lambda x, xp: xp.diff(x, axis=1)),
    ("unique(iv)", lambda x, xp: xp.unique(x)),
    ("bincount(iv)", lambda x, xp: cp.asnumpy(xp.bincount(x))),  # read back, as the row says
    ("histogram(v, 100, range=(-5, 5))", lambda x, xp: xp.histogram(x, bins=100, range=(-5, 5))[0]),
    ("searchsorted(linspace(-5, 5, 1000001), v)", lambda x, xp: xp.searchsorted(xp.linspace(-5, 5, 1000001), x)),
    ("nonzero(v > 1)[0]", lambda x, xp: xp.nonzero(x > 1)[0]),
    ("take(v, int64((len(v)-1) |sin(1000 v)|))",
     lambda x, xp: xp.take(x, (xp.abs(xp.sin(x * 1000)) * (x.size - 1)).astype(xp.int64))),
    ("quantile(v, 0.9)", lambda x, xp: xp.quantile(x, 0.9)),
    ("median(v)", lambda x, xp: xp.median(x)),
    ("solve(a, a[:, :16])", lambda x, xp: xp.linalg.solve(x, x[:, :16])),
    ("inv(a)", lambda x, xp: xp.linalg.inv(x)),
    ("matmul(m, m)", lambda x, xp: x @ x),
    ("standardize(axis=0)", lambda x, xp: (x - x.mean(axis=0)) / x.std(axis=0)),
]
# The inputs of the rows that do not read the N x N array (cupy-resident only): a vector of
# VN standard normals, int64(1000 |v|) of it, and standard normal matrices of 8192^2 and 4096^2.
INPUTS = {
    "sort(v)": "vec", "argsort(v)": "vec", "topk(v, 10)": "vec", "sum(abs(fft(v)))": "vec",
    "unique(iv)": "ivec", "bincount(iv)": "ivec", "histogram(v, 100, range=(-5, 5))": "vec",
    "searchsorted(linspace(-5, 5, 1000001), v)": "vec", "nonzero(v > 1)[0]": "vec",
    "take(v, int64((len(v)-1) |sin(1000 v)|))": "vec", "quantile(v, 0.9)": "vec", "median(v)": "vec",
    "solve(a, a[:, :16])": "sq", "inv(a)": "sq", "matmul(m, m)": "mat",
}
if a.calls:
    OPS = OPS + CALLS

if a.op:
    OPS = [o for o in OPS + ([] if a.calls else CALLS) if o[0] == a.op]
if a.match:
    OPS = [o for o in OPS if re.search(a.match, o[0])]


# CuPy's ElementwiseKernel is the peer of gpuarray.Elementwise; dask + CuPy composes the ops.
_UK = cp.ElementwiseKernel("float64 x", "float64 y", "y = (x > 0 ? x * x : exp(x)) + 1", "gpunotes_user_kernel")


def user_kernel(x, xp):
    if xp is cp:
        return _UK(x)
    return xp.where(x > 0, x * x, xp.exp(x)) + 1


def first(v):
    """The result on the host: a float, or the first element of an array."""
    if isinstance(v, cp.ndarray) and a.on_device:
        v = v.ravel()[:1]  # the result stays in device memory; only its first element comes back
    v = cp.asnumpy(v) if isinstance(v, cp.ndarray) else v
    try:
        return float(v.ravel()[0])
    except AttributeError:
        return float(v)


def best(f):
    f()
    dev.synchronize()
    t = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        v = f()
        dev.synchronize()
        t = min(t, time.perf_counter() - t0)
    return t, v


def report(peer, op, secs, v):
    if a.on_device:
        peer += " (on device)"
    print(json.dumps({"peer": peer, "op": op, "n": N, "chunk": C, "device": GPU,
                      "seconds": round(secs, 6), "value": v}), flush=True)


def derive(name, x, xp):
    """The array an op reads, from the float64 normal x: int32(1000 x), x > 0, or x."""
    if name == "sum(int32)":
        return (x * 1000).astype("int32")
    if name == "sum(bool)":
        return x > 0
    return x


def free():
    cp.get_default_memory_pool().free_all_blocks()


def other_input(kind):
    """An input of INPUTS, made resident."""
    if kind in ("vec", "ivec"):
        v = cp.random.RandomState(42).standard_normal(a.vn, dtype=cp.float64)
        return v if kind == "vec" else (cp.abs(v) * 1000).astype(cp.int64)
    side, seed = (a.mn, 43) if kind == "mat" else (a.sn, 44)
    return cp.random.RandomState(seed).standard_normal((side, side), dtype=cp.float64)


def regen():
    for name, op in OPS:
        if name in INPUTS:
            continue  # resident rows only
        dt = cp.float32 if name == "sum(float32)" else cp.float64
        if op is None:
            f = lambda: first(cp.arange(N * N, dtype=cp.float64).sum())
        else:
            f = lambda: first(op(derive(name, cp.random.RandomState(42).standard_normal((N, N), dtype=dt), cp), cp))
        secs, v = best(f)
        report("cupy-regen", name, secs, v)
        free()


def resident():
    x = cp.random.RandomState(42).standard_normal((N, N), dtype=cp.float64)
    for name, op in OPS:
        # An op's input other than x (float32, int32, bool, arange) is made before its op and
        # dropped after: all four held at once beside x (40 GB) and exp + sin's temporaries
        # exceeded an H100's 80 GB (the rows after sum(x + x.T) were lost at 2c2a19a).
        if op is None:
            inp = cp.arange(N * N, dtype=cp.float64)
            f = lambda: first(inp.sum())
        else:
            if name in INPUTS:
                inp = other_input(INPUTS[name])
            elif name == "sum(float32)":
                inp = cp.random.RandomState(42).standard_normal((N, N), dtype=cp.float32)
            else:
                inp = derive(name, x, cp)
            f = lambda: first(op(inp, cp))
        dev.synchronize()
        secs, v = best(f)
        report("cupy-resident", name, secs, v)
        del inp, f
        free()
    del x
    free()


def dask_cupy():
    try:
        import dask
        import dask.array as da
    except ImportError as e:
        print(json.dumps({"peer": "dask-cupy", "skipped": f"dask is not installed: {e}"}), flush=True)
        return
    dask.config.set(scheduler="threads")

    def gen(f32):
        rs = da.random.RandomState(42, RandomState=cp.random.RandomState)
        x = rs.standard_normal((N, N), chunks=(C, C))
        return x.astype(cp.float32) if f32 else x

    for name, op in OPS:
        if name in INPUTS:
            continue  # resident rows only
        dt = name == "sum(float32)"
        if op is None:
            f = lambda: first(da.arange(N * N, chunks=C * C, dtype=cp.float64, like=cp.empty(0)).sum().compute())
        else:
            f = lambda: first(op(derive(name, gen(dt), da), da).compute())
        try:
            secs, v = best(f)
        except Exception as e:  # a dask version without an API used here: say so, go on
            print(json.dumps({"peer": "dask-cupy", "op": name, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
            continue
        report("dask-cupy " + dask.__version__, name, secs, v)
        free()


for v in a.variants.split(","):
    {"cupy-regen": regen, "cupy-resident": resident, "dask-cupy": dask_cupy}[v]()
