"""Launches Debian's chromium for the browser tests (cluster/testdata/dashboard.py,
e2e/testdata/browser.py), headless, with the flags a container without a display, GPU or
network needs. The scripts import it from internal/testenv beside the Go package that finds
chromium for them.
"""
import time

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def launch(playwright, chromium, profile, width, height):
    """Returns a persistent headless chromium context with a width x height viewport."""
    return playwright.chromium.launch_persistent_context(
        profile,
        executable_path=chromium,
        headless=True,
        args=FLAGS,
        viewport={"width": width, "height": height},
        timeout=60000,
    )


def wait_for(page, expr, timeout):
    """Polls the JavaScript expression expr in page until it is true, timeout seconds at most.
    Not page.wait_for_function: when its first check fails it polls by eval inside the page,
    which a page whose Content Security Policy has no 'unsafe-eval' (the cluster dashboard)
    refuses, so it failed whenever the page was slower than the first check; page.evaluate
    runs outside the page's policy."""
    deadline = time.time() + timeout
    while not page.evaluate(expr):
        if time.time() > deadline:
            raise SystemExit(f"waited {timeout} s for {expr}")
        time.sleep(0.1)
