"""bench/roundtrips.py's counter counts what goes over the wire: on a real database, a
transaction of N known statements is N round trips, plus psycopg's BEGIN and COMMIT and
the pool's pre-ping; on a Citus coordinator, the commands it sends its worker for them.
So the benchmark cannot silently count zero."""

from __future__ import annotations

import sys

import pytest
from sqlalchemy import create_engine, text

from crawler.db.server.engine import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "bench"))

from _roundtrips import RoundTripCounter, with_remote_commands  # noqa: E402

STATEMENTS = 5


def statements_in_one_transaction(engine, sql: str, n: int = STATEMENTS) -> None:
    """n statements, each its own text (`:i` its number): psycopg prepares a statement on
    its fifth run, a round trip of its own, and none of these runs twice."""
    with engine.begin() as conn:
        for i in range(n):
            conn.execute(text(sql.replace(":i", str(i))))


def test_a_transaction_of_n_statements_is_n_plus_begin_commit_and_the_ping(database_url):
    engine = create_engine(database_url, pool_pre_ping=True, pool_size=2)
    try:
        counter = RoundTripCounter(engine)  # before the first connection: it traces each
        statements_in_one_transaction(engine, "SELECT :i", 1)  # connected before counting
        trips, _ = counter.measure(lambda: statements_in_one_transaction(engine, "SELECT :i"))
    finally:
        engine.dispose()
    assert trips.statements == STATEMENTS
    assert trips.checkouts == 1
    assert trips.kinds == {"statement": STATEMENTS + 1, "BEGIN": 1, "COMMIT": 1}
    assert trips.client == STATEMENTS + 3
    assert trips.remote == 0


def test_nothing_is_counted_outside_start_and_stop(database_url):
    engine = create_engine(database_url, pool_pre_ping=True, pool_size=2)
    try:
        counter = RoundTripCounter(engine)
        counter.measure(lambda: statements_in_one_transaction(engine, "SELECT :i"))
        statements_in_one_transaction(engine, "SELECT 10 + :i")  # not counted
        trips, _ = counter.measure(
            lambda: statements_in_one_transaction(engine, "SELECT 20 + :i", 2)
        )
    finally:
        engine.dispose()
    assert (trips.statements, trips.client) == (2, 5)


# N subdomains of one root into its trap window: one shard, one worker.
WINDOW_ROWS = (
    "INSERT INTO trap_window (root, hostname, outcome)"
    " VALUES ('example.com', 'h' || :i || '.example.com', 'OK')"
)


@pytest.mark.parametrize("remote_commands", [True, False], ids=["told", "not told"])
def test_the_coordinator_commands_to_its_worker_are_counted(cluster_db, remote_commands):
    url = cluster_db.url.render_as_string(hide_password=False)
    engine = create_engine(with_remote_commands(url) if remote_commands else url)
    try:
        counter = RoundTripCounter(engine)
        statements_in_one_transaction(engine, "SELECT :i", 1)  # connected before counting
        trips, _ = counter.measure(lambda: statements_in_one_transaction(engine, WINDOW_ROWS))
    finally:
        engine.dispose()
    assert trips.statements == STATEMENTS
    if not remote_commands:
        assert trips.remote == 0  # Citus says nothing unless the session asks
        return
    # One worker, one connection: BEGIN (with the transaction's id), each INSERT, then
    # COMMIT, each sent and answered in turn.
    assert trips.remote == STATEMENTS + 2
    assert trips.remote_serial == STATEMENTS + 2
    assert len(trips.remote_by_port) == 1
