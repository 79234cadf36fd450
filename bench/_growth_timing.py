"""bench/growth.py's timing helpers: p95, and every statement run (for EXPLAIN)."""

from __future__ import annotations

import re
import statistics
import time

from sqlalchemy import event
from sqlalchemy.engine import Engine


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


class Statements:
    """Every statement any engine of this process runs while active (for EXPLAIN)."""

    def __init__(self) -> None:
        self.active = False
        self.seen: list[tuple[str, object]] = []
        self.in_database = 0.0  # seconds inside cursor.execute, all engines, all along
        self._started = 0.0
        event.listen(Engine, "before_cursor_execute", self._seen)
        event.listen(Engine, "after_cursor_execute", self._done)

    def _done(self, *args) -> None:
        self.in_database += time.perf_counter() - self._started

    def _seen(self, conn, cursor, statement, parameters, context, executemany) -> None:
        self._started = time.perf_counter()
        if (
            self.active
            and not executemany
            and re.match(r"\s*(WITH|SELECT|UPDATE|INSERT|DELETE)", statement, re.I)
        ):
            self.seen.append((statement, parameters))

    def of(self, call) -> list[tuple[str, object]]:
        self.seen, self.active = [], True
        try:
            call()
        finally:
            self.active = False
        return self.seen


STATEMENTS = Statements()


def explain(engine, label: str, call) -> None:
    """Print EXPLAIN (ANALYZE, BUFFERS) of each statement one call of `call` runs."""
    seen = STATEMENTS.of(call)
    for statement, parameters in seen:
        if statement.lstrip().upper().startswith("SELECT 1"):
            continue
        print(f"# EXPLAIN (ANALYZE, BUFFERS), {label}:")
        with engine.connect() as conn:
            rows = conn.exec_driver_sql(
                "EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters or {}
            ).all()
            conn.rollback()
        for (row,) in rows:
            print("#   " + row)
