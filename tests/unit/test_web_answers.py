"""The web's answers are counted at INFO, not logged as our errors; our own refusal of an
address names the address and the setting (issue 51, items 2 and 6)."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import CannotResolveHostError, DownloadConnectionRefusedError
from scrapy.utils.test import get_crawler
from twisted.internet import error as tx

from crawler.core.answers import WEB_ANSWERS, AnswerTally, FirstTimes
from crawler.db import queue
from crawler.db.queue import CrawlResult
from crawler.downloadermiddlewares.retry import AnswerAwareRetryMiddleware
from crawler.network.headerbound import HeadersTooLarge
from crawler.network.request_meta import FAILED_AT
from crawler.network.resolver import DNSFailure, OutcomeResolver, Resolution
from tests.dbhelpers import finish

pytest_plugins = ["tests.unit.test_panel_support"]

REFUSED = "10.20.0.5 is a private address, not in ALLOWED_PRIVATE_NETWORKS"


def test_answers_are_told_at_most_once_an_interval_and_start_again():
    tally = AnswerTally(60, now=0)
    assert not tally.due(100)  # nothing to tell
    for outcome in ["TCP_REFUSED"] * 3 + ["DNS_NXDOMAIN"]:
        tally.add(outcome)
    assert not tally.due(59)
    assert tally.due(60)
    assert tally.tell(61) == "the web's answers in the last 61 s: 3 TCP_REFUSED, 1 DNS_NXDOMAIN"
    assert tally.tell(62) == ""
    assert not tally.due(200)


def test_our_refusal_is_no_answer_of_the_web():
    assert "ADDRESS_REFUSED" not in WEB_ANSWERS
    assert {"TCP_REFUSED", "TCP_RESET", "DNS_NXDOMAIN", "HTTP_TIMEOUT"} <= WEB_ANSWERS


def test_first_times_are_remembered_up_to_a_bound():
    seen = FirstTimes(2)
    assert [seen.first(k) for k in ("a", "a", "b", "c", "c")] == [True, False, True, False, False]


def refused_connection() -> Exception:
    try:
        raise DownloadConnectionRefusedError("refused") from tx.ConnectionRefusedError()
    except DownloadConnectionRefusedError as exc:
        return exc


def refused_address() -> Exception:
    resolution = Resolution("wiki.corp.example", "ADDRESS_REFUSED", refused=REFUSED)
    try:
        raise CannotResolveHostError("wiki.corp.example") from DNSFailure(resolution)
    except CannotResolveHostError as exc:
        return exc


@pytest.fixture
def retry():
    settings = {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}, "RETRY_TIMES": 1}  # as crawls
    crawler = get_crawler(Spider, settings)
    crawler.spider = crawler._create_spider("test")
    crawler._apply_settings()  # the add-on's settings, as a crawl applies them
    return AnswerAwareRetryMiddleware.from_crawler(crawler)


def test_giving_up_on_a_dead_host_is_no_error_and_it_is_counted(retry, caplog):
    caplog.set_level(logging.DEBUG)
    request = Request("http://dead.test/")
    retried = retry.process_exception(request, refused_connection())
    assert isinstance(retried, Request)
    assert retry.process_exception(retried, refused_connection()) is None  # gave up
    gave_up = [r for r in caplog.records if r.getMessage().startswith("Gave up retrying")]
    assert [r.levelno for r in gave_up] == [logging.DEBUG]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    retry.tell_answers()  # as the crawl closes
    told = [r for r in caplog.records if r.getMessage().startswith("the web's answers")]
    assert [r.levelno for r in told] == [logging.INFO]
    assert "2 TCP_REFUSED" in told[0].getMessage()


def test_a_503_given_up_is_no_error_either(retry, caplog):
    from scrapy.http import Response

    caplog.set_level(logging.DEBUG)
    request = Request("http://busy.test/", meta={"retry_times": 1})
    response = Response("http://busy.test/", status=503, request=request)
    assert retry.process_response(request, response) is response
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_head_too_large_is_not_retried(retry):
    from scrapy.exceptions import DownloadFailedError
    from twisted.python.failure import Failure
    from twisted.web._newclient import ResponseFailed

    cause = ResponseFailed([Failure(HeadersTooLarge("response head past 262144 bytes"))])
    try:
        raise DownloadFailedError("too large") from cause
    except DownloadFailedError as exc:
        assert retry.process_exception(Request("http://big.test/"), exc) is None


def test_a_failure_carried_from_robots_txt_is_not_retried_nor_counted_again(retry):
    request = Request("http://dead.test/", meta={FAILED_AT: "http://dead.test/robots.txt"})
    assert retry.process_exception(request, refused_connection()) is None
    assert retry.answers.tell(0) == ""


def test_a_refused_address_is_told_once_with_the_address_and_the_setting(retry, caplog):
    for host in ("wiki.corp.example", "mail.corp.example"):
        request = Request(f"https://{host}/", meta={"hostcrawl_hostname": host})
        assert retry.process_exception(request, refused_address()) is None  # no retry
    told = [r for r in caplog.records if "ADDRESS_REFUSED" in r.getMessage()]
    assert [r.levelno for r in told] == [logging.WARNING]
    assert (
        told[0]
        .getMessage()
        .startswith(f"wiki.corp.example: ADDRESS_REFUSED, not fetched: {REFUSED}")
    )
    assert retry.answers.tell(0) == ""  # not one of the web's answers


def test_the_resolver_names_the_address_it_refuses_and_the_setting():
    from twisted.internet import reactor

    resolver = OutcomeResolver(reactor, [("127.0.0.1", 53)])
    refused = resolver.public(Resolution("wiki.corp.example", "DNS_ALIVE", "10.20.0.5"))
    assert (refused.outcome, refused.address, refused.refused) == ("ADDRESS_REFUSED", None, REFUSED)
    assert f"wiki.corp.example: ADDRESS_REFUSED ({REFUSED})" in str(DNSFailure(refused))
    public = Resolution("example.org", "DNS_ALIVE", "93.184.215.14")
    assert resolver.public(public) is public


def test_a_refused_host_page_names_the_setting_not_our_network(db, client):
    queue.save_hosts(db, ["wiki.corp.example"])
    finish(db, "wiki.corp.example", CrawlResult("ADDRESS_REFUSED"))
    html = " ".join(client.get("/hosts/wiki.corp.example").get_data(as_text=True).split())
    assert "not public and not in ALLOWED_PRIVATE_NETWORKS" in html
    assert "nothing was sent there, and the host settled" in html
    assert "our resolver or network did not answer" not in html
