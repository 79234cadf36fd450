"""What the main host list hides, summed: the part of the kept totals to leave out.

The list shows a host unless it is a deny entry or under one. The dashboard reads
totals kept over every host (roots, host_hours: crawler.db.rollups) or the planner's
estimates over all of hosts; the hosts it must leave out are the deny entries and
the rows an entry took out of routing (`queue.denied_by`). Those are the rows of
the small partial index ix_queue_hidden_root (migration 0012): one pass over them,
each host's facts looked up by primary key, gives their share of every figure.
Its cost follows the hidden rows (entries and what they took out), not the hosts.

Not counted here: a host a worker saved under an entry before its deny list heard of
the entry (no denied_by). The list hides it (visible() tests every parent); finding
such rows means a range scan under every entry, which would double this pass.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import text

from crawler.core.outcomes import outcome_group

FOUND_HOURS = 24  # "Found in the last 24 hours, by source" on the strip

# The partial index's predicate, as the queries here must spell it to use it.
HIDDEN_ROW = "(q.status_reason IS NOT NULL OR q.denied_by IS NOT NULL)"

# Per hidden host: its outcome, the hour of its discovery and of its latest crawl (when
# they fall in the window), whether that crawl was in the last hour, and whether it was
# found in the last FOUND_HOURS hours and by which source (the strip's "by source"; the
# source of older hosts is left out, so it adds no groups). The LATERAL ... LIMIT 1
# keeps the hosts lookup a primary-key probe whatever the planner believes.
HIDDEN_FIGURES = text(
    f"""
    SELECT h.outcome,
           CASE WHEN h.discovered_at >= :start
                THEN date_trunc('hour', h.discovered_at, 'UTC') END AS found_hour,
           CASE WHEN h.last_crawled_at >= :start
                THEN date_trunc('hour', h.last_crawled_at, 'UTC') END AS crawl_hour,
           h.discovered_at > now() - make_interval(hours => :found_hours) AS found_lately,
           CASE WHEN h.discovered_at > now() - make_interval(hours => :found_hours)
                THEN h.found_source END AS found_source,
           count(*) AS n,
           count(*) FILTER (WHERE h.last_crawled_at > now() - interval '1 hour') AS recent
      FROM queue q
     CROSS JOIN LATERAL (
           SELECT outcome, discovered_at, last_crawled_at, found_source FROM hosts
            WHERE hostname = q.hostname AND root = q.root LIMIT 1) h
     WHERE {HIDDEN_ROW}
     GROUP BY 1, 2, 3, 4, 5
    """
)


@dataclass
class Hidden:
    """The hidden hosts' share of the dashboard's figures."""

    hosts: Counter = field(default_factory=Counter)  # outcome (None: never crawled) -> hosts
    recent: Counter = field(default_factory=Counter)  # outcome -> crawled in the last hour
    discovered: Counter = field(default_factory=Counter)  # hour -> hosts discovered in it
    crawled: Counter = field(default_factory=Counter)  # (hour, group) -> latest crawls in it
    # source group (None: a seed or older) -> hosts found in the last FOUND_HOURS hours
    found: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.hosts.values())


def hidden_figures(conn, start: datetime) -> Hidden:
    """The hidden hosts' outcomes, their discoveries and latest crawls since `start`, and
    their sources if found in the last FOUND_HOURS hours."""
    hidden = Hidden()
    params = {"start": start, "found_hours": FOUND_HOURS}
    for row in conn.execute(HIDDEN_FIGURES, params):
        hidden.hosts[row.outcome] += row.n
        if row.found_lately:
            hidden.found[row.found_source] += row.n
        hidden.recent[row.outcome] += row.recent
        if row.found_hour is not None:
            hidden.discovered[row.found_hour.astimezone(UTC)] += row.n
        if row.crawl_hour is not None:
            hour = row.crawl_hour.astimezone(UTC)
            hidden.crawled[hour, outcome_group(row.outcome)] += row.n
    return hidden
