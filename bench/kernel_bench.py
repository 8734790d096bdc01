"""Kernel benchmark: gpunotes next to ipykernel, measured in the same run (make bench-kernel).

Figures: start to first kernel_info_reply (median of 5), round trip of a trivial cell from
execute_request to idle (p50/p99 over 200), a cell printing 10,000 lines (median of 5; every line
must arrive, in order), and a cell that prints 5,000 lines, shows an HTML display, then prints
5,000 more (the display must arrive between them). With --repeat R the kernels take turns R
times. The load average is printed with the figures (the machine may be shared). Kernelspecs
are installed into a temporary JUPYTER_DATA_DIR. --append FILE adds a section to RESULTS.md.
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
    "gpunotes": {
        "trivial": "1+1",
        "print": 'import "fmt"\nfor i := 0; i < 10000; i++ { fmt.Println(i) }',
        "mixed": 'for i := 0; i < 5000; i++ { fmt.Println(i) }\ndisplay.HTML("<b>half</b>")\n'
                 'for i := 5000; i < 10000; i++ { fmt.Println(i) }',
    },
    "python3": {
        "trivial": "1+1",
        "print": "for i in range(10000): print(i)",
        "mixed": "from IPython.display import HTML, display\nfor i in range(5000): print(i)\n"
                 "display(HTML('<b>half</b>'))\nfor i in range(5000, 10000): print(i)",
    },
}


def wait_idle(kc, msg_id, collect=None):
    """Waits for the request's idle status; collect gets its stream texts and, for each
    display, the marker "<display>"."""
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if collect is not None and m["msg_type"] == "stream":
            collect.append(m["content"]["text"])
        if collect is not None and m["msg_type"] == "display_data":
            collect.append("<display>\n")
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
    want = [str(i) for i in range(10000)]
    prints, complete = [], True
    for _ in range(6):
        texts = []
        t0 = time.perf_counter()
        wait_idle(kc, kc.execute(cells["print"]), texts)
        prints.append(time.perf_counter() - t0)
        complete = complete and "".join(texts).splitlines() == want
    texts = []
    wait_idle(kc, kc.execute(cells["mixed"]), texts)
    mixed_ok = "".join(texts).splitlines() == want[:5000] + ["<display>"] + want[5000:]
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return {"kernel": name, "start_ms": round(statistics.median(starts) * 1e3, 1),
            "trivial_p50_ms": round(rt[len(rt) // 2] * 1e3, 2), "trivial_p99_ms": round(rt[int(len(rt) * 0.99) - 1] * 1e3, 2),
            # the first print cell compiles fmt's paths; the median of the other five
            "print_10k_s": round(statistics.median(prints[1:]), 4), "print_complete": complete,
            "display_in_order": mixed_ok}


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpunotes", required=True, help="path of the gpunotes binary")
    ap.add_argument("--kernels", default="gpunotes,python3", help="which kernels, comma-separated")
    ap.add_argument("--repeat", type=int, default=1, help="rounds; the kernels take turns")
    ap.add_argument("--append", help="append a section with every round to this RESULTS.md")
    a = ap.parse_args()
    data = tempfile.mkdtemp()
    os.environ["JUPYTER_DATA_DIR"] = data
    os.environ["GPUNOTES_HISTORY"] = os.path.join(data, "history.jsonl")
    subprocess.run([a.gpunotes, "install"], check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "ipykernel", "install", "--prefix", data + "/py"], check=True, capture_output=True)
    os.environ["JUPYTER_PATH"] = data + "/py/share/jupyter"
    names = a.kernels.split(",")
    rows = []
    for rnd in range(a.repeat):
        for name in names:
            before = loadavg()
            r = bench(name, KERNELS[name])
            r.update({"round": rnd + 1, "load_before": before, "load_after": loadavg()})
            print(json.dumps(r), flush=True)
            rows.append(r)
    table = ["| kernel | round | load avg before / after | start (ms) | trivial cell p50 / p99 (ms) | 10k-line print (s) | lines ok | display in order |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        table.append(f"| {r['kernel']} | {r['round']} | {r['load_before']} / {r['load_after']} | {r['start_ms']} | "
                     f"{r['trivial_p50_ms']} / {r['trivial_p99_ms']} | {r['print_10k_s']} | {r['print_complete']} | {r['display_in_order']} |")
    print()
    print("\n".join(table))
    by = {n: [r for r in rows if r["kernel"] == n] for n in names}
    if "gpunotes" in by and "python3" in by:
        g = {k: statistics.median(r[k] for r in by["gpunotes"]) for k in ("start_ms", "trivial_p50_ms", "print_10k_s")}
        p = {k: statistics.median(r[k] for r in by["python3"]) for k in ("start_ms", "trivial_p50_ms", "print_10k_s")}
        print(f"\nratios of the medians (ipykernel / gpunotes): start {p['start_ms'] / g['start_ms']:.1f}x, "
              f"p50 {p['trivial_p50_ms'] / g['trivial_p50_ms']:.1f}x, print {p['print_10k_s'] / g['print_10k_s']:.1f}x")
    if a.append:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        with open(a.append, "a") as f:
            f.write(f"\n### Kernel latency (`make bench-kernel`), commit {commit}, {time.strftime('%Y-%m-%d', time.gmtime())}\n\n"
                    f"{os.cpu_count()} cores; load averages (1, 5, 15 min) per round.\n\n" + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
