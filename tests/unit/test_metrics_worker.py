"""A real crawler worker's /metrics while it crawls (METRICS_PORT, through the add-on)."""

from __future__ import annotations

import urllib.request

from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.e2e.conftest import CrawlerProcess, crawl_settings, wait_until
from tests.fakeweb import World
from tests.unit.test_metrics import free_port, samples


def scrape(port: int) -> dict:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            return samples(response.read().decode())
    except OSError:
        return {}


def test_a_crawling_worker_exposes_its_progress(db, fakeweb_factory, tmp_path):
    world = World(seed=7)
    names = world.graph(40, roots=["metric-a.test", "metric-b.test"], links_per_page=4)
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["elsewhere.test", "nowhere.test"])
    queue.seed(db, [names[0]])
    port = free_port()
    settings = crawl_settings(web, CLOSE_WHEN_DRAINED=0, METRICS_PORT=port)
    worker = CrawlerProcess(settings, tmp_path / "crawler.log")
    try:
        done = wait_until(
            lambda: (s := scrape(port)) and s[("hostcrawl_pages_total", ())] >= len(names) and s,
            120,
            "the worker's metrics to count every page",
        )
    finally:
        worker.stop()
    with db.connect() as conn:
        crawled = conn.execute(text("SELECT count(*) FROM hosts WHERE outcome = 'OK'")).scalar()
    assert done[("hostcrawl_pages_total", ())] == crawled == len(names)
    assert done[("hostcrawl_outcomes_total", (("outcome", "OK"),))] == len(names)
    assert done[("hostcrawl_claims_total", ())] == len(names)
    assert done[("hostcrawl_links_saved_total", ())] == len(names) - 1  # all but the seed
    assert done[("hostcrawl_denylist_entries", ())] == 2
