"""Crawlers and database nodes that come and go: two crawlers sharing roots, a crawler
killed with claims in hand, and on a cluster the coordinator restarted, a worker node
that goes away, and nodes added and drained mid-crawl. Nothing lost, nothing stranded,
every host fetched once."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from tests.e2e.conftest import CLUSTER, claims_held, wait_until
from tests.fakeweb import World

ROOTS = [f"r{i}.test" for i in range(6)]
ROOT_CONCURRENCY = 2
RUN_TIMEOUT = 120  # seconds: a bound, not a wait
SMALL_CLAIMS = {"MAX_IN_FLIGHT": 8, "CLAIM_BATCH": 4}
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
ROWS_PER_WORKER = text(
    """
    SELECT p.nodeport, sum(r.result::bigint)
      FROM run_command_on_shards('hosts', 'SELECT count(*) FROM %s') AS r
      JOIN pg_dist_shard_placement p USING (shardid)
     GROUP BY p.nodeport
    """
)


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


def slow_graph(db, fakeweb_factory, seed: int, hosts: int, roots=ROOTS):
    """A graph of `hosts` over `roots` answering in 50 ms (a crawl long enough to act
    in), served and seeded from its first name: (names, web)."""
    world = World(seed=seed, delay=0.05)
    names = world.graph(hosts, roots=roots)
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])
    return names, web


def settled(db, web, names) -> bool:
    """Every name fetched, and none uncrawled or claimed still."""
    return crawled_pages(web) == len(names) and left_over(db)[1:3] == (0, 0)


def rows_per_worker(db) -> dict[int, int]:
    with db.connect() as conn:
        return dict(conn.execute(ROWS_PER_WORKER).all())


def test_two_crawlers_share_roots_within_their_concurrency(
    db, deployment, fakeweb_factory, start_crawler
):
    world = World(seed=21, delay=0.05)  # answers overlap: concurrency can be seen
    names = world.graph(80, roots=ROOTS)
    web = fakeweb_factory(world)
    # Both workers are up and polling before the seed, and neither can hold every root's
    # slots: one started late would find the crawl gone, and one holding all the slots
    # would claim each freed slot before the other's poll came round.
    settings = {**SMALL_CLAIMS, "ROOT_CONCURRENCY": ROOT_CONCURRENCY, "MAX_IN_FLIGHT": 4}
    settings.update(CLAIM_POLL_INTERVAL=0.2, CLOSE_WHEN_DRAINED=0)
    workers = [start_crawler(web, **settings) for _ in range(2)]
    wait_until(lambda: all("Spider opened" in w.log() for w in workers), 60, "both workers")
    queue.seed(db, [names[0]])
    wait_until(lambda: settled(db, web, names), RUN_TIMEOUT, "every host crawled and settled")
    for worker in workers:
        worker.stop()

    assert left_over(db) == (len(names), 0, 0, 0)
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names) and max(counts.values()) == 1  # each host once
    most = most_in_flight_per_root(web)
    assert max(most.values()) <= ROOT_CONCURRENCY  # held across both crawlers
    assert max(most.values()) == ROOT_CONCURRENCY  # and reached
    assert all("'item_scraped_count'" in w.log() for w in workers)  # both crawled
    if deployment == CLUSTER:
        per_worker = rows_per_worker(db)
        assert len(per_worker) == 2 and min(per_worker.values()) > 0  # spread over both


@pytest.mark.refetches("the killed crawler's hosts in flight are claimed again after its lease")
def test_a_crawler_killed_with_claims_loses_nothing(db, fakeweb_factory, start_crawler):
    world = World(seed=22, delay=0.2)  # slow answers: the crawler dies with hosts in hand
    names = world.graph(60, roots=ROOTS)
    web = fakeweb_factory(world)
    queue.seed(db, [names[0]])
    lease = {**SMALL_CLAIMS, "CLAIM_LEASE": 3}

    doomed = start_crawler(web, **lease, CLOSE_WHEN_DRAINED=0)
    wait_until(lambda: crawled_pages(web) >= 10, RUN_TIMEOUT, "10 pages before the kill")
    wait_until(lambda: claims_held(db) > 0, RUN_TIMEOUT, "claims held at the kill")
    doomed.kill()
    assert claims_held(db) > 0

    wait_until(lambda: claims_held(db) == 0, 30, "the killed crawler's leases to end")
    start_crawler(web, **lease).wait(RUN_TIMEOUT)

    assert left_over(db) == (len(names), 0, 0, 0)
    assert set(web.fetch_counts(path="/")) == set(names)


@pytest.mark.cluster_only(
    "the coordinator is the cluster's; one server's restart is"
    " test_faults.py::test_database_restart_and_outage_mid_crawl"
)
@pytest.mark.refetches("a host in flight when the coordinator went away is fetched again")
def test_a_coordinator_restart_mid_crawl_loses_nothing(
    db, citus_cluster, fakeweb_factory, start_crawler
):
    names, web = slow_graph(db, fakeweb_factory, 23, 100)
    settings = {**SMALL_CLAIMS, "CLAIM_LEASE": 5}

    workers = [start_crawler(web, **settings) for _ in range(2)]
    wait_until(lambda: crawled_pages(web) >= 25, RUN_TIMEOUT, "25 pages before the restart")
    citus_cluster.restart_coordinator()
    db.dispose()  # this process's sessions died with it
    codes = [w.proc.wait(timeout=RUN_TIMEOUT) for w in workers]
    if any(codes):  # a worker that gave up exits non-zero: a supervisor's rerun finishes
        wait_until(lambda: claims_held(db) == 0, 30, "the leases to end")
        start_crawler(web, **settings).wait(RUN_TIMEOUT)

    assert left_over(db) == (len(names), 0, 0, 0)
    assert set(web.fetch_counts(path="/")) == set(names)
    assert "database unavailable" in "".join(w.log() for w in workers)  # they met it


@pytest.mark.cluster_only("a worker node is the cluster's")
def test_a_worker_node_that_goes_away_is_an_outage(
    db, citus_cluster, fakeweb_factory, start_crawler
):
    names, web = slow_graph(db, fakeweb_factory, 24, 120)
    worker = start_crawler(web, **SMALL_CLAIMS)
    wait_until(lambda: crawled_pages(web) >= 20, RUN_TIMEOUT, "20 pages before the node stops")

    node = citus_cluster.workers[-1]
    node.stop()
    try:
        wait_until(lambda: "database unavailable" in worker.log(), 60, "the crawler to meet it")
    finally:
        node.start()
    db.dispose()
    worker.wait(RUN_TIMEOUT)

    log = worker.log()
    assert "Traceback" not in log
    assert len(re.findall(r"database unavailable while", log)) <= 2  # a line, not a flood
    assert "database available again" in log
    assert left_over(db) == (len(names), 0, 0, 0)  # every outcome written
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names) and max(counts.values()) == 1


@pytest.mark.cluster_only("nodes are the cluster's")
def test_a_worker_added_rebalanced_then_drained_mid_crawl(
    db, citus_cluster, fakeweb_factory, start_crawler
):
    """docs/deployment.md's steps, each while a crawl runs."""
    names, web = slow_graph(db, fakeweb_factory, 25, 160, roots=[f"g{i}.test" for i in range(16)])
    worker = start_crawler(web, **SMALL_CLAIMS)
    wait_until(lambda: crawled_pages(web) >= 20, RUN_TIMEOUT, "20 pages before the new node")

    added = citus_cluster.add_worker()
    coordinator = citus_cluster.coordinator
    try:
        coordinator.execute("SELECT citus_rebalance_start(shard_transfer_mode := 'block_writes')")
        coordinator.execute("SELECT citus_rebalance_wait()")
        assert rows_per_worker(db).get(added.port, 0) > 0  # the new node took its share
        coordinator.execute(
            "SELECT citus_drain_node('127.0.0.1', %s, shard_transfer_mode := 'block_writes')",
            (added.port,),
        )
    finally:
        citus_cluster.remove_worker(added)
    worker.wait(RUN_TIMEOUT)

    assert "Traceback" not in worker.log()
    assert left_over(db) == (len(names), 0, 0, 0)
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names) and max(counts.values()) == 1
