"""The dashboard's health row in a real browser, around a real crawl: a worker starts, the
row shows it, its pages, its failures by layer and its last answer, and the worker's
leaving, all without a reload (the row fetches itself again every second here). At
1280 and 420 px the charts read right: each whole in view (the 24-hour chart drawn
narrower on a phone), no count of the top roots cut. Screenshots of the dashboard and of
a host's page at both widths are saved as artifacts/health_*.png (docs/screenshots/ are
taken by test_screenshots_browser.py, with the panel's own refresh: not this 1 s)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.browser.conftest import ARTIFACTS, served_panel
from tests.browser.test_chart_geometry_browser import CHART_TEXTS, problems
from tests.browser.test_roots_browser import log_in
from tests.e2e.conftest import CrawlerProcess, crawl_settings
from tests.fakeweb import World

pytest_plugins = ["tests.unit.test_panel_support"]

WIDTHS = [1280, 420]
CRAWL_BOUND = 120_000  # ms: a bound for a condition, not a wait
SITES = [f"site{i}.test" for i in range(8)]
GONE = ["gone1.test", "gone2.test", "gone3.test"]  # NXDOMAIN: DNS failures
# The top roots chart's labels and counts that do not show whole.
ROOTS_CUT = """() => {
  const svg = document.querySelector("svg.roots"), box = svg.getBoundingClientRect();
  return [...svg.querySelectorAll("text")].filter(t => {
    const r = t.getBoundingClientRect();
    return r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.right > window.innerWidth;
  }).map(t => t.textContent);
}"""
CHART_TEXT_PX = """() => {
  const svg = document.querySelector("#health svg.plot");
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return Math.min(...[...svg.querySelectorAll("text")].map(
    t => parseFloat(t.getAttribute("font-size")) * scale));
}"""


@pytest.fixture(scope="module")
def live_server(database_url):
    """This module's panel: its health row fetches itself again every second."""
    with served_panel(database_url, HEALTH_REFRESH_SECONDS=1) as url:
        yield url


def a_small_web(fakeweb_factory):
    """hub.test links eight sites, three names that do not resolve, and social.test."""
    world = World()
    links = [f"http://{name}/" for name in [*SITES, *GONE]]
    links += ["http://social.test/", "https://www.social.test/", "http://api.social.test/"]
    world.site("hub.test", links=links)
    for name in SITES:
        world.site(name, links=["http://hub.test/"])
    for name in GONE:
        world.host(name, "nxdomain")
    return fakeweb_factory(world)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_health_row_follows_a_crawl_without_a_reload(
    page: Page, db, operators, fakeweb_factory, tmp_path, width
):
    page.set_viewport_size({"width": width, "height": 900})
    web = a_small_web(fakeweb_factory)
    deny_entries.add_no_follow(db, ["social.test"], note="a platform")
    queue.seed(db, ["hub.test"])
    log_in(page, "/")
    row = page.locator("#health")
    expect(row.locator("#health-workers")).to_have_text("0")
    expect(row.locator("#health-last-answer")).to_have_text("none lately")
    expect(row.locator("#health-due")).to_have_text("1")
    page.evaluate("window.notReloaded = true")

    settings = crawl_settings(web, CLOSE_WHEN_DRAINED=0)
    worker = CrawlerProcess(settings, tmp_path / "crawler.log")
    try:
        expect(row.locator("#health-workers")).to_have_text("1", timeout=CRAWL_BOUND)
        expect(row.locator("#health-due")).to_have_text("0", timeout=CRAWL_BOUND)
        expect(row.locator("#health-last-answer")).to_contain_text("UTC")
        failed = row.locator("#health-failures")
        expect(failed).to_contain_text("% of 12", timeout=CRAWL_BOUND)  # hub, 8 sites, 3 gone
        chart = row.locator("svg.health")
        expect(chart.locator("rect title").first).to_contain_text("failed at DNS")
        expect(chart.locator("polyline")).to_have_count(2)
        failed_share = failed.inner_text()
        assert failed_share.startswith("25%"), failed_share  # 3 of 12
    finally:
        worker.stop()
    expect(row.locator("#health-workers")).to_have_text("0", timeout=CRAWL_BOUND)
    assert page.evaluate("window.notReloaded") is True
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    assert page.evaluate(CHART_TEXT_PX) >= 11


@pytest.mark.parametrize("width", WIDTHS)
def test_screenshots_of_the_dashboard_and_a_host_page(
    page: Page, db, operators, fakeweb_factory, tmp_path, width
):
    """A crawl run to its end, then a failed host's page and the dashboard at `width`:
    saved as artifacts/health_host_<width>.png and health_dashboard_<width>.png."""
    page.set_viewport_size({"width": width, "height": 900})
    web = a_small_web(fakeweb_factory)
    deny_entries.add_no_follow(db, ["social.test"], note="a platform")
    queue.seed(db, ["hub.test"])
    CrawlerProcess(crawl_settings(web), tmp_path / "crawler.log").wait()
    log_in(page, "/no_follow")  # the real crawl's dropped links, counted per entry
    social = page.locator("#entry-list tr", has_text="social.test")
    expect(social.locator('td[data-label="links dropped"]')).to_have_text("3")
    page.goto("/hosts/gone1.test")
    expect(page.locator("main")).to_contain_text("DNS_NXDOMAIN")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"health_host_{width}.png"))
    with db.begin() as conn:  # a count as wide as the chart's biggest
        conn.execute(text("UPDATE roots SET hosts = 12345678 WHERE root = 'hub.test'"))
    page.goto("/")  # the last page: the whole of it is saved too (tests/browser/conftest.py)
    expect(page.locator("#health-last-answer")).to_contain_text("UTC")
    expect(page.locator("svg.roots")).to_contain_text("12,345,678")
    assert page.evaluate(ROOTS_CUT) == []
    charts = page.evaluate(CHART_TEXTS)  # every chart whole in view, the 24-hour one too
    assert {c["chart"]: problems(c) for c in charts} == {c["chart"]: [] for c in charts}
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.screenshot(path=str(ARTIFACTS / f"health_dashboard_{width}.png"))
    page.locator("section.charts").screenshot(path=str(ARTIFACTS / f"health_charts_{width}.png"))
