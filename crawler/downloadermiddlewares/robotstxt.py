"""FrontPageRobotsTxtMiddleware: robots.txt for a crawler that visits each front page once."""

from __future__ import annotations

import itertools
import logging

from protego import Protego
from scrapy import Request, signals
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.http.request import NO_CALLBACK
from scrapy.robotstxt import ProtegoRobotParser, decode_robotstxt
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from crawler.core.outcomes import HTTP_ROBOTS_UNREACHABLE, HTTP_TIMEOUT, NETWORK_FAILURES
from crawler.network.failures import RobotsUnreachable, classify
from crawler.network.reader import HEAVY_BYTES, READ_OFF_LOOP_STAT, ReaderLost, read_off_loop
from crawler.network.request_meta import FAILED_AT, ROBOTS_FETCH, request_hostname

log = logging.getLogger(__name__)

# A robots.txt fetch that failed below HTTP says how the page request to the same host
# will: the page request settles at once with the same failure instead of waiting again.
CARRIED_TO_THE_PAGE = NETWORK_FAILURES
# A robots.txt unreachable at HTTP, the host having answered below it (RFC 9309 2.3.1.4:
# "unreachable due to server or network errors"): a timeout, or a server error.
UNREACHABLE = frozenset({HTTP_TIMEOUT, HTTP_ROBOTS_UNREACHABLE})
SERVER_ERRORS = range(500, 600)  # crawler.downloadermiddlewares.retry does not retry them


# robots.txt fetches pending at once: at most the hosts in flight (MAX_IN_FLIGHT).
IN_FLIGHT_BOUND = 1024


def robots_key(request: Request) -> str:
    """Whose robots.txt rules a request: its scheme and netloc (a host tried over https
    and then over plain http, the fallback, has one per scheme)."""
    url = urlparse_cached(request)
    return f"{url.scheme}://{url.netloc}"


class FrontPageRobotsTxtMiddleware(RobotsTxtMiddleware):
    """RobotsTxtMiddleware for a crawler that visits each host's front page once.

    Scrapy keeps every host's parser for the life of the process (at millions
    of hosts, that is the process's memory) and logs an unreachable
    robots.txt as an ERROR with a traceback (for a crawler of dead hosts,
    the common case). This keeps the parsers of the last MAX_PARSERS hosts
    and counts fetch failures in stats, logging them at DEBUG. When robots.txt
    failed below HTTP, the page request fails the same way at once. When it was
    unreachable at HTTP (no answer within the download timeout, or a 5xx), RFC 9309
    2.3.1.4 says to assume complete disallow: the page is not asked for, and the host
    settles as HTTP_ROBOTS_UNREACHABLE (tried again after ROBOTS_UNREACHABLE_RETRY_AFTER,
    when its robots.txt is asked again: it is not kept as an allow-all).
    """

    MAX_PARSERS = 10_000

    def __init__(self, crawler) -> None:
        super().__init__(crawler)
        # netloc -> the failure of its robots.txt fetch, when the page would fail alike.
        self._unreachable: dict[str, Exception] = {}
        self._pending_bound = max(IN_FLIGHT_BOUND, crawler.settings.getint("MAX_IN_FLIGHT"))

    async def process_request(self, request: Request, spider=None) -> None:
        await super().process_request(request)
        if request.meta.get("dont_obey_robotstxt"):
            return
        # Once: a retry, or the host claimed again later, goes to the network.
        failure = self._unreachable.pop(robots_key(request), None)
        if failure is not None:
            self._stats.inc_value("hostcrawl/robotstxt/failure_carried")
            # The allow-all a failed fetch leaves served this request alone: a retry, a
            # host held back in an outage and asked again, or a new claim asks again.
            if self._parsers.get(robots_key(request), False) is None:
                del self._parsers[robots_key(request)]
            # The host's record says whose failure it is: its page was never asked for.
            request.meta[FAILED_AT] = f"{robots_key(request)}/robots.txt"
            raise failure

    async def robot_parser(self, request: Request):
        netloc = robots_key(request)
        if netloc not in self._parsers:
            self._forget_oldest()
            self._parsers[netloc] = Deferred()
            robots = Request(
                f"{netloc}/robots.txt",
                priority=self.DOWNLOAD_PRIORITY,
                meta={"dont_obey_robotstxt": True, ROBOTS_FETCH: True},
                callback=NO_CALLBACK,
            )
            try:
                response = await self.crawler.engine.download_async(robots)
                if response.status in SERVER_ERRORS:
                    raise RobotsUnreachable(f"robots.txt answered {response.status}")
                await self._parse_robots(response, netloc, request)
            except Exception as exc:
                log.debug("robots.txt of %s unavailable: %s", netloc, exc)
                unreachable = self._carry(exc, netloc, request)
                self._robots_error(exc, netloc)
                if unreachable:  # not kept as an allow-all: the next request asks again
                    del self._parsers[netloc]
            self._stats.inc_value("robotstxt/request_count")
        parser = self._parsers.get(netloc)
        if isinstance(parser, Deferred):
            return await maybe_deferred_to_future(parser)
        return parser

    def _carry(self, exc: Exception, netloc: str, request: Request) -> bool:
        """Keep the failure the page request settles with, when robots.txt's says it;
        True when robots.txt was unreachable at HTTP (complete disallow)."""
        outcome = classify(exc, request_hostname(request) or "")
        if outcome in CARRIED_TO_THE_PAGE:
            self._unreachable[netloc] = exc
        elif outcome in UNREACHABLE:
            self._stats.inc_value("hostcrawl/robotstxt/unreachable")
            self._unreachable[netloc] = RobotsUnreachable(f"robots.txt unreachable: {exc}")
            return True
        return False

    def process_request_2(self, rp, request: Request) -> None:
        """Hand the host's robots.txt `Sitemap:` URLs to the page (a source of hostnames)."""
        sitemaps = list(getattr(getattr(rp, "rp", None), "sitemaps", ()) or ())
        if sitemaps and request.meta.get("hostcrawl_hostname"):
            request.meta["hostcrawl_sitemaps"] = sitemaps
        return super().process_request_2(rp, request)

    def _forget_oldest(self) -> None:
        """Drop settled parsers beyond MAX_PARSERS, oldest first (dicts keep order).

        Pending ones (at most the requests in flight) stay; looking at that many
        more than the excess is enough to find the settled ones to drop.
        """
        excess = len(self._parsers) - self.MAX_PARSERS
        if excess <= 0:
            return
        oldest = list(itertools.islice(self._parsers, excess + self._pending_bound))
        for netloc in oldest:
            if excess <= 0:
                break
            if not isinstance(self._parsers[netloc], Deferred):
                del self._parsers[netloc]
                self._unreachable.pop(netloc, None)
                excess -= 1

    async def _parse_robots(self, response, netloc: str, request: Request) -> None:
        """Scrapy's, but a robots.txt over HEAVY_BYTES (2 MB of `Sitemap:` lines: 0.07 s of
        CPU, 0.3 s on a busy machine) is parsed by Protego in the reader process
        (crawler/network/reader.py), while the other hosts go on."""
        if len(response.body) <= HEAVY_BYTES or self._parserimpl is not ProtegoRobotParser:
            return await super()._parse_robots(response, netloc, request)
        text = decode_robotstxt(response.body, self.crawler.spider)
        try:
            rules = await read_off_loop(Protego.parse, text)
        except ReaderLost:
            return await super()._parse_robots(response, netloc, request)
        self._stats.inc_value("robotstxt/response_count")
        self._stats.inc_value(f"robotstxt/response_status_count/{response.status}")
        self._stats.inc_value(READ_OFF_LOOP_STAT)
        rp = ParsedRobots(rules, self.crawler.spider)
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed, robotparser=rp, request=request
        )
        waiting = self._parsers[netloc]
        self._parsers[netloc] = rp
        waiting.callback(rp)


class ParsedRobots(ProtegoRobotParser):
    """Scrapy's Protego parser of rules parsed elsewhere (in the reader process)."""

    def __init__(self, rules: Protego, spider) -> None:
        # Not super().__init__: it would parse the body again, here.
        self.spider = spider
        self.rp = rules
