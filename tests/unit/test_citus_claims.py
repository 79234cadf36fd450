"""The polite claim on a Citus cluster: within one shard group, every statement routed
to one worker, with the same rules as on one server. Skips without `make citus`."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import text

from crawler.core.hostnames import root
from crawler.db import claims, queue


def shard_of(engine, roots: set[str]) -> set[int]:
    with engine.connect() as conn:
        shards = conn.execute(
            text(
                "SELECT DISTINCT get_shard_id_for_distribution_column('roots', r)"
                " FROM unnest(CAST(:roots AS text[])) AS r"
            ),
            {"roots": sorted(roots)},
        )
        return set(shards.scalars())


def test_a_claim_on_the_cluster_takes_one_shard_group_within_the_rules(cluster_db):
    names = [f"h{i}.site{r}.test" for r in range(40) for i in range(5)]
    queue.save_hosts(cluster_db, names)
    taken: list[str] = []
    while batch := claims.claim_polite(cluster_db, 16, "w1").hosts:
        assert len(shard_of(cluster_db, {root(h) for h in batch})) == 1
        assert max(Counter(root(h) for h in batch).values()) <= 2
        taken += batch
    assert len(taken) == len(set(taken)) == 40 * 2  # two of each root, until they finish
