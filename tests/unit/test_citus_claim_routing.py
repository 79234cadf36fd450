"""The polite claim on a Citus cluster is one call per shard group it visits, to that
group's worker (a function Citus delegates there, which walks, locks and claims in that
group: crawler.db.deployments.claims_cluster), the groups served in turn, and a group whose shards
are locked is passed over, never waited on. Skips without `make citus`."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crawler.core.hostnames import root
from crawler.db import claims, queue
from crawler.db.claims import RootLimits
from crawler.db.deployments import claims_cluster

COUNTERS = text(
    "SELECT query_execution_single_shard, query_execution_multi_shard"
    " FROM citus_stat_counters WHERE name = current_database()"
)
SHARDS = text(
    "SELECT r, get_shard_id_for_distribution_column('roots', r)"
    " FROM unnest(CAST(:roots AS text[])) AS r"
)
# Many limits, so that only the turn of the groups says where a claim goes.
ROOMY = RootLimits(concurrency=100, budget=10_000)


@pytest.fixture(autouse=True)
def fresh_turns():
    claims_cluster.forget()
    yield
    claims_cluster.forget()


def roots_by_shard(engine, per_shard: int) -> dict[int, list[str]]:
    """`per_shard` made-up roots in each shard of roots, by shard id (in shard order)."""
    found: dict[int, list[str]] = {}
    with engine.connect() as conn:
        shards = conn.execute(
            text("SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'roots'::regclass")
        ).scalars()
        found = {shard: [] for shard in sorted(shards)}
        candidates = [f"site{i}.test" for i in range(per_shard * len(found) * 20)]
        for name, shard in conn.execute(SHARDS, {"roots": candidates}):
            if len(found[shard]) < per_shard:
                found[shard].append(name)
    assert all(len(roots) == per_shard for roots in found.values())
    return found


def shard_of_hosts(engine, hosts: list[str]) -> set[int]:
    with engine.connect() as conn:
        return {s for _, s in conn.execute(SHARDS, {"roots": sorted({root(h) for h in hosts})})}


@contextmanager
def counting(url: str):
    """An engine whose sessions Citus counts (single- vs multi-shard statements), the
    counters reset; yields (engine, a function reading them)."""
    engine = create_engine(url, connect_args={"options": "-c citus.enable_stat_counters=on"})
    with engine.begin() as conn:
        conn.execute(text("SELECT citus_stat_counters_reset()"))

    def read() -> tuple[int, int]:
        with engine.connect() as conn:
            return tuple(conn.execute(COUNTERS).one())

    try:
        yield engine, read
    finally:
        engine.dispose()


def test_a_polite_claim_on_the_cluster_runs_no_multi_shard_statement(cluster_db):
    groups = roots_by_shard(cluster_db, 3)
    queue.save_hosts(
        cluster_db, [f"h{i}.{r}" for roots in groups.values() for r in roots for i in range(3)]
    )
    with counting(cluster_db.url.render_as_string(hide_password=False)) as (engine, read):
        taken = []
        for _ in groups:  # a claim per group: each finds hosts due (none runs dry)
            batch = claims.claim_polite(engine, 4, "w1").hosts
            assert batch and len(shard_of_hosts(engine, batch)) == 1
            taken += batch
        single, multi = read()
    assert multi == 0
    # One delegated call a claim: its walk, lock and claim run on the group's worker.
    assert single == len(groups)
    assert len(taken) == len(set(taken)) == 4 * len(groups)


def test_every_shard_group_is_served_in_turn_whatever_is_due_elsewhere(cluster_db):
    groups = roots_by_shard(cluster_db, 2)
    first, *others = groups
    # The first group's hosts are the oldest due, and plenty: oldest-due-first across
    # the cluster would take every claim from it.
    queue.save_hosts(cluster_db, [f"h{i}.{r}" for r in groups[first] for i in range(40)])
    queue.save_hosts(cluster_db, [f"h{i}.{r}" for s in others for r in groups[s] for i in range(2)])
    for worker in ("w1", "w2"):
        served = [
            shard_of_hosts(
                cluster_db, claims.claim_polite(cluster_db, 1, worker, limits=ROOMY).hosts
            )
            for _ in groups
        ]
        assert all(len(shards) == 1 for shards in served)
        assert set().union(*served) == set(groups)  # each group once in a turn


def test_a_claim_passes_over_a_shard_group_whose_shards_are_locked(cluster_db, citus_cluster):
    """The claim wants more than its first group has, and the next group's shard of roots
    is locked (as a shard move locks it): it takes what the first has and goes on."""
    groups = roots_by_shard(cluster_db, 2)
    order = list(groups)
    worker = "w1"
    starts_at = order[claims_cluster.first_group(worker, len(order))]
    held = order[(order.index(starts_at) + 1) % len(order)]
    queue.save_hosts(
        cluster_db, [f"h{i}.{r}" for s in (starts_at, held) for r in groups[s] for i in range(2)]
    )
    with cluster_db.connect() as conn:
        node, port = conn.execute(
            text("SELECT nodename, nodeport FROM pg_dist_shard_placement WHERE shardid = :s"),
            {"s": held},
        ).one()
        shard = conn.execute(text("SELECT shard_name('roots', :s)"), {"s": held}).scalar_one()
    worker_url = make_url(citus_cluster.url).set(host=node, port=port)
    holder = create_engine(worker_url)
    bounded = create_engine(citus_cluster.url, connect_args={"options": "-c statement_timeout=20s"})
    try:
        with holder.connect() as locking:
            # Every read of the held group's roots waits on this until it ends.
            locking.execute(text("SET LOCAL citus.enable_manual_changes_to_shards = on"))
            locking.execute(text(f"LOCK TABLE {shard} IN ACCESS EXCLUSIVE MODE"))
            batch = claims.claim_polite(bounded, 8, worker, limits=ROOMY).hosts
            locking.rollback()
    finally:
        holder.dispose()
        bounded.dispose()
    assert batch and shard_of_hosts(cluster_db, batch) == {starts_at}
