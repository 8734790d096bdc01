"""Widgets of gpunotes in JupyterLab (jupyterlab_widgets) in Debian's chromium: a slider
renders, keyboard steps on its handle reach the Go callback, a later cell sees the value, a
Go-side change moves the handle, and a page reload restores the widgets. It prints the slider
round trip (key press -> comm update -> Go callback -> label update -> repaint) as p50/p90.

Usage: GPUNOTES_E2E_TOKEN=TOKEN widgets.py URL NOTEBOOK CHROMIUM PROFILE_DIR SCREENSHOT
"""
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


IN_PAGE = """async (n) => {
  const h = document.querySelector('.widget-slider .noUi-handle');
  const lab = [...document.querySelectorAll('.widget-label')].find(e => e.textContent.startsWith('seen'));
  const times = [];
  for (let i = 0; i < n; i++) {
    const before = lab.textContent;
    const done = new Promise(res => {
      const mo = new MutationObserver(() => { if (lab.textContent !== before) { mo.disconnect(); res(); } });
      mo.observe(lab, {childList: true, characterData: true, subtree: true});
    });
    const t0 = performance.now();
    h.dispatchEvent(new KeyboardEvent('keydown', {key: 'ArrowRight', bubbles: true}));
    await done;
    times.push(performance.now() - t0);
  }
  return times;
}"""


def report(what, times):
    times = sorted(times)
    log(f"slider round trip ({what}) over {len(times)} steps: p50 {statistics.median(times):.1f} ms, "
        f"p90 {times[int(0.9 * len(times)) - 1]:.1f} ms, min {times[0]:.1f} ms, max {times[-1]:.1f} ms")


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

    if kernel != "Go (gpunotes)":
        # A peer kernel (ipykernel + ipywidgets): the same in-page round trip, nothing more.
        handle.focus()
        inpage = page.evaluate(IN_PAGE, STEPS)
        report(f"{kernel}, key press to label, in the page", inpage)
        print(f"PEER_ROUNDTRIP_P50_MS {statistics.median(inpage):.2f}", flush=True)
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
    inpage = page.evaluate(IN_PAGE, STEPS)
    report("key press to label, in the page", inpage)
    print(f"ROUNDTRIP_P50_MS {statistics.median(inpage):.2f}", flush=True)
    start += STEPS
    if round(float(handle.get_attribute("aria-valuenow"))) != start + STEPS:
        raise SystemExit("the in-page steps did not all reach the slider")

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
    src = ("pc, perr := cluster.NewLocalCUDA(cluster.Options{})\nif perr != nil {\n\tpanic(perr)\n}\n"
           "pp := pc.Panel()\ndisplay.Show(pp)\nprs := gpuarray.NewRandomState(2)\n"
           "for i := 0; i < 15; i++ {\n\tpx := prs.Normal(0, 1, gpuarray.Shape(3000, 3000), gpuarray.Chunks(300, 300))\n"
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
