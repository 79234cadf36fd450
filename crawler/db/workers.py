"""The crawl_workers table: each running worker's heartbeat and pages per second.

A worker writes its row every HEARTBEAT seconds (crawler/heartbeat.py) and deletes
it when it stops. A row whose heartbeat is older than ALIVE_WITHIN is a worker that
died (killed, or its machine lost): the panel shows it as gone, and the retention
runner (crawler/db/retention.py) deletes it a day after its last heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, text

#: Seconds between a worker's heartbeats.
HEARTBEAT = 5.0
#: A worker whose last heartbeat is older than this is not alive (several beats missed:
#: a busy worker's event loop may run a timer late, but not by 20 seconds).
ALIVE_WITHIN = timedelta(seconds=4 * HEARTBEAT + 10)

BEAT = text(
    """
    INSERT INTO crawl_workers (name, host, pid, started_at, heartbeat_at, pages, pages_per_s)
    VALUES (:name, :host, :pid, :started_at, now(), :pages, :pages_per_s)
    ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
           started_at = excluded.started_at, heartbeat_at = now(),
           pages = excluded.pages, pages_per_s = excluded.pages_per_s
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


def beat(engine: Engine, one: Beat) -> None:
    """Write `one`: the worker is alive now, with its figures (a restarted worker of the
    same name takes its row over)."""
    with engine.begin() as conn:
        conn.execute(BEAT, vars(one))


def due_now(engine: Engine) -> int:
    """Hosts due now, as the dashboard counts them: counted on a small database, the
    planner's estimate on a big one (crawler.db.pages.dashboard)."""
    from crawler.db.pages.dashboard import DUE, EXACT_BELOW, HOSTS_ESTIMATE, row_estimate

    with engine.connect() as conn:
        rows = conn.execute(text(HOSTS_ESTIMATE)).scalar()
        if rows is None or rows < EXACT_BELOW:
            return conn.execute(text(f"SELECT count(*) FROM ({DUE}) AS d")).scalar_one()
        return row_estimate(conn, DUE)


def leave(engine: Engine, name: str) -> None:
    """The worker stopped: its row goes (the dashboard counts it no longer)."""
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM crawl_workers WHERE name = :name"), {"name": name})
