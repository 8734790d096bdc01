"""Where a trivial cell's round trip goes, on both sides of the wire (make bench-kernel-profile).

For N trivial cells on one kernel it records, per cell, when the client sent execute_request,
when the kernel stamped each reply message (header.date, microseconds, the same clock on one
machine) and when jupyter_client handed each message to the caller, and prints the medians of:
  client send      kc.execute() (serialize, sign, zmq send)
  to kernel        send done -> the kernel's first message (busy): wire in + the kernel's read
  kernel handler   busy -> idle as the kernel stamped them (our handler and the interpreter)
  from kernel      the kernel's idle -> the client has it: wire out + jupyter_client's decode
  round trip       execute() called -> idle received
It also times a bare pyzmq DEALER/ROUTER ping-pong in this process (the floor of the wire and
of Python's zmq) and jupyter_client's Session.deserialize of one message (the client's share
of each message). Usage: python bench/kernel_profile.py --kernel gpunotes [--cells 300]
(the kernelspecs must be installed: make bench-kernel-profile installs both into a temp dir).
"""
import argparse
import datetime
import json
import statistics
import time

import zmq
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session


def wall(ts):
    if isinstance(ts, str):
        ts = datetime.datetime.fromisoformat(ts.replace("Z", "+00:00"))
    return ts.timestamp()


def med(xs):
    return round(statistics.median(xs) * 1e6, 1)


def pct(xs, p):
    xs = sorted(xs)
    return round(xs[min(len(xs) - 1, int(len(xs) * p))] * 1e6, 1)


def profile_kernel(name, code, cells):
    """Runs code cells times (after 30 warm-up cells) and returns the medians and p99s."""
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    rows = []
    for i in range(cells + 30):
        # perf_counter for intervals on this side; time.time() to meet the kernel's stamps.
        w0, t0 = time.time(), time.perf_counter()
        msg_id = kc.execute(code)
        t1 = time.perf_counter()
        stamps, arrivals = {}, {}
        while True:
            m = kc.get_iopub_msg(timeout=60)
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind = m["msg_type"]
            if kind == "status":
                kind = m["content"]["execution_state"]
            stamps[kind] = wall(m["header"]["date"])
            arrivals[kind] = time.perf_counter()
            if kind == "idle":
                break
        if i < 30:
            continue  # warm-up
        off = w0 - t0  # perf_counter -> wall clock
        rows.append({
            "send": t1 - t0,
            "to_kernel": stamps["busy"] - (t1 + off),
            "handler": stamps["idle"] - stamps["busy"],
            "from_kernel": (arrivals["idle"] + off) - stamps["idle"],
            "round_trip": arrivals["idle"] - t0,
        })
    kc.stop_channels()
    km.shutdown_kernel()  # a clean shutdown, so that GPUNOTES_CPUPROFILE gets written
    out = {"kernel": name, "cells": len(rows)}
    for k in rows[0]:
        xs = [r[k] for r in rows]
        out[k + "_us"] = {"p50": med(xs), "p99": pct(xs, 0.99)}
    return out


def zmq_floor(n=2000):
    ctx = zmq.Context()
    a, b = ctx.socket(zmq.DEALER), ctx.socket(zmq.ROUTER)
    port = b.bind_to_random_port("tcp://127.0.0.1")
    a.connect(f"tcp://127.0.0.1:{port}")
    rt = []
    for i in range(n + 100):
        t0 = time.perf_counter()
        a.send(b"x" * 200)
        ident, data = b.recv_multipart()
        b.send_multipart([ident, data])
        a.recv()
        if i >= 100:
            rt.append(time.perf_counter() - t0)
    a.close(0)
    b.close(0)
    ctx.term()
    return {"zmq_ping_pong_us": {"p50": med(rt), "p99": pct(rt, 0.99)}}


def decode_cost(n=2000):
    s = Session(key=b"k" * 32)
    msg = s.msg("status", {"execution_state": "idle"}, parent=s.msg_header("execute_request"))
    frames = s.serialize(msg)
    idents, frames = s.feed_identities(frames[1:] if frames[0] == b"" else frames, copy=True)
    ts = []
    for _ in range(n):
        s.digest_history.clear()
        t0 = time.perf_counter()
        s.deserialize(frames, content=True, copy=True)
        ts.append(time.perf_counter() - t0)
    return {"session_deserialize_us": {"p50": med(ts), "p99": pct(ts, 0.99)}}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", action="append", required=True)
    ap.add_argument("--cells", type=int, default=300)
    a = ap.parse_args()
    with open("/proc/loadavg") as f:
        print(json.dumps({"loadavg": f.read().split()[:3]}))
    print(json.dumps(zmq_floor()))
    print(json.dumps(decode_cost()))
    for name in a.kernel:
        print(json.dumps(profile_kernel(name, "1+1", a.cells)))


if __name__ == "__main__":
    main()
