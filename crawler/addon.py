"""The hostcrawl add-on: the deny list, the trap rule and their parts for any spider.

    ADDONS = {"crawler.addon.HostcrawlAddon": 0}

installs, in their places: BlacklistMiddleware (no_follow and blocked hosts
never downloaded; every outcome fed to the trap windows), the retry variant
that never retries an authoritative NXDOMAIN, the bounded robots.txt
middleware, the outcome resolver (NXDOMAIN, SERVFAIL, timeout told apart),
the pipeline that writes HostItems, the log formatter (a dropped HostItem
is its reason, not its repr), the scheduled prune (crawler/extensions/pruning.py,
every PRUNE_INTERVAL), the in-flight control (crawler/extensions/in_flight.py), the
collector's tuning (crawler/extensions/gc_tuning.py), the worker's heartbeat for the panel
(crawler/extensions/heartbeat.py) and the production defaults. A project's
own settings still win over the defaults set here.
"""

from __future__ import annotations

import logging
import os

from scrapy import signals
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.downloadermiddlewares.retry import RetryMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import SETTINGS_PRIORITIES

from crawler.core import config
from crawler.downloadermiddlewares.deny import BlacklistMiddleware
from crawler.downloadermiddlewares.redirect import LoopAwareRedirectMiddleware
from crawler.downloadermiddlewares.retry import AnswerAwareRetryMiddleware
from crawler.downloadermiddlewares.robotstxt import FrontPageRobotsTxtMiddleware
from crawler.extensions.gc_tuning import CollectorTuning
from crawler.extensions.giveback import MemoryGiveBack
from crawler.extensions.heartbeat import Heartbeat
from crawler.extensions.in_flight import InFlightControl
from crawler.extensions.metrics import PrometheusMetrics
from crawler.extensions.open_files import size_max_in_flight
from crawler.extensions.pruning import ScheduledPrune
from crawler.network.resolver import OutcomeResolver
from crawler.pipelines import HostWritePipeline
from crawler.spiders.discovery import RedirectHopSources

log = logging.getLogger(__name__)
DOWNLOAD_HANDLER = "crawler.network.download.HostcrawlDownloadHandler"
LOG_FORMATTER = "crawler.logformatter.HostcrawlLogFormatter"

# docs/design.md, "Scrapy 2.19 facts": what a crawler of the open web should not run with.
PRODUCTION_DEFAULTS = {
    "REMOTE_CONTROL_ENABLED": False,
    "TELNETCONSOLE_ENABLED": False,
    "COOKIES_ENABLED": False,
    "ROBOTSTXT_OBEY": True,
    "DOWNLOAD_MAXSIZE": 2 * 1024 * 1024,
    "DOWNLOAD_WARNSIZE": 1024 * 1024,
    "TWISTED_DNS_RESOLVER": "crawler.network.resolver.OutcomeResolver",
    # A meta refresh is a source of hostnames (its target is saved and crawled in its
    # turn); followed as a redirect, the refreshing page's own names would be lost.
    "METAREFRESH_ENABLED": False,
}


def typed(settings, declared: config.Setting):
    """A hostcrawl setting of a Scrapy run, as its declared type."""
    getter = {bool: settings.getbool, int: settings.getint, float: settings.getfloat}
    return getter.get(declared.kind, settings.get)(declared.name)


class HostcrawlAddon:
    """Installs hostcrawl's middlewares, resolver and pipeline."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.install_resolver, signal=signals.engine_started)
        crawler.signals.connect(self.log_settings, signal=signals.engine_started)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def update_settings(self, settings) -> None:
        for name, value in PRODUCTION_DEFAULTS.items():
            settings.set(name, value, "addon")
        # A dropped HostItem is its reason, not its repr (crawler/logformatter.py).
        settings.set("LOG_FORMATTER", LOG_FORMATTER, "addon")
        for declared, value, _source in config.effective(os.environ):
            if config.CRAWL in declared.readers:
                settings.set(declared.name, value, "addon")
        # Derived here, after -s and the project's settings are in: a Scrapy download
        # slot is one root (the spider's meta["download_slot"]) and the claim holds a
        # root to ROOT_CONCURRENCY hosts across workers, so a worker may fetch all of
        # a root's claimed hosts at once.
        settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", settings.getint("ROOT_CONCURRENCY"), "addon")
        # MAX_IN_FLIGHT=0: what the memory budget and the open-files limit (raised to the
        # hard limit first) hold.
        size_max_in_flight(settings)
        # TCP connect and TLS handshake bounded by CONNECT_TIMEOUT (unless the project
        # chose its own handler for a scheme).
        handlers = settings.getdict("DOWNLOAD_HANDLERS")
        for scheme in ("http", "https"):
            handlers.setdefault(scheme, DOWNLOAD_HANDLER)
        settings.set("DOWNLOAD_HANDLERS", handlers, settings.getpriority("DOWNLOAD_HANDLERS") or 0)
        # Early, so a denied request costs nothing: no robots.txt fetch, no retry.
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", BlacklistMiddleware, 50)
        for builtin, ours, priority in (
            (RedirectMiddleware, LoopAwareRedirectMiddleware, 600),
            (RetryMiddleware, AnswerAwareRetryMiddleware, 550),
            (RobotsTxtMiddleware, FrontPageRobotsTxtMiddleware, 100),
        ):
            settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", builtin, None)
            settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", ours, priority)
        # Below RedirectMiddleware (600): a redirect response's own names are kept first.
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RedirectHopSources, 650)
        settings.set_in_component_priority_dict("ITEM_PIPELINES", HostWritePipeline, 300)
        settings.set_in_component_priority_dict("EXTENSIONS", PrometheusMetrics, 500)
        settings.set_in_component_priority_dict("EXTENSIONS", ScheduledPrune, 500)
        settings.set_in_component_priority_dict("EXTENSIONS", InFlightControl, 500)
        settings.set_in_component_priority_dict("EXTENSIONS", CollectorTuning, 500)
        settings.set_in_component_priority_dict("EXTENSIONS", MemoryGiveBack, 500)
        settings.set_in_component_priority_dict("EXTENSIONS", Heartbeat, 500)

    def install_resolver(self) -> None:
        """Make sure the reactor resolves through an OutcomeResolver of this crawl's settings.

        Only CrawlerProcess installs TWISTED_DNS_RESOLVER, from its own settings,
        before any spider's and before this add-on's: a spider run by
        CrawlerRunner, or one that asks for this add-on in its custom_settings,
        would otherwise keep the default, and `scrapy crawl` a resolver with
        Scrapy's 60-second DNS_TIMEOUT instead of ours.
        """
        from twisted.internet import reactor

        ours = OutcomeResolver.from_crawler(self.crawler, reactor)
        installed = reactor.resolver
        if isinstance(installed, OutcomeResolver) and installed.same_as(ours):
            return
        ours.install_on_reactor()
        log.info("hostcrawl: DNS through OutcomeResolver (timeout %g s, asked twice)", ours.timeout)

    def log_settings(self) -> None:
        """One line: every hostcrawl setting of this crawl and where its value came from."""
        settings = self.crawler.settings
        addon = SETTINGS_PRIORITIES["addon"]
        shown = []
        for declared, _value, source in config.effective(os.environ):
            if config.CRAWL not in declared.readers or declared.group != "crawl":
                continue
            if (settings.getpriority(declared.name) or 0) > addon:
                source = "settings"
            value = declared.shown(typed(settings, declared))
            shown.append(f"{declared.name}={value} ({source})")
        log.info("hostcrawl settings: %s", ", ".join(shown))
