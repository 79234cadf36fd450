"""A live panel on 127.0.0.1 (werkzeug in a thread) and Debian's chromium under Playwright.

One browser for this folder's tests, closed before the other folders run (kept to the
session's end, its asyncio driver outlived later tests' loops and hung the end); one
context (cookies, storage) per test; each test's last page is saved as
artifacts/<test>.png.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from werkzeug.serving import make_server

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(autouse=True)
def chromium() -> Path:
    """Every test here needs Debian's chromium: without it they skip with one reason, or
    fail where it must be there (CI: HOSTCRAWL_REQUIRE_BROWSER=1)."""
    if not CHROMIUM.exists():
        why = f"browser tests: {CHROMIUM} not found (apt-get install chromium)"
        if os.environ.get("HOSTCRAWL_REQUIRE_BROWSER"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    return CHROMIUM


@contextmanager
def served_panel(database_url: str, **config) -> Iterator[str]:
    """The panel served over plain HTTP (so the session cookie is not Secure) in a thread,
    with `config` over the tests' own; yields its base URL."""
    from tests.unit.test_panel_support import panel_config
    from webpanel import create_app

    app = create_app(panel_config(database_url, SESSION_COOKIE_SECURE=False, **config))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="live-panel", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(timeout=10)


@pytest.fixture(scope="package")
def live_server(database_url):
    """The folder's panel (a module may serve its own, with its own settings)."""
    with served_panel(database_url) as url:
        yield url


@pytest.fixture(scope="package")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, live_server, request):
    context = browser.new_context(base_url=live_server)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    context.close()
