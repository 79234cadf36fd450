"""The host list (`/`) and a host's own page; which hosts a filter picks is
crawler.db.operators.host_filter's, shared with the export."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

from sqlalchemy import Select, func, or_, select

from crawler.db.deployments import Deployment, deployment_of
from crawler.db.models import Host
from crawler.db.operators.host_filter import HostFilter
from webpanel.queries.paging import DEFAULT_LIMIT, Order, Page, keyset, paginate

# -- hosts (/) ----------------------------------------------------------------------

# The list walks hosts that no entry took out of routing (SHOWN: the ix_hosts_shown
# partial index, in hostname order), so a page never wades through thousands of hidden
# hosts; each row then passes the deployment's exact deny test (HostFilter.conditions).
HOST_SORTS: dict[str, Order] = {
    "name": Order((Host.hostname,), ("str",)),
    "newest": Order((Host.discovered_at, Host.hostname), ("datetime", "str"), descending=True),
    "oldest": Order((Host.discovered_at, Host.hostname), ("datetime", "str")),
}


HOST_COLUMNS = (
    Host.hostname,
    Host.root,
    Host.outcome,
    Host.http_status,
    Host.title,
    Host.discovered_at,
    Host.last_crawled_at,
)


def _hosts(flt: HostFilter, deployment: Deployment) -> Select:
    """The list's query: by name, a walk of ix_hosts_shown in order; by date, of
    ix_hosts_shown_by_date; otherwise the planner picks (the outcome or a root's index may
    lead). The facts are in the row the walk reads (one row a host, 0030)."""
    return select(*HOST_COLUMNS).where(*flt.conditions(deployment))


def host_statement(
    flt: HostFilter,
    deployment: Deployment,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Select:
    """The SQL of one page of `/` on `deployment` (`deployment_of` the connection), for
    EXPLAIN in the benchmarks."""
    return keyset(_hosts(flt, deployment), HOST_SORTS[flt.sort], after, before, limit)[0]


def host_page(
    conn,
    flt: HostFilter,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Discovered hosts, never one under a deny entry, one keyset page."""
    stmt = _hosts(flt, deployment_of(conn))
    return paginate(conn, stmt, HOST_SORTS[flt.sort], after, before, limit)


# -- what the deny entries hide of a list (its empty page says so) -------------------------

HIDDEN_CAP = 10_000  # hidden hosts counted for one empty list, at most ("10,000+")
HIDDEN_EXAMPLES = 10


@dataclass(frozen=True)
class HiddenMatches:
    """Hosts a list's search and filters match that deny entries hide: how many (at most
    HIDDEN_CAP), per entry (its name, its hosts, most first) and a few of them."""

    hosts: int = 0
    capped: bool = False
    entries: list[tuple[str, int]] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)


def hidden_matches(conn, flt: HostFilter) -> HiddenMatches:
    """The hosts `flt` matches among the hidden rows: the deny entries themselves and the
    rows an entry took out of routing (hosts.denied_by names it). At most HIDDEN_CAP + 1
    rows are read, whatever the size of the lists."""
    matched = replace(flt, include_denied=True).conditions(deployment_of(conn))
    entry = func.coalesce(Host.denied_by, Host.hostname).label("entry")
    hidden = or_(Host.status_reason.is_not(None), Host.denied_by.is_not(None))
    rows = conn.execute(
        select(Host.hostname, entry).where(hidden, *matched).limit(HIDDEN_CAP + 1)
    ).all()
    rows = rows[:HIDDEN_CAP]
    per_entry = Counter(row.entry for row in rows)
    return HiddenMatches(
        hosts=len(rows),
        capped=len(rows) == HIDDEN_CAP,
        entries=sorted(per_entry.items(), key=lambda e: (-e[1], e[0])),
        examples=sorted(row.hostname for row in rows)[:HIDDEN_EXAMPLES],
    )


def host_detail(conn, hostname: str):
    """One host's crawl facts and its routing (next claim, deny state), or None."""
    stmt = select(
        *HOST_COLUMNS,
        Host.discovered_from,
        Host.found_source,
        Host.found_via,
        Host.final_url,
        Host.links_found,
        Host.links_saved,
        Host.links_filtered,
        Host.links_over_cap,
        Host.extract_stopped,
        Host.name_flood,
        Host.fail_streak,
        Host.crawl_count,
        Host.audited_at,
        Host.audit_outcome,
        Host.held_tries,
        Host.held_at,
        Host.held_outcome,
        Host.next_claim_at,
        Host.status_reason,
        Host.blocked_reason,
        Host.blocked_at,
        Host.note,
        Host.denied_by,
        Host.claimed_by,
        Host.claimed_at,
    ).where(Host.hostname == hostname)
    return conn.execute(stmt).first()
