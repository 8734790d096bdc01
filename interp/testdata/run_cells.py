"""Runs cell lists through the installed gpunotes kernel with jupyter_client, one fresh kernel
per list. Reads JSON [{"id": ..., "cells": [...]}] on stdin; writes JSON {id: {"stdout": ...,
"errors": [...]}} on stdout."""
import json
import queue
import sys

from jupyter_client.manager import start_new_kernel

TIMEOUT = 60


def run_cell(kc, code):
    msg_id = kc.execute(code)
    out, errors = [], []
    while True:
        m = kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        t, c = m["msg_type"], m["content"]
        if t == "stream" and c["name"] == "stdout":
            out.append(c["text"])
        elif t == "error":
            errors.append(c["ename"] + ": " + c["evalue"])
        elif t == "status" and c["execution_state"] == "idle":
            break
    kc.get_shell_msg(timeout=TIMEOUT)
    return "".join(out), errors


def nudge(kc):
    """Waits until the IOPub subscription receives messages, as jupyter_server does before it
    hands a kernel to a client: PUB drops what is sent before a subscriber joins, so a fast first
    cell could lose its status messages and its client would wait for them forever."""
    for _ in range(50):
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
    raise RuntimeError("no IOPub message after 50 kernel_info requests")


def main():
    jobs = json.load(sys.stdin)
    results = {}
    for job in jobs:
        km, kc = start_new_kernel(kernel_name="gpunotes")
        stdout, errors, at = "", [], 0
        try:
            nudge(kc)
            for at, cell in enumerate(job["cells"], 1):
                o, e = run_cell(kc, cell)
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
