"""The Roots page in a real browser: a wildcard farm is flagged on /roots and
one click puts it on no_follow; a root near a block sorts to the top. Screenshots of the
page before and after the click are saved in artifacts/."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries, trap_windows
from tests.browser.conftest import ARTIFACTS
from tests.dbhelpers import record_outcomes
from tests.unit.test_panel_support import PASSWORD

pytest_plugins = ["tests.unit.test_panel_support"]


def log_in(page: Page, then: str) -> None:
    page.goto(then)
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".who")).to_have_text("alice")
    # the page's stylesheets too: a test that measures the layout must not read it unstyled
    page.wait_for_load_state("load")


def a_crawl_with_a_farm(db) -> None:
    """What the farm crawl leaves: a farm the crawl probed, ordinary sites, a root near a block."""
    queue.save_hosts(db, [f"f{i:02}.farm.test" for i in range(60)])
    trap_windows.save_wildcard_probe(db, "farm.test", "hc-5e1f2a9b0c3d.farm.test", "DNS_ALIVE")
    queue.save_hosts(db, [f"h{i}.site{r}.test" for r in range(3) for i in range(30)])
    trap = [f"s{i}.shaky.test" for i in range(50)]
    queue.save_hosts(db, trap)
    record_outcomes(db, [(n, "OK") for n in trap[:5]] + [(n, "DNS_NXDOMAIN") for n in trap[5:]])
    crawled = [Crawled(f"h{i}.site0.test", CrawlResult("OK")) for i in range(20)]
    crawled += [Crawled(n, CrawlResult("DNS_NXDOMAIN")) for n in trap[5:]]
    queue.finish_many(db, crawled)


def test_a_wildcard_farm_is_flagged_and_one_click_puts_it_on_no_follow(page, db, operators):
    a_crawl_with_a_farm(db)
    log_in(page, "/roots")
    expect(page).to_have_url(re.compile(r"/roots$"))
    farm = page.locator("#roots tr", has=page.get_by_role("link", name="farm.test", exact=True))
    expect(farm).to_contain_text("wildcard zone")
    expect(farm).to_contain_text("60")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "roots_wildcard_farm_flagged.png"), full_page=True)

    farm.get_by_role("button", name="Put on no_follow").click()
    expect(page).to_have_url(re.compile(r"/roots/farm\.test$"))
    expect(page.locator(".flashes")).to_contain_text("farm.test: added")
    expect(page.locator("#root-facts")).to_contain_text("farm.test (no_follow)")
    assert [e["hostname"] for e in deny_entries.list_entries(db, "no_follow")] == ["farm.test"]

    page.get_by_role("link", name="Roots").click()
    farm = page.locator("#roots tr", has=page.get_by_role("link", name="farm.test", exact=True))
    expect(farm).to_contain_text("(no_follow)")
    expect(farm.get_by_role("button", name="Put on no_follow")).to_have_count(0)


def test_a_root_near_a_block_sorts_to_the_top(page, db, operators):
    a_crawl_with_a_farm(db)
    log_in(page, "/roots?sort=near_block")
    first = page.locator("#roots tbody tr").first
    expect(first).to_contain_text("shaky.test")
    expect(first).to_contain_text("45 of the last 50 failed")
    expect(first).to_contain_text("near a block")
    page.get_by_role("link", name="Hosts").click()  # the dashboard's charts
    expect(page.locator("figure.timeline svg:visible")).to_have_count(1)  # one of its two widths
    expect(page.locator("figure.top-roots svg")).to_contain_text("farm.test")
