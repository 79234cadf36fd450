"""The screenshots docs/operators.md links: the main pages, the health row and the charts
after a real crawl, at 1280 and 420 px, served as an operator's panel is (the health row
refreshing at the panel's own pace, HEALTH_REFRESH_SECONDS: a screenshot once said "every
1 s", taken from a test's panel refreshing every second).

Saved as artifacts/screenshots/<page>_<px>.png; with HOSTCRAWL_DOCS_SCREENSHOTS=1 into
docs/screenshots/ too, the copies the docs link (a plain test run leaves docs/ as it is).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_chart_geometry_browser import CHART_TEXTS, problems
from tests.browser.test_health_row_browser import GONE, a_small_web
from tests.browser.test_roots_browser import log_in
from tests.e2e.conftest import CrawlerProcess, crawl_settings

pytest_plugins = ["tests.unit.test_panel_support"]

WIDTHS = [1280, 420]
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
SHOTS = ARTIFACTS / "screenshots"
# Each page: its path, and the part shot alone (None: the whole page).
PAGES = {
    "dashboard": ("/", None),
    "health": ("/", "#health"),
    "charts": ("/", "section.charts"),
    "host": (f"/hosts/{GONE[0]}", None),
    "roots": ("/roots", None),
    "blocked": ("/blocked", None),
    "no_follow": ("/no_follow", None),
}


def shot(page: Page, name: str, part: str | None) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    if part is None:
        page.screenshot(path=str(path))  # what a screen shows first: the docs stay small
    else:
        page.locator(part).screenshot(path=str(path))
    if os.environ.get("HOSTCRAWL_DOCS_SCREENSHOTS") == "1":
        shutil.copyfile(path, DOCS / path.name)
    return path


@pytest.mark.parametrize("width", WIDTHS)
def test_screenshots_of_the_main_pages_as_an_operator_sees_them(
    page: Page, app, db, operators, fakeweb_factory, tmp_path, width
):
    web = a_small_web(fakeweb_factory)
    deny_entries.add_no_follow(db, ["social.test"], note="a platform")
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator: 50 of 50 failed")
    queue.seed(db, ["hub.test"])
    CrawlerProcess(crawl_settings(web), tmp_path / "crawler.log").wait()
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "/")
    every = app.config["HEALTH_REFRESH_SECONDS"]  # the panel's own pace, not a test's
    expect(page.locator("#health-as-of")).to_contain_text(f"refreshes every {every} s")
    expect(page.locator("#health-last-answer")).to_contain_text("UTC")
    charts = page.evaluate(CHART_TEXTS)
    assert {c["chart"]: problems(c) for c in charts} == {c["chart"]: [] for c in charts}
    for name, (path, part) in PAGES.items():
        page.goto(path)
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path
        assert shot(page, f"{name}_{width}", part).stat().st_size > 0
