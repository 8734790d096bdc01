"""Widget update round trip through jupyter_client: a comm_msg update of a slider -> the
kernel's callback (which sets a label) -> the idle whose parent is that update, for gpunotes and
for ipykernel + ipywidgets side by side, with and without a callback.

Usage: widget_roundtrip.py [N]   (the gpunotes kernelspec installed, ipykernel importable)
"""
import statistics
import sys
import time

from jupyter_client.manager import start_new_kernel

SETUP = {
    "gpunotes": ('import "fmt"\ns := widget.NewIntSlider(0, 0, 100000)\nt := widget.NewIntSlider(0, 0, 100000)\n'
                 'lbl := widget.NewLabel("")\nfunc on(c widget.Change) { lbl.SetValue(fmt.Sprint(c.Int())) }\n'
                 's.Observe("value", on)', "s.ModelID()", "t.ModelID()"),
    "python3": ("import ipywidgets as w\ns = w.IntSlider(0, 0, 100000)\nt = w.IntSlider(0, 0, 100000)\n"
                "lbl = w.Label('')\ns.observe(lambda c: setattr(lbl, 'value', str(c['new'])), 'value')",
                "s.model_id", "t.model_id"),
}


def result(kc, code):
    mid = kc.execute(code)
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if m["parent_header"].get("msg_id") == mid and m["msg_type"] == "execute_result":
            return m["content"]["data"]["text/plain"].strip("'\"")


def roundtrips(kc, cid, n):
    ts = []
    for i in range(1, n + 1):
        msg = kc.session.msg("comm_msg", {"comm_id": cid, "data": {"method": "update", "state": {"value": i}, "buffer_paths": []}})
        t0 = time.perf_counter()
        kc.shell_channel.send(msg)
        while True:
            m = kc.get_iopub_msg(timeout=60)
            if (m["parent_header"].get("msg_id") == msg["header"]["msg_id"] and m["msg_type"] == "status"
                    and m["content"]["execution_state"] == "idle"):
                break
        ts.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ts)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    out = {}
    for kernel, (setup, sid, tid) in SETUP.items():
        km, kc = start_new_kernel(kernel_name=kernel)
        try:
            kc.execute_interactive(setup, timeout=60)
            s, t = result(kc, sid), result(kc, tid)
            roundtrips(kc, s, 20)  # warm up
            out[kernel] = (roundtrips(kc, s, n), roundtrips(kc, t, n))
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
    for kernel, (cb, plain) in out.items():
        print(f"{kernel:9s} update -> idle p50: {cb:6.2f} ms with a callback setting a label, {plain:6.2f} ms without")
    g, p = out["gpunotes"], out["python3"]
    print(f"ipykernel / gpunotes: {p[0] / g[0]:.2f}x with a callback, {p[1] / g[1]:.2f}x without")


if __name__ == "__main__":
    main()
