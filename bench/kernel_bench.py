"""Kernel benchmark: gpunotes next to ipykernel, measured in the same run (make bench-kernel).

Figures: start to first kernel_info_reply (median of 5), round trip of a trivial cell from
execute_request to idle (p50/p99 over 200), and a cell printing 10,000 lines (every line must
arrive). Kernelspecs are installed into a temporary JUPYTER_DATA_DIR.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import KernelManager

KERNELS = {
    "gpunotes": {"trivial": "1+1", "print": 'import "fmt"\nfor i := 0; i < 10000; i++ { fmt.Println(i) }'},
    "python3": {"trivial": "1+1", "print": "for i in range(10000): print(i)"},
}


def wait_idle(kc, msg_id, collect=None):
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if collect is not None and m["msg_type"] == "stream":
            collect.append(m["content"]["text"])
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            return


def start_time(name):
    km = KernelManager(kernel_name=name)
    t0 = time.perf_counter()
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    while True:
        kc.kernel_info()
        try:
            kc.get_shell_msg(timeout=0.005)
            break
        except Exception:
            continue
    dt = time.perf_counter() - t0
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return dt


def bench(name, cells):
    starts = [start_time(name) for _ in range(5)]
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    for _ in range(20):  # warm-up
        wait_idle(kc, kc.execute(cells["trivial"]))
    rt = []
    for _ in range(200):
        t0 = time.perf_counter()
        wait_idle(kc, kc.execute(cells["trivial"]))
        rt.append(time.perf_counter() - t0)
    rt.sort()
    texts = []
    t0 = time.perf_counter()
    wait_idle(kc, kc.execute(cells["print"]), texts)
    pr = time.perf_counter() - t0
    lines = "".join(texts).splitlines()
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return {"kernel": name, "start_ms": round(statistics.median(starts) * 1e3, 1),
            "trivial_p50_ms": round(rt[len(rt) // 2] * 1e3, 2), "trivial_p99_ms": round(rt[int(len(rt) * 0.99) - 1] * 1e3, 2),
            "print_10k_s": round(pr, 4), "print_lines": len(lines), "print_complete": lines == [str(i) for i in range(10000)]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpunotes", required=True, help="path of the gpunotes binary")
    ap.add_argument("--append", help="append a markdown row to this RESULTS.md")
    a = ap.parse_args()
    data = tempfile.mkdtemp()
    os.environ["JUPYTER_DATA_DIR"] = data
    os.environ["GPUNOTES_HISTORY"] = os.path.join(data, "history.jsonl")
    subprocess.run([a.gpunotes, "install"], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", data + "/py"], check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = data + "/py/share/jupyter"
    rows = [bench(name, cells) for name, cells in KERNELS.items()]
    for r in rows:
        print(json.dumps(r))
    g, p = rows
    print("\n| kernel | start (ms) | trivial cell p50 / p99 (ms) | 10k-line print (s) | lines ok |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['kernel']} | {r['start_ms']} | {r['trivial_p50_ms']} / {r['trivial_p99_ms']} | {r['print_10k_s']} | {r['print_complete']} |")
    print(f"\nratios (ipykernel / gpunotes): start {p['start_ms'] / g['start_ms']:.1f}x, "
          f"p50 {p['trivial_p50_ms'] / g['trivial_p50_ms']:.1f}x, print {p['print_10k_s'] / g['print_10k_s']:.1f}x")


if __name__ == "__main__":
    main()
