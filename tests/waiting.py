"""Waiting on a condition, with a bound: the one way tests wait for something to happen.

A test never asserts how long something took (speed belongs in bench/). Where it waits
for another process or thread, it polls a condition; the bound only turns a hang into a
failure, so it is generous enough for a loaded machine and never the thing under test.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

WAIT_BOUND = 60.0  # seconds before a wait that never ends is called a failure


def wait_until(
    condition: Callable[[], object], timeout: float = WAIT_BOUND, what: str = "the condition"
) -> object:
    """Poll `condition` until it is truthy and return its value; fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)


# On a cluster the wait is on the worker that holds the shard: Citus's view sees it.
WAITS_ON_A_LOCK = {
    "cluster_db": "SELECT count(*) FROM citus_lock_waits",
    "clean_db": "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'",
}


def waits_on_a_lock(engine, deployment: str) -> bool:
    """Whether a session of `deployment` ("clean_db" or "cluster_db") waits on a lock, read
    in a transaction of its own: Postgres keeps pg_stat_activity as it first read it until
    the transaction ends."""
    from sqlalchemy import text

    with engine.connect() as look:
        return look.execute(text(WAITS_ON_A_LOCK[deployment])).scalar() > 0
