"""bench/roundtrips.py's counter: the round trips an engine's connections make, counted on
the wire, and on a Citus coordinator the commands it sends its workers for them.

Client -> server: libpq's own trace of each connection (psycopg's `PGconn.trace`), in
which every round trip ends with one ReadyForQuery from the server: a statement, and also
what SQLAlchemy's events do not show: psycopg's BEGIN before a transaction's first
statement and its COMMIT or ROLLBACK (each sent on its own), and the pool's pre-ping at
each checkout (`SELECT 1`). A pipeline (psycopg's executemany) ends with one Sync: one
round trip, as it is on the network. SQLAlchemy's `before_cursor_execute` events count
the statements the code runs, for the breakdown.

Coordinator -> worker: Citus says "issuing <command>" for each command it sends a worker
on behalf of a session whose `citus.log_remote_commands` is on (a NOTICE, with the
worker's address and the connection's id), so each such notice is one round trip from the
coordinator to a worker (BEGIN and its transaction id, the statement, PREPARE
TRANSACTION, COMMIT PREPARED: each its own). Commands to different connections during one
client call run in parallel: `remote_serial` counts, per client call, the most sent on
any one connection (the critical path), `remote` all of them.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from psycopg import pq
from sqlalchemy import event

REMOTE = "issuing "
SERVER = re.compile(r"on server \S+@[^:]+:(\d+) connectionId: (\d+)")
# A frontend or backend message of libpq's trace (timestamps suppressed): F|B, length, type.
MESSAGE = re.compile(r"^([FB])\t\d+\t(\w+)\t?(.*)$")
# What psycopg sends by the simple protocol, named by its text in the trace.
TRANSACTION_COMMANDS = ("BEGIN", "COMMIT", "ROLLBACK")
LOG_REMOTE_COMMANDS = "-c citus.log_remote_commands=on"


def with_remote_commands(url: str) -> str:
    """`url` whose sessions have Citus say each command they send a worker (libpq's
    `options`: set at connection, no statement of its own)."""
    return f"{url}{'&' if '?' in url else '?'}options={quote(LOG_REMOTE_COMMANDS)}"


@dataclass
class Trips:
    """What one counted stretch cost."""

    client: int = 0  # client -> server round trips (ReadyForQuery)
    kinds: Counter = field(default_factory=Counter)  # of them: BEGIN, COMMIT, ..., statement
    statements: int = 0  # SQLAlchemy's cursor executions
    checkouts: int = 0  # pool checkouts (each one pre-ping with pool_pre_ping)
    remote: int = 0  # coordinator -> worker commands
    remote_serial: int = 0  # of them, the most on one connection per client call, summed
    remote_by_port: Counter = field(default_factory=Counter)

    def __add__(self, other: Trips) -> Trips:
        return Trips(
            self.client + other.client,
            self.kinds + other.kinds,
            self.statements + other.statements,
            self.checkouts + other.checkouts,
            self.remote + other.remote,
            self.remote_serial + other.remote_serial,
            self.remote_by_port + other.remote_by_port,
        )


class RoundTripCounter:
    """Counts the round trips of `engine`'s connections between start() and stop(); made
    before the engine's first connection (it sees the connections as the pool makes them)."""

    def __init__(self, engine) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="hostcrawl-trips-"))
        atexit.register(shutil.rmtree, self.folder, True)
        self.connections: list = []  # the DBAPI connections the pool made
        self.counting = False
        self.traced: list = []
        self.trips = Trips()
        self.call = 0  # client calls so far (statements, commits, rollbacks)
        self.remote_calls: Counter = Counter()  # (call, connection id) -> commands
        event.listen(engine, "connect", self._connected)
        event.listen(engine, "checkout", self._checked_out)
        event.listen(engine, "before_cursor_execute", self._executing)
        event.listen(engine, "commit", self._next_call)
        event.listen(engine, "rollback", self._next_call)

    def _connected(self, dbapi_connection, record) -> None:
        self.connections.append(dbapi_connection)
        dbapi_connection.add_notice_handler(self._notice)
        if self.counting:
            self._trace(dbapi_connection)

    def _checked_out(self, dbapi_connection, record, proxy) -> None:
        if self.counting:
            self.trips.checkouts += 1

    def _executing(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self.call += 1
        if self.counting:
            self.trips.statements += 1

    def _next_call(self, conn) -> None:
        self.call += 1

    def _notice(self, diagnostic) -> None:
        message = diagnostic.message_primary or ""
        if not (self.counting and message.startswith(REMOTE)):
            return
        where = SERVER.search(diagnostic.message_detail or "")
        port, connection = where.groups() if where else ("?", "?")
        self.trips.remote += 1
        self.trips.remote_by_port[port] += 1
        self.remote_calls[(self.call, connection)] += 1

    def _trace(self, dbapi_connection) -> None:
        path = self.folder / f"{len(self.traced)}.trace"
        # libpq writes the trace through its own FILE, closed by untrace.
        dbapi_connection.pgconn.trace(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
        dbapi_connection.pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS)
        self.traced.append((dbapi_connection, path))

    def start(self) -> None:
        """Count from now on, from zero."""
        self.trips, self.remote_calls, self.traced = Trips(), Counter(), []
        self.counting = True
        for connection in self.connections:
            if not connection.closed:
                self._trace(connection)

    def stop(self) -> Trips:
        """What was counted since start()."""
        self.counting = False
        if self.trips.statements and not self.traced:
            raise RuntimeError(
                "round trips: statements ran on no traced connection (the counter must be"
                " made before the engine's first connection)"
            )
        for connection, path in self.traced:
            if not connection.closed:
                connection.pgconn.untrace()
            self._read(path.read_text(errors="replace"))
            path.unlink()
        serial: dict[int, int] = {}
        for (call, _), commands in self.remote_calls.items():
            serial[call] = max(serial.get(call, 0), commands)
        self.trips.remote_serial = sum(serial.values())
        return self.trips

    def _read(self, trace: str) -> None:
        """Round trips of one connection's trace: each ends with a ReadyForQuery."""
        kind = "statement"
        for line in trace.splitlines():
            found = MESSAGE.match(line)
            if found is None:
                continue  # a statement's text spans lines
            side, message, rest = found.groups()
            if side == "F" and message == "Query":
                text = rest.strip().strip('"').upper()
                kind = text if text in TRANSACTION_COMMANDS else "statement"
            elif side == "B" and message == "ReadyForQuery":
                self.trips.client += 1
                self.trips.kinds[kind] += 1
                kind = "statement"

    def measure(self, work) -> tuple[Trips, object]:
        """(the round trips of `work()`, its result)."""
        self.start()
        try:
            result = work()
        finally:
            trips = self.stop()
        return trips, result
