"""The dashboard's health row: the last hour minute by minute, and the crawl right now.

Read on every refresh of the row (it is not cached with the strip): at most 60 minutes x
the writer shards rows of host_minutes (crawler.db.crawl.rollups), the workers' rows, and
the crawl's counts now (crawler.db.crawl.counts: due now, held back, in flight, the
failures of the last minutes), which the banner, /roots, /metrics and the console share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import Connection, text

from crawler.core.outcomes import LAYERS
from crawler.db.crawl import counts
from crawler.db.crawl.heartbeats import ALIVE_WITHIN
from crawler.db.crawl.rollups import MINUTE_COUNTS

MINUTES = 60
SHARE_MINUTES = counts.SHARE_MINUTES  # the failure share's minutes
# The minute under way is a rate over the seconds it has run, at least this many (a
# rate over its first second would be a spike).
LEAST_SECONDS = 10

MINUTE_ROWS = text(
    f"""
    SELECT minute, {", ".join(f"sum({c}) AS {c}" for c in MINUTE_COUNTS)}
      FROM host_minutes WHERE minute > :now - make_interval(mins => :minutes)
     GROUP BY minute
    """
)
LAST_ANSWER = text("SELECT max(last_ok_at) FROM host_minutes")
WORKERS = text("SELECT count(*) FROM crawl_workers WHERE heartbeat_at >= now() - :alive")


@dataclass
class Health:
    """Per minute (oldest first, the one under way last): pages settled, new hostnames and
    failures by layer (tries an outage held back among them), each per second; and the
    crawl now."""

    minutes: list[datetime] = field(default_factory=list)
    pages: list[float] = field(default_factory=list)
    discovered: list[float] = field(default_factory=list)
    failures: dict[str, list[float]] = field(default_factory=dict)  # LAYERS -> per second
    due_now: int = 0
    due_estimated: bool = False
    held_back: int = 0
    in_flight: int = 0
    workers: int = 0
    failure_share: float | None = None  # of the last SHARE_MINUTES' tries
    tried_lately: int = 0  # those tries: hosts settled, and tries an outage held back
    last_answer_at: datetime | None = None
    taken_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def as_dict(self) -> dict:
        return {
            "minutes": [m.isoformat() for m in self.minutes],
            "pages_per_s": self.pages,
            "new_hostnames_per_s": self.discovered,
            "failures_per_s": self.failures,
            "due_now": self.due_now,
            "due_estimated": self.due_estimated,
            "held_back": self.held_back,
            "in_flight": self.in_flight,
            "workers": self.workers,
            "failure_share": self.failure_share,
            "last_answer_at": self.last_answer_at and self.last_answer_at.isoformat(),
            "taken_at": self.taken_at.isoformat(),
        }


def health(conn: Connection, minutes: int = MINUTES) -> Health:
    """The row's figures, as of the database's now()."""
    now = conn.execute(text("SELECT now()")).scalar_one().astimezone(UTC)
    this_minute = now.replace(second=0, microsecond=0)
    slots = [this_minute - timedelta(minutes=minutes - 1 - i) for i in range(minutes)]
    rows = conn.execute(MINUTE_ROWS, {"now": now, "minutes": minutes}).all()
    by_minute = {row.minute.astimezone(UTC): row for row in rows}
    seconds = [60.0] * (minutes - 1) + [max(LEAST_SECONDS, (now - this_minute).total_seconds())]

    def rates(column: str) -> list[float]:
        counts = [int(getattr(by_minute.get(m), column, 0)) for m in slots]
        return [round(n / s, 3) for n, s in zip(counts, seconds, strict=True)]

    crawl = counts.now(conn)
    return Health(
        minutes=slots,
        pages=rates("crawled"),
        discovered=rates("discovered"),
        failures={layer: rates(layer.lower()) for layer in LAYERS},
        due_now=crawl.due_now,
        due_estimated=crawl.due_estimated,
        held_back=crawl.held_back,
        in_flight=crawl.in_flight,
        workers=conn.execute(WORKERS, {"alive": ALIVE_WITHIN}).scalar_one(),
        failure_share=crawl.failed.share,
        tried_lately=crawl.failed.tried,
        last_answer_at=conn.execute(LAST_ANSWER).scalar(),
        taken_at=now,
    )
