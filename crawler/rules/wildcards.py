"""Wildcard zones seen from the crawl: flag them, never block them.

A root whose random name `hc-<random>.<root>` resolves answers for any name: a
live wildcard farm can link fresh subdomains forever, and the trap rule
(docs/design.md, rule 5) cannot see it because its pages are alive. The DNS audit
probes roots with failures; the crawl probes a root once this worker has
saved WILDCARD_AFTER new subdomains of it. The probe is stored
(`trap_windows.save_wildcard_probe`) and the Roots page flags the zone; an operator
decides whether to put it on no_follow. Per-root limits keep a farm from
taking over the crawl meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import Counter
from collections.abc import Iterable

from scrapy import signals
from scrapy.utils.defer import deferred_to_future

from crawler.core.links import FoundName
from crawler.core.outcomes import DNS_ALIVE, DNS_ERROR
from crawler.db.rules import trap_windows
from crawler.db.server.retry import in_thread_until_up

log = logging.getLogger(__name__)

# Well under a trap window (50): a farm is flagged before it could fill one, and a
# site with a handful of subdomains (www, mail, blog, shop…) is never probed.
WILDCARD_AFTER = 20


def probe_name(domain: str) -> str:
    """The random name under `domain` that only a wildcard zone resolves (as the audit's)."""
    return f"hc-{secrets.token_hex(6)}.{domain}"


async def probe_outcome(resolver, name: str) -> str:
    """The outcome of resolving `name`: our resolver's kind, or alive/error from any other."""
    if hasattr(resolver, "resolve"):
        return (await deferred_to_future(resolver.resolve(name))).outcome
    try:
        await deferred_to_future(resolver.getHostByName(name))
    except Exception:
        return DNS_ERROR
    return DNS_ALIVE


class WildcardWatch:
    """Counts new subdomains per root in this worker; probes a root once past the threshold."""

    def __init__(self, crawler, engine, threshold: int = WILDCARD_AFTER) -> None:
        self.crawler = crawler
        self.engine = engine
        self.threshold = threshold
        self._new: Counter[str] = Counter()
        self._probed: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        crawler.signals.connect(self.close, signal=signals.spider_closed)

    def saw(self, new: Iterable[FoundName]) -> None:
        """Names a page added to the database: probe any root that just got many."""
        for name in new:
            domain = name.root
            if domain == name.hostname or domain in self._probed:
                continue
            self._new[domain] += 1
            if self._new[domain] >= self.threshold:
                self._probed.add(domain)
                task = asyncio.ensure_future(self._probe(domain))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _probe(self, domain: str) -> None:
        """Probe `domain` unless some worker (or the audit) already did; store the outcome."""
        engine = self.engine
        if await in_thread_until_up(
            "reading a wildcard probe", trap_windows.wildcard_probe, engine, domain
        ):
            return
        from twisted.internet import reactor

        name = probe_name(domain)
        outcome = await probe_outcome(reactor.resolver, name)
        save = trap_windows.save_wildcard_probe
        await in_thread_until_up("saving a wildcard probe", save, engine, domain, name, outcome)
        stats = self.crawler.stats
        stats.inc_value("hostcrawl/wildcards/probed")
        if outcome == DNS_ALIVE:
            stats.inc_value("hostcrawl/wildcards/found")
            log.info("wildcard zone: %s (the random name %s resolves)", domain, name)

    async def close(self, spider) -> None:
        """Let the probes under way land."""
        await asyncio.gather(*self._tasks, return_exceptions=True)
