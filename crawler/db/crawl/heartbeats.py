"""Workers' heartbeats: each running worker's row of crawl_workers (pages per second, hosts
in flight and hosts held back by an outage).

A worker writes its row every HEARTBEAT seconds (crawler/extensions/heartbeat.py) and deletes
it when it stops. A row whose heartbeat is older than ALIVE_WITHIN is a worker that
died (killed, or its machine lost): the panel shows it as gone, and the retention
runner (crawler/db/crawl/retention.py) deletes it a day after its last heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, text

from crawler.core.words import counted
from crawler.db.crawl import counts

#: Seconds between a worker's heartbeats.
HEARTBEAT = 5.0
#: A worker whose last heartbeat is older than this is not alive (several beats missed:
#: a busy worker's event loop may run a timer late, but not by 20 seconds).
ALIVE_WITHIN = timedelta(seconds=4 * HEARTBEAT + 10)

BEAT = text(
    """
    INSERT INTO crawl_workers (name, host, pid, started_at, heartbeat_at, pages, pages_per_s,
                               in_flight, held_back)
    VALUES (:name, :host, :pid, :started_at, now(), :pages, :pages_per_s, :in_flight,
            :held_back)
    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
           started_at = excluded.started_at, heartbeat_at = now(),
           pages = excluded.pages, pages_per_s = excluded.pages_per_s,
           in_flight = excluded.in_flight, held_back = excluded.held_back
    """
)


@dataclass(frozen=True)
class Beat:
    """What a worker says of itself at one heartbeat."""

    name: str
    host: str
    pid: int
    started_at: datetime
    pages: int
    pages_per_s: float
    in_flight: int = 0  # hosts claimed and not yet settled
    held_back: int = 0  # hosts an outage holds back: tried again, not settled


def beat(engine: Engine, one: Beat) -> None:
    """Write `one`: the worker is alive now, with its figures (a restarted worker of the
    same name takes its row over)."""
    with engine.begin() as conn:
        conn.execute(BEAT, vars(one))


def due_now(engine: Engine) -> int:
    """Hosts due now, as the dashboard counts them: counted on a small database, the
    planner's estimate on a big one (crawler.db.server.estimates)."""
    with engine.connect() as conn:
        return counts.due_now(conn)[0]


ALIVE = text(
    "SELECT count(*) AS workers, coalesce(sum(pages), 0) AS pages,"
    " coalesce(sum(pages_per_s), 0) AS rate FROM crawl_workers WHERE heartbeat_at > now() - :alive"
)


@dataclass(frozen=True)
class Progress:
    """The crawl at a glance, for `make run`'s console: workers alive, their pages and
    pages/s, the hosts known, and due now, in flight and held back as the panel counts
    them (crawler.db.crawl.counts)."""

    workers: int
    pages: int
    pages_per_s: float
    hosts: int
    due: int
    in_flight: int = 0
    held_back: int = 0

    def describe(self) -> str:
        held = ""
        if self.held_back:
            held = f", {counted(self.held_back, 'host')} held back by an outage"
        return (
            f"{counted(self.workers, 'worker')} alive,"
            f" {counted(self.pages, 'page')} ({self.pages_per_s:.1f}/s),"
            f" {counted(self.hosts, 'host')} known,"
            f" {self.due:,} due now, {self.in_flight:,} in flight{held}"
        )


def progress(conn) -> Progress:
    alive = conn.execute(ALIVE, {"alive": ALIVE_WITHIN}).one()
    hosts = counts.hosts_known(conn)[0]  # as the panel's strip counts them
    crawl = counts.now(conn)
    return Progress(
        alive.workers,
        int(alive.pages),
        float(alive.rate),
        hosts,
        crawl.due_now,
        crawl.in_flight,
        crawl.held_back,
    )


def leave(engine: Engine, name: str) -> None:
    """The worker stopped: its row goes (the dashboard counts it no longer)."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM crawl_workers WHERE name = :name"), {"name": name})
