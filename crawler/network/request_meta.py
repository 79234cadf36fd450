"""What hostcrawl's requests carry: the hostname they go to, and the meta keys its parts
agree on (the spider, the downloader middlewares, the pipeline)."""

from __future__ import annotations

import functools

from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

from crawler.core.hostnames import normalize_or_none

# A request with this meta key set settles its host through an item, whose final
# outcome the pipeline feeds to the trap window (so a fallback's first try does not).
OUTCOME_BY_ITEM = "hostcrawl_outcome_by_item"
# The URL whose failure a request failed with, when it is not the request's own (its
# host's robots.txt, carried to the page).
FAILED_AT = "hostcrawl_failed_at"
# A host's robots.txt fetch: its server error is not retried (RFC 9309 2.3.1.4 says what
# it means: complete disallow until the host is tried again).
ROBOTS_FETCH = "hostcrawl_robots_fetch"


def request_hostname(request: Request) -> str | None:
    """The normalized hostname a request goes to (None for a URL with no host)."""
    return _netloc_hostname(urlparse_cached(request).netloc)


@functools.lru_cache(maxsize=4096)
def _netloc_hostname(netloc: str) -> str | None:
    # Asked several times per request (scheduling, download, outcome): once per host.
    return normalize_or_none(netloc) if netloc else None
