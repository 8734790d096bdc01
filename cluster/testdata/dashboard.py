"""Open the cluster dashboard in Debian's chromium with playwright and check that it is live:
the worker table lists the expected workers, its Done column and the cluster's done count grow
while tasks run, the task stream draws tasks and the plot draws one series per worker.

Usage: dashboard.py URL CHROMIUM PROFILE_DIR SCREENSHOT NWORKERS
Every wait has a timeout; the script exits non-zero with a message on the first failure.
"""
import os
import sys
import time

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "internal", "testenv"))
import chromium as chromium_env  # noqa: E402  (internal/testenv/chromium.py)


def log(msg):
    print(f"[dashboard {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def done_counts(page):
    cells = page.query_selector_all('#workers-table tbody td[data-col="done"]')
    per_worker = [int(c.inner_text()) for c in cells]
    total = int(page.inner_text('#cluster-table [data-key="done"]'))
    return per_worker, total


def main():
    url, chromium, profile, shot, nworkers = sys.argv[1:6]
    nworkers = int(nworkers)
    with sync_playwright() as p:
        ctx = chromium_env.launch(p, chromium, profile, 1100, 900)
        page = ctx.pages[0] if ctx.pages else ctx.new_page()
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        chromium_env.wait_for(page, f"document.querySelectorAll('#workers-table tbody tr').length === {nworkers}", 30)
        names = [r.get_attribute("data-worker") for r in page.query_selector_all("#workers-table tbody tr")]
        log(f"workers: {names}")
        first, first_total = done_counts(page)
        log(f"done per worker {first}, cluster {first_total}")
        deadline = time.time() + 60
        while True:
            now, total = done_counts(page)
            if sum(now) >= sum(first) + 6 and total >= first_total + 6 and all(n > 0 for n in now):
                break
            if time.time() > deadline:
                raise SystemExit(f"tables did not update: done per worker {first} -> {now}, cluster {first_total} -> {total}")
            time.sleep(0.25)
        log(f"done per worker now {now}, cluster {total}")
        chromium_env.wait_for(page, "document.querySelectorAll('#taskstream rect.task').length >= 3", 30)
        n_rects = len(page.query_selector_all("#taskstream rect.task"))
        chromium_env.wait_for(page, f"document.querySelectorAll('#utilplot path.series').length === {nworkers}", 30)
        n_series = len(page.query_selector_all("#memplot path.series"))
        log(f"task stream: {n_rects} tasks; plot: {n_series} series")
        shuffle = [c.inner_text() for c in page.query_selector_all('#workers-table tbody td[data-col="shuffle"]')]
        if len(shuffle) != nworkers or not all(" / " in c for c in shuffle):
            raise SystemExit(f"shuffle cells (sent / received) {shuffle}, want one per worker")
        log(f"shuffle sent / received: {shuffle}")
        status = page.inner_text("#status")
        if not status.startswith("live"):
            raise SystemExit(f"status says {status!r}")
        page.screenshot(path=shot, full_page=True)
        foreign = [u for u in requests if not u.startswith(url.split("?")[0].rsplit("/", 1)[0])]
        if foreign:
            raise SystemExit(f"the page loaded from elsewhere: {foreign[:5]}")
        if errors:
            raise SystemExit(f"page errors: {errors}")
        ctx.close()
    log("ok")


if __name__ == "__main__":
    main()
