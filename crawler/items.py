"""The item the hosts spider yields: one per host it settles (crawled, failed or denied).

Items flow to the pipelines (crawler.pipelines writes them to Postgres) and
to any feed (`scrapy crawl hosts -o found.jsonl`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class HostItem:
    """What one host's front page came to, and the hostnames its links lead to."""

    hostname: str
    outcome: str
    http_status: int | None = None
    final_url: str | None = None
    title: str | None = None
    scheme: str | None = None  # the scheme that answered: https, or http by the fallback
    # Hostnames the page links to, after the link filter (normalized, allowed).
    hostnames: list[str] = field(default_factory=list)
    links_found: int = 0
    links_filtered: int = 0
    # links_filtered by reason: no_hostname, single_label, unknown_tld, special_use,
    # over_cap, private_address, or the deny rule (no_follow, blocked); also counted in the stats
    # hostcrawl/links/dropped/.
    links_dropped: dict[str, int] = field(default_factory=dict)
    # The deny rules' share of links_dropped by entry: {entry name: links it dropped}.
    links_denied_by: dict[str, int] = field(default_factory=dict)
    # Why reading the fetch stopped before its end (crawler.core.budget), or None. Links
    # dropped over the names' caps are links_dropped["over_cap"] (crawler.core.namecaps).
    extract_stopped: str | None = None
    # Per hostname above, the place it was first seen in (`script src`, `certificate`...).
    found_via: dict[str, str] = field(default_factory=dict)
    # Set by the pipeline: the hostnames this page added to the queue, and for each its
    # source group and place: [{"hostname", "source", "place"}].
    new_hostnames: list[str] = field(default_factory=list)
    new_sources: list[dict[str, str]] = field(default_factory=list)
    # The deny entry that refused the request (outcome IGNORED).
    denied_by: str | None = None
