"""The roots' counters after a benchmark's COPY (bench/panel.py, bench/roots.py): COPY is
no writer of ours, so the counters the writers keep are written as they would have."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from crawler.db.crawl import rollups


def keep_root_counters(
    conn,
    hosts: Iterable[tuple[str, str | None]],
    dated: Iterable[tuple[str, datetime | None]],
    windows: Iterable[str],
) -> None:
    """Count `hosts` (root, outcome: None never crawled) in their roots, lower the roots'
    dates to the hosts' `dated` (root, next_claim_at), recount the trap `windows`."""
    hosts = list(hosts)
    rollups.count_hosts(
        conn,
        new=[root for root, _ in hosts],
        crawled=[(root, None, outcome) for root, outcome in hosts if outcome],
    )
    rollups.lower_next_due(conn, dated)
    rollups.recount_windows(conn, list(windows))
