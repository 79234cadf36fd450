"""The reader process: a heavy response is read there, off the event loop (issue 51, item 5).

Read in the loop, one page, robots.txt or certificate of thousands of names held every
other host of the worker for its whole reading budget (1 s of CPU, 4 s on a busy
machine), and the loop's timers fired that late. Read in a thread of the worker, it
freed the loop, but the reading's garbage, made while the loop kept allocating,
fragmented the worker's heap: pymalloc arenas pinned by a few live objects each, 60 MB
more after a burst of hostile pages. So it is read in one process of its own, started
with the crawl (spawned, not forked: the worker has threads), fed the response's parts
as plain values (crawler.core.reading) and answering with the names they give; the
worker's heap sees only that answer. What is heavy is decided where the response is
read (crawler/spiders/discovery.py).

One process, so a flood of heavy responses is read one at a time, beside the worker,
not by a CPU per response. If it dies (killed, out of memory), the next reading starts a
new one and the one in hand is read in the loop (ReaderLost).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from crawler.core.reading import warm
from crawler.network.memory import give_back

log = logging.getLogger(__name__)

# Bytes to read (body, source headers, Sitemap: lines, certificate) over which a response
# is read off the event loop: a 64 KB page takes some milliseconds, the hand-off less.
HEAVY_BYTES = 64 * 1024
# Stats: responses read off the event loop (pages and redirect hops).
READ_OFF_LOOP_STAT = "hostcrawl/extract/off_loop"

_pool: ProcessPoolExecutor | None = None


class ReaderLost(Exception):
    """The reader process died while it read a response."""


def start() -> None:
    """Start the reader process (if not yet) and have it load what it reads with, so the
    first heavy response does not wait for its start-up."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        _pool.submit(warm)


def stop() -> None:
    """Stop the reader process once the readings asked of it are done (another crawler of
    the same process, a test's, may still wait for one); the next reading starts one."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=False)


def given_back(read: Callable, *args):
    """In the reader process: `read(*args)`, then the memory the reading took given back to
    the system, name caches and all (after a 2 MB page of names the process kept 80 MB
    more, and more after each such page)."""
    try:
        return read(*args)
    finally:
        give_back(flooded=True)


async def read_off_loop(read: Callable, *args):
    """`read(*args)` in the reader process (plain values in, plain values out), the event
    loop free meanwhile."""
    start()
    try:
        return await asyncio.wrap_future(_pool.submit(given_back, read, *args))
    except BrokenProcessPool as exc:
        log.warning("the reader process died: %s; a new one is started", exc)
        stop()
        raise ReaderLost(str(exc)) from exc
