"""Scrapy settings for the hosts spider; every one can be overridden with -s or the environment."""

from __future__ import annotations

import os

from crawler.core import config

BOT_NAME = "hostcrawl"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
COMMANDS_MODULE = "crawler.commands"

USER_AGENT = "hostcrawl/0.1 (+https://github.com/hostcrawl; host discovery)"

# hostcrawl's own settings (HOST_URL_TEMPLATE, TRAP_WINDOW, ROOT_CONCURRENCY…) are
# declared once in crawler/core/config.py; the add-on applies them, from the
# environment or their defaults, below any -s and below this module.
LOG_LEVEL = config.from_environment("LOG_LEVEL", os.environ)

# --- the add-on installs the middlewares, the resolver, the pipeline and the
# production defaults (remote control and telnet off, cookies off, robots.txt
# obeyed, a 2 MiB DOWNLOAD_MAXSIZE): crawler/addon.py ---
ADDONS = {"crawler.addon.HostcrawlAddon": 0}
TWISTED_DNS_RESOLVER = "crawler.network.resolver.OutcomeResolver"  # read by CrawlerProcess itself
DNSCACHE_SIZE = 100_000
# The whole download (DNS, connect, TLS, answer, body); connecting and the TLS handshake
# have CONNECT_TIMEOUT each (crawler/network/download.py, installed by the add-on).
DOWNLOAD_TIMEOUT = 20
REDIRECT_MAX_TIMES = 5
RETRY_TIMES = 1
# Politeness: one connection per host at a time; many hosts in parallel. The add-on
# derives CONCURRENT_REQUESTS_PER_DOMAIN (a download slot is a root) from ROOT_CONCURRENCY.
# Only where the crawl starts: crawler/extensions/in_flight.py sets the downloader's total at run
# time (two requests per host in flight, the hosts in flight up to MAX_IN_FLIGHT).
CONCURRENT_REQUESTS = 64
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = False
# The claim is the duplicate filter: a host is claimed once per lease.
DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"
# A callback's output is one HostItem (or one fallback request): Scrapy starts up to
# CONCURRENT_ITEMS tasks per response to process it (default 100; bench/crawl.py
# --profile counted 218,000 create_task calls for 2,000 pages). Items of different
# responses still flow through the pipeline concurrently.
CONCURRENT_ITEMS = 2
