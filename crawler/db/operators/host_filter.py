"""Which hosts a filter picks: the panel's host list and `hostcrawl hosts export` alike.

Both show the same hosts for the same filter (search, outcome, root, since), with the
same deny rule: never a host that is a deny entry or under one. A search is an index
range scan: a prefix of the hostname (the primary key, C collation) or a domain and
every name under it (the reverse(hostname) index, see sql_pieces.suffix_range()); the
panel's other lists search their own hostname columns with search_condition().
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Text, and_, cast, func, or_
from sqlalchemy.sql.elements import ColumnElement

from crawler.core.hostnames import normalize
from crawler.db.deployments import Deployment
from crawler.db.models import Host
from crawler.db.server.sql_pieces import suffix_range

PREFIX = "prefix"
DOMAIN = "domain"
MATCHES = (PREFIX, DOMAIN)
NEVER_CRAWLED = "none"

# The expression of the ix_hosts_reversed index: reverse(hostname::text).
REVERSED_NAME = func.reverse(cast(Host.hostname, Text))

# Hosts that no entry took out of routing (the ix_hosts_shown partial index).
SHOWN = and_(Host.status_reason.is_(None), Host.denied_by.is_(None))
# Its complement: an entry's own row, or one an entry took (ix_hosts_hidden_root).
HIDDEN = or_(Host.status_reason.is_not(None), Host.denied_by.is_not(None))


@dataclass(frozen=True)
class HostFilter:
    """What the main list shows, and the export streams: search, outcome, root and sort."""

    q: str = ""
    match: str = PREFIX
    outcome: str = ""  # "" any, "none" never crawled, else an outcome type
    root: str = ""
    sort: str = "name"
    since: datetime | None = None  # discovered at or after (the export's --since)
    include_denied: bool = False  # the export's --include-denied: names under entries too

    def conditions(self, deployment: Deployment) -> list[ColumnElement[bool]]:
        """The SQL conditions on hosts, with the deployment's deny test; HostnameError for
        a search or root that is no hostname."""
        found = [] if self.include_denied else [SHOWN, deployment.visible(Host.hostname, Host.root)]
        searched = search_condition(Host.hostname, REVERSED_NAME, self.q, self.match)
        if searched is not None:
            found.append(searched)
        if self.outcome == NEVER_CRAWLED:
            found.append(Host.outcome.is_(None))
        elif self.outcome:
            found.append(Host.outcome == self.outcome)
        if self.root.strip():
            found.append(of_root(normalize(self.root), self.include_denied))
        if self.since is not None:
            found.append(Host.discovered_at >= self.since)
        return found


def of_root(name: str, include_denied: bool) -> ColumnElement[bool]:
    """The hosts of the root `name`: the shown ones by ix_hosts_root_due; with the
    hidden ones, each half by its own partial index (the other, ix_hosts_hidden_root), as
    no index holds a root's rows all together (0028)."""
    if not include_denied:
        return Host.root == name
    return or_(and_(Host.root == name, SHOWN), and_(Host.root == name, HIDDEN))


def prefix_bounds(prefix: str) -> tuple[str, str]:
    """[lo, hi) of every string starting with `prefix` in byte order."""
    return prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)


def search_condition(
    column: ColumnElement, reversed_column: ColumnElement, q: str, match: str
) -> ColumnElement[bool] | None:
    """The search of a list: a hostname prefix, or a domain and every name under it.

    Raises HostnameError for a domain that is no hostname.
    """
    q = q.strip()
    if not q:
        return None
    if match == DOMAIN:
        name = normalize(q.lstrip(".") if q.startswith(".") and len(q) > 1 else q)
        lo, hi = suffix_range(name)
        return or_(column == name, and_(reversed_column >= lo, reversed_column < hi))
    prefix = q.lower()
    if not prefix.isascii():
        prefix = normalize(prefix)
    lo, hi = prefix_bounds(prefix)
    return and_(column >= lo, column < hi)
