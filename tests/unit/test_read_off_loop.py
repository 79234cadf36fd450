"""A heavy response is read off the event loop (issue 51, item 5: "Floods paced"): while a
page of thousands of names is read, the loop runs on, and the other hosts with it.

The reading goes to the reader process (crawler/network/reader.py); its names come back
in one string and are judged against the deny list and the caps a step at a time, the
loop turning between two steps. What a heavy page gives is what the same page read in
the loop gives. A small page is still read in the loop, at once.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import os
from pathlib import Path

from scrapy import Request
from scrapy.http import HtmlResponse

from crawler.core.links import Judge
from crawler.network import reader
from crawler.network.reader import HEAVY_BYTES, READ_OFF_LOOP_STAT, read_off_loop
from crawler.spiders import discovery
from crawler.spiders.discovery import heavy, parts_of
from tests.loops import run as run_in_loop
from tests.unit.test_page_names import BODY, PAGE, crawl  # noqa: F401 (the fixture)
from tests.waiting import wait_until

NAMES = 5_000  # about 150 KB of links: over HEAVY_BYTES
ALL = frozenset({"links", "headers", "robots", "certificate"})


def page(spider, names: int) -> HtmlResponse:
    body = BODY + "".join(f'<a href="http://n{i}.test/">n</a>' for i in range(names))
    request = spider.host_request(PAGE)
    return HtmlResponse(request.url, body=body.encode(), request=request)


def response(body: bytes = b"", headers: dict | None = None, sitemaps=()):
    request = Request("http://a.test/", meta={discovery.SITEMAPS: list(sitemaps)})
    return HtmlResponse(request.url, body=body, headers=headers, request=request)


def test_what_is_heavy_is_what_a_read_goes_through():
    assert heavy(parts_of(response(b"x" * (HEAVY_BYTES + 1)), ALL))
    assert not heavy(parts_of(response(b"x" * HEAVY_BYTES), ALL))
    links = {"Link": [f"<https://l{i}.test/>" for i in range(5_000)]}
    assert heavy(parts_of(response(headers=links), ALL))
    assert not heavy(parts_of(response(headers=links), ALL - {"headers"}))
    sitemaps = [f"https://s{i}.test/map.xml" for i in range(5_000)]
    assert heavy(parts_of(response(sitemaps=sitemaps), ALL))
    # A redirect hop's response, in the downloader middlewares, has no request yet.
    hop = HtmlResponse("http://a.test/", status=302, body=b"x" * (HEAVY_BYTES + 1))
    assert heavy(parts_of(hop, ALL - {"robots"}))


def wait_for_file(path: str) -> int:
    """In the reader process: wait until `path` exists; the process's id."""
    wait_until(lambda: Path(path).exists(), what=f"{path} made by the loop")
    return os.getpid()


def test_the_reader_reads_in_another_process_while_the_loop_runs(tmp_path):
    flag = tmp_path / "the loop ran"

    async def read_beside_a_callback():
        asyncio.get_running_loop().call_soon(flag.touch)
        return await read_off_loop(wait_for_file, str(flag))

    try:
        # Read in the loop, the reading would wait for the loop's callback: for ever.
        assert run_in_loop(read_beside_a_callback()) != os.getpid()
    finally:
        reader.stop()


def test_a_heavy_page_is_read_off_the_loop_and_judged_in_steps(db, crawl, monkeypatch):  # noqa: F811
    spider, _ = crawl
    monkeypatch.setattr(discovery, "JUDGED_AT_ONCE", 1_000)
    turns, seen_at = [0], []
    add = Judge.add

    def add_counting_turns(judge, names):
        seen_at.append(turns[0])
        return add(judge, names)

    monkeypatch.setattr(Judge, "add", add_counting_turns)
    heavy_page = page(spider, NAMES)
    assert heavy(parts_of(heavy_page, spider.sources))

    async def parse_beside_a_ticker():
        done = False

        async def tick():
            while not done:
                turns[0] += 1
                await asyncio.sleep(0)

        ticker = asyncio.ensure_future(tick())
        parsed = spider.parse(heavy_page)  # Scrapy takes an iterable or an awaitable
        items = await parsed if inspect.isawaitable(parsed) else list(parsed)
        done = True
        await ticker
        return items

    try:
        [item] = run_in_loop(parse_beside_a_ticker())
    finally:
        reader.stop()
    assert spider.crawler.stats.get_value(READ_OFF_LOOP_STAT) == 1
    assert len(seen_at) > NAMES // 1_000
    assert all(a < b for a, b in itertools.pairwise(seen_at)), "the loop waited for the judging"
    # The same names, drops (the deny list's among them) and counts as read in the loop.
    monkeypatch.setattr(Judge, "add", add)
    in_loop = _read_in_loop(spider, page(spider, NAMES))
    assert item.links == in_loop.links and item.links.found > NAMES
    assert item.links.dropped["no_follow"] == 2


def _read_in_loop(spider, response):
    """The page's item, read in the loop whatever its size."""
    hostname = response.meta["hostcrawl_hostname"]
    limits = spider.limits.of_fetch(response.meta, hostname)
    args = (response, hostname, spider.state.denylist.loaded, spider.sources, spider.local)
    return spider._page_item(response, limits, *discovery.discover(*args, limits))


def test_a_small_page_is_read_in_the_loop_at_once(db, crawl):  # noqa: F811
    spider, _ = crawl
    [item] = spider.parse(page(spider, 10))
    assert item.links.found == 10 + 9  # BODY's links too
    assert spider.crawler.stats.get_value(READ_OFF_LOOP_STAT) is None
