"""The panel on a phone (420 px) and a desktop (1280 px), with a crawl's worth of data:
no page scrolls sideways, every row action is on screen, chart text is at least 11 px,
axes say 3M, the change log reads as cards. Screenshots of each page at each width
are saved as artifacts/width_<page>_<px>.png."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_roots_browser import a_crawl_with_a_farm, log_in

pytest_plugins = ["tests.unit.test_panel_support"]

WIDTHS = [420, 1280]
PAGES = {"hosts": "/", "no_follow": "/no_follow", "blocked": "/blocked", "audit": "/audit"}
ACTIONS = "main a.unblock, main a.remove, main button, main input[type=submit]"
MIN_CHART_TEXT = 11.0

OFF_SCREEN = """(selector) => [...document.querySelectorAll(selector)]
  .filter(e => e.offsetParent !== null)
  .map(e => [e.textContent.trim() || e.value, e.getBoundingClientRect()])
  .filter(([_, r]) => r.left < 0 || r.right > window.innerWidth + 0.5)
  .map(([name, r]) => `${name} at ${Math.round(r.left)}..${Math.round(r.right)}`)"""
CHART_TEXT_PX = """() => [...document.querySelectorAll("svg.plot")]
  .filter(svg => svg.getBoundingClientRect().width > 0).flatMap(svg => {
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const size = t => parseFloat(t.getAttribute("font-size"));
  return [...svg.querySelectorAll("text")].map(t => size(t) * scale);
})"""
Y_LABELS = """() => [...document.querySelectorAll("svg.time text[text-anchor=end]")]
  .map(t => t.textContent)"""


@pytest.fixture
def a_busy_panel(db, operators):
    """Blocked and no_follow entries (a batch of 30 among them), a long change-log detail,
    and an hour with 2.5 million hosts discovered."""
    a_crawl_with_a_farm(db)
    deny_entries.upsert_blocked(db, "trap-with-a-long-name.test", "subdomain generator " * 12)
    names = [f"tracker{i}.test" for i in range(30)]
    for _ in deny_entries.add_no_follow_batches(db, names, actor="alice", note="a long note " * 8):
        pass
    queue.save_hosts(db, [f"www.site{i}.test" for i in range(5)])
    with db.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO host_hours (hour, shard, discovered, ok)"
                " VALUES (date_trunc('hour', now()), 99, 2500000, 1900000)"
            )
        )


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_fits_its_width_with_every_action_on_screen(page, a_busy_panel, width):
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "/")
    ARTIFACTS.mkdir(exist_ok=True)
    for name, path in PAGES.items():
        page.goto(path)
        page.screenshot(path=str(ARTIFACTS / f"width_{name}_{width}.png"), full_page=True)
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        assert scroll_width <= width, f"{path} is {scroll_width} px wide at {width}"
        assert page.evaluate(OFF_SCREEN, ACTIONS) == [], path
    page.goto("/no_follow")
    assert page.locator("#entry-list a.remove").count() == 30
    page.goto("/blocked")
    assert page.locator("#blocked a.unblock").count() >= 1


@pytest.mark.parametrize("width", WIDTHS)
def test_charts_keep_readable_text_and_short_axis_labels(page, a_busy_panel, width):
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, "/")
    sizes = page.evaluate(CHART_TEXT_PX)
    assert sizes and min(sizes) >= MIN_CHART_TEXT, min(sizes)
    labels = page.evaluate(Y_LABELS)
    assert any(label.endswith("M") for label in labels), labels  # 1M, 2M, 3M, not 3,000,000
    assert all(len(label) <= 5 for label in labels), labels


def test_the_change_log_and_every_batch_name_read_on_a_phone(page, a_busy_panel):
    page.set_viewport_size({"width": 420, "height": 900})
    log_in(page, "/audit")
    rows = page.locator("#change-log tbody tr")
    assert rows.count() >= 2
    heights = [rows.nth(i).bounding_box()["height"] for i in range(rows.count())]
    assert max(heights) < 400, heights  # a card, not a 46-px column 1,400 px tall
    first = rows.first.locator("td").first
    assert first.get_attribute("data-label") == "when"  # each cell under its column's name
    page.goto("/no_follow")
    added = page.locator("#entry-list tbody tr td:nth-child(3)")
    texts = [added.nth(i).inner_text() for i in range(added.count())]
    assert len(texts) == 30 and all("by alice" in t for t in texts), texts
