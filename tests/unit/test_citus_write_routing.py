"""The crawl's writes on a Citus cluster run on one shard each: a batch over the roots of
every shard group is written a statement per group (crawler.db.deployments.root_groups), so
Citus routes each to one worker. Counted by Citus itself (citus_stat_counters). Skips
without `make citus`."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from sqlalchemy import text

from crawler.core.links import FilteredLinks
from crawler.db import deployments
from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import trap_windows
from tests.unit.test_citus_claim_routing import counting, roots_by_shard


def every_group(engine) -> list[str]:
    """Two roots in each shard group, with a claimed host under each."""
    roots = [r for group in roots_by_shard(engine, 2).values() for r in group]
    queue.save_hosts(engine, [f"a.{r}" for r in roots])
    with engine.begin() as conn:
        conn.execute(text("UPDATE hosts SET claimed_by = 'w1', claimed_at = now()"))
    return roots


def finish(engine, roots: list[str]) -> None:
    """A finish batch: a page per root, each naming a new host of the next root and
    dropping links to a deny entry under the root after it (crawler.db.crawl.dropped_links)."""
    queue.finish_many(
        engine,
        [
            Crawled(
                f"a.{r}",
                CrawlResult("OK", 200),
                FilteredLinks.of(
                    [f"b.{roots[(i + 1) % len(roots)]}"],
                    found=3,
                    by_entry=Counter({f"x.{roots[(i + 1) % len(roots)]}": 2}),
                ),
            )
            for i, r in enumerate(roots)
        ],
    )


def save(engine, roots: list[str]) -> None:
    queue.save_hosts(engine, [f"new.{r}" for r in roots])


def trap_window(engine, roots: list[str]) -> None:
    trap_windows.record_outcomes(engine, [(f"x.{r}", "DNS_NXDOMAIN") for r in roots], 50)


def release(engine, roots: list[str]) -> None:
    queue.release(engine, [f"a.{r}" for r in roots])


def retry_soon(engine, roots: list[str]) -> None:
    queue.retry_soon(engine, [f"a.{r}" for r in roots], timedelta(seconds=30))


WRITERS = {
    "finish_many": finish,
    "save_hosts": save,
    "the trap window": trap_window,
    "release": release,
    "retry_soon": retry_soon,
}


@pytest.mark.parametrize("writer", WRITERS)
def test_a_batch_over_every_shard_group_runs_no_multi_shard_statement(cluster_db, writer):
    roots = every_group(cluster_db)
    with counting(cluster_db.url.render_as_string(hide_password=False)) as (engine, read):
        WRITERS[writer](engine, roots)
        single, multi = read()
    assert multi == 0
    assert single >= 8  # at least one statement on each of the cluster's 8 shard groups


def test_the_groups_come_in_shard_order_not_their_roots_order(cluster_db):
    """One lock order for every writer: (shard, root). By each group's first root instead,
    a writer of {a, c} | {b} and one of {b} | {c} would take b and c in turns."""
    by_shard = [sorted(roots) for roots in roots_by_shard(cluster_db, 2).values()]
    assert by_shard != sorted(by_shard)  # else this test could not tell the two apart
    with cluster_db.connect() as conn:
        groups = deployments.root_groups(conn, [r for roots in by_shard for r in roots])
        named = deployments.by_shard_group(conn, {f"a.{r}": r for roots in by_shard for r in roots})
    assert groups == by_shard
    assert [roots for roots, _ in named] == by_shard
