"""The crawl on a Citus cluster: the same rules as on one server (a real one-machine
cluster of a coordinator and two workers; skips with one line without `make citus`)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.db import deny_entries, queue
from tests.e2e.conftest import CrawlerProcess, crawl_settings, known_hosts
from tests.e2e.test_crawl import SOCIAL_LINKS
from tests.fakeweb import World

ROWS_PER_WORKER = text(
    """
    SELECT p.nodeport, sum(r.result::bigint)
      FROM run_command_on_shards('hosts', 'SELECT count(*) FROM %s') AS r
      JOIN pg_dist_shard_placement p USING (shardid)
     GROUP BY p.nodeport
    """
)


@pytest.fixture
def crawl_on_cluster(cluster_db, tmp_path):
    """Run one worker on the cluster until drained; stopped at teardown whatever happened."""
    started: list[CrawlerProcess] = []

    def run(web, **overrides) -> CrawlerProcess:
        log = tmp_path / f"crawler-{len(started)}.log"
        worker = CrawlerProcess(crawl_settings(web, **overrides), log)
        started.append(worker)
        worker.wait()
        return worker

    yield run
    for worker in started:
        worker.stop()


def test_discovery_on_the_cluster_fetches_every_host_once(
    cluster_db, fakeweb_factory, crawl_on_cluster
):
    world = World(seed=3)
    names = world.graph(80, roots=[f"r{i}.test" for i in range(12)], messy=0.3)
    web = fakeweb_factory(world)
    queue.seed(cluster_db, [names[0]])

    crawl_on_cluster(web)

    assert known_hosts(cluster_db) == set(names) == world.reachable(names[0])
    counts = web.fetch_counts(path="/")
    assert set(counts) == set(names) and max(counts.values()) == 1
    with cluster_db.connect() as conn:
        per_worker = dict(conn.execute(ROWS_PER_WORKER).all())
    assert len(per_worker) == 2 and min(per_worker.values()) > 0  # spread over both


def test_a_trap_is_blocked_and_no_follow_never_saved_on_the_cluster(
    cluster_db, fakeweb_factory, crawl_on_cluster
):
    world = World()
    traps = [f"http://n{i:03}.trap.test/" for i in range(120)]
    world.site("hub.test", links=[*traps, "http://links.test/"])
    world.zone("trap.test", "nxdomain")
    world.site("links.test", links=SOCIAL_LINKS)
    world.site("notsocial.test")
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(cluster_db, ["social.test"], note="giant platform")
    queue.seed(cluster_db, ["hub.test"])

    crawl_on_cluster(web, CLAIM_BATCH=8)

    [entry] = deny_entries.list_entries(cluster_db, "blocked")
    assert entry["hostname"] == "trap.test" and "DNS_NXDOMAIN 50" in entry["blocked_reason"]
    saved = known_hosts(cluster_db)
    assert "notsocial.test" in saved
    assert not {h for h in saved if h.endswith(".social.test")}
    fetched = set(web.fetch_counts(path=None))
    assert {"hub.test", "links.test", "notsocial.test"} <= fetched
    assert not {h for h in fetched if h.endswith("social.test") and h != "notsocial.test"}
