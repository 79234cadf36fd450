"""The dashboard strip above the host list."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import (
    text,
)

from crawler.db.pages.paging import (
    NEVER_CRAWLED,
)

# -- the dashboard strip ---------------------------------------------------------------


@dataclass
class Chart:
    """Discoveries per bucket (hour or day), oldest first, empty buckets included."""

    unit: str
    buckets: list[tuple[datetime, int]] = field(default_factory=list)

    @property
    def peak(self) -> int:
        return max((n for _, n in self.buckets), default=0)


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
        }


OUTCOME_COUNTS = (
    "outcome, count(*) AS n,"
    " count(*) FILTER (WHERE last_crawled_at > now() - interval '1 hour') AS recent"
)


@dataclass(frozen=True)
class Counts:
    outcome: str | None
    n: int
    recent: int


def without(rows, taken) -> list:
    """Outcome counts `rows` less `taken`, largest first (outcomes left at 0 dropped)."""
    less = {r.outcome: r for r in taken}
    left = [
        Counts(
            r.outcome,
            r.n - getattr(less.get(r.outcome), "n", 0),
            r.recent - getattr(less.get(r.outcome), "recent", 0),
        )
        for r in rows
    ]
    return sorted(
        (r for r in left if r.n > 0), key=lambda r: (-r.n, r.outcome is None, r.outcome or "")
    )


def dashboard(conn) -> Dashboard:
    """The figures of the strip on `/`. Scans hosts twice: callers cache it."""
    outcome_rows = conn.execute(text(f"SELECT {OUTCOME_COUNTS} FROM hosts GROUP BY outcome")).all()
    # Deny entries have hosts rows too, but they are rules, not hosts: not counted.
    entry_rows = conn.execute(
        text(
            f"SELECT {OUTCOME_COUNTS} FROM hosts JOIN queue q USING (hostname)"
            " WHERE q.status_reason IS NOT NULL GROUP BY outcome"
        )
    ).all()
    outcome_rows = without(outcome_rows, entry_rows)
    entries = conn.execute(
        text(
            "SELECT count(*) FILTER (WHERE status_reason = 'blocked') AS blocked,"
            " count(*) FILTER (WHERE status_reason = 'no_follow') AS no_follow"
            " FROM queue WHERE status_reason IS NOT NULL"
        )
    ).one()
    due = conn.execute(
        text(
            "SELECT count(*) FROM queue WHERE status_reason IS NULL AND denied_by IS NULL"
            " AND next_claim_at <= now()"
        )
    ).scalar_one()
    out = conn.execute(text("SELECT count(*) FROM queue WHERE denied_by IS NOT NULL")).scalar_one()
    return Dashboard(
        hosts_known=sum(r.n for r in outcome_rows),
        due_now=due,
        crawled_last_hour=sum(r.recent for r in outcome_rows),
        blocked=entries.blocked,
        no_follow=entries.no_follow,
        out_of_routing=out,
        outcomes=[(r.outcome, r.n) for r in outcome_rows],
        chart=discoveries(conn),
        computed_at=datetime.now(UTC),
    )


def discoveries(conn, hours: int = 48, days: int = 30) -> Chart:
    """Hosts discovered per hour over the last `hours` of discovery, or per day if older."""
    span = conn.execute(text("SELECT min(discovered_at), max(discovered_at) FROM hosts")).one()
    if span[1] is None:
        return Chart("hour")
    last = span[1].astimezone(UTC)
    if span[0] >= last - timedelta(hours=hours):
        unit, step, count = "hour", timedelta(hours=1), hours
    else:
        unit, step, count = "day", timedelta(days=1), days
    end = last.replace(minute=0, second=0, microsecond=0)
    if unit == "day":
        end = end.replace(hour=0)
    start = end - step * (count - 1)
    rows = conn.execute(
        text(
            "SELECT date_trunc(:unit, discovered_at, 'UTC') AS b, count(*) FROM hosts"
            " WHERE discovered_at >= :start GROUP BY b"
        ),
        {"unit": unit, "start": start},
    ).all()
    found = {b.astimezone(UTC): n for b, n in rows}
    return Chart(unit, [(start + step * i, found.get(start + step * i, 0)) for i in range(count)])
