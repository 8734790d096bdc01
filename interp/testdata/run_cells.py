"""Runs cell lists through the installed gpunotes kernel with jupyter_client, one fresh kernel
per list. Reads JSON [{"id": ..., "cells": [...]}] on stdin; writes JSON {id: {"stdout": ...,
"errors": [...]}} on stdout."""
import json
import queue
import sys
import time

from jupyter_client.manager import start_new_kernel

# A cell that prints nothing for this long is taken to hang. The wait is for correctness, not
# speed: a busy machine must never fail a list, so it is long, and a dead kernel is noticed at
# once instead (its crash report is the list's error).
TIMEOUT = 300


class KernelDied(Exception):
    pass


def get(km, getter, stderr):
    """The next message from getter, waiting up to TIMEOUT while the kernel lives."""
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            return getter(timeout=1)
        except queue.Empty:
            if not km.is_alive():
                raise KernelDied("the kernel died; its stderr: %r" % "".join(stderr)[-2000:])
            if time.monotonic() > deadline:
                raise


def run_cell(km, kc, code):
    msg_id = kc.execute(code)
    out, errors, stderr = [], [], []
    while True:
        m = get(km, kc.get_iopub_msg, stderr)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "stream" and c["name"] == "stdout":
            out.append(c["text"])
        elif t == "stream":
            stderr.append(c["text"])
        elif t == "error":
            errors.append(c["ename"] + ": " + c["evalue"])
        elif t == "status" and c["execution_state"] == "idle":
            break
    while get(km, kc.get_shell_msg, stderr)["parent_header"].get("msg_id") != msg_id:
        pass  # a late reply to one of nudge's kernel_info requests
    return "".join(out), errors


def nudge(kc):
    """Waits until the IOPub subscription receives messages, as jupyter_server does before it
    hands a kernel to a client: PUB drops what is sent before a subscriber joins, so a fast first
    cell could lose its status messages and its client would wait for them forever."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        kc.kernel_info()
        try:
            kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            continue
        for get in (kc.get_iopub_msg, kc.get_shell_msg):  # drain the nudges' messages
            while True:
                try:
                    get(timeout=0.2)
                except queue.Empty:
                    break
        return
    raise RuntimeError("no IOPub message in %d s of kernel_info requests" % TIMEOUT)


def main():
    jobs = json.load(sys.stdin)
    results = {}
    for job in jobs:
        km, kc = start_new_kernel(kernel_name="gpunotes")
        stdout, errors, at = "", [], 0
        try:
            nudge(kc)
            for at, cell in enumerate(job["cells"], 1):
                o, e = run_cell(km, kc, cell)
                stdout += o
                errors += e
                if e:
                    break
            results[job["id"]] = {"stdout": stdout, "errors": errors}
        except Exception as exc:  # a hung or dead kernel fails this list, not the run
            where = "cell %d of %d" % (at, len(job["cells"])) if at else "before the first cell"
            results[job["id"]] = {"stdout": stdout, "errors": errors + ["client: %r in %s" % (exc, where)]}
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
