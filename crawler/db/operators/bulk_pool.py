"""Chunks of a list checked in worker processes, one per core, handed back in order.

Seeding a file spends most of its Python time normalizing names and looking up their
public suffix (crawler.core.seed_checks), one name at a time and independent of every
other: work a process per core can share. The chunks come back in the order they were
read, so each line's result still lines up with its line.

Constant memory: at most `workers + 1` chunks are out at once. The next chunk is read
only when the oldest is handed back (Pool.imap would read the whole input ahead: a zone
file of 100 million lines in memory).

The workers are started with `spawn`: a fresh interpreter, no copy of this process's
threads, connections or locks (a fork of a process with a writer thread and a
connection pool is asking for a deadlock). They read their settings from the same
environment (crawler/__init__.py). The panel never starts any: a few names are checked
in the process itself.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from itertools import chain, islice
from typing import TypeVar

C = TypeVar("C")  # a chunk as the caller keeps it
R = TypeVar("R")  # what a worker gives back for it


def in_order(
    chunks: Iterable[C],
    work: Callable[[C], R],
    workers: int,
    sent: Callable[[C], object] = lambda chunk: chunk,
) -> Iterator[tuple[C, R]]:
    """(chunk, work(sent(chunk))) for each chunk, in order; `work` runs in `workers`
    processes (0 or 1: here, in this process). `work` must be picklable (a module-level
    function, or a functools.partial of one); `sent(chunk)` is what goes to the worker
    (only what it needs: less to pickle). A list of one chunk starts no process."""
    chunks = iter(chunks)
    head = list(islice(chunks, 2))
    if workers <= 1 or len(head) < 2:  # a list of one chunk is done before a worker starts
        for chunk in chain(head, chunks):
            yield chunk, work(sent(chunk))
        return
    spawn = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(workers, mp_context=spawn, initializer=_end_with_parent)
    out: deque[tuple[C, Future[R]]] = deque()
    try:
        for chunk in chain(head, chunks):
            out.append((chunk, pool.submit(work, sent(chunk))))
            if len(out) > workers:
                oldest, result = out.popleft()
                yield oldest, result.result()
        while out:
            oldest, result = out.popleft()
            yield oldest, result.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _end_with_parent() -> None:
    """In a worker: exit when the process that started it is gone (killed with SIGKILL,
    it tells no one; the workers, each holding both ends of the pool's queue, would
    wait for work forever). Ctrl-C is the parent's to handle (it stops the pool): a
    worker ignores it, rather than print a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="end-with-parent", daemon=True).start()
