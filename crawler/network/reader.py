"""The reader thread: a heavy response is read here, off the event loop (issue 51, item 5).

Read in the loop, one page, robots.txt or certificate of thousands of names held every
other host of the worker for its whole reading budget (1 s of CPU, 4 s on a busy
machine), and the loop's timers fired that late. What is heavy is decided where the
response is read (crawler/spiders/discovery.py, the robots.txt middleware).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

# Bytes to read (body, source headers, Sitemap: lines, certificate) over which a response
# is read off the event loop: a 64 KB page takes some milliseconds, a thread hand-off less.
HEAVY_BYTES = 64 * 1024
# Stats: responses read off the event loop (pages, redirect hops, robots.txt files).
READ_OFF_LOOP_STAT = "hostcrawl/extract/off_loop"
# One thread, so a flood of heavy responses costs the loop one thread's share of the
# interpreter, not one per response (the loop and the small pages keep the rest).
_READER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hostcrawl-reader")


async def read_off_loop(read: Callable, *args):
    """`read(*args)` in the reader thread, the event loop free meanwhile. What it reads
    (the response, its fetch's limits) is the reader's alone until it returns."""
    return await asyncio.get_running_loop().run_in_executor(_READER, read, *args)
