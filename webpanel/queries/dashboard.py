"""The dashboard strip above the host list."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import text

from crawler.core.hostnames import parents
from crawler.core.hostnames import root as root_of
from crawler.db.crawl import counts
from crawler.db.deployments import deployment_of
from crawler.db.operators.hidden import HIDDEN_ROW, Hidden, hidden_figures
from crawler.db.operators.host_filter import NEVER_CRAWLED
from crawler.db.server.estimates import EXACT_BELOW, hosts_estimate, row_estimate
from crawler.db.server.sql_pieces import filled, names_param

# -- the dashboard strip ---------------------------------------------------------------


@dataclass
class Chart:
    """Discoveries per bucket (hour or day), oldest first, empty buckets included."""

    unit: str
    buckets: list[tuple[datetime, int]] = field(default_factory=list)

    @property
    def peak(self) -> int:
        return max((n for _, n in self.buckets), default=0)


# The outcome groups of the timeline (a legend of four reads better than of sixteen);
# host_hours counts a column per group (migration 0009: OK and DNS_ALIVE, HTTP_*,
# IGNORED, the rest).
OUTCOME_GROUPS = {
    "OK": "answered",
    "HTTP": "HTTP error or timeout",
    "NETWORK": "failed below HTTP (DNS, TCP, TLS)",
    "IGNORED": "denied",
}


@dataclass
class Timeline:
    """Per hour, oldest first: hosts discovered, and hosts crawled by outcome group.

    Each crawl counts in its hour, a recrawl too (the work done, not the hosts' state).
    """

    hours: list[datetime] = field(default_factory=list)
    discovered: list[int] = field(default_factory=list)
    crawled: dict[str, list[int]] = field(default_factory=dict)  # OUTCOME_GROUPS key -> counts

    @property
    def crawled_total(self) -> list[int]:
        return [sum(column) for column in zip(*self.crawled.values(), strict=True)] or [
            0 for _ in self.hours
        ]

    def as_dict(self) -> dict:
        return {
            "hours": [h.isoformat() for h in self.hours],
            "discovered": self.discovered,
            "crawled": self.crawled_total,
            "crawled_by_outcome": self.crawled,
        }


@dataclass
class Dashboard:
    hosts_known: int
    due_now: int
    crawled_last_hour: int
    blocked: int
    no_follow: int
    out_of_routing: int
    outcomes: list[tuple[str | None, int]]
    chart: Chart
    computed_at: datetime
    # True: the totals are the planner's estimates (a big database), shown with "≈".
    estimated: bool = False
    timeline: Timeline = field(default_factory=Timeline)
    top_roots: list[tuple[str, int]] = field(default_factory=list)
    # Hosts discovered in the timeline's 24 hours, by the source group that found them.
    found_by_source: list[tuple[str | None, int]] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "hosts_known": self.hosts_known,
            "due_now": self.due_now,
            "crawled_last_hour": self.crawled_last_hour,
            "blocked": self.blocked,
            "no_follow": self.no_follow,
            "out_of_routing": self.out_of_routing,
            "outcomes": {(o or NEVER_CRAWLED): n for o, n in self.outcomes},
            "discoveries": {
                "unit": self.chart.unit,
                "buckets": [[b.isoformat(), n] for b, n in self.chart.buckets],
            },
            "computed_at": self.computed_at.isoformat(),
            "estimated": self.estimated,
            "timeline": self.timeline.as_dict(),
            "top_roots": [{"root": r, "hosts": n} for r, n in self.top_roots],
            "found_by_source": {(s or "seed or older"): n for s, n in self.found_by_source},
        }


def dashboard(conn) -> Dashboard:
    """The figures of `/`, over the hosts its list shows: exact on a small database,
    planner estimates (marked ≈) on a big one (totals()); callers cache it."""
    start = window_start()
    hidden = hidden_figures(conn, start)
    figures = totals(conn, hidden)
    hourly = timeline(conn, hidden=hidden)
    return Dashboard(
        **figures,
        # Discoveries per hour (the API's "discoveries"), from the timeline.
        chart=Chart("hour", list(zip(hourly.hours, hourly.discovered, strict=True))),
        computed_at=datetime.now(UTC),
        timeline=hourly,
        top_roots=top_roots(conn),
        found_by_source=found_by_source(conn, hidden, start),
    )


FOUND_BY_SOURCE = text(
    "SELECT nullif(source, '') AS source, sum(discovered) AS n FROM source_hours"
    " WHERE hour >= :start GROUP BY source"
)


def found_by_source(conn, hidden: Hidden, start: datetime) -> list[tuple[str | None, int]]:
    """Hosts the list shows discovered since `start` (the timeline's first hour: the
    last 24 hours) per source group, most first: from source_hours (migration 0018), at
    most 24 x its shards x the groups rows whatever the size of hosts, less the hidden
    hosts' share, as every other figure of the strip."""
    rows = conn.execute(FOUND_BY_SOURCE, {"start": start})
    shown = [(source, int(n) - hidden.found[source]) for source, n in rows]
    return sorted(((s, n) for s, n in shown if n > 0), key=lambda r: (-r[1], r[0] or ""))


# -- when the figures go stale: a change of the deny entries -------------------------------
#
# Every change of entries (the panel, the API, the CLI, a worker's block) commits its
# change-log row in its own transaction (crawler.db.operators.bulk_change_log), and nothing else
# writes the change log. So the log's newest ids say whether the entries changed since
# the figures were taken: one probe of its primary key, read by every process, with no
# listener to miss a change. The count of the last GENERATION_SPAN ids catches a change
# that took its id before another one committed but committed after it.

GENERATION_SPAN = 1000
# Which database, and which life of it, figures are of: another server (its start), another
# database (its oid) or the same one emptied (TRUNCATE gives change_log a new file: a new
# demo, crawler.db.crawl.retention.forget_the_crawl) is another identity, whose figures
# start again whatever their change-log ids say. A restart of the server only costs one
# recompute.
DATABASE_IDENTITY = (
    "SELECT pg_postmaster_start_time()::text || ' ' || d.oid || ' '"
    " || pg_relation_filenode('change_log') FROM pg_database d WHERE d.datname = current_database()"
)
ENTRIES_GENERATION = text(
    f"SELECT ({DATABASE_IDENTITY}) AS identity,"
    " coalesce(max(id), 0) AS last, count(*) AS recent FROM change_log"
    " WHERE id > (SELECT coalesce(max(id), 0) FROM change_log) - :span"
)


@dataclass(frozen=True)
class Generation:
    """The database's identity and the deny entries' generation within it."""

    identity: str = ""
    last: int = 0  # the newest change-log id
    recent: int = 0  # changes among the last GENERATION_SPAN ids

    def covers(self, other: Generation) -> bool:
        """Figures of this generation may be served for `other`'s: the same database, and
        no change of entries since."""
        return self.identity == other.identity and (self.last, self.recent) >= (
            other.last,
            other.recent,
        )


def entries_generation(conn) -> Generation:
    """The database's identity, the newest change-log id and the changes among the last
    GENERATION_SPAN ids: greater after any change of the deny entries has committed,
    another identity in another database or after the crawl was forgotten."""
    row = conn.execute(ENTRIES_GENERATION, {"span": GENERATION_SPAN}).one()
    return Generation(row.identity, row.last, row.recent)


# -- the totals: counted while small, estimated by the planner when big ----------------------
#
# Past EXACT_BELOW rows the strip shows the planner's estimates (crawler.db.server.estimates),
# marked "≈", less the hosts the list hides (counted: crawler.db.operators.hidden).

RECENT = "SELECT 1 FROM hosts WHERE last_crawled_at > now() - interval '1 hour'"
OUT_OF_ROUTING = "SELECT 1 FROM hosts WHERE denied_by IS NOT NULL"


def totals(conn, hidden: Hidden | None = None) -> dict:
    """The strip's totals (everything but the chart), with `estimated` saying which kind
    (the planner's estimates, or hidden hosts' share sampled: crawler.db.operators.hidden)."""
    if hidden is None:
        hidden = hidden_figures(conn, window_start())
    rows = hosts_estimate(conn)
    if rows < EXACT_BELOW:
        figures = exact_totals(conn, hidden)
    else:
        figures = estimated_totals(conn, rows, hidden)
    return {**figures, "estimated": figures["estimated"] or hidden.sampled}


def exact_totals(conn, hidden: Hidden) -> dict:
    """Counted: one scan of hosts less the hidden rows; fine below EXACT_BELOW rows."""
    counted = conn.execute(
        text(
            "SELECT outcome, count(*) AS n,"
            " count(*) FILTER (WHERE last_crawled_at > now() - interval '1 hour') AS recent"
            " FROM hosts GROUP BY outcome"
        )
    ).all()
    outcomes = sorted(
        ((r.outcome, r.n - hidden.hosts[r.outcome]) for r in counted),
        key=lambda r: (-r[1], r[0] is None, r[0] or ""),
    )
    rows = sum(r.n for r in counted)
    return {
        "hosts_known": counts.hosts_known(conn, rows, (hidden.total, hidden.sampled))[0],
        "due_now": counts.due_now(conn)[0],
        "crawled_last_hour": sum(r.recent - hidden.recent[r.outcome] for r in counted),
        "blocked": hidden.entries["blocked"],
        "no_follow": hidden.entries["no_follow"],
        "out_of_routing": conn.execute(
            text(f"SELECT count(*) FROM ({OUT_OF_ROUTING}) AS o")
        ).scalar_one(),
        "outcomes": [(o, n) for o, n in outcomes if n > 0],
        "estimated": False,
    }


def estimated_totals(conn, rows: float, hidden: Hidden) -> dict:
    """From the planner's statistics, less the hidden hosts (counted); the deny entries
    are counted too (with the hidden rows: crawler.db.operators.hidden)."""
    outcomes = [(o, n - hidden.hosts[o]) for o, n in outcome_estimates(conn, rows)]
    outcomes = sorted(((o, n) for o, n in outcomes if n > 0), key=lambda r: -r[1])
    return {
        "hosts_known": counts.hosts_known(conn, round(rows), (hidden.total, hidden.sampled))[0],
        "due_now": counts.due_now(conn)[0],
        "crawled_last_hour": max(0, row_estimate(conn, RECENT) - sum(hidden.recent.values())),
        "blocked": hidden.entries["blocked"],
        "no_follow": hidden.entries["no_follow"],
        "out_of_routing": row_estimate(conn, OUT_OF_ROUTING),
        "outcomes": outcomes,
        "estimated": True,
    }


def outcome_estimates(conn, rows: float) -> list[tuple[str | None, int]]:
    """(outcome, ≈ hosts) from the planner's statistics; outcomes too rare for the sample
    are left out."""
    shares = deployment_of(conn).value_shares(conn, "hosts", "outcome")
    return [(o, round(share * rows)) for o, share in shares]


# -- the charts: hosts discovered and crawled per hour, and the biggest roots -------------

HOURS = 24


def window_start(hours: int = HOURS) -> datetime:
    """The first hour of the timeline: `hours` hours, this one included."""
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    return end - timedelta(hours=hours - 1)


def timeline(conn, hours: int = HOURS, hidden: Hidden | None = None) -> Timeline:
    """The last `hours` hours (this one included), from host_hours (migration 0009):
    at most 24 x its shards rows, whatever the size of hosts. Less the hidden hosts'
    discoveries and latest crawls: a trap's hosts leave the chart when it is blocked."""
    start = window_start(hours)
    if hidden is None:
        hidden = hidden_figures(conn, start)
    slots = [start + timedelta(hours=i) for i in range(hours)]
    rows = conn.execute(
        text(
            "SELECT hour, sum(discovered) AS discovered, sum(ok) AS ok, sum(http) AS http,"
            " sum(network) AS network, sum(ignored) AS ignored"
            " FROM host_hours WHERE hour >= :start GROUP BY hour"
        ),
        {"start": start},
    ).all()
    by_hour = {row.hour.astimezone(UTC): row for row in rows}
    column_of = {group: group.lower() for group in OUTCOME_GROUPS}

    def shown(hour: datetime, column: str, less: int) -> int:
        return max(0, int(getattr(by_hour.get(hour), column, 0)) - less)

    return Timeline(
        slots,
        [shown(h, "discovered", hidden.discovered[h]) for h in slots],
        {
            group: [shown(h, column, hidden.crawled[h, group]) for h in slots]
            for group, column in column_of.items()
        },
    )


TOP_ROOTS_BATCH = 50
BIGGEST_ROOTS = "SELECT root, hosts FROM roots {after} ORDER BY hosts DESC, root DESC LIMIT :n"
AFTER = "WHERE (hosts, root) < (:after_hosts, :after_root)"
# Each statement names the roots it reads (root = ANY): on a Citus cluster a query per
# shard group, no join across them.
ENTRIES_AMONG = text(
    "SELECT hostname FROM hosts WHERE status_reason IS NOT NULL"
    " AND hostname = ANY(:names) AND root = ANY(:roots)"
).bindparams(*names_param("names", "roots"))
HIDDEN_BY_ROOT = text(
    "SELECT q.root, count(*) AS n FROM hosts q"
    f" WHERE q.root = ANY(:roots) AND {HIDDEN_ROW} GROUP BY q.root"
).bindparams(*names_param("roots"))


def top_roots(conn, n: int = 10) -> list[tuple[str, int]]:
    """The roots with the most hosts the list shows: each root's kept count less
    its hidden rows, never a root that is (or is under) a deny entry.

    Roots are walked down the (hosts, root) index a batch at a time, until no root left
    can reach the n-th count: a root's shown hosts are at most its hosts.
    """
    best: list[tuple[str, int]] = []
    after: tuple[int, str] | None = None
    while True:
        batch = biggest_roots(conn, after)
        best += [(root, shown) for root, shown in shown_hosts(conn, batch) if shown > 0]
        best = sorted(best, key=lambda r: (r[1], r[0]), reverse=True)[:n]
        if len(batch) < TOP_ROOTS_BATCH or (len(best) == n and batch[-1][1] <= best[-1][1]):
            return best
        after = (batch[-1][1], batch[-1][0])


def biggest_roots(conn, after: tuple[int, str] | None) -> list[tuple[str, int]]:
    """The next TOP_ROOTS_BATCH (root, hosts) by hosts, below `after`."""
    query = text(filled(BIGGEST_ROOTS, after=AFTER if after is not None else ""))
    hosts, root = after if after is not None else (None, None)
    params = {"after_hosts": hosts, "after_root": root, "n": TOP_ROOTS_BATCH}
    return [(r.root, r.hosts) for r in conn.execute(query, params)]


def shown_hosts(conn, batch: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """(root, its hosts less its hidden rows); a root an entry covers (it or a parent of
    it is an entry: a blocked trap) shows none, and its rows are never counted."""
    roots = [r for r, _ in batch]
    if not roots:
        return []
    names = sorted({p for r in roots for p in parents(r)})
    params = {"names": names, "roots": sorted({root_of(p) for p in names})}
    entries = set(conn.execute(ENTRIES_AMONG, params).scalars())
    shown = [(r, hosts) for r, hosts in batch if entries.isdisjoint(parents(r))]
    hidden = dict(conn.execute(HIDDEN_BY_ROOT, {"roots": [r for r, _ in shown]}).all())
    return [(r, hosts - hidden.get(r, 0)) for r, hosts in shown]
