"""What the crawl side does with the database, in one call, for tests of the rules.

The crawler filters links with the core and blocks proven traps through its
TrapGuard (with its self-check); these do the same synchronously, with no
self-check, so a test can state a rule in a few lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import timedelta

from crawler.core import config
from crawler.core.denylist import DenyList
from crawler.core.hostnames import root
from crawler.core.links import FilteredLinks, filter_links
from crawler.db.crawl import queue
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries, trap_windows

DEFAULT_WINDOW = config.setting("TRAP_WINDOW").default


def finish(
    engine,
    hostname: str,
    result: CrawlResult,
    hrefs: Iterable[str] = (),
    recrawl_after: timedelta = timedelta(days=7),
) -> FilteredLinks:
    """Filter a page's links against the deny entries now, then finish the host."""
    links = filter_links(hrefs, hostname, DenyList(deny_entries.deny_entries(engine)))
    links = links.without(hostname)
    queue.finish_many(engine, [Crawled(hostname, result, links, recrawl_after)])
    return links


def record_outcomes(
    engine, outcomes: Sequence[tuple[str, str]], size: int = DEFAULT_WINDOW, actor="test"
) -> dict[str, str]:
    """Feed the windows and block every root they prove a trap; {root: reason} blocked."""
    blocked = {}
    for domain, reason in trap_windows.record_outcomes(engine, outcomes, size).items():
        note = trap_windows.wildcard_note(engine, domain)
        if deny_entries.upsert_blocked(engine, domain, reason + note, actor):
            blocked[domain] = reason
    return blocked


def record_outcome(
    engine, hostname: str, outcome: str, size: int = DEFAULT_WINDOW, actor="test"
) -> str | None:
    """record_outcomes() for one; the reason if it blocked the hostname's root."""
    return record_outcomes(engine, [(hostname, outcome)], size, actor).get(root(hostname))
