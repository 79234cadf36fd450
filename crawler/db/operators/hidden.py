"""What the main host list hides, summed: the part of the kept totals to leave out.

The list shows a host unless it is a deny entry or under one. The dashboard reads
totals kept over every host (roots, host_hours, source_hours: crawler.db.crawl.rollups) or
the planner's estimates over all of hosts; the hosts it must leave out are the deny
entries and the rows an entry took out of routing (`queue.denied_by`): the hidden rows,
indexed apart (migrations 0012 and 0018).

Their share of the figures needs each hidden host's facts (outcome, dates, source), one
hosts lookup each, about 4 µs: 180,000 hidden rows were a second of every refresh (and
counting them alone, tens of ms). ix_hosts_hidden_sample orders them by a hash of the
name, which spreads them evenly: the rows below a cut of it are a fair sample. The rows
below PROBE_CUT (1/64) are counted first; while that says about 2 x HIDDEN_SAMPLE rows
or fewer, every hidden row is counted and looked up (exact); past it, the cut takes about
HIDDEN_SAMPLE of them, and their counts are scaled by the share of the hash space they
are, and the strip says its figures are estimates (≈). The cost follows HIDDEN_SAMPLE,
not the hosts nor the hidden rows. The deny entries by rule are always counted.

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

HIDDEN_SAMPLE = 2_000  # hidden rows looked up past 2x this (±2% of the hidden share)
HASH_BUCKETS = 65_536  # the index's key: hashtext(hostname) & 65535

# The partial indexes' predicate, as the queries here must spell it to use them.
HIDDEN_ROW = "(q.status_reason IS NOT NULL OR q.denied_by IS NOT NULL)"
BUCKET = "(hashtext(q.hostname::text) & 65535)"

PROBE_CUT = 1_024  # 1/64 of the hash space: counted first, to size the sample
HIDDEN_BELOW_CUT = text(f"SELECT count(*) FROM hosts q WHERE {HIDDEN_ROW} AND {BUCKET} < :cut")
# An index-only scan of ix_hosts_entries, which includes the rule (0027).
ENTRY_COUNTS = text(
    "SELECT count(*) FILTER (WHERE status_reason = 'blocked') AS blocked,"
    " count(*) FILTER (WHERE status_reason = 'no_follow') AS no_follow"
    " FROM queue WHERE status_reason IS NOT NULL"
)
# Per looked-up hidden host: its outcome, the hour of its discovery (with its source)
# and of its latest crawl when they fall in the window, and whether that crawl was in
# the last hour. The hidden rows are walked index-only (ix_hosts_hidden_sample holds
# their name, root and rule), each one's facts probed by its key (LATERAL ... LIMIT 1,
# whatever the planner believes: at 20 hidden rows it would rather scan hosts); on
# (hostname, root), so that on a Citus cluster it stays within each shard group.
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
      FROM hosts q
     CROSS JOIN LATERAL (
           SELECT outcome, discovered_at, last_crawled_at, found_source FROM hosts
            WHERE hostname = q.hostname AND root = q.root LIMIT 1) h
     WHERE {HIDDEN_ROW} AND {BUCKET} < :cut
     GROUP BY 1, 2, 3, 4
    """
)


@dataclass
class Hidden:
    """The hidden hosts' share of the dashboard's figures."""

    rows: int = 0  # hidden rows (counted, or scaled from the sample)
    entries: Counter = field(default_factory=Counter)  # rule -> deny entries (counted)
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


def sample_cut(conn) -> int:
    """The hash bucket below which hidden rows are looked up: all of them while they are
    about 2 x HIDDEN_SAMPLE or fewer (sized by the rows below PROBE_CUT), else about
    HIDDEN_SAMPLE of them."""
    probe = conn.execute(HIDDEN_BELOW_CUT, {"cut": PROBE_CUT}).scalar_one()
    rows = probe * HASH_BUCKETS / PROBE_CUT
    if rows <= 2 * HIDDEN_SAMPLE:
        return HASH_BUCKETS
    return max(1, math.ceil(HASH_BUCKETS * HIDDEN_SAMPLE / rows))


def hidden_rows(conn, cut: int | None = None) -> tuple[int, bool]:
    """(hidden rows, sampled?): counted, or past about 2 x HIDDEN_SAMPLE rows scaled from
    the rows below the sample's cut. Two counts of a partial index."""
    cut = sample_cut(conn) if cut is None else cut
    below = conn.execute(HIDDEN_BELOW_CUT, {"cut": cut}).scalar_one()
    return round(below * HASH_BUCKETS / cut), cut < HASH_BUCKETS


def hidden_figures(conn, start: datetime) -> Hidden:
    """The hidden rows' number, their outcomes, discoveries (with sources) and latest
    crawls since `start`: counted and looked up, or past about 2 x HIDDEN_SAMPLE rows
    from a sample of them, scaled; the deny entries by rule, counted."""
    entries = conn.execute(ENTRY_COUNTS).one()
    cut = sample_cut(conn)
    scale = HASH_BUCKETS / cut
    rows, sampled = hidden_rows(conn, cut)
    hidden = Hidden(
        rows=rows,
        entries=Counter(blocked=entries.blocked, no_follow=entries.no_follow),
        sampled=sampled,
    )
    looked_up = Hidden()
    for row in conn.execute(HIDDEN_FIGURES, {"start": start, "cut": cut}):
        looked_up.hosts[row.outcome] += row.n
        looked_up.recent[row.outcome] += row.recent
        if row.found_hour is not None:
            looked_up.discovered[row.found_hour.astimezone(UTC)] += row.n
            looked_up.found[row.found_source] += row.n
        if row.crawl_hour is not None:
            hour = row.crawl_hour.astimezone(UTC)
            looked_up.crawled[hour, outcome_group(row.outcome)] += row.n
    for name in ("hosts", "recent", "discovered", "crawled", "found"):
        counter = getattr(looked_up, name)
        setattr(hidden, name, Counter({k: round(n * scale) for k, n in counter.items()}))
    return hidden
