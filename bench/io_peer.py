"""Peers of `gpunotes bench read` (bench/io.sh): generate the data, and read-and-sum it with
NumPy (.npy) and zarr-python + dask (Zarr stores). Each read prints one JSON line."""
import json
import sys
import time

import numpy as np


def gen(d, rows, cols, chunk_rows):
    import numcodecs
    import zarr
    from zarr.codecs import ZstdCodec

    rng = np.random.default_rng(2026)
    x = np.lib.format.open_memmap(f"{d}/x.npy", mode="w+", dtype="<f8", shape=(rows, cols))
    zs = zarr.create_array(store=f"{d}/x_zstd.zarr", shape=(rows, cols), chunks=(chunk_rows, cols),
                           dtype="<f8", compressors=ZstdCodec(level=3))
    zb = zarr.create_array(store=f"{d}/x_blosc.zarr", shape=(rows, cols), chunks=(chunk_rows, cols),
                           dtype="<f8", zarr_format=2,
                           compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    for r in range(0, rows, chunk_rows):
        # Normal numbers rounded to 1/1024: the low mantissa bits are zero, as in measured
        # data of limited precision, so the codecs have something to compress.
        b = np.round(rng.standard_normal((min(chunk_rows, rows - r), cols)) * 1024) / 1024
        x[r:r + len(b)] = b
        zs[r:r + len(b)] = b
        zb[r:r + len(b)] = b
    x.flush()
    del x


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "gen":
        gen(path, int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
        return
    t = time.perf_counter()
    if mode == "numpy":
        s = float(np.load(path).sum())
        peer = f"numpy {np.__version__}"
    elif mode == "dask-zarr":
        import dask
        import dask.array as da
        import zarr
        s = float(da.from_zarr(zarr.open_array(path, mode="r")).sum().compute(scheduler="threads"))
        peer = f"zarr {zarr.__version__} + dask {dask.__version__}"
    else:
        raise SystemExit(f"unknown mode {mode}")
    print(json.dumps({"peer": peer, "seconds": time.perf_counter() - t, "sum": s}))


if __name__ == "__main__":
    main()
