"""Workers that find no canary answering them: what the panel's banner says meanwhile.

A worker writes its row at each check that finds the world unproven, and
deletes it when a canary answers again (or when it closes). A row not
refreshed for STALE is a worker gone (killed mid-outage): the banner ignores
it, and the next write anywhere deletes it after a day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, text

from crawler.db.retry import retry_conflicts

# A silent worker checks at least every OUTAGE_RETRY_AFTER while it holds hosts back;
# ten minutes without a word is a worker that is gone.
STALE = timedelta(minutes=10)
FORGOTTEN = timedelta(days=1)

REPORT = text(
    """
    INSERT INTO world_silences (worker, since, never_answered, held_back)
    VALUES (:worker, :since, :never, :held)
    ON CONFLICT (worker) DO UPDATE SET since = excluded.since,
           never_answered = excluded.never_answered, held_back = excluded.held_back,
           checked_at = now()
    """
)


@retry_conflicts
def report(engine: Engine, worker: str, since: datetime, never: bool, held_back: int) -> None:
    """`worker` finds the world unproven since `since` (`never`: no host has ever
    answered in this database), with `held_back` hosts tried again, not settled."""
    with engine.begin() as conn:
        conn.execute(
            text("DELETE FROM world_silences WHERE checked_at < now() - :old"), {"old": FORGOTTEN}
        )
        conn.execute(REPORT, {"worker": worker, "since": since, "never": never, "held": held_back})


@retry_conflicts
def clear(engine: Engine, worker: str) -> None:
    """A canary answers `worker` again (or it stops)."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM world_silences WHERE worker = :w"), {"w": worker})


@dataclass(frozen=True)
class Silence:
    """The banner's words: since when, whether any host ever answered, hosts held back."""

    workers: int
    since: datetime
    never_answered: bool
    held_back: int


def current(conn: Connection) -> Silence | None:
    """The workers the world does not answer now (fresh rows): the oldest spell, and the
    hosts they hold back."""
    row = conn.execute(
        text(
            "SELECT count(*) AS workers, min(since) AS since,"
            " bool_and(never_answered) AS never, sum(held_back) AS held"
            " FROM world_silences WHERE checked_at > now() - :stale"
        ),
        {"stale": STALE},
    ).one()
    if not row.workers:
        return None
    return Silence(row.workers, row.since, row.never, row.held)
