"""The polite claim on a Citus cluster: shard group after shard group until the batch is
full, each group's part on its worker, with the same rules as on one server. Skips
without `make citus`."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import text

from crawler.core.hostnames import root
from crawler.db.crawl import claims, queue
from crawler.db.crawl.claims import RootLimits


def shard_by_root(engine, roots: list[str]) -> dict[str, int]:
    with engine.connect() as conn:
        shards = conn.execute(
            text(
                "SELECT r, get_shard_id_for_distribution_column('roots', r)"
                " FROM unnest(CAST(:roots AS text[])) AS r"
            ),
            {"roots": roots},
        )
        return dict(shards.all())


def shard_of(engine, roots: set[str]) -> set[int]:
    return set(shard_by_root(engine, sorted(roots)).values())


def roots_of_one_shard(engine, count: int) -> list[str]:
    """`count` roots (site<N>.test) that hash into one shard: one shard group's."""
    candidates = [f"site{r}.test" for r in range(count * 40)]
    shard = shard_by_root(engine, candidates)
    roots = [r for r in candidates if shard[r] == shard[candidates[0]]][:count]
    assert len(roots) == count
    return roots


def test_a_claim_on_the_cluster_fills_its_batch_within_the_rules(cluster_db):
    names = [f"h{i}.site{r}.test" for r in range(40) for i in range(5)]
    queue.save_hosts(cluster_db, names)
    taken: list[str] = []
    while batch := claims.claim_polite(cluster_db, 16, "w1").hosts:
        assert len(batch) == min(16, 40 * 2 - len(taken))
        taken += batch
        assert max(Counter(root(h) for h in taken).values()) <= 2
    assert len(taken) == len(set(taken)) == 40 * 2  # two of each root, until they finish


def test_a_claim_fills_from_due_roots_spread_over_every_shard_group(cluster_db):
    """300 roots with one due host each, spread over every group (about 9 a group), one
    host a root at a time: a claim of 100 takes 100 (it goes from group to group, each
    at most once, until its batch is full), and the next one takes the next 100."""
    names = [f"site{r}.test" for r in range(300)]
    queue.save_hosts(cluster_db, names)
    with cluster_db.connect() as conn:
        groups = conn.execute(
            text("SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'roots'::regclass")
        ).scalar_one()
    assert len(shard_of(cluster_db, set(names))) == groups
    one_at_a_time = RootLimits(concurrency=1)
    first = claims.claim_polite(cluster_db, 100, "w1", limits=one_at_a_time).hosts
    second = claims.claim_polite(cluster_db, 100, "w2", limits=one_at_a_time).hosts
    assert len(first) == len(second) == 100
    assert not set(first) & set(second)
    assert len(shard_of(cluster_db, {root(h) for h in first})) > 1


def test_on_the_cluster_roots_with_a_claim_running_still_fill_a_whole_batch(cluster_db):
    """60 roots of one shard group, 3 hosts each, a claim running on 30 of them: another
    claim of 30 there takes the room they have left, not half a batch."""
    roots = roots_of_one_shard(cluster_db, 60)
    queue.save_hosts(cluster_db, [f"h{i}.{r}" for r in roots for i in range(3)])
    running = claims.claim_polite(cluster_db, 30, "w1", limits=RootLimits(concurrency=1))
    assert len({root(h) for h in running.hosts}) == 30
    batch = claims.claim_polite(cluster_db, 30, "w2", limits=RootLimits(concurrency=2)).hosts
    assert len(batch) == 30
    assert max(Counter(root(h) for h in running.hosts + batch).values()) == 2


def test_on_the_cluster_roots_at_their_concurrency_past_the_first_page_do_not_starve_a_claim(
    cluster_db,
):
    """60 roots of one shard group at their concurrency, a host due still each, past the 40
    a claim of 10 walks there first, and 10 roots of the group behind them with a host
    each: the claim walks on to those."""
    roots = roots_of_one_shard(cluster_db, 70)
    busy, calm = roots[:60], roots[60:]
    queue.save_hosts(cluster_db, [f"h{i}.{r}" for r in busy for i in range(3)])
    running = claims.claim_polite(cluster_db, 120, "w1").hosts
    assert Counter(root(h) for h in running) == dict.fromkeys(busy, 2)
    queue.save_hosts(cluster_db, calm)
    assert sorted(claims.claim_polite(cluster_db, 10, "w2").hosts) == sorted(calm)
