"""The bare claim (the DNS audit's) on a Citus cluster: shard group after shard group until
the batch is full, SKIP LOCKED, every due host once, `under` kept. Skips without `make
citus`."""

from __future__ import annotations

from crawler.core.hostnames import root
from crawler.db.crawl import claims, queue
from tests.unit.test_citus_claims import shard_of


def test_the_bare_claim_fills_its_batch_from_many_shard_groups_and_takes_every_host_once(
    cluster_db,
):
    names = [f"h{i}.site{r}.test" for r in range(24) for i in range(3)]
    queue.save_hosts(cluster_db, names)
    assert len(shard_of(cluster_db, {root(h) for h in names})) > 1
    taken: list[str] = []
    while batch := claims.claim(cluster_db, 50, "audit:1"):
        assert len(batch) == min(50, len(names) - len(taken))
        taken += batch
    assert sorted(taken) == sorted(names)  # each once: a claimed host is not due
    assert claims.claim(cluster_db, 50, "audit:2") == []


def test_the_bare_claim_under_a_root_on_the_cluster(cluster_db):
    queue.save_hosts(cluster_db, ["a.one.test", "b.one.test", "one.test", "a.two.test"])
    assert sorted(claims.claim(cluster_db, 10, "audit:1", under="one.test")) == [
        "a.one.test",
        "b.one.test",
        "one.test",
    ]
    assert claims.claim(cluster_db, 10, "audit:1", under="one.test") == []
    assert claims.claim(cluster_db, 10, "audit:1") == ["a.two.test"]
