"""The crawl's counts, each counted here once, from the database: hosts known, hosts held
back by an outage, due now, in flight, and the failures by layer of the last minutes. The panel's
banner, its health row and strip, /roots, /metrics and `make run`'s console all read
these, so that no two of them disagree.

- hosts known: the hosts the main list shows, every host but the deny entries and the
  rows they took out of routing (crawler.db.operators.hidden): counted on a small
  database, the planner's estimate less the hidden rows on a big one.
- held back: distinct hosts an outage holds back now: held (hosts.held_at, written by
  crawler.db.crawl.queue.retry_soon) since the oldest fresh silence began
  (world_silences), and not settled since. A host two workers both tried counts once.
  None held while no worker finds the world silent.
- due now: routable rows whose date has come (crawler.db.server.estimates.DUE):
  counted on a small database, the planner's estimate on a big one.
- in flight: hosts claimed, their lease running, less those held back (a held host
  stays claimed until it is tried again, but no worker is fetching it).
- failed, by layer: host_minutes over the last few minutes: settled failures and tries
  held back by an outage (`held`), of every host tried (settled or held).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import Connection, text

from crawler.core.outcomes import LAYERS
from crawler.db.operators.hidden import hidden_rows
from crawler.db.server.estimates import DUE, count_rows

# A silent worker checks at least every OUTAGE_RETRY_AFTER while it holds hosts back; ten
# minutes without a word is a worker that is gone (crawler.db.rules.world_silences).
STALE_SILENCE = timedelta(minutes=10)
SPELL_SINCE = text("SELECT min(since) FROM world_silences WHERE checked_at > now() - :stale")
# A host held back (the rule the drain check shares, crawler.db.crawl.claims): held in an
# outage, and no result written since.
HELD = "h.held_at IS NOT NULL AND (h.last_crawled_at IS NULL OR h.last_crawled_at < h.held_at)"
# Held back now: held during the spell.
HELD_NOW = f"h.held_at >= :since AND {HELD}"
HELD_BACK = text(f"SELECT count(*) FROM hosts h WHERE {HELD_NOW}")
# A claim counts while its lease runs (crawler.db.deployments' claims).
CLAIMED = "h.claimed_by IS NOT NULL AND h.next_claim_at > now()"
IN_FLIGHT = text(f"SELECT count(*) FROM hosts h WHERE {CLAIMED}")
IN_FLIGHT_LESS_HELD = text(
    f"SELECT count(*) FROM hosts h WHERE {CLAIMED} AND ({HELD_NOW}) IS NOT TRUE"
)
# The failure share is of the hosts tried in the last few minutes: now, not the hour.
SHARE_MINUTES = 5
FAILED_LATELY = text(
    "SELECT coalesce(sum(crawled), 0) AS crawled, coalesce(sum(held), 0) AS held,"
    f" {', '.join(f'coalesce(sum({c}), 0) AS {c}' for c in (x.lower() for x in LAYERS))}"
    " FROM host_minutes"
    " WHERE minute > date_trunc('minute', now(), 'UTC') - make_interval(mins => :minutes)"
)


def hosts_known(
    conn: Connection, hosts: int | None = None, hidden: tuple[int, bool] | None = None
) -> tuple[int, bool]:
    """(hosts the list shows, estimated?). `hosts` (rows in hosts) and `hidden` (hidden
    rows, sampled?) when the caller has them already (the dashboard's strip)."""
    estimated = False
    if hosts is None:
        hosts, estimated = count_rows(conn, "SELECT 1 FROM hosts")
    rows, sampled = hidden_rows(conn) if hidden is None else hidden
    return max(0, hosts - rows), estimated or sampled


def spell_since(conn: Connection) -> datetime | None:
    """When the oldest fresh silence began (None: every worker hears the world)."""
    return conn.execute(SPELL_SINCE, {"stale": STALE_SILENCE}).scalar()


def held_back(conn: Connection) -> int:
    """Distinct hosts an outage holds back now (0 with no silence)."""
    return held_back_since(conn, spell_since(conn))


def held_back_since(conn: Connection, since: datetime | None) -> int:
    """Distinct hosts held back now in the spell that began `since` (None: no spell)."""
    if since is None:
        return 0
    return conn.execute(HELD_BACK, {"since": since}).scalar_one()


def due_now(conn: Connection) -> tuple[int, bool]:
    """(hosts due now, estimated?)."""
    return count_rows(conn, DUE)


def in_flight(conn: Connection) -> int:
    """Hosts claimed and being tried: their lease runs, and no outage holds them."""
    return in_flight_since(conn, spell_since(conn))


def in_flight_since(conn: Connection, since: datetime | None) -> int:
    """In flight, less the hosts held back in the spell that began `since`."""
    if since is None:
        return conn.execute(IN_FLIGHT).scalar_one()
    return conn.execute(IN_FLIGHT_LESS_HELD, {"since": since}).scalar_one()


@dataclass(frozen=True)
class Failed:
    """The last `minutes`' tries: failures by layer (settled or held back), and hosts
    tried (settled, and tries an outage held back)."""

    minutes: int
    by_layer: dict[str, int] = field(default_factory=dict)
    settled: int = 0
    held: int = 0

    @property
    def tried(self) -> int:
        return self.settled + self.held

    @property
    def failed(self) -> int:
        return sum(self.by_layer.values())

    @property
    def share(self) -> float | None:
        return self.failed / self.tried if self.tried else None


def failed_lately(conn: Connection, minutes: int = SHARE_MINUTES) -> Failed:
    """The failures of the last `minutes` (the one under way among them)."""
    row = conn.execute(FAILED_LATELY, {"minutes": minutes}).one()
    by_layer = {layer: int(getattr(row, layer.lower())) for layer in LAYERS}
    return Failed(minutes, by_layer, int(row.crawled), int(row.held))


@dataclass(frozen=True)
class Now:
    """The crawl now, as every view shows it."""

    due_now: int
    due_estimated: bool
    held_back: int
    in_flight: int
    failed: Failed


def now(conn: Connection) -> Now:
    """Every count of the crawl now, read together."""
    since = spell_since(conn)
    due, estimated = due_now(conn)
    held, flying = held_back_since(conn, since), in_flight_since(conn, since)
    return Now(due, estimated, held, flying, failed_lately(conn))
