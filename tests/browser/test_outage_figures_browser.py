"""The figures agree in an outage, in a real browser (issue 53): two workers crawl three
roots while the resolver is silent, each trying the same hosts again. Once both are
gone (killed: their silences stay fresh, their hosts held), the health row, the banner,
/metrics and the database's own count (crawler.db.crawl.counts) say the same held back
(distinct hosts, not one count per worker), due now and failures, and the health chart
has a DNS bar in every minute the database counted failed lookups in. At 1280 and 420
px (artifacts/outage_figures_<px>.png)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page
from sqlalchemy import text

from crawler.db.crawl import counts
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_outage_banner_browser import a_silent_resolver
from tests.browser.test_roots_browser import log_in
from tests.e2e.conftest import CrawlerProcess, crawl_settings
from tests.unit.test_metrics import samples
from tests.unit.test_panel_support import give_api_token
from tests.waiting import wait_until

pytest_plugins = ["tests.unit.test_panel_support"]

WORKERS = 2
# Each worker holds at most PER_WORKER hosts (its in-flight limit), so each holds three
# roots of its own: enough for an outage before any host has answered (several roots).
PER_WORKER = 3
NAMES = [f"n{i}.quiet{i}.test" for i in range(WORKERS * PER_WORKER)]
DNS_MINUTES = text(
    "SELECT to_char(minute AT TIME ZONE 'UTC', 'HH24:MI') FROM host_minutes"
    " GROUP BY minute HAVING sum(dns) > 0 ORDER BY 1"
)
# Tries held back whose retry date is still to come: due now moves until there are none.
RETRIES_PENDING = text(
    "SELECT count(*) FROM queue WHERE next_claim_at > now()"
    " AND next_claim_at < now() + interval '1 minute'"
)


def both_workers_held_every_host(db) -> bool:
    with db.connect() as conn:
        silent = conn.execute(text("SELECT count(*) FROM world_silences")).scalar_one()
        tries = conn.execute(text("SELECT sum(held_tries) FROM hosts")).scalar_one() or 0
        return silent == WORKERS and counts.held_back(conn) == len(NAMES) and tries >= len(NAMES)


def no_retry_pending(db) -> bool:
    with db.connect() as conn:
        return conn.execute(RETRIES_PENDING).scalar_one() == 0


def shown(page: Page, selector: str) -> str:
    return page.locator(selector).inner_text().strip()


@pytest.mark.parametrize("width", [1280, 420])
def test_the_views_agree_on_an_outage_seen_by_two_workers(
    page: Page, db, operators, fakeweb_factory, tmp_path, width
):
    web = a_silent_resolver(page, db, fakeweb_factory, width, NAMES)
    token = give_api_token(db, "alice", "t0k3n")
    log_in(page, "/")

    settings = crawl_settings(web, CLOSE_WHEN_DRAINED=0, RETRY_TIMES=0, MAX_IN_FLIGHT=PER_WORKER)
    workers = [CrawlerProcess(settings, tmp_path / f"worker{i}.log") for i in range(WORKERS)]
    try:
        wait_until(lambda: both_workers_held_every_host(db), 120, "both workers to hold all")
    finally:
        for worker in workers:
            worker.kill()  # no goodbye: their silences and held hosts stay as they were
    wait_until(lambda: no_retry_pending(db), 30, "the held hosts' retry dates to pass")

    with db.connect() as conn:
        truth = counts.now(conn)
        dns_minutes = conn.execute(DNS_MINUTES).scalars().all()
    page.goto("/")
    metrics = samples(page.request.get("/metrics", headers=token).text())

    held = int(page.locator("#world-silence").get_attribute("data-held-back"))
    assert truth.held_back == len(NAMES)  # distinct hosts, however many workers tried them
    assert held == int(shown(page, "#health-held")) == truth.held_back
    assert metrics[("hostcrawl_hosts_held_back", ())] == truth.held_back
    assert int(shown(page, "#health-due")) == int(shown(page, "#stat-due")) == truth.due_now
    assert metrics[("hostcrawl_queue_due", ())] == truth.due_now
    assert int(shown(page, "#health-in-flight")) == truth.in_flight
    assert metrics[("hostcrawl_hosts_in_flight", ())] == truth.in_flight

    failed = truth.failed
    assert failed.by_layer["DNS"] >= len(NAMES) and failed.tried == failed.held  # none settled
    assert shown(page, "#health-failures") == f"100% of {failed.tried:,}"
    assert metrics[("hostcrawl_tried_recently", ())] == failed.tried
    for layer, n in failed.by_layer.items():
        assert metrics[("hostcrawl_failed_recently", (("layer", layer),))] == n
    banner = shown(page, "#world-silence")
    assert re.search(r"DNS: \d+ of \d+ lookups failed", banner), banner

    # The chart's data: a DNS bar in each minute the database counted failed lookups in.
    bars = page.locator("#health svg.health rect[data-layer]")
    charted = {
        (bars.nth(i).get_attribute("data-layer"), bars.nth(i).get_attribute("data-minute"))
        for i in range(bars.count())
    }
    assert dns_minutes and charted == {("DNS", minute) for minute in dns_minutes}
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"outage_figures_{width}.png"), full_page=True)
