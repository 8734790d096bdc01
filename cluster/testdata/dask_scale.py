"""Time dask's LocalCluster.scale from 1 to N worker processes until all are ready.

Prints one line: "dask_scale_seconds <s>" (the peer figure of BenchmarkScale1To8)."""
import sys
import time

from distributed import Client, LocalCluster


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(1)
        start = time.perf_counter()
        cluster.scale(n)
        client.wait_for_workers(n, timeout=600)
        print("dask_scale_seconds %.4f" % (time.perf_counter() - start), flush=True)


if __name__ == "__main__":
    main()
