"""Faults on a real Citus cluster (a coordinator and two workers on one machine; skips with
one line without `make citus`): two crawlers sharing roots, a crawler killed with claims
in hand, the coordinator restarted mid-crawl. Nothing lost, nothing stranded."""

from __future__ import annotations

from collections import defaultdict

import pytest
from sqlalchemy import text

from crawler.db import queue
from tests.e2e.conftest import CrawlerProcess, claims_held, crawl_settings, wait_until
from tests.fakeweb import World

ROOTS = [f"r{i}.test" for i in range(6)]
ROOT_CONCURRENCY = 2
MAX_IN_FLIGHT = 8
RUN_TIMEOUT = 120  # seconds: a bound, not a wait
# Every host known, crawled once at least, and none claimed (or due) still: what a crawl
# that lost nothing and stranded nothing leaves.
LEFT_OVER = text(
    """
    SELECT count(*) AS hosts,
           count(*) FILTER (WHERE h.outcome IS NULL) AS uncrawled,
           count(*) FILTER (WHERE q.claimed_by IS NOT NULL) AS claimed,
           count(*) FILTER (WHERE q.hostname IS NULL) AS unqueued
      FROM hosts h LEFT JOIN queue q ON q.root = h.root AND q.hostname = h.hostname
    """
)


@pytest.fixture
def start_on_cluster(cluster_db, tmp_path):
    """Start crawlers on the cluster (DATABASE_URL); any still running at teardown stop."""
    started: list[CrawlerProcess] = []

    def start(web, **overrides) -> CrawlerProcess:
        settings = {"MAX_IN_FLIGHT": MAX_IN_FLIGHT, "CLAIM_BATCH": 4, **overrides}
        log = tmp_path / f"crawler-{len(started)}.log"
        worker = CrawlerProcess(crawl_settings(web, **settings), log)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


def left_over(engine) -> tuple[int, int, int, int]:
    with engine.connect() as conn:
        return tuple(conn.execute(LEFT_OVER).one())


def crawled_pages(web) -> int:
    return len(web.fetch_counts(path="/"))


def most_in_flight_per_root(web) -> dict[str, int]:
    most: dict[str, int] = defaultdict(int)
    for request in web.requests():
        domain = ".".join(request["host"].split(".")[-2:])
        most[domain] = max(most[domain], request["root_in_flight"])
    return most


def test_two_crawlers_share_roots_within_their_concurrency_on_the_cluster(
    cluster_db, fakeweb_factory, start_on_cluster
):
    world = World(seed=21, delay=0.05)  # answers overlap: concurrency can be seen
    names = world.graph(80, roots=ROOTS)
    web = fakeweb_factory(world)
    queue.seed(cluster_db, [names[0]])

    workers = [start_on_cluster(web, ROOT_CONCURRENCY=ROOT_CONCURRENCY) for _ in range(2)]
    for worker in workers:
        worker.wait(RUN_TIMEOUT)

    assert left_over(cluster_db) == (len(names), 0, 0, 0)
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names) and max(counts.values()) == 1  # each host once
    most = most_in_flight_per_root(web)
    assert max(most.values()) <= ROOT_CONCURRENCY  # held across both crawlers
    assert max(most.values()) == ROOT_CONCURRENCY  # and reached
    both = [w.log() for w in workers]
    assert all("'item_scraped_count'" in log for log in both)  # both crawled


def test_a_crawler_killed_with_claims_loses_nothing_on_the_cluster(
    cluster_db, fakeweb_factory, start_on_cluster
):
    world = World(seed=22, delay=0.2)  # slow answers: the crawler dies with hosts in hand
    names = world.graph(60, roots=ROOTS)
    web = fakeweb_factory(world)
    queue.seed(cluster_db, [names[0]])
    lease = {"CLAIM_LEASE": 3}

    doomed = start_on_cluster(web, **lease, CLOSE_WHEN_DRAINED=0)
    wait_until(lambda: crawled_pages(web) >= 10, RUN_TIMEOUT, "10 pages before the kill")
    wait_until(lambda: claims_held(cluster_db) > 0, RUN_TIMEOUT, "claims held at the kill")
    doomed.kill()
    held = claims_held(cluster_db)
    assert held > 0

    wait_until(lambda: claims_held(cluster_db) == 0, 30, "the killed crawler's leases to end")
    start_on_cluster(web, **lease).wait(RUN_TIMEOUT)

    assert left_over(cluster_db) == (len(names), 0, 0, 0)
    assert set(web.fetch_counts(path="/")) == set(names)


def test_a_coordinator_restart_mid_crawl_loses_nothing(
    cluster_db, citus_cluster, fakeweb_factory, start_on_cluster
):
    world = World(seed=23, delay=0.05)
    names = world.graph(100, roots=ROOTS)
    web = fakeweb_factory(world)
    queue.seed(cluster_db, [names[0]])
    settings = {"CLAIM_LEASE": 5}

    workers = [start_on_cluster(web, **settings) for _ in range(2)]
    wait_until(lambda: crawled_pages(web) >= 25, RUN_TIMEOUT, "25 pages before the restart")
    citus_cluster.restart_coordinator()
    cluster_db.dispose()  # this process's sessions died with it
    paused_at = crawled_pages(web)
    wait_until(
        lambda: (
            crawled_pages(web) > paused_at + 10 or all(w.proc.poll() is not None for w in workers)
        ),
        RUN_TIMEOUT,
        "the crawl to carry on (or the crawlers to end)",
    )
    codes = [w.proc.wait(timeout=RUN_TIMEOUT) for w in workers]
    print(f"after the restart: {crawled_pages(web)} pages, the crawlers exited {codes}")
    if any(codes):  # a worker that gave up exits non-zero: a supervisor's rerun finishes
        wait_until(lambda: claims_held(cluster_db) == 0, 30, "the leases to end")
        start_on_cluster(web, **settings).wait(RUN_TIMEOUT)

    assert left_over(cluster_db) == (len(names), 0, 0, 0)
    assert set(web.fetch_counts(path="/")) == set(names)
    logs = "".join(w.log() for w in workers)
    assert "database unavailable" in logs  # they did meet the restart
