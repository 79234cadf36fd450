"""Ride out a database outage: retry connection failures with a growing pause.

A restart or a network blip must not lose a discovered host nor stop a worker:
the call is repeated until the database answers. Other errors (a bug, a
constraint) are raised at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

from psycopg import errors as pg_errors
from sqlalchemy import Engine, TextClause
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from crawler.core.words import counted

log = logging.getLogger(__name__)

T = TypeVar("T")
FIRST_PAUSE = 0.5
MAX_PAUSE = 15.0


CONFLICT_ATTEMPTS = 5
# (A foreign key violation was one too while the queue's rows referred to hosts' rows:
# one table since 0030.)
CONFLICTS = (pg_errors.DeadlockDetected, pg_errors.SerializationFailure)


def is_conflict(exc: BaseException) -> bool:
    """A deadlock or a serialization failure: the transaction may simply run again."""
    return isinstance(exc, DBAPIError) and isinstance(exc.orig, CONFLICTS)


def retry_conflicts(method: Callable[..., T]) -> Callable[..., T]:
    """Run a whole transaction again when Postgres aborts it to break a deadlock.

    Operators' bulk changes and workers' writes touch overlapping rows; Postgres
    resolves a cycle by aborting one side, which is then simply repeated.
    """

    @functools.wraps(method)
    def run(*args, **kwargs):
        for attempt in range(1, CONFLICT_ATTEMPTS + 1):
            try:
                return method(*args, **kwargs)
            except DBAPIError as exc:
                if not is_conflict(exc) or attempt == CONFLICT_ATTEMPTS:
                    raise
                log.info("%s: %s; running it again", method.__name__, first_line(exc))
            time.sleep(random.uniform(0, 0.02 * 2**attempt))  # jitter: don't collide again
        raise AssertionError("unreachable")

    return run


@retry_conflicts
def commit_statement(engine: Engine, statement: TextClause, params: dict) -> None:
    """One statement in a transaction of its own, run again when Postgres aborts it."""
    with engine.begin() as conn:
        conn.execute(statement, params)


# On a Citus cluster the coordinator answers while a worker node is down, with an
# internal error (SQLSTATE XX000) that names the lost connection; these are its words.
WORKER_NODE_LOST = (
    "failure on connection marked as essential",
    "connection to the remote node",
    "could not establish any connections to the node",
    "connection not open",
    "server closed the connection unexpectedly",
)


def is_outage(exc: BaseException) -> bool:
    """True for an error that means the database is (for now) out of reach: the server,
    or on a cluster one of its worker nodes."""
    if is_conflict(exc):
        return False
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    if not isinstance(exc, DBAPIError):
        return False
    return exc.connection_invalidated or is_worker_node_lost(exc.orig)


def is_worker_node_lost(error: BaseException | None) -> bool:
    """A connection failure (SQLSTATE class 08) the coordinator passes on, or Citus's
    internal error for a worker node it cannot reach."""
    sqlstate = getattr(error, "sqlstate", None) or ""
    if sqlstate.startswith("08"):
        return True
    said = str(error or "").lower()
    return sqlstate == "XX000" and any(words in said for words in WORKER_NODE_LOST)


def first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class _Outage:
    """This process's view of a database outage: told once as it starts (by the first
    call that meets it) and once as it ends (by the first call through after it), however
    many calls wait meanwhile."""

    def __init__(self) -> None:
        self.since: float | None = None  # monotonic
        self.waiting = 0

    def met(self, what: str, exc: BaseException, pause: float) -> None:
        self.waiting += 1
        if self.since is not None:
            log.debug("database still unavailable while %s; retrying in %.1fs", what, pause)
            return
        self.since = time.monotonic()
        log.warning(
            "database unavailable while %s (%s); retrying with a growing pause, from %.1fs",
            what,
            first_line(exc),
            pause,
        )

    def through(self, what: str) -> None:
        if self.since is None:
            return
        log.warning(
            "database available again after %.0f s (%s went through; %s waited)",
            time.monotonic() - self.since,
            what,
            counted(self.waiting, "try", "tries"),
        )
        self.since, self.waiting = None, 0


OUTAGE = _Outage()


async def in_thread_until_up(what: str, fn: Callable[..., T], *args) -> T:
    """await fn(*args) in a thread, retrying through outages (told once, backing off)."""
    pause = FIRST_PAUSE
    while True:
        try:
            result = await asyncio.to_thread(fn, *args)
        except DBAPIError as exc:
            if not is_outage(exc):
                raise
            OUTAGE.met(what, exc, pause)
        else:
            OUTAGE.through(what)
            return result
        await asyncio.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE)
