"""The add-on's timeouts: its download handler and a resolver of the crawl's own settings."""

from __future__ import annotations

import pytest
from scrapy import Spider
from scrapy.utils.test import get_crawler
from twisted.internet import reactor

from crawler.addon import HostcrawlAddon
from crawler.core import config
from crawler.network.download import HostcrawlDownloadHandler
from crawler.network.resolver import OutcomeResolver


def crawler_with_addon(**settings):
    crawler = get_crawler(Spider, {"ADDONS": {HostcrawlAddon: 0}, **settings})
    crawler._apply_settings()
    return crawler


def test_http_and_https_go_through_the_connect_bound_handler():
    handlers = crawler_with_addon().settings.getdict("DOWNLOAD_HANDLERS")
    assert (
        handlers["http"] == handlers["https"] == "crawler.network.download.HostcrawlDownloadHandler"
    )


@pytest.mark.parametrize(
    "given, kept",
    [
        ({}, config.setting("IDLE_CONNECTION_TIMEOUT").default),
        ({"IDLE_CONNECTION_TIMEOUT": 0.5}, 0.5),
    ],
)
def test_an_idle_connection_is_closed_after_the_crawls_idle_timeout(given, kept):
    """Twisted's pool keeps an idle connection 240 s: a socket and ~60 kB per host crawled."""
    handler = HostcrawlDownloadHandler(crawler_with_addon(**given))
    assert handler._pool.cachedConnectionTimeout == kept != 240


def test_a_project_handler_for_a_scheme_is_kept():
    crawler = crawler_with_addon(DOWNLOAD_HANDLERS={"https": "my.Handler"})
    assert crawler.settings.getdict("DOWNLOAD_HANDLERS")["https"] == "my.Handler"


def test_the_resolver_installed_before_the_addon_gives_way_to_the_crawls_settings():
    """CrawlerProcess installs TWISTED_DNS_RESOLVER from settings that lack the add-on's
    (Scrapy's DNS_TIMEOUT is 60 s): the add-on puts in one with the crawl's own."""
    before = reactor.resolver
    try:
        OutcomeResolver(reactor, [("127.0.0.1", 53)], timeout=60).install_on_reactor()
        crawler = crawler_with_addon(DNS_NAMESERVERS="127.0.0.1:53")
        HostcrawlAddon(crawler).install_resolver()
        installed = reactor.resolver
        assert isinstance(installed, OutcomeResolver)
        assert (installed.timeout, installed.attempts) == (5.0, (5.0, 5.0))
        HostcrawlAddon(crawler).install_resolver()
        assert reactor.resolver is installed  # the same settings: kept, cache and all
    finally:
        reactor.installResolver(before)
