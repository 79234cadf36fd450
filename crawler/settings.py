"""Scrapy settings for the hosts spider; every one can be overridden with -s or the environment."""

from __future__ import annotations

import os

BOT_NAME = "hostcrawl"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
COMMANDS_MODULE = "crawler.commands"

USER_AGENT = "hostcrawl/0.1 (+https://github.com/hostcrawl; host discovery)"

# --- the crawl's own settings (DESIGN.md 'Running it') ---
HOST_URL_TEMPLATE = os.environ.get("HOST_URL_TEMPLATE", "https://{hostname}/")
# Tried once when https fails below HTTP (TCP, TLS); empty = off.
HTTP_FALLBACK_TEMPLATE = os.environ.get("HTTP_FALLBACK_TEMPLATE", "http://{hostname}/")
DNS_NAMESERVERS = os.environ.get("DNS_NAMESERVERS", "")
TRAP_WINDOW = int(os.environ.get("TRAP_WINDOW", 50))
CLAIM_BATCH = int(os.environ.get("CLAIM_BATCH", 32))
CLAIM_LEASE = int(os.environ.get("CLAIM_LEASE", 600))  # seconds
# Per root (registered domain), across all workers: hosts claimed and unfinished at once,
# and hosts claimed per rolling hour (issue 12).
ROOT_CONCURRENCY = int(os.environ.get("ROOT_CONCURRENCY", 2))
ROOT_BUDGET = int(os.environ.get("ROOT_BUDGET", 3600))
CLAIM_POLL_INTERVAL = float(os.environ.get("CLAIM_POLL_INTERVAL", 2.0))
RECRAWL_AFTER = int(os.environ.get("RECRAWL_AFTER", 7 * 86400))  # seconds
CLOSE_WHEN_DRAINED = os.environ.get("CLOSE_WHEN_DRAINED", "0") == "1"
DENYLIST_RELOAD = 60.0  # seconds between full reloads besides LISTEN/NOTIFY
METRICS_PORT = int(os.environ.get("METRICS_PORT", 0))  # Prometheus /metrics; 0 = off
METRICS_ADDRESS = os.environ.get("METRICS_ADDRESS", "127.0.0.1")  # 0.0.0.0 in a container

# --- the add-on installs the middlewares, the resolver, the pipeline and the
# production defaults (remote control and telnet off, cookies off, robots.txt
# obeyed, a 2 MiB DOWNLOAD_MAXSIZE): crawler/addon.py ---
ADDONS = {"crawler.addon.HostcrawlAddon": 0}
TWISTED_DNS_RESOLVER = "crawler.resolver.OutcomeResolver"  # read by CrawlerProcess itself
DNS_TIMEOUT = 5.0
DNSCACHE_SIZE = 100_000
DOWNLOAD_TIMEOUT = 20
REDIRECT_MAX_TIMES = 5
RETRY_TIMES = 1
# Politeness: one connection per host at a time; many hosts in parallel.
CONCURRENT_REQUESTS = 64
# A Scrapy download slot is one root (the spider's meta["download_slot"]); the claim
# already holds a root to ROOT_CONCURRENCY hosts across all workers, and a host has one
# request at a time, so a worker may fetch all of a root's claimed hosts at once.
CONCURRENT_REQUESTS_PER_DOMAIN = ROOT_CONCURRENCY
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = False
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO")
# The claim is the duplicate filter: a host is claimed once per lease.
DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"
# A callback's output is one HostItem (or one fallback request): Scrapy starts up to
# CONCURRENT_ITEMS tasks per response to process it (default 100; bench/crawl.py
# --profile counted 218,000 create_task calls for 2,000 pages). Items of different
# responses still flow through the pipeline concurrently.
CONCURRENT_ITEMS = 2

# --- the DNS/TLS audit (`scrapy audit`) ---
AUDIT_CONCURRENCY = int(os.environ.get("AUDIT_CONCURRENCY", 200))
AUDIT_TLS = os.environ.get("AUDIT_TLS", "0") == "1"
AUDIT_TLS_PORT = 443
AUDIT_TLS_TIMEOUT = 5.0
AUDIT_BACKOFF_BASE = 3600  # seconds; a host dead k times in a row waits base * 2^k
AUDIT_BACKOFF_MAX = 30 * 86400  # seconds
AUDIT_PROGRESS_EVERY = 5.0  # seconds between progress lines
