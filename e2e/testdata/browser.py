"""Drive JupyterLab in Debian's chromium with playwright: open a notebook, pick the gpunotes
kernel, run all cells, check the rendered output, interrupt a `for {}` cell, check tab
completion, and take a screenshot.

Usage: GPUNOTES_E2E_TOKEN=TOKEN browser.py URL NOTEBOOK CHROMIUM PROFILE_DIR SCREENSHOT
  with the expectations as JSON in the environment variable GPUNOTES_E2E_EXPECT:
  {"selector": CSS of an element that must render in an output,
   "text": text that element must contain,
   "complete_prefix": "gpuarray.", "complete_member": "NewRandomState",
   "run_timeout_ms": 240000,
   "dashboard_link": true,  (start a local cluster in a new cell, click the Dashboard link of
                             its repr, and check that the live dashboard opens in a new tab)
   "shot_selector": CSS of an element that must render in an output before the screenshot}
Every wait has a timeout; the script exits non-zero with a message on the first failure.
"""
import json
import os
import sys
import time

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "testenv"))
import chromium as chromium_env  # noqa: E402  (internal/testenv/chromium.py)


def log(msg):
    print(f"[browser {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def main():
    url, notebook, chromium, profile, shot = sys.argv[1:6]
    expect = json.loads(os.environ["GPUNOTES_E2E_EXPECT"])
    run_timeout = int(expect.get("run_timeout_ms", 240000))
    with sync_playwright() as p:
        ctx = chromium_env.launch(p, chromium, profile, 1400, 1000)
        ctx.set_default_timeout(60000)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        page.on("pageerror", lambda e: log(f"page error: {e}"))
        try:
            run(page, url, notebook, expect, run_timeout, shot)
        except Exception:
            try:
                page.screenshot(path=shot + ".failed.png")
                log(f"screenshot of the failure: {shot}.failed.png")
            except Exception as e:  # the page may be gone
                log(f"no failure screenshot: {e}")
            raise
        finally:
            ctx.close()


def run(page, url, notebook, expect, run_timeout, shot):
    log(f"open {notebook}")
    # The token travels in the first page's URL; later requests carry the cookie it sets.
    token = os.environ["GPUNOTES_E2E_TOKEN"]
    page.goto(f"{url}/lab/tree/{notebook}?token={token}", wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook", timeout=90000)

    # The notebook names no kernel, so JupyterLab asks; pick "Go (gpunotes)".
    dialog = page.locator(".jp-Dialog")
    dialog.wait_for(timeout=60000)
    select = dialog.locator("select")
    labels = select.locator("option").all_inner_texts()
    log(f"kernel choices: {labels}")
    if "Go (gpunotes)" not in labels:
        raise SystemExit(f"'Go (gpunotes)' is not offered: {labels}")
    select.select_option(label="Go (gpunotes)")
    dialog.locator("button.jp-mod-accept").click()
    dialog.wait_for(state="detached", timeout=30000)
    wait_idle(page, 60000)
    kernel_name = page.locator(".jp-NotebookPanel-toolbar .jp-KernelName").first.inner_text()
    log(f"kernel: {kernel_name}")
    if "Go (gpunotes)" not in kernel_name:
        raise SystemExit(f"toolbar shows kernel {kernel_name!r}")

    # Hide the file browser so that the notebook fills the screenshot.
    page.locator(".jp-NotebookPanel").first.click()
    page.keyboard.press("Escape")
    page.keyboard.press("Control+b")

    if expect.get("no_run"):
        # An executed notebook, shown with the outputs it was saved with (a GPU machine's run).
        log("showing the saved outputs, running nothing")
        if expect.get("hide_code"):
            page.locator(".jp-NotebookPanel").first.click()
            menu(page, "View", "notebook:hide-all-cell-code")
            log("collapsed all code")
    else:
        log("run all cells")
        page.locator(".jp-NotebookPanel").first.click()
        menu(page, "Run", "runmenu:run-all")
        # Every code cell gets an execution count once it has run.
        t0 = time.time()
        page.wait_for_function(
            """() => {
                const cells = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell')];
                const prompts = cells.map(c => c.querySelector('.jp-InputPrompt')?.textContent || '');
                return cells.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p));
            }""",
            timeout=run_timeout,
        )
        wait_idle(page, run_timeout)
        log(f"all cells ran in {time.time() - t0:.1f}s")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
    tracebacks = [e for e in errors if "panic" in e or "Error" in e]
    if tracebacks:
        raise SystemExit(f"a cell failed: {tracebacks[:2]}")
    target = page.locator(f".jp-OutputArea-output {expect['selector']}").first
    target.wait_for(timeout=30000)
    # text_content: JupyterLab may not lay out cells scrolled out of view, and inner_text of
    # those is empty.
    text = target.text_content()
    if expect["text"] not in text:
        raise SystemExit(f"{expect['selector']} rendered without {expect['text']!r}: {text[:300]!r}")
    log(f"rendered {expect['selector']} with {expect['text']!r}")
    if expect.get("shot_selector"):
        page.locator(f".jp-OutputArea-output {expect['shot_selector']}").first.wait_for(timeout=30000)
        log(f"rendered {expect['shot_selector']}")
    target.scroll_into_view_if_needed()
    # JupyterLab lays out cells lazily: wait until the target is the element drawn at its own
    # centre, so the picture is not of a notebook still being laid out.
    target.evaluate(
        """el => new Promise(resolve => {
            const check = () => {
                const r = el.getBoundingClientRect();
                const at = document.elementFromPoint(r.left + r.width / 2, r.top + Math.min(r.height / 2, 20));
                if (r.height > 0 && at && (el === at || el.contains(at))) resolve(true);
                else requestAnimationFrame(check);
            };
            check();
        })"""
    )
    page.screenshot(path=shot, full_page=False)
    log(f"screenshot {shot}")

    # Interrupt: a new cell with `for {}`, then the toolbar's interrupt button.
    last = page.locator(".jp-Notebook .jp-Cell").last
    last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    editor = page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content")
    editor.click()
    page.keyboard.type("for {}")
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='busy']", timeout=30000)
    time.sleep(1.0)
    log("interrupt")
    page.locator("[data-command='notebook:interrupt-kernel']").first.click()
    wait_idle(page, 30000)
    out = page.locator(".jp-Notebook .jp-CodeCell").nth(-2).locator(".jp-OutputArea-output")
    out.first.wait_for(timeout=30000)
    got = " ".join(out.all_inner_texts())
    if "interrupt" not in got.lower():
        raise SystemExit(f"the interrupted cell shows {got[:300]!r}")
    log("the for {} cell was interrupted")

    # Tab completion in the empty cell Shift+Enter left below.
    prefix, member = expect["complete_prefix"], expect["complete_member"]
    editor = page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content")
    editor.click()
    page.keyboard.type(prefix)
    page.keyboard.press("Tab")
    completer = page.locator(".jp-Completer")
    completer.wait_for(state="visible", timeout=30000)
    items = completer.locator(".jp-Completer-item").all_inner_texts()
    log(f"completion of {prefix!r}: {len(items)} items, e.g. {items[:8]}")
    if not any(member in i for i in items):
        raise SystemExit(f"completion of {prefix!r} lacks {member}: {items}")
    page.keyboard.press("Escape")

    if expect.get("dashboard_link"):
        dashboard_link(page)
    log("ok")


def new_cell(page, source):
    """Adds a code cell below the last one, types source into it and runs it."""
    page.locator(".jp-Notebook .jp-Cell").last.click()
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    editor = page.locator(".jp-Notebook .jp-Cell").last.locator(".cm-content")
    editor.click()
    # insert_text, not type: the editor would indent or close brackets while typing.
    page.keyboard.insert_text(source)
    page.keyboard.press("Shift+Enter")
    wait_idle(page, 120000)
    return page.locator(".jp-Notebook .jp-CodeCell").nth(-2)


def dashboard_link(page):
    """A local cluster's repr links its dashboard, and the link opens it."""
    log("start a cluster and follow its dashboard link")
    cell = new_cell(page, "dashCluster, dashErr := cluster.NewLocalCUDA(cluster.Options{NWorkers: 1})\n"
                          "if dashErr != nil {\n\tpanic(dashErr)\n}\ndashCluster")
    row = cell.locator(".jp-OutputArea-output tr", has_text="Dashboard")
    row.wait_for(timeout=60000)
    link = row.locator("a")
    href = link.get_attribute("href")
    log(f"the repr links the dashboard at {href}")
    if not href or not href.startswith("http://127.0.0.1:"):
        raise SystemExit(f"dashboard link {href!r}, want one on loopback")
    with page.context.expect_page(timeout=30000) as opened:
        link.click()
    dash = opened.value
    dash.wait_for_load_state("domcontentloaded", timeout=30000)
    chromium_env.wait_for(dash, "document.querySelectorAll('#workers-table tbody tr').length === 1", 30)
    chromium_env.wait_for(dash, "document.getElementById('status').textContent.startsWith('live')", 30)
    log(f"the dashboard opened in a new tab at {dash.url}: {dash.title()!r}, status {dash.inner_text('#status')!r}")
    dash.close()
    out = new_cell(page, "fmt.Println(\"dashboard cluster closed:\", dashCluster.Close())")
    printed = out.locator(".jp-OutputArea-output", has_text="dashboard cluster closed:")
    printed.wait_for(timeout=60000)
    if "dashboard cluster closed: <nil>" not in printed.inner_text():
        raise SystemExit(f"closing the cluster printed {printed.inner_text()[:300]!r}")
    log("the cluster closed")


def wait_idle(page, timeout):
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout)


def menu(page, top, command):
    page.locator(".lm-MenuBar-item", has_text=top).first.click()
    page.locator(f".lm-Menu-item[data-command='{command}']").first.click()


if __name__ == "__main__":
    main()
