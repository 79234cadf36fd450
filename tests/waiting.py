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
