"""Workers that find no canary answering them: what the panel's banner says meanwhile.

A worker writes its row at each check that finds the world unproven, and
deletes it when a canary answers again (or when it closes). A row not
refreshed for STALE is a worker gone (killed mid-outage): the banner ignores
it, and the next write anywhere deletes it after a day. Each row carries the
worker's reason (crawler.core.outages): the layer failing there, its tries and
failures, the commonest error and the settings to check. The hosts held back are
counted once each, however many workers tried them (crawler.db.crawl.counts).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, text

from crawler.core.outages import LayerFailures
from crawler.db.crawl import counts
from crawler.db.server.retry import commit_statement, retry_conflicts

STALE = counts.STALE_SILENCE  # a row older than this is a worker gone
FORGOTTEN = timedelta(days=1)

REASON = ("layer", "tries", "failures", "top_error", "top_count", "span_s", "settings_to_check")
REPORT = text(
    f"""
    INSERT INTO world_silences (worker, since, never_answered, held_back, {", ".join(REASON)})
    VALUES (:worker, :since, :never, :held, {", ".join(f":{c}" for c in REASON)})
    ON CONFLICT (worker) DO UPDATE SET since = excluded.since,
           never_answered = excluded.never_answered, held_back = excluded.held_back,
           {", ".join(f"{c} = excluded.{c}" for c in REASON)}, checked_at = now()
    """
)

CLEAR = text("DELETE FROM world_silences WHERE worker = :w")


@dataclass(frozen=True)
class Reason:
    """Why one worker finds the world silent: the failing layer over `span_s` seconds
    (None: no failure tallied yet) and the settings behind it."""

    failures: LayerFailures | None = None
    span_s: float = 60.0
    settings_to_check: str = ""

    def params(self) -> dict:
        f = self.failures
        return {
            "layer": f and f.layer,
            "tries": f and f.tries,
            "failures": f and f.failures,
            "top_error": f and f.top_error,
            "top_count": f and f.top_count,
            "span_s": self.span_s if f else None,
            "settings_to_check": self.settings_to_check or None,
        }


@retry_conflicts
def report(
    engine: Engine,
    worker: str,
    since: datetime,
    never: bool,
    held_back: int,
    reason: Reason = Reason(),
) -> None:
    """`worker` finds the world unproven since `since` (`never`: no host has ever
    answered in this database), with `held_back` hosts tried again, not settled, for
    `reason`."""
    params = {"worker": worker, "since": since, "never": never, "held": held_back}
    with engine.begin() as conn:
        conn.execute(
            text("DELETE FROM world_silences WHERE checked_at < now() - :old"), {"old": FORGOTTEN}
        )
        conn.execute(REPORT, {**params, **reason.params()})


def clear(engine: Engine, worker: str) -> None:
    """A canary answers `worker` again (or it stops)."""
    commit_statement(engine, CLEAR, {"w": worker})


@dataclass(frozen=True)
class Silence:
    """The banner's words: since when, whether any host ever answered, the distinct hosts
    held back now, and why (the failing layer summed over the workers, or None)."""

    workers: int
    since: datetime
    never_answered: bool
    held_back: int
    failures: LayerFailures | None = None
    span_s: float = 60.0
    settings_to_check: str = ""

    def describe(self) -> str:
        """'DNS: 30 of 30 lookups failed in the last minute, all DNS_TIMEOUT', or ''."""
        return self.failures.describe(self.span_s) if self.failures else ""


FRESH = "FROM world_silences WHERE checked_at > now() - :stale"
SPELL = text(
    f"SELECT count(*) AS workers, min(since) AS since, bool_and(never_answered) AS never {FRESH}"
)
# The layer failing most over the workers: their tries and failures summed, the error
# most of them name first, the longest span and a worker's settings.
LAYER = text(
    "SELECT layer, sum(tries) AS tries, sum(failures) AS failures,"
    " mode() WITHIN GROUP (ORDER BY top_error) AS top_error,"
    " max(top_count) FILTER (WHERE top_error IS NOT NULL) AS top_count,"
    " sum(top_count) AS top_counts, count(DISTINCT top_error) AS errors,"
    " max(span_s) AS span_s, min(settings_to_check) AS settings_to_check"
    f" {FRESH} AND layer IS NOT NULL GROUP BY layer ORDER BY sum(failures) DESC, layer LIMIT 1"
)


def current(conn: Connection) -> Silence | None:
    """The workers the world does not answer now (fresh rows): the oldest spell, the
    distinct hosts held back since it began, and the layer failing most."""
    spell = conn.execute(SPELL, {"stale": STALE}).one()
    if not spell.workers:
        return None
    held = counts.held_back_since(conn, spell.since)  # the one count of hosts held back
    layer = conn.execute(LAYER, {"stale": STALE}).first()
    if layer is None:
        return Silence(spell.workers, spell.since, spell.never, held)
    # One error named by every worker: its counts add up; else the largest one's count.
    top_count = layer.top_counts if layer.errors == 1 else layer.top_count
    failures = LayerFailures(layer.layer, layer.tries, layer.failures, layer.top_error, top_count)
    return Silence(
        spell.workers,
        spell.since,
        spell.never,
        held,
        failures,
        layer.span_s,
        layer.settings_to_check or "",
    )
