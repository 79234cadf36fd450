"""The dashboard's workers block: how many crawler workers are alive, each one's pages/s."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, text

from crawler.db.crawl.heartbeats import ALIVE_WITHIN

ROWS = text(
    """
    SELECT name, host, pid, started_at, heartbeat_at, pages, pages_per_s,
           heartbeat_at >= now() - :alive AS alive
      FROM crawl_workers
     ORDER BY heartbeat_at >= now() - :alive DESC, name
    """
)


@dataclass(frozen=True)
class WorkerRow:
    name: str
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    pages: int
    pages_per_s: float
    alive: bool


@dataclass(frozen=True)
class Workers:
    """Every worker with a row: the alive ones first, then the ones gone silent."""

    rows: list[WorkerRow] = field(default_factory=list)

    @property
    def alive(self) -> list[WorkerRow]:
        return [row for row in self.rows if row.alive]

    @property
    def pages_per_s(self) -> float:
        """The alive workers' pages per second together."""
        return sum(row.pages_per_s for row in self.alive)


def workers(conn: Connection) -> Workers:
    return Workers(
        [WorkerRow(**row._mapping) for row in conn.execute(ROWS, {"alive": ALIVE_WITHIN})]
    )
