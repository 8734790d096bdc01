"""Launches Debian's chromium for the browser tests (cluster/testdata/dashboard.py,
e2e/testdata/browser.py), headless, with the flags a container without a display, GPU or
network needs. The scripts import it from internal/testenv beside the Go package that finds
chromium for them.
"""

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
