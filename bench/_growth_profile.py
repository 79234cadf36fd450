"""Where one batch of the writes (and a claim) goes, ours and 8751fd6's (`growth.py --profile`).

For one finish_many batch and one save_hosts batch (growth.py's own batches) and one claim, on
whichever tree's `crawler` is imported (ours, or BEFORE's in bench/_growth_before.py's
process), after a CHECKPOINT (so each page's first change writes its full image, as
it does for the random pages of a big database between checkpoints): every statement
the call sends, with its time and the WAL it wrote (pg_current_wal_insert_lsn around
it: a trigger's work counts in its statement's), and the rows each table got
(pg_stat_get_xact_*: an insert, or an update that is not HOT, adds an entry to every
index of its table), run for real in a transaction that is rolled back; then the same
statements under EXPLAIN (ANALYZE, BUFFERS, WAL) in one more rolled-back transaction
from the same state; then the call for real, committed, with its time and WAL (the
pages' images written by then). Uses only sqlalchemy: the tree's modules are imported
by the caller.
"""

from __future__ import annotations

import contextlib
import re
import time

from sqlalchemy import event

WAL = "SELECT pg_current_wal_insert_lsn()"
# The backend's row counts not yet reported (pg_stat_get_xact_*), read as the
# transaction begins and before it rolls back.
TABLE_WRITES = """
    SELECT c.relname, pg_stat_get_xact_tuples_inserted(c.oid),
           pg_stat_get_xact_tuples_updated(c.oid), pg_stat_get_xact_tuples_hot_updated(c.oid),
           (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid)
      FROM pg_class c
     WHERE c.relname IN ('hosts', 'roots', 'host_hours', 'trap_window')
       AND c.relkind IN ('r', 'p')
"""


class RolledBack:
    """An engine whose begin() rolls back at the end (the call's writes are undone), and
    which records each statement sent: (sql, parameters, ms, WAL bytes)."""

    def __init__(self, engine) -> None:
        self.engine, self.url, self.dialect = engine, engine.url, engine.dialect
        self.seen: list[tuple[str, object, float, int]] = []
        self.tables: dict[str, tuple[int, int, int, int]] = {}

    def __getattr__(self, name):
        return getattr(self.engine, name)

    @contextlib.contextmanager
    def begin(self):
        with self.engine.connect() as conn:
            raw = conn.connection.driver_connection
            started: list = []

            def before(conn_, cursor, statement, parameters, context, executemany):
                started[:] = [raw.execute(WAL).fetchone()[0], time.perf_counter()]

            def after(conn_, cursor, statement, parameters, context, executemany):
                ms = (time.perf_counter() - started[1]) * 1000
                wal = raw.execute(f"SELECT pg_wal_lsn_diff(({WAL}), '{started[0]}')")
                self.seen.append((statement, parameters, ms, int(wal.fetchone()[0])))

            event.listen(conn, "before_cursor_execute", before)
            event.listen(conn, "after_cursor_execute", after)
            trans = conn.begin()
            # The backend's counts not yet reported include its earlier transactions':
            # this one's are the difference (nothing is reported inside a transaction).
            first = {r[0]: r[1:] for r in raw.execute(TABLE_WRITES).fetchall()}
            try:
                yield conn
                rows = raw.execute(TABLE_WRITES).fetchall()
                self.tables = {
                    r[0]: (*(a - b for a, b in zip(r[1:4], first[r[0]][:3], strict=True)), r[4])
                    for r in rows
                }
            finally:
                trans.rollback()
                event.remove(conn, "before_cursor_execute", before)
                event.remove(conn, "after_cursor_execute", after)


def first_line(statement: str) -> str:
    return " ".join(statement.split())[:90]


def explained(engine, seen) -> list[str]:
    """EXPLAIN (ANALYZE, BUFFERS, WAL) of each statement, in order, in one transaction."""
    lines = []
    with engine.connect() as conn:
        trans = conn.begin()
        for statement, parameters, _, _ in seen:
            if not re.match(r"\s*(WITH|SELECT|UPDATE|INSERT|DELETE)", statement, re.I):
                continue
            plan = conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS, WAL) " + statement, parameters or {}
            ).all()
            lines += ["  -- " + first_line(statement)] + ["  " + row for (row,) in plan]
        trans.rollback()
    return lines


def profile(engine, label: str, call) -> dict:
    """One call of `call(engine)`: its statements, their time and WAL and the rows it
    wrote (rolled back), the plans of its statements (rolled back), then the call
    committed, with its WAL in all. A JSON-able summary."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql("CHECKPOINT")
    probe = RolledBack(engine)
    call(probe)
    plans = explained(engine, probe.seen)
    with engine.connect() as conn:
        lsn = conn.exec_driver_sql(WAL).scalar()
    began = time.perf_counter()
    call(engine)
    ms = (time.perf_counter() - began) * 1000
    with engine.connect() as conn:
        wal = conn.exec_driver_sql(f"SELECT pg_wal_lsn_diff(({WAL}), '{lsn}')").scalar()
    tables = {}
    for table, (inserted, updated, hot, indexes) in probe.tables.items():
        if inserted or updated:
            # An inserted row, and an update that is not HOT, add an entry to every index
            # of the table (a partial index only where the row is in it: at most this).
            entries = (inserted + updated - hot) * indexes
            tables[table] = f"{inserted} inserted, {updated} updated ({hot} HOT),"
            tables[table] += f" {indexes} indexes: at most {entries} index entries"
    return {
        "label": label,
        "statements": [(first_line(s), round(ms_, 2), wal_) for s, _, ms_, wal_ in probe.seen],
        "committed ms": round(ms, 1),
        "committed WAL bytes": int(wal),
        "tables": tables,
        "plans": plans,
    }


def report(side: str, found: list[dict]) -> None:
    """Print the summaries of one side (its plans too)."""
    for one in found:
        statements = one["statements"]
        print(
            f"## {side} {one['label']}: {len(statements)} statements,"
            f" {sum(s[1] for s in statements):.1f} ms and {sum(s[2] for s in statements):,}"
            f" WAL bytes in them (rolled back); committed {one['committed ms']} ms,"
            f" {one['committed WAL bytes']:,} WAL bytes"
        )
        for line, ms, wal in statements:
            print(f"#   {ms:7.2f} ms {wal:9,} B  {line}")
        for table, figures in one["tables"].items():
            print(f"#   {table}: {figures}")
        for line in one["plans"]:
            print("#  " + line)


def profile_writes(growth, engine, roots: int, tag: str) -> list[dict]:
    """growth.py's (`growth`, either tree's) batches of one finish_many and one save_hosts,
    on freshly claimed hosts, and one claim of a batch, profiled."""
    import random

    from crawler.db.crawl import claims, queue

    hosts = claims.claim_polite(engine, growth.BATCH, "profile").hosts
    rng = random.Random(tag)
    batch = growth.crawled_batches(hosts, rng, roots, tag)[0]
    names = [f"{tag}s{i}.{growth.root_name(rng.randrange(roots))}" for i in range(growth.BATCH)]
    return [
        profile(engine, "finish_many", lambda e: queue.finish_many(e, batch)),
        profile(engine, "save_hosts", lambda e: queue.save_hosts(e, names)),
        profile(engine, "claim_polite", lambda e: claims.claim_polite(e, growth.BATCH, "p")),
    ]
