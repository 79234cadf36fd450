"""A heavy response is read off the event loop (issue 51, item 5: "Floods paced"): while a
page of thousands of names is read, the loop runs on, and the other hosts with it.

The read below waits until the loop has run a callback scheduled beside it: read in the
loop, it would wait for itself (and fail at the bound); read in the reader thread, the
loop runs the callback at once. A small page is still read in the loop, at once.
"""

from __future__ import annotations

import asyncio
import inspect
import threading

from scrapy import Request
from scrapy.http import HtmlResponse

from crawler.network.reader import HEAVY_BYTES, READ_OFF_LOOP_STAT
from crawler.spiders import hosts
from crawler.spiders.discovery import heavy
from tests.loops import run as run_in_loop
from tests.unit.test_page_names import PAGE, crawl  # noqa: F401 (the fixture)
from tests.waiting import WAIT_BOUND

NAMES = 5_000  # about 150 KB of links: over HEAVY_BYTES


def page(spider, names: int) -> HtmlResponse:
    body = "".join(f'<a href="http://n{i}.test/">n</a>' for i in range(names))
    request = spider.host_request(PAGE)
    return HtmlResponse(request.url, body=body.encode(), request=request)


def response(body: bytes = b"", headers: dict | None = None):
    request = Request("http://a.test/")
    return HtmlResponse(request.url, body=body, headers=headers, request=request)


def test_what_is_heavy_is_what_a_read_goes_through():
    assert heavy(response(b"x" * (HEAVY_BYTES + 1)))
    assert not heavy(response(b"x" * HEAVY_BYTES))
    assert heavy(response(headers={"Link": [f"<https://l{i}.test/>" for i in range(5_000)]}))
    assert heavy(response(), [f"https://s{i}.test/map.xml" for i in range(5_000)])
    # A redirect hop's response, in the downloader middlewares, has no request yet.
    assert heavy(HtmlResponse("http://a.test/", status=302, body=b"x" * (HEAVY_BYTES + 1)))


def test_the_loop_runs_on_while_a_heavy_page_is_read(db, crawl, monkeypatch):  # noqa: F811
    spider, _ = crawl
    loop_ran = threading.Event()
    read_while = []
    discover = hosts.discover

    def slow_discover(*args):
        read_while.append(loop_ran.wait(WAIT_BOUND))
        return discover(*args)

    monkeypatch.setattr(hosts, "discover", slow_discover)
    response = page(spider, NAMES)
    assert heavy(response)

    async def parse_beside_a_callback():
        asyncio.get_running_loop().call_soon(loop_ran.set)
        parsed = spider.parse(response)  # Scrapy takes an iterable or an awaitable
        return await parsed if inspect.isawaitable(parsed) else list(parsed)

    [item] = run_in_loop(parse_beside_a_callback())
    assert read_while == [True], "the loop did not run while the page was read"
    assert item.outcome == "OK" and item.links.found == NAMES
    assert spider.crawler.stats.get_value(READ_OFF_LOOP_STAT) == 1


def test_a_small_page_is_read_in_the_loop_at_once(db, crawl):  # noqa: F811
    spider, _ = crawl
    [item] = spider.parse(page(spider, 10))
    assert item.links.found == 10
    assert spider.crawler.stats.get_value(READ_OFF_LOOP_STAT) is None
