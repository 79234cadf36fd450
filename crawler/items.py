"""The item the hosts spider yields: one per host it settles (crawled, failed or denied).

Items flow to the pipelines (crawler.pipelines writes them to Postgres) and
to any feed (`scrapy crawl hosts -o found.jsonl`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crawler.core.links import FilteredLinks


@dataclass
class HostItem:
    """What one host's front page came to, and the hostnames its links lead to."""

    hostname: str
    outcome: str
    http_status: int | None = None
    final_url: str | None = None
    title: str | None = None
    scheme: str | None = None  # the scheme that answered: https, or http by the fallback
    # The page's links as the link filter left them (crawler.core.links): the names worth
    # saving, each with its root, place and source group; how many links were read; and
    # the ones dropped by reason (also counted in the stats hostcrawl/links/dropped/) and
    # by deny entry. The pipeline writes it as it is.
    links: FilteredLinks = field(default_factory=FilteredLinks)
    # Why reading the fetch stopped before its end (crawler.core.budget), or None. Links
    # dropped over the names' caps are links.dropped["over_cap"] (crawler.core.namecaps).
    extract_stopped: str | None = None
    # The deny entry that refused the request (outcome IGNORED).
    denied_by: str | None = None
