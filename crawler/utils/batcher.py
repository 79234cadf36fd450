"""Gather the running crawl's many small writes into few database calls.

(An operator's long lists are written by crawler/db/operators/bulk.py: staged, a batch a
transaction.)

Every page ends in a write (its result and links, its trap-window outcome).
One thread hand-off and one transaction per write cost the event loop more
than the page itself, so writes made within a few milliseconds of each other
go to the database together, one batch at a time per kind. While a batch is
being written the next one gathers, and it takes everything that waited (up
to MAX_ITEMS): a commit that takes a second (a busy database, a slow disk)
then costs a second per several hundred hosts, not per 64.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from crawler.db.server.retry import in_thread_until_up

# The slow web's crawl (bench/slowweb.py) had batches of 64 taking up to a second each,
# and the worker idle behind them; 512 keeps one write well under a second.
MAX_ITEMS = 512

Item = TypeVar("Item")
Result = TypeVar("Result")


class Batcher(Generic[Item, Result]):
    """`await submit(item)` → the item's result from one `write(items)` call in a thread.

    A batch goes when it has `max_items`, or `max_wait` seconds after its first
    item. `write` returns one result per item, in order; if it raises, every
    item of its batch gets the error. Outages are ridden out (retried) inside.
    """

    def __init__(
        self,
        what: str,
        write: Callable[[Sequence[Item]], Sequence[Result]],
        max_items: int = MAX_ITEMS,
        max_wait: float = 0.02,
    ) -> None:
        self.what = what
        self.write = write
        self.max_items = max_items
        self.max_wait = max_wait
        self._pending: list[tuple[Item, asyncio.Future]] = []
        self._full = asyncio.Event()
        self._flusher: asyncio.Task | None = None

    async def submit(self, item: Item, urgent: bool = False) -> Result:
        """Queue the item; `urgent` sends its batch now instead of waiting to fill up."""
        future = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if urgent or len(self._pending) >= self.max_items:
            self._full.set()
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.ensure_future(self._flush_all())
        return await future

    async def _flush_all(self) -> None:
        while self._pending:
            if len(self._pending) < self.max_items and not self._full.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._full.wait(), self.max_wait)
            self._full.clear()
            batch, self._pending = (
                self._pending[: self.max_items],
                self._pending[self.max_items :],
            )
            await self._write(batch)

    async def _write(self, batch: list[tuple[Item, asyncio.Future]]) -> None:
        try:
            results = await in_thread_until_up(self.what, self.write, [i for i, _ in batch])
        except Exception as exc:  # each waiting caller gets the error
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)

    async def drain(self) -> None:
        """Wait until every submitted item is written."""
        if self._flusher is not None and not self._flusher.done():
            await asyncio.gather(self._flusher, return_exceptions=True)
