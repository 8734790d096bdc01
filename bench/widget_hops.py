"""Where a widget round trip goes between the page and the kernel: slider updates (comm_msg
update -> the kernel's callback setting a label -> idle) through jupyter_server's kernel
websocket (protocol v1.kernel.websocket.jupyter.org), from two clients that do nothing else:
a Python websocket client (server + kernel) and a bare Chromium page with its own websocket
(adds Chromium's network and event loop, without JupyterLab or ipywidgets). With
bench/widget_roundtrip.py (the kernel alone, over ZMQ) and e2e's TestBrowserWidgets (the
JupyterLab page), it splits the page's round trip by hop. gpunotes and ipykernel take turns.

Usage: widget_hops.py --gpunotes bin/gpunotes [--chromium PATH (default $GPUNOTES_CHROMIUM)] [--n 200] [--no-nodelay]
(run with the test virtualenv's python: jupyterlab, ipywidgets, playwright).
"""
import argparse
import asyncio
import datetime
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1, serialize_msg_to_ws_v1
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

HERE = os.path.dirname(os.path.abspath(__file__))
SETUP = {
    "gpunotes": ['import "fmt"',
                 's := widget.NewIntSlider(10, 0, 1000000)\nlbl := widget.NewLabel("seen 10")\n'
                 'func onSlide(c widget.Change) { lbl.SetValue(fmt.Sprint("seen ", c.Int())) }\n'
                 's.Observe("value", onSlide)\nwidget.NewVBox(s, lbl)'],
    "python3": ["import ipywidgets as w\ns = w.IntSlider(10, 0, 1000000)\nlbl = w.Label('seen 10')\n"
                "s.observe(lambda c: setattr(lbl, 'value', f\"seen {c['new']}\"), 'value')\nw.VBox([s, lbl])"],
}
ORDER = ["busy", "echo_update", "update@label", "idle"]


def header(session, mtype):
    return {"msg_id": uuid.uuid4().hex, "msg_type": mtype, "session": session, "username": "bench",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "version": "5.3"}


def pack(h, content):
    return serialize_msg_to_ws_v1([json.dumps(h).encode(), b"{}", b"{}", json.dumps(content).encode()], "shell")


def name_of(h, c, slider):
    if h["msg_type"] == "status":
        return c["execution_state"]
    if h["msg_type"] == "comm_msg":
        return c["data"]["method"] + ("" if c["comm_id"] == slider else "@label")
    return h["msg_type"]


async def open_kernel(url, token, kernel):
    """Starts kernel, shows the slider and label, and returns the kernel id, the slider's comm
    id, and an open websocket with its reader queue."""
    r = await AsyncHTTPClient().fetch(f"{url}/api/kernels?token={token}", method="POST", body=json.dumps({"name": kernel}))
    kid = json.loads(r.body)["id"]
    session = uuid.uuid4().hex
    ws = await websocket_connect(HTTPRequest(f"ws{url[4:]}/api/kernels/{kid}/channels?token={token}&session_id={session}"),
                                 subprotocols=["v1.kernel.websocket.jupyter.org"])
    q = asyncio.Queue()

    async def reader():
        while (m := await ws.read_message()) is not None:
            t = time.perf_counter()
            _, parts = deserialize_msg_from_ws_v1(m)
            await q.put((t, json.loads(parts[0]), json.loads(parts[1]), json.loads(parts[3])))
    task = asyncio.create_task(reader())
    while True:  # the kernel answers once it is up
        h = header(session, "kernel_info_request")
        await ws.write_message(pack(h, {}), binary=True)
        try:
            while (await asyncio.wait_for(q.get(), 2))[1]["msg_type"] != "kernel_info_reply":
                pass
            break
        except asyncio.TimeoutError:
            continue
    slider = None
    for code in SETUP[kernel]:
        h = header(session, "execute_request")
        await ws.write_message(pack(h, {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                                        "allow_stdin": False, "stop_on_error": True}), binary=True)
        while True:
            _, mh, p, c = await q.get()
            if mh["msg_type"] == "comm_open" and c["data"]["state"].get("_model_name") == "IntSliderModel":
                slider = c["comm_id"]
            if mh["msg_type"] == "status" and c["execution_state"] == "idle" and p.get("msg_id") == h["msg_id"]:
                break
    return kid, slider, session, ws, q, task


async def python_client(url, token, kernel, n):
    kid, slider, session, ws, q, task = await open_kernel(url, token, kernel)
    rows = []
    for i in range(n):
        h = header(session, "comm_msg")
        b = pack(h, {"comm_id": slider, "data": {"method": "update", "state": {"value": 11 + i}, "buffer_paths": []}})
        t0 = time.perf_counter()
        await ws.write_message(b, binary=True)
        row, seq = {}, []
        while "idle" not in row:
            t, mh, p, c = await q.get()
            if p.get("msg_id") == h["msg_id"]:
                nm = name_of(mh, c, slider)
                row[nm] = (t - t0) * 1000
                seq.append(nm)
        if seq != ORDER:
            raise SystemExit(f"{kernel}: messages of an update {seq}, want {ORDER}")
        rows.append(row)
    ws.close()
    task.cancel()
    await AsyncHTTPClient().fetch(f"{url}/api/kernels/{kid}?token={token}", method="DELETE")
    return rows


BARE = r"""async ([wsurl, slider, n]) => {
  const enc = new TextEncoder(), dec = new TextDecoder(), session = crypto.randomUUID();
  const pack = (parts) => {
    const bufs = ['shell', ...parts].map(s => enc.encode(s));
    const offs = [8 * (2 + bufs.length)];
    for (const b of bufs) offs.push(offs[offs.length - 1] + b.length);
    const out = new Uint8Array(offs[offs.length - 1]), dv = new DataView(out.buffer);
    dv.setBigUint64(0, BigInt(offs.length), true);
    offs.forEach((o, i) => dv.setBigUint64(8 * (i + 1), BigInt(o), true));
    bufs.reduce((p, b) => { out.set(b, p); return p + b.length; }, offs[0]);
    return out.buffer;
  };
  const unpack = (buf) => {
    const dv = new DataView(buf), k = Number(dv.getBigUint64(0, true)), offs = [];
    for (let i = 0; i < k; i++) offs.push(Number(dv.getBigUint64(8 * (i + 1), true)));
    const part = (i) => JSON.parse(dec.decode(new Uint8Array(buf, offs[i], offs[i + 1] - offs[i])));
    return {header: part(1), parent: part(2), content: part(4)};
  };
  const ws = new WebSocket(wsurl + '&session_id=' + session, 'v1.kernel.websocket.jupyter.org');
  ws.binaryType = 'arraybuffer';
  await new Promise((ok, fail) => { ws.onopen = ok; ws.onerror = () => fail(new Error('websocket error')); });
  let on = null;
  ws.onmessage = (e) => on && on(e.timeStamp, unpack(e.data));
  const rows = [];
  for (let i = 0; i < n; i++) {
    const id = crypto.randomUUID(), row = {}, seq = [];
    const h = {msg_id: id, msg_type: 'comm_msg', session, username: 'bench', date: new Date().toISOString(), version: '5.3'};
    const c = {comm_id: slider, data: {method: 'update', state: {value: 11 + i}, buffer_paths: []}};
    let t0 = 0;
    const done = new Promise(res => { on = (t, m) => {
      if (m.parent.msg_id !== id) return;
      let nm = m.header.msg_type === 'status' ? m.content.execution_state : m.header.msg_type;
      if (m.header.msg_type === 'comm_msg') nm = m.content.data.method + (m.content.comm_id === slider ? '' : '@label');
      row[nm] = t - t0; seq.push(nm);
      if (nm === 'idle') res();
    }; });
    t0 = performance.now();
    ws.send(pack([JSON.stringify(h), '{}', '{}', JSON.stringify(c)]));
    await done;
    row.seq = seq.join(',');
    rows.push(row);
  }
  ws.close();
  return rows;
}"""


def bare_page(url, token, kernel, n, chromium, profile):
    sys.path.insert(0, os.path.join(HERE, "..", "internal", "testenv"))
    import chromium as chromium_env
    from playwright.sync_api import sync_playwright
    async def setup():
        kid, slider, _, ws, _, task = await open_kernel(url, token, kernel)
        ws.close()
        task.cancel()
        return kid, slider
    kid, slider = asyncio.run(setup())
    with sync_playwright() as p:
        ctx = chromium_env.launch(p, chromium, profile, 800, 600)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        # a static file of the server: same origin, and no connect-src policy (the API's has one)
        page.goto(f"{url}/static/favicons/favicon.ico")
        rows = page.evaluate(BARE, [f"ws{url[4:]}/api/kernels/{kid}/channels?token={token}", slider, n])
        ctx.close()
    urllib.request.urlopen(urllib.request.Request(f"{url}/api/kernels/{kid}?token={token}", method="DELETE"))
    for r in rows:
        if r.pop("seq") != ",".join(ORDER):
            raise SystemExit(f"{kernel}: a bare page's update got messages out of order")
    return rows


def summary(rows):
    rows = rows[max(5, len(rows) // 10):]  # warm-up left out
    return {k: statistics.median(r[k] for r in rows) for k in ORDER}


def start_server(gpunotes, nodelay, tmp):
    env = dict(os.environ, JUPYTER_DATA_DIR=f"{tmp}/data", JUPYTER_RUNTIME_DIR=f"{tmp}/rt", JUPYTER_CONFIG_DIR=f"{tmp}/cfg",
               JUPYTER_PLATFORM_DIRS="1", GPUNOTES_HISTORY=f"{tmp}/history.jsonl", HOME=f"{tmp}/home")
    for d in ("cfg", "root", "home"):
        os.makedirs(f"{tmp}/{d}", exist_ok=True)
    if nodelay:
        with open(f"{tmp}/cfg/jupyter_server_config.py", "w") as f:
            f.write(f"import sys\nsys.path.insert(0, {os.path.join(HERE, '..', 'deploy', 'jupyter')!r})\n"
                    "import gpunotes_nodelay\ngpunotes_nodelay.configure(c)\n")
    subprocess.run([gpunotes, "install"], env=env, check=True, capture_output=True)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    token = uuid.uuid4().hex
    srv = subprocess.Popen([sys.executable, "-m", "jupyter", "server", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                            "--ServerApp.port_retries=0", "--allow-root", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={tmp}/root"],
                           env=env, stdout=open(f"{tmp}/server.log", "w"), stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
            return srv, url, token
        except OSError:
            time.sleep(0.25)
    srv.kill()
    raise SystemExit("jupyter server did not start:\n" + open(f"{tmp}/server.log").read())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpunotes", required=True)
    ap.add_argument("--chromium", default=os.environ.get("GPUNOTES_CHROMIUM") or shutil.which("chromium") or "chromium")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--no-nodelay", action="store_true", help="leave jupyter_server's websockets as they are")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        srv, url, token = start_server(os.path.abspath(a.gpunotes), not a.no_nodelay, tmp)
        try:
            out = []
            for kernel in ("gpunotes", "python3"):
                load = os.getloadavg()[0]
                py = summary(asyncio.run(python_client(url, token, kernel, a.n)))
                page = summary(bare_page(url, token, kernel, a.n, a.chromium, f"{tmp}/profile-{kernel}"))
                out.append((kernel, load, os.getloadavg()[0], py, page))
        finally:
            srv.terminate()
            srv.wait(10)
    print(f"jupyter_server {'with' if not a.no_nodelay else 'without'} TCP_NODELAY; {a.n} updates each; medians in ms after the update was sent")
    print("| kernel | load before / after | client | busy | echo_update | label update | idle |")
    print("|---|---|---|---|---|---|---|")
    for kernel, l0, l1, py, page in out:
        for client, r in (("Python websocket", py), ("bare Chromium page", page)):
            print(f"| {kernel} | {l0:.2f} / {l1:.2f} | {client} | " + " | ".join(f"{r[k]:.2f}" for k in ORDER) + " |")


if __name__ == "__main__":
    main()
