"""BlacklistMiddleware on its own (docs/design.md, rule 4), as Scrapy tests its offsite one."""

from __future__ import annotations

import contextlib

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.test import get_crawler

from crawler.db.rules import deny_entries
from crawler.downloadermiddlewares.deny import BlacklistMiddleware, request_denied
from crawler.downloadermiddlewares.retry import AnswerAwareRetryMiddleware
from crawler.shared import CrawlShared
from tests.loops import run as run_in_loop
from tests.unit.test_hostnames import CASES


@pytest.fixture
def crawler(db):
    crawler = get_crawler(Spider, {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}})
    crawler.spider = crawler._create_spider("test")
    crawler._apply_settings()  # the add-on's settings, as a crawl applies them
    yield crawler
    CrawlShared.of(crawler).denylist.stop()


@pytest.fixture
def middleware(crawler):
    return BlacklistMiddleware.from_crawler(crawler)


@pytest.mark.parametrize(("entry", "stored", "url", "denied"), CASES)
def test_matching_table(db, middleware, entry, stored, url, denied):
    if entry is not None:
        deny_entries.add_no_follow(db, [entry])
    request = Request("http://" + url)
    if denied:
        with pytest.raises(IgnoreRequest, match=f"no_follow entry {stored}"):
            middleware.process_request(request)
    else:
        assert middleware.process_request(request) is None


def test_dont_filter_does_not_bypass_but_allow_blocked_does(db, middleware):
    deny_entries.upsert_blocked(db, "trap.test", "trap")
    with pytest.raises(IgnoreRequest):
        middleware.process_request(Request("http://x.trap.test/", dont_filter=True))
    allowed = Request("http://x.trap.test/", meta={"allow_blocked": True})
    assert middleware.process_request(allowed) is None


def test_stats_count_requests_and_domains_per_rule(db, middleware, crawler):
    deny_entries.upsert_blocked(db, "trap.test", "trap")
    deny_entries.add_no_follow(db, ["social.test"])
    urls = [
        "http://a.trap.test/",
        "http://b.trap.test/",
        "http://www.social.test/",
        "http://ok.test/",
    ]
    for url in urls:
        with contextlib.suppress(IgnoreRequest):
            middleware.process_request(Request(url))
    stats = crawler.stats.get_stats()
    assert stats["hostcrawl/blacklist/filtered"] == 3
    assert stats["hostcrawl/blacklist/filtered/blocked"] == 2
    assert stats["hostcrawl/blacklist/filtered/no_follow"] == 1
    assert stats["hostcrawl/blacklist/domains"] == 2
    assert stats["hostcrawl/blacklist/domains/blocked"] == 1


def test_scheduling_a_denied_request_raises_and_settles_it(db, middleware, crawler):
    deny_entries.add_no_follow(db, ["social.test"])
    request = Request("http://social.test/", meta={"hostcrawl_hostname": "social.test"})
    denied = []

    def heard(request, denial):  # a name, not a lambda: signals hold weak references
        denied.append((request, denial))

    crawler.signals.connect(heard, request_denied)
    with pytest.raises(IgnoreRequest):
        middleware.request_scheduled(request, crawler.spider)
    assert denied == [(request, ("social.test", "no_follow"))]
    assert request.meta["denial"] == ("social.test", "no_follow")


def test_a_block_elsewhere_applies_once_the_deny_list_has_it(db, middleware):
    request = Request("http://x.late.test/")
    assert middleware.process_request(request) is None
    middleware.state.denylist.remember("late.test", "blocked")  # what the LISTEN thread does
    with pytest.raises(IgnoreRequest):
        middleware.process_request(request)


def test_nxdomain_is_not_retried_but_servfail_is(crawler):
    from scrapy.exceptions import CannotResolveHostError

    from crawler.network.resolver import DNSFailure, Resolution

    retry = AnswerAwareRetryMiddleware.from_crawler(crawler)

    def failure(outcome):
        try:
            raise CannotResolveHostError("x") from DNSFailure(Resolution("x.test", outcome))
        except CannotResolveHostError as exc:
            return exc

    request = Request("http://x.test/")
    assert retry.process_exception(request, failure("DNS_NXDOMAIN")) is None
    retried = retry.process_exception(request, failure("DNS_SERVFAIL"))
    assert isinstance(retried, Request) and retried.meta["retry_times"] == 1


def test_waits_spent_in_full_are_not_retried_in_the_same_claim():
    """A silent DNS server was asked twice already; a host that hung at HTTP held its
    slot for the whole download timeout. Both come back through the queue instead."""
    from scrapy.exceptions import CannotResolveHostError, DownloadTimeoutError
    from twisted.internet import error as tx

    from crawler.network.resolver import DNSFailure, Resolution

    crawler = get_crawler(Spider, {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}})
    crawler.spider = crawler._create_spider("test")
    crawler._apply_settings()  # the add-on's settings, as a crawl applies them
    retry = AnswerAwareRetryMiddleware.from_crawler(crawler)
    request = Request("http://x.test/")
    silent = CannotResolveHostError("x")
    silent.__cause__ = DNSFailure(Resolution("x.test", "DNS_TIMEOUT"))
    assert retry.process_exception(request, silent) is None
    hung = DownloadTimeoutError("Getting http://x.test/ took longer than 3 seconds.")
    assert retry.process_exception(request, hung) is None
    connect = DownloadTimeoutError("connect")
    connect.__cause__ = tx.TimeoutError()
    assert isinstance(retry.process_exception(request, connect), Request)  # TCP_TIMEOUT


def test_robots_parsers_are_kept_for_a_bounded_number_of_hosts(db):
    from twisted.internet.defer import Deferred

    from crawler.downloadermiddlewares.robotstxt import FrontPageRobotsTxtMiddleware

    crawler = get_crawler(Spider, settings_dict={"ROBOTSTXT_OBEY": True})
    middleware = FrontPageRobotsTxtMiddleware.from_crawler(crawler)
    middleware.MAX_PARSERS = 3
    pending = Deferred()
    middleware._parsers.update({"busy.test": pending})
    middleware._parsers.update({f"h{i}.test": None for i in range(5)})
    middleware._forget_oldest()
    assert list(middleware._parsers) == ["busy.test", "h3.test", "h4.test"]


def test_a_failed_robots_txt_settles_the_page_request_once(db):
    """robots.txt timed out: the page request fails alike at once, instead of waiting a
    download timeout again; a later request (a retry, a host asked again after an outage, a
    new claim) asks for robots.txt again, never obeying an allow-all a failure left."""

    from scrapy.exceptions import DownloadTimeoutError

    from crawler.downloadermiddlewares.robotstxt import FrontPageRobotsTxtMiddleware

    crawler = get_crawler(Spider, settings_dict={"ROBOTSTXT_OBEY": True})
    middleware = FrontPageRobotsTxtMiddleware.from_crawler(crawler)
    hung = DownloadTimeoutError("Getting https://hung.test/robots.txt took longer than 3 seconds.")
    middleware._parsers["https://hung.test"] = None  # what a failed fetch leaves
    middleware._unreachable["https://hung.test"] = hung
    page = Request("https://hung.test/")
    with pytest.raises(DownloadTimeoutError):
        run_in_loop(middleware.process_request(page))
    # No allow-all kept: the next request for the host asks for its robots.txt again.
    assert "https://hung.test" not in middleware._parsers
    assert crawler.stats.get_value("hostcrawl/robotstxt/failure_carried") == 1
