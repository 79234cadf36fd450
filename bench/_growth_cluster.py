"""bench/growth.py --cluster: the panel's pages on a Citus cluster at both sizes.

Issue 53 made the cluster's pages an absolute target: Citus adds a few milliseconds to
each statement, so a page is judged by its p95, under TARGET_PAGE_MS at the big size,
with its growth from the small size printed beside it.

The cluster is bench/_citus_nodes.py's (a coordinator and two workers, migrated and
distributed by `upgrade_to_head()`), each node a third of what growth.py gives its one
server. It is loaded by the same generated rows as one server (bench/_growth_data.py's
insert_rows) with its keys and indexes in place: Citus routes each row of an INSERT ...
SELECT to its shard, and a distributed table's keys are dropped and built again shard by
shard at no gain. VACUUM ANALYZE then runs on the per-root tables by name (a bare VACUUM
on the coordinator reaches its own tables only).
"""

from __future__ import annotations

import time

from _citus_nodes import start_cluster, vacuum_everywhere
from _common import verdict
from _growth_data import insert_rows
from _growth_panel import PASSWORD, measure_pages
from sqlalchemy import create_engine

TARGET_PAGE_MS = 100.0


def load_on_cluster(engine, cluster, roots: tuple[int, int], audit: tuple[int, int], entries):
    """insert_rows() on the cluster, then VACUUM ANALYZE; a line saying how long."""
    started = time.perf_counter()
    with engine.begin() as conn:
        insert_rows(conn, roots, audit, entries)
    copied = time.perf_counter() - started
    vacuum_everywhere(engine, cluster.nodes)
    vacuumed = time.perf_counter() - started - copied
    return f"rows {copied:.0f} s, VACUUM ANALYZE {vacuumed:.0f} s"


def pages_at_both_sizes(sizes: tuple[tuple[int, str], ...], buffers_mb: int) -> list[dict]:
    """The pages' figures at each (roots, label) of `sizes`, loaded one after the other
    into one cluster (each size adds its roots to the last one's)."""
    from crawler.db.operators import accounts

    cluster = start_cluster(buffers_mb=buffers_mb)
    engine = create_engine(cluster.url, pool_size=2)
    accounts.create_user(engine, "growth", PASSWORD)
    stages, loaded, audit = [], 0, 0
    for roots, label in sizes:
        took = load_on_cluster(engine, cluster, (loaded, roots), (audit, roots // 2), loaded == 0)
        print(f"# cluster {label}: {roots * 5:,} hosts: {took}", flush=True)
        loaded, audit = roots, roots // 2
        figures, _ = measure_pages(cluster.url, engine)
        for name, (value, _) in figures.items():
            print(f"# cluster {label} {name}: {value:,.1f}", flush=True)
        stages.append(figures)
    engine.dispose()
    return stages


def judge(small: dict, big: dict, labels: tuple[str, str], quick: bool) -> list[str]:
    """Each page's verdict at the big size (its growth beside it); the names that missed."""
    missed = []
    small_label, big_label = labels
    for name, (ten, kind) in big.items():
        if kind != "page":
            continue
        one = small[name][0]
        ok = None if quick else ten < TARGET_PAGE_MS
        figure = f"{name} on the cluster, {big_label} hosts"
        word = verdict(ok, figure, f"{ten:,.1f}", f"< {TARGET_PAGE_MS:.0f} ms")
        print(
            f"{name} on the cluster: {small_label} hosts {one:,.1f}, {big_label} hosts"
            f" {ten:,.1f} (growth x{ten / max(one, 1e-9):.2f}; target < {TARGET_PAGE_MS:.0f}"
            f" ms at {big_label}) {word}"
        )
        if ok is False:
            missed.append(name)
    return missed
