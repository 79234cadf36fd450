"""The rows of the Roots page (`/roots`, `GET /api/roots`) and of a root's own page.

Every figure is read off the `roots` table, which every writer keeps in its own
transaction (crawler.db.crawl.rollups): a page costs one index walk over roots plus a few lookups
per row shown, never a GROUP BY over hosts, so it stays fast at a million hosts.
Their words and JSON are the panel's (webpanel.roots).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, Text, and_, cast, exists, func, select, text
from sqlalchemy.engine import Row

from crawler.core.hostnames import normalize, parents
from crawler.core.outcomes import ALIVE
from crawler.core.traps import Observation
from crawler.db.models import Host, RootRow, WildcardProbe
from crawler.db.operators.host_filter import PREFIX, REVERSED_NAME, search_condition
from crawler.db.server.sql_pieces import names_param, suffix_range
from webpanel.queries.paging import DEFAULT_LIMIT, Order, Page, paginate

# Due hosts are counted up to this many per root shown (the panel says "1,000+").
DUE_CAP = 1000

# Columns, not the ORM entity: the same rows from a Connection or the panel's Session.
ROOT_COLUMNS = tuple(RootRow.__table__.c)
ROOTS_REVERSED = func.reverse(cast(RootRow.root, Text))

ROOT_SORTS: dict[str, Order] = {
    "name": Order((RootRow.root,), ("str",)),
    "hosts": Order((RootRow.hosts, RootRow.root), ("int", "str"), descending=True),
    "near_block": Order((RootRow.window_failed, RootRow.root), ("int", "str"), descending=True),
    "failed": Order((RootRow.failed, RootRow.root), ("int", "str"), descending=True),
}

# Per root shown: due hosts (capped), budget use this hour, its wildcard probe, and its
# entry-only rows: a deny entry's own row for a name never seen (never routed, crawled
# or audited: crawler.db.rules.deny_entries forgets such a row with its entry), which roots.hosts
# counts but is no host. A root has few entries (ix_hosts_hidden_root). Every lookup is
# by root, from the roots row: on a Citus cluster, within the root's shard.
ROOT_EXTRAS = text(
    f"""
    SELECT r.root,
           (SELECT count(*) FROM (SELECT 1 FROM hosts q
                                   WHERE q.root = r.root AND q.status_reason IS NULL
                                     AND q.denied_by IS NULL AND q.next_claim_at <= now()
                                   LIMIT {DUE_CAP}) AS d) AS due,
           (SELECT coalesce(sum(c.claimed), 0) FROM root_claims c
             WHERE c.root = r.root AND c.minute > now() - interval '1 hour') AS claimed_hour,
           (SELECT count(*) FROM hosts h
             WHERE h.root = r.root AND h.status_reason IS NOT NULL AND h.next_claim_at IS NULL
               AND h.last_crawled_at IS NULL AND h.audited_at IS NULL
               AND h.crawl_count = 0) AS entry_only,
           CASE WHEN r.held_until > now() THEN r.held_until END AS held_until,
           w.probe, w.outcome AS probe_outcome, w.checked_at AS probed_at
      FROM roots r
      LEFT JOIN wildcard_probes w ON w.root = r.root
     WHERE r.root = ANY(:roots)
    """
).bindparams(*names_param("roots"))
# The deny entries among the roots and the names above them (a forced bare suffix lives
# in another shard than the roots under it: one query over the entries, by name).
ENTRIES_AMONG = text(
    "SELECT hostname, status_reason FROM hosts"
    " WHERE hostname = ANY(:names) AND status_reason IS NOT NULL"
).bindparams(*names_param("names"))


@dataclass(frozen=True)
class RootFilter:
    """What /roots shows: a search, wildcard zones only, and a sort."""

    q: str = ""
    match: str = PREFIX
    wildcards: bool = False
    sort: str = "hosts"


@dataclass
class RootLine:
    """One root's row: its counts, trap window, budget use, wildcard probe and entry."""

    root: str
    hosts: int  # hosts that exist: roots.hosts less the entry-only rows
    due: int
    crawled_ok: int
    failed: int
    window_size: int
    window_failed: int
    claimed_hour: int
    held_until: datetime | None
    wildcard: bool
    probe: str | None
    probe_outcome: str | None
    entry: str | None
    entry_rule: str | None

    @property
    def due_capped(self) -> bool:
        """More hosts are due than were counted (DUE_CAP)."""
        return self.due >= DUE_CAP


def _roots(flt: RootFilter):
    stmt = select(*ROOT_COLUMNS)
    searched = search_condition(RootRow.root, ROOTS_REVERSED, flt.q, flt.match)
    if searched is not None:
        stmt = stmt.where(searched)
    if flt.wildcards:
        alive = and_(WildcardProbe.root == RootRow.root, WildcardProbe.outcome.in_(sorted(ALIVE)))
        stmt = stmt.where(exists().where(alive))
    return stmt


def root_page(
    conn,
    flt: RootFilter,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """One keyset page of roots, each a RootLine. HostnameError for a bad search."""
    page = paginate(conn, _roots(flt), ROOT_SORTS[flt.sort], after, before, limit)
    page.rows = lines(conn, page.rows)
    return page


def lines(conn, rows: list[Row]) -> list[RootLine]:
    """The page's roots rows with their per-root extras."""
    if not rows:
        return []
    roots = [r.root for r in rows]
    extras = {e.root: e for e in conn.execute(ROOT_EXTRAS, {"roots": roots})}
    above = {name for r in roots for name in parents(r)}
    entries = dict(conn.execute(ENTRIES_AMONG, {"names": sorted(above)}).all())
    result = []
    for row in rows:
        e = extras[row.root]
        # The nearest entry over the root (the root itself first).
        entry = next((name for name in parents(row.root) if name in entries), None)
        result.append(
            RootLine(
                root=row.root,
                hosts=row.hosts - e.entry_only,
                due=e.due,
                crawled_ok=row.crawled_ok,
                failed=row.failed,
                window_size=row.window_size,
                window_failed=row.window_failed,
                claimed_hour=int(e.claimed_hour),
                held_until=e.held_until,
                wildcard=e.probe_outcome in ALIVE,
                probe=e.probe,
                probe_outcome=e.probe_outcome,
                entry=entry,
                entry_rule=entries.get(entry),
            )
        )
    return result


def root_line(conn, domain: str) -> RootLine | None:
    """One root's line, or None when no host of it is known."""
    row = conn.execute(select(*ROOT_COLUMNS).where(RootRow.root == domain)).first()
    return lines(conn, [row])[0] if row else None


SUBDOMAIN_ORDER = Order((REVERSED_NAME,), ("str",))


def subdomain_page(
    conn,
    domain: str,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """The root's hosts, grouped by name tree (reversed-name order), one keyset page."""
    return paginate(conn, subdomain_statement(domain), SUBDOMAIN_ORDER, after, before, limit)


def subdomain_statement(domain: str) -> Select:
    """The root's hosts, walked over the ix_hosts_reversed range, in order.

    No index holds a root's hosts all together (its two partial indexes by root split
    them by routing), so the root test is a filter of the walk; on a cluster it routes
    the query to the root's shard.
    """
    domain = normalize(domain)
    # [reverse(root), the end of the names below it): the root itself and every name
    # under it, as one range of ix_hosts_reversed walked in order (no OR, which would
    # fetch and sort them all). Names that merely end in "-root" fall in it too; the
    # root test drops them.
    _, hi = suffix_range(domain)
    reversed_name = REVERSED_NAME
    return select(
        Host.hostname, Host.outcome, Host.http_status, Host.last_crawled_at, Host.discovered_at
    ).where(
        reversed_name >= domain[::-1],
        reversed_name < hi,
        Host.root == domain,
    )


def window(conn, domain: str, size: int) -> list[Observation]:
    """The root's trap window, newest first."""
    rows = conn.execute(
        text(
            "SELECT hostname, outcome, seen_at FROM trap_window WHERE root = :root"
            " ORDER BY seen_at DESC LIMIT :size"
        ),
        {"root": domain, "size": size},
    )
    return [Observation(*r) for r in rows]
