"""Widgets of gpunotes in JupyterLab (jupyterlab_widgets) in Debian's chromium: a slider
renders, keyboard steps on its handle reach the Go callback, a later cell sees the value, a
Go-side change moves the handle, and a page reload restores the widgets. It prints the slider
round trip (key press -> comm update -> Go callback -> label update -> repaint) as p50/p90.

Usage: GPUNOTES_E2E_TOKEN=TOKEN widgets.py URL NOTEBOOK CHROMIUM PROFILE_DIR SCREENSHOT
"""
import json
import os
import statistics
import sys
import time

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "testenv"))
import chromium as chromium_env  # noqa: E402

STEPS = 30


def log(msg):
    print(f"[widgets {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main():
    url, notebook, chromium, profile, shot = sys.argv[1:6]
    with sync_playwright() as p:
        ctx = chromium_env.launch(p, chromium, profile, 1400, 1000)
        ctx.set_default_timeout(60000)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        page.on("pageerror", lambda e: log(f"page error: {e}"))
        page.add_init_script(WS_TAP)
        page.on("console", lambda m: log(f"console: {m.text}") if "widget" in m.text.lower() else None)
        try:
            run(page, url, notebook, shot)
        except BaseException:
            try:
                page.screenshot(path=shot + ".failed.png")
                log(f"screenshot of the failure: {shot}.failed.png")
            except Exception as e:
                log(f"no failure screenshot: {e}")
            raise
        finally:
            ctx.close()


def wait_idle(page, timeout=120000):
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout)


# WS_TAP is installed before the page's scripts: it keeps, for every kernel websocket
# frame, when it was sent or dispatched (performance.now()) and its header, so the in-page
# round trip can be split into the page's part, the server's and the kernel's. Frames are
# Jupyter's v1 websocket protocol (binary, offsets first) or the legacy JSON text.
WS_TAP = """(() => {
  const td = new TextDecoder();
  const decode = (d) => {
    try {
      if (typeof d === 'string') { const m = JSON.parse(d); return m; }
      const buf = d instanceof ArrayBuffer ? d : d.buffer.slice(d.byteOffset, d.byteOffset + d.byteLength);
      const dv = new DataView(buf);
      const n = Number(dv.getBigUint64(0, true));
      const offs = [];
      for (let i = 0; i < n; i++) offs.push(Number(dv.getBigUint64(8 * (i + 1), true)));
      const part = (i) => td.decode(new Uint8Array(buf, offs[i], offs[i + 1] - offs[i]));
      return {channel: part(0), header: JSON.parse(part(1)), parent_header: JSON.parse(part(2)),
              content: JSON.parse(part(4))};
    } catch (e) { return null; }
  };
  const log = window.__wsLog = [];
  const note = (dir, t, data) => {
    if (!window.__wsTap) return;
    const m = decode(data);
    if (!m || !m.header) return;
    const c = m.content || {};
    log.push({dir, t, type: m.header.msg_type, id: m.header.msg_id, date: m.header.date,
              parent: (m.parent_header || {}).msg_id, method: (c.data || {}).method,
              comm: c.comm_id, state: c.execution_state});
    const wake = window.__wsWake;
    window.__wsWake = null;
    if (wake) wake();
  };
  const WS = window.WebSocket;
  window.WebSocket = class extends WS {
    constructor(...a) {
      super(...a);
      // a listener added first runs before the page's own; event.timeStamp is when the
      // frame's event was made, before any listener ran
      this.addEventListener('message', (e) => note('in', e.timeStamp, e.data));
    }
    send(d) { note('out', performance.now(), d); return super.send(d); }
  };
})()"""

# IN_PAGE steps the slider n times inside the page, each step waiting for the label's change
# (a MutationObserver, no polling) and then for the idle whose parent is the step's update (the
# tap wakes it; the widget throttle holds the next update until that idle, so without the wait
# a step would time the one before it too). It returns for each step, in ms after the keydown:
# when the update left (ws send), when the kernel stamped its busy, echo, label update and idle
# (header dates, same clock), when those reached the page, and when the label changed.
IN_PAGE = """async (n) => {
  const h = document.querySelector('.widget-slider .noUi-handle');
  const lab = [...document.querySelectorAll('.widget-label')].find(e => e.textContent.startsWith('seen'));
  const kdate = (s) => {
    // ISO with microseconds: Date.parse keeps milliseconds only
    const m = /\\.(\\d+)/.exec(s || '');
    const base = Date.parse(s);
    const frac = m ? Number('0.' + m[1]) * 1000 - Math.floor(Number('0.' + m[1]) * 1000) : 0;
    return base + frac - performance.timeOrigin;
  };
  window.__wsTap = true;
  const steps = [];
  for (let i = 0; i < n; i++) {
    const before = lab.textContent;
    let tdom = 0;
    const done = new Promise(res => {
      const mo = new MutationObserver(() => {
        if (lab.textContent !== before) { tdom = performance.now(); mo.disconnect(); res(); }
      });
      mo.observe(lab, {childList: true, characterData: true, subtree: true});
    });
    const from = window.__wsLog.length;
    const t0 = performance.now();
    h.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
    await done;
    const sentOf = (log) => log.find(e => e.dir === 'out' && e.type === 'comm_msg' && e.method === 'update');
    const idleOf = (log, s) => s && log.find(e => e.dir === 'in' && e.parent === s.id && e.type === 'status' && e.state === 'idle');
    // a guard, not a pacing: an idle that never comes ends the wait, and the step says so
    let guard = false;
    const timer = setTimeout(() => { guard = true; const w = window.__wsWake; window.__wsWake = null; if (w) w(); }, 20000);
    for (;;) {
      const l = window.__wsLog.slice(from);
      if (guard || idleOf(l, sentOf(l))) break;
      await new Promise(res => { window.__wsWake = res; });
    }
    clearTimeout(timer);
    const log = window.__wsLog.slice(from);
    const sent = sentOf(log);
    const st = {total: tdom - t0};
    if (sent) {
      st.send = sent.t - t0;
      const kids = log.filter(e => e.dir === 'in' && e.parent === sent.id);
      const echo = kids.find(e => e.method === 'echo_update');
      const upd = kids.find(e => e.method === 'update' && e.comm !== sent.comm);
      const idle = kids.find(e => e.type === 'status' && e.state === 'idle');
      const busy = kids.find(e => e.type === 'status' && e.state === 'busy');
      if (busy) { st.kbusy = kdate(busy.date) - t0; st.busy = busy.t - t0; }
      if (echo) { st.kecho = kdate(echo.date) - t0; st.echo = echo.t - t0; }
      if (upd) { st.kupdate = kdate(upd.date) - t0; st.update = upd.t - t0; }
      if (idle) { st.kidle = kdate(idle.date) - t0; st.idle = idle.t - t0; st.rt = idle.t - sent.t; }
      // for the server's side (server_trace.py): the keydown's time and the messages' ids
      st._t0 = performance.timeOrigin + t0;
      st._ids = {sent: sent.id, busy: busy && busy.id, echo: echo && echo.id, update: upd && upd.id, idle: idle && idle.id};
    }
    steps.push(st);
  }
  window.__wsTap = false;
  return steps;
}"""


def server_stages(steps):
    """Adds to each step when jupyter_server passed its messages on (ms after the keydown), from
    the trace server_trace.py writes where GPUNOTES_E2E_SERVER_TRACE says: sin (the update
    left for the kernel), sbusy, secho, supdate, sidle (those left for the page)."""
    path = os.environ.get("GPUNOTES_E2E_SERVER_TRACE", "")
    recs = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line being written
                recs[(r["dir"], r["id"])] = r
    for s in steps:
        t0, ids = s.pop("_t0", None), s.pop("_ids", {})
        if t0 is None:
            continue
        for key, direction, name in (("sin", "in", "sent"), ("sbusy", "out", "busy"), ("secho", "out", "echo"),
                                     ("supdate", "out", "update"), ("sidle", "out", "idle")):
            r = recs.get((direction, ids.get(name)))
            if r is not None:
                s[key] = r["t1"] * 1000 - t0


def breakdown(what, steps):
    """Logs the median of each stage of the in-page steps, in ms after the keydown: send (the
    page sent the update), s* (jupyter_server passed a message on, when traced), k* (the kernel
    stamped it), and the bare names (it reached the page); total is the label's change."""
    server_stages(steps)
    keys = ["send", "sin", "kbusy", "sbusy", "busy", "kecho", "secho", "echo", "kupdate", "supdate", "update", "total",
            "kidle", "sidle", "idle"]
    parts = []
    for k in keys:
        v = [s[k] for s in steps if k in s]
        if v:
            parts.append(f"{k} {statistics.median(v):.1f}")
    log(f"stages ({what}), medians in ms after the keydown: " + ", ".join(parts))


def report(what, times):
    times = sorted(times)
    log(f"slider round trip ({what}) over {len(times)} steps: p50 {statistics.median(times):.1f} ms, "
        f"p90 {times[int(0.9 * len(times)) - 1]:.1f} ms, min {times[0]:.1f} ms, max {times[-1]:.1f} ms")


def idle_round_trips(steps):
    """The update-to-idle times of the in-page steps; every step's update must have been sent
    and answered with an idle whose parent it is (the widget throttle relies on it)."""
    missing = [i for i, s in enumerate(steps) if "rt" not in s]
    if missing:
        raise SystemExit(f"steps {missing} of {len(steps)}: no update sent or no idle with it as parent")
    return [s["rt"] for s in steps]


def wait_handle(page, value, timeout):
    """Waits until the slider's handle says value (noUiSlider writes "77.0")."""
    page.wait_for_function(
        "v => [...document.querySelectorAll('.widget-slider .noUi-handle')].some(h => parseFloat(h.getAttribute('aria-valuenow')) === v)",
        arg=value, timeout=timeout)


def slider_rendered(page):
    handle = page.locator(".jp-OutputArea-output .widget-slider .noUi-handle").first
    handle.wait_for(timeout=60000)
    loading = page.locator(".jp-OutputArea-output", has_text="Loading widget...")
    if loading.count():
        raise SystemExit(f"{loading.count()} outputs still say 'Loading widget...'")
    return handle


def new_cell(page, source):
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    editor = page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content")
    editor.click()
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")
    wait_idle(page)
    return page.locator(".jp-Notebook .jp-CodeCell").nth(-2)


def run(page, url, notebook, shot):
    kernel = os.environ.get("GPUNOTES_E2E_KERNEL", "Go (gpunotes)")
    # a tag for the figures of a second server (GPUNOTES_E2E_TAG=nodelay: TCP_NODELAY on)
    tag = os.environ.get("GPUNOTES_E2E_TAG", "")
    measure_only = os.environ.get("GPUNOTES_E2E_MEASURE_ONLY") == "1"
    pre = tag.upper() + "_" if tag else ""
    kernel_tag = f"{kernel}, {tag}" if tag else kernel
    token = os.environ["GPUNOTES_E2E_TOKEN"]
    # A workspace of its own, so that another run's open tabs are not restored beside it.
    ws = os.path.splitext(os.path.basename(notebook))[0]
    page.goto(f"{url}/lab/workspaces/{ws}/tree/{notebook}?token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook", timeout=90000)
    # The notebook names no kernel, so JupyterLab asks; pick "Go (gpunotes)".
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=60000)
    dialog.locator("select").select_option(label=kernel)
    dialog.locator("button.jp-mod-accept").click()
    dialog.wait_for(state="detached", timeout=30000)
    wait_idle(page, 90000)
    page.locator(".jp-NotebookPanel").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+b")
    log("run all cells")
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item[data-command='runmenu:run-all']").first.click()
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
                 .every(p => /\\[\\d+\\]/.test(p.textContent))""", timeout=240000)
    wait_idle(page)
    handle = slider_rendered(page)
    start = round(float(handle.get_attribute("aria-valuenow")))
    log(f"the slider rendered at {start}")
    label = page.locator(".jp-OutputArea-output .widget-label", has_text="seen").first
    label.wait_for(timeout=60000)

    if kernel == "Go (gpunotes)":
        # The captured print is in the Output widget, not in the cell's own stream output.
        page.locator(".widget-output", has_text="captured in the page").first.wait_for(timeout=60000)
        cell = page.locator(".jp-Notebook .jp-CodeCell").nth(2)
        outside = cell.evaluate("""c => [...c.querySelectorAll(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")]
                                   .filter(e => !e.closest('.widget-output')).length""")
        if outside:
            raise SystemExit("the captured print also reached the cell's stdout")
        log("the Output widget shows the captured print")

    if kernel != "Go (gpunotes)":
        # A peer kernel (ipykernel + ipywidgets): the same in-page round trip, nothing more.
        handle.focus()
        steps = page.evaluate(IN_PAGE, STEPS)
        inpage = [s["total"] for s in steps]
        report(f"{kernel_tag}, key press to label, in the page", inpage)
        report(f"{kernel_tag}, update sent to its idle, in the page", idle_round_trips(steps))
        breakdown(kernel_tag, steps)
        print(f"{pre}PEER_ROUNDTRIP_P50_MS {statistics.median(inpage):.2f}", flush=True)
        return

    # Keyboard steps: each waits for the Go callback's label update.
    handle.focus()
    times = []
    for i in range(1, STEPS + 1):
        want = f"seen {start + i}"
        t0 = page.evaluate("performance.now()")
        page.keyboard.press("ArrowRight")
        page.wait_for_function(
            "want => [...document.querySelectorAll('.widget-label')].some(e => e.textContent === want)",
            arg=want, timeout=60000, polling="raf")
        times.append(page.evaluate("performance.now()") - t0)
    now = round(float(handle.get_attribute("aria-valuenow")))
    if now != start + STEPS:
        raise SystemExit(f"the handle is at {now} after {STEPS} steps from {start}")
    report("key press to label, through playwright", times)
    # The same round trip timed inside the page, without playwright's own round trips: a
    # keydown on the handle, the comm update, the Go callback, its label update arriving in
    # the DOM (a MutationObserver), one step after the other.
    steps = page.evaluate(IN_PAGE, STEPS)
    inpage = [s["total"] for s in steps]
    report(f"{kernel_tag}, key press to label, in the page", inpage)
    report(f"{kernel_tag}, update sent to its idle, in the page", idle_round_trips(steps))
    breakdown(kernel_tag, steps)
    print(f"{pre}ROUNDTRIP_P50_MS {statistics.median(inpage):.2f}", flush=True)
    start += STEPS
    if round(float(handle.get_attribute("aria-valuenow"))) != start + STEPS:
        raise SystemExit("the in-page steps did not all reach the slider")
    if measure_only:
        return

    out = new_cell(page, "seen")
    got = out.locator(".jp-OutputArea-output").first.inner_text()
    if got.strip() != str(start + STEPS):
        raise SystemExit(f"a later cell sees seen = {got!r}, want {start + STEPS}")
    log(f"a later cell sees {got.strip()}")

    new_cell(page, "s.SetValue(77)")
    wait_handle(page, 77, 60000)
    log("a Go-side SetValue(77) moved the handle")

    # Save, reload, and every widget comes back from the kernel.
    page.keyboard.press("Control+s")
    page.wait_for_timeout(500)
    page.wait_for_function("() => !document.title.startsWith('*') && !document.querySelector('.jp-mod-dirty')",
                           timeout=60000)
    views = page.locator(".jp-OutputArea-output .widget-slider").count()
    log(f"reload ({views} sliders shown)")
    page.reload(wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook", timeout=90000)
    wait_handle(page, 77, 90000)
    slider_rendered(page)
    label = page.locator(".jp-OutputArea-output .widget-label", has_text="seen").first
    label.wait_for(timeout=60000)
    if page.locator(".jp-OutputArea-output .widget-slider").count() != views:
        raise SystemExit("the reload lost sliders")
    log(f"after the reload: the slider at 77, label {label.inner_text()!r}")
    # and it still talks to Go
    handle = page.locator(".widget-slider .noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_function("() => [...document.querySelectorAll('.widget-label')].some(e => e.textContent === 'seen 76')",
                           timeout=60000)
    log("after the reload a step still reaches Go")

    # The cluster panel (an anywidget-form widget) updates while a computation runs.
    # The computation repeats until this script has seen the panel redraw (it writes
    # panel-stop through the server), so a fast machine cannot end it before the panel drew.
    src = ("import \"os\"\npc, perr := cluster.NewLocalCUDA(cluster.Options{})\nif perr != nil {\n\tpanic(perr)\n}\n"
           "pp := pc.Panel()\ndisplay.Show(pp)\nprs := gpuarray.NewRandomState(2)\n"
           "for i := 0; i < 2000; i++ {\n\tif _, err := os.Stat(\"panel-stop\"); err == nil {\n\t\tbreak\n\t}\n"
           "\tpx := prs.Normal(0, 1, gpuarray.Shape(3000, 3000), gpuarray.Chunks(300, 300))\n"
           "\tif _, err := pc.Compute(px.Mul(px).Sum()).Result(display.Context()); err != nil {\n\t\tpanic(err)\n\t}\n}\n"
           "fmt.Println(\"panel computation done\")")
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content").click()
    page.keyboard.insert_text(src)
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(".gpunotes-panel .panel-worker", timeout=120000)
    workers = page.locator(".gpunotes-panel .panel-worker").count()
    seen = set()
    deadline = time.time() + 120
    while len(seen) < 3 and time.time() < deadline:
        busy = page.locator(".jp-Notebook-ExecutionIndicator[data-status='busy']").count() > 0
        if not busy:
            break
        html = page.locator(".gpunotes-panel").first.inner_html()
        if "panel-task" in html:
            seen.add(html)
        time.sleep(0.3)
    stop = page.request.put(f"{url}/api/contents/panel-stop?token={token}",
                            data={"type": "file", "format": "text", "content": ""})
    if not stop.ok:
        raise SystemExit(f"could not write panel-stop: {stop.status} {stop.text()}")
    if len(seen) < 3:
        raise SystemExit(f"the panel showed {len(seen)} different task streams while the computation ran")
    log(f"the panel drew {workers} workers and {len(seen)} different task streams during the computation")
    # The panel redraws while work runs, so the element found can be replaced before the
    # scroll reaches it ("not attached to the DOM", seen on a busy machine): find it again.
    for attempt in range(10):
        try:
            page.locator(".gpunotes-panel").first.scroll_into_view_if_needed(timeout=10000)
            break
        except Exception as e:  # playwright's Error; the screenshot only frames the panel
            if attempt == 9:
                log(f"could not scroll to the panel for the screenshot: {e}")
            time.sleep(0.2)
    page.screenshot(path=shot, full_page=False)
    wait_idle(page, 240000)
    done = page.locator(".jp-OutputArea-output", has_text="panel computation done")
    done.first.wait_for(timeout=60000)
    new_cell(page, "pp.Close()\nfmt.Println(pc.Close())")
    log("ok")


if __name__ == "__main__":
    main()
