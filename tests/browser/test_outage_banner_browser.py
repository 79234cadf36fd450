"""The outage banner in a real browser, from a real crawl whose resolver is silent: it
names the failing layer (DNS), its top error and the settings to check, on every page,
and reads whole at 1280 and 420 px (artifacts/outage_banner_<px>.png)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from crawler.db.crawl import queue
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_roots_browser import log_in
from tests.e2e.conftest import CrawlerProcess, crawl_settings
from tests.fakeweb import World
from tests.waiting import wait_until

pytest_plugins = ["tests.unit.test_panel_support"]

# Three roots: with no host answered yet, one root failing is no outage (its own trouble).
NAMES = [f"n{i}.quiet{i}.test" for i in range(3)]


def a_silent_resolver(page: Page, db, fakeweb_factory, width: int, names=NAMES):
    """`names` seeded, their sites served but the resolver silent; the page at `width`:
    the web."""
    page.set_viewport_size({"width": width, "height": 900})
    world = World()
    for name in names:
        world.site(name)
    web = fakeweb_factory(world)
    web.set_dns_silent(True)
    queue.seed(db, names)
    return web


def banner_text(page: Page, path: str) -> str:
    """The banner's text on `path`, freshly loaded ("" while there is none)."""
    page.goto(path)
    banner = page.locator("#world-silence")
    return banner.inner_text() if banner.count() else ""


@pytest.mark.parametrize("width", [1280, 420])
def test_the_banner_names_dns_when_the_resolver_is_silent(
    page: Page, db, operators, fakeweb_factory, tmp_path, width
):
    web = a_silent_resolver(page, db, fakeweb_factory, width)
    log_in(page, "/")
    assert banner_text(page, "/") == ""  # the world has not been asked yet

    settings = crawl_settings(web, CLOSE_WHEN_DRAINED=0, RETRY_TIMES=0)
    worker = CrawlerProcess(settings, tmp_path / "crawler.log")
    try:
        shown = lambda: "DNS:" in banner_text(page, "/roots")  # noqa: E731
        wait_until(shown, 120, "the banner to name DNS")
    finally:
        worker.stop()
    banner = page.locator("#world-silence")
    expect(banner.locator("strong.why")).to_contain_text("lookups failed")
    expect(banner).to_contain_text("DNS_TIMEOUT")
    expect(banner).to_contain_text(f"DNS_NAMESERVERS={web.nameservers}")
    expect(banner).to_contain_text("no CANARY_HOSTS set")
    expect(banner).to_contain_text("No host has answered yet in this database")
    box = banner.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"outage_banner_{width}.png"))
