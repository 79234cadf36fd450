"""crawler.utils.batcher.Batcher: many small writes, few database calls, every caller answered."""

from __future__ import annotations

import asyncio
import threading

from crawler.utils.batcher import MAX_ITEMS, Batcher

BOUND = 10  # seconds: a bound on a wait, not a duration the test expects


class SlowWriter:
    """A write that holds until released, as a commit on a busy database does."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.release = threading.Event()

    def __call__(self, items):
        self.batches.append(list(items))
        assert self.release.wait(BOUND), "the test never released the write"
        return [item * 10 for item in items]


async def wait_for(condition) -> None:
    async with asyncio.timeout(BOUND):
        while not condition():
            await asyncio.sleep(0.001)


def test_items_waiting_behind_a_slow_write_go_in_one_batch():
    """The items that queue while a batch is written go together, up to MAX_ITEMS."""

    async def run():
        writer = SlowWriter()
        batcher = Batcher("writing", writer, max_wait=0)
        first = asyncio.ensure_future(batcher.submit(-1))
        await wait_for(lambda: writer.batches)  # the first write holds
        waiting = MAX_ITEMS + 5
        rest = [asyncio.ensure_future(batcher.submit(i)) for i in range(waiting)]
        await wait_for(lambda: len(batcher._pending) == waiting)  # all queued behind it
        writer.release.set()
        return writer.batches, await first, await asyncio.gather(*rest)

    batches, first, rest = asyncio.run(run())
    assert [len(b) for b in batches] == [1, MAX_ITEMS, 5]
    assert first == -10
    assert rest == [i * 10 for i in range(MAX_ITEMS + 5)]  # each caller its own result


def test_items_submitted_within_max_wait_go_in_one_batch():
    async def run():
        writer = SlowWriter()
        writer.release.set()
        batcher = Batcher("writing", writer, max_wait=0.01)
        results = await asyncio.gather(batcher.submit(1), batcher.submit(2))
        return writer.batches, results

    batches, results = asyncio.run(run())
    assert results == [10, 20]
    assert batches == [[1, 2]]


def test_an_urgent_item_goes_without_waiting_for_its_batch_to_fill():
    async def run():
        writer = SlowWriter()
        writer.release.set()
        batcher = Batcher("writing", writer, max_wait=3600)  # a batch would wait an hour
        result = await asyncio.wait_for(batcher.submit(1, urgent=True), BOUND)
        return writer.batches, result

    batches, result = asyncio.run(run())
    assert result == 10
    assert batches == [[1]]


def test_a_failed_write_fails_every_caller_of_its_batch_and_the_next_batch_goes():
    calls: list[list[str]] = []

    def write(items):
        calls.append(list(items))
        if "bad" in items:
            raise ValueError("no such column")
        return items

    async def run():
        batcher = Batcher("writing", write, max_wait=0.01)
        failed = await asyncio.gather(
            batcher.submit("bad"), batcher.submit("ok"), return_exceptions=True
        )
        return failed, await batcher.submit("later")

    failed, later = asyncio.run(run())
    assert [type(r) for r in failed] == [ValueError, ValueError]
    assert later == "later"
    assert calls == [["bad", "ok"], ["later"]]
