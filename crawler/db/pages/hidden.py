"""What the main host list hides, summed: the part of the kept totals to leave out.

The list shows a host unless it is a deny entry or under one. The dashboard reads
totals kept over every host (roots, host_hours, source_hours: crawler.db.rollups) or
the planner's estimates over all of hosts; the hosts it must leave out are the deny
entries and the rows an entry took out of routing (`queue.denied_by`): the hidden rows,
indexed apart (migrations 0012 and 0018).

Their number, and the entries' by rule, are counted exactly: one index-only scan of
ix_queue_hidden_sample. Their share of the other figures needs each hidden host's facts
(outcome, dates, source), one hosts lookup each, about 4 µs: 180,000 hidden rows were a
second of every refresh. So up to HIDDEN_SAMPLE hidden rows every one is looked up; past
that, the rows whose name hashes below a cut (the first HIDDEN_SAMPLE in the index's
order: a sample the names' hash spreads evenly), and their counts are scaled up to all
the hidden rows. The strip then says its figures are estimates. The cost follows
HIDDEN_SAMPLE, not the hosts nor the hidden rows.

Not counted here: a host a worker saved under an entry before its deny list heard of
the entry (no denied_by). The list hides it (visible() tests every parent); finding
such rows means a range scan under every entry, which would double this pass.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import text

from crawler.core.outcomes import outcome_group

HIDDEN_SAMPLE = 5_000  # hidden rows looked up, at most (about 20 ms)
HASH_BUCKETS = 65_536  # the index's key: hashtext(hostname) & 65535

# The partial indexes' predicate, as the queries here must spell it to use them.
HIDDEN_ROW = "(q.status_reason IS NOT NULL OR q.denied_by IS NOT NULL)"
BUCKET = "(hashtext(q.hostname::text) & 65535)"

HIDDEN_COUNTS = text(
    "SELECT count(*) AS n,"
    " count(*) FILTER (WHERE q.status_reason = 'blocked') AS blocked,"
    " count(*) FILTER (WHERE q.status_reason = 'no_follow') AS no_follow"
    f" FROM queue q WHERE {HIDDEN_ROW}"
)
# Per looked-up hidden host: its outcome, the hour of its discovery (with its source)
# and of its latest crawl when they fall in the window, and whether that crawl was in
# the last hour. Joined on (hostname, root): one probe of the hosts key, and on a Citus
# cluster a join within each shard group.
HIDDEN_FIGURES = text(
    f"""
    SELECT h.outcome,
           CASE WHEN h.discovered_at >= :start
                THEN date_trunc('hour', h.discovered_at, 'UTC') END AS found_hour,
           CASE WHEN h.discovered_at >= :start THEN h.found_source END AS found_source,
           CASE WHEN h.last_crawled_at >= :start
                THEN date_trunc('hour', h.last_crawled_at, 'UTC') END AS crawl_hour,
           count(*) AS n,
           count(*) FILTER (WHERE h.last_crawled_at > now() - interval '1 hour') AS recent
      FROM queue q JOIN hosts h ON h.hostname = q.hostname AND h.root = q.root
     WHERE {HIDDEN_ROW} AND {BUCKET} < :cut
     GROUP BY 1, 2, 3, 4
    """
)


@dataclass
class Hidden:
    """The hidden hosts' share of the dashboard's figures."""

    rows: int = 0  # hidden rows, counted
    entries: Counter = field(default_factory=Counter)  # rule -> deny entries, counted
    hosts: Counter = field(default_factory=Counter)  # outcome (None: never crawled) -> hosts
    recent: Counter = field(default_factory=Counter)  # outcome -> crawled in the last hour
    discovered: Counter = field(default_factory=Counter)  # hour -> hosts discovered in it
    crawled: Counter = field(default_factory=Counter)  # (hour, group) -> latest crawls in it
    # source group (None: a seed or older) -> hosts discovered since the window's start
    found: Counter = field(default_factory=Counter)
    sampled: bool = False  # True: the counters above are scaled up from a sample

    @property
    def total(self) -> int:
        return self.rows


def sample_cut(rows: int) -> int:
    """The hash bucket below which hidden rows are looked up: all of them up to
    HIDDEN_SAMPLE rows, else about HIDDEN_SAMPLE of them."""
    if rows <= HIDDEN_SAMPLE:
        return HASH_BUCKETS
    return max(1, math.ceil(HASH_BUCKETS * HIDDEN_SAMPLE / rows))


def hidden_figures(conn, start: datetime) -> Hidden:
    """The hidden rows counted; their outcomes, discoveries (with sources) and latest
    crawls since `start`, looked up (or sampled, past HIDDEN_SAMPLE rows)."""
    counts = conn.execute(HIDDEN_COUNTS).one()
    entries = Counter(blocked=counts.blocked, no_follow=counts.no_follow)
    hidden = Hidden(rows=counts.n, entries=entries)
    if not counts.n:
        return hidden
    cut = sample_cut(counts.n)
    looked_up = Hidden(sampled=cut < HASH_BUCKETS)
    for row in conn.execute(HIDDEN_FIGURES, {"start": start, "cut": cut}):
        looked_up.hosts[row.outcome] += row.n
        looked_up.recent[row.outcome] += row.recent
        if row.found_hour is not None:
            looked_up.discovered[row.found_hour.astimezone(UTC)] += row.n
            looked_up.found[row.found_source] += row.n
        if row.crawl_hour is not None:
            hour = row.crawl_hour.astimezone(UTC)
            looked_up.crawled[hour, outcome_group(row.outcome)] += row.n
    seen = sum(looked_up.hosts.values())
    scale = counts.n / seen if looked_up.sampled and seen else 1.0
    for name in ("hosts", "recent", "discovered", "crawled", "found"):
        counter = getattr(looked_up, name)
        setattr(hidden, name, Counter({k: round(n * scale) for k, n in counter.items()}))
    hidden.sampled = looked_up.sampled
    return hidden
