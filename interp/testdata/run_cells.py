"""Runs cell lists through the installed gpunotes kernel with jupyter_client, one fresh kernel
per list. Reads JSON [{"id": ..., "cells": [...]}] on stdin; writes JSON {id: {"stdout": ...,
"errors": [...]}} on stdout."""
import json
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


def main():
    jobs = json.load(sys.stdin)
    results = {}
    for job in jobs:
        km, kc = start_new_kernel(kernel_name="gpunotes")
        try:
            stdout, errors = "", []
            for cell in job["cells"]:
                o, e = run_cell(kc, cell)
                stdout += o
                errors += e
                if e:
                    break
            results[job["id"]] = {"stdout": stdout, "errors": errors}
        except Exception as exc:  # a hung or dead kernel fails this list, not the run
            results[job["id"]] = {"stdout": "", "errors": ["client: %r" % exc]}
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
