"""Coroutines of a test run on an event loop of their own thread.

asyncio.run() on the main thread would close and unset the loop other parts of the
session rely on (Playwright's sync API, a test's reactor), and fails outright when an
earlier test left one running there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor


def run(coroutine: Coroutine):
    """The coroutine's result, run to completion on a fresh loop in a thread of its own."""
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()
