"""Deny entries (`/no_follow`, `/blocked`): lists, evidence and previews."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    Select,
    Text,
    any_,
    bindparam,
    select,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY

from crawler.core.denylist import BLOCKED, RULES
from crawler.db.crawl.dropped_links import links_dropped
from crawler.db.models import Host
from crawler.db.operators.host_filter import PREFIX, REVERSED_NAME, search_condition
from crawler.db.server.sql_pieces import names_param, suffix_range
from webpanel.queries.paging import DEFAULT_LIMIT, SAMPLE_NAMES, Order, Page, paginate

# -- deny entries (/no_follow, /blocked) ------------------------------------------------

ENTRY_ORDER = Order((Host.hostname,), ("str",))

# A page of entries is read in three statements, each one Citus runs as it is: the
# entries (queue, every shard), then for the page's names the hosts each took out (by
# ix_hosts_denied_by, every shard: an entry above a root took hosts of other shards) and
# the change that added each (change_log, a table of the coordinator's own: Citus joins
# no distributed table to it). On one server, the same three.
TOOK_OUT = text(
    "SELECT denied_by, count(*) FROM hosts WHERE denied_by = ANY(:names) GROUP BY denied_by"
).bindparams(*names_param("names"))


@dataclass(frozen=True)
class EntryLine:
    """One deny entry as its list shows it."""

    hostname: str
    note: str | None
    blocked_reason: str | None
    blocked_at: datetime | None
    took_out: int
    added_at: datetime | None
    added_by: str | None
    links_dropped: int = 0  # links of crawled pages it dropped (crawler.db.crawl.dropped_links)


def entry_statement(rule: str, q: str = "", match: str = PREFIX) -> Select:
    """Deny entries of one rule (their own columns; entry_lines() adds the rest)."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}")
    stmt = select(Host.hostname, Host.note, Host.blocked_reason, Host.blocked_at).where(
        Host.status_reason == rule
    )
    searched = search_condition(Host.hostname, REVERSED_NAME, q, match)
    return stmt if searched is None else stmt.where(searched)


# Per name of :names, the latest change that added it as an entry (its time and actor): a
# change-log row of its own, or a batch whose names hold it (by ix_change_log_items_names).
ADDED_BY = text(
    """
    SELECT n.name, a.at, a.actor
      FROM unnest(:names) AS n(name)
      CROSS JOIN LATERAL (
          SELECT b.at, b.actor FROM (
              SELECT c.id, c.at, c.actor FROM change_log c
               WHERE c.hostname = n.name AND c.action = :action
              UNION ALL
              SELECT c.id, c.at, c.actor FROM change_log c
                JOIN change_log_items i ON i.change_id = c.id
               WHERE i.names @> ARRAY[n.name]::text[] AND c.action = :action) AS b
           ORDER BY b.id DESC LIMIT 1) AS a
    """
).bindparams(*names_param("names"))


def entry_lines(conn, rule: str, rows) -> list[EntryLine]:
    """The entries' rows with how many hosts each took out, how many links it dropped,
    and who added it when."""
    names = [row.hostname for row in rows]
    if not names:
        return []
    took = dict(conn.execute(TOOK_OUT, {"names": names}).all())
    dropped = links_dropped(conn, names)
    action = "block" if rule == BLOCKED else "no_follow.add"
    found = conn.execute(ADDED_BY, {"names": names, "action": action})
    added = {name: (at, actor) for name, at, actor in found}
    return [
        EntryLine(
            row.hostname,
            row.note,
            row.blocked_reason,
            row.blocked_at,
            took.get(row.hostname, 0),
            *added.get(row.hostname, (None, None)),
            dropped.get(row.hostname, 0),
        )
        for row in rows
    ]


def entry_page(
    conn,
    rule: str,
    q: str = "",
    match: str = PREFIX,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """One keyset page of a rule's entries, by hostname, each an EntryLine."""
    page = paginate(conn, entry_statement(rule, q, match), ENTRY_ORDER, after, before, limit)
    page.rows = entry_lines(conn, rule, page.rows)
    return page


def entry(conn, rule: str, hostname: str) -> EntryLine | None:
    """One deny entry (as on its list), or None."""
    row = conn.execute(entry_statement(rule).where(Host.hostname == hostname)).first()
    return entry_lines(conn, rule, [row])[0] if row else None


def entry_rules(conn, names: Sequence[str]) -> dict[str, str]:
    """{name: its rule} for those of `names` that are deny entries now."""
    if not names:
        return {}
    rows = conn.execute(
        select(Host.hostname, Host.status_reason).where(
            Host.hostname == any_(bindparam("names", list(names), type_=ARRAY(Text))),
            Host.status_reason.is_not(None),
        )
    )
    return dict(rows.all())


def entries_for_export(conn, rule: str):
    """Every entry of a rule, by hostname (for CSV)."""
    return conn.execute(
        select(Host.hostname, Host.note, Host.blocked_reason, Host.blocked_at)
        .where(Host.status_reason == rule)
        .order_by(Host.hostname)
    ).all()


@dataclass
class Evidence:
    """A root's trap window, summed up: outcome counts, time span, sample names."""

    counts: list[tuple[str, int]]
    samples: list[tuple[str, str]]  # (hostname, outcome), newest first
    first: datetime | None
    last: datetime | None

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts)


def window_evidence(conn, roots: Sequence[str]) -> dict[str, Evidence]:
    """The trap windows of many roots at once (the evidence /blocked shows)."""
    if not roots:
        return {}
    roots_param = {"roots": list(roots)}
    counts = conn.execute(
        text(
            "SELECT root, outcome, count(*) AS n, min(seen_at) AS first, max(seen_at) AS last"
            " FROM trap_window WHERE root = ANY(:roots) GROUP BY root, outcome"
            " ORDER BY root, n DESC, outcome"
        ).bindparams(bindparam("roots", type_=ARRAY(Text))),
        roots_param,
    ).all()
    samples = conn.execute(
        text(
            "SELECT root, hostname, outcome FROM ("
            "  SELECT root, hostname, outcome, seen_at,"
            "         row_number() OVER (PARTITION BY root ORDER BY seen_at DESC, hostname) AS i"
            "    FROM trap_window WHERE root = ANY(:roots)) AS w"
            " WHERE i <= :k ORDER BY root, i"
        ).bindparams(bindparam("roots", type_=ARRAY(Text))),
        {**roots_param, "k": SAMPLE_NAMES},
    ).all()
    found: dict[str, Evidence] = {}
    for row in counts:
        ev = found.setdefault(row.root, Evidence([], [], None, None))
        ev.counts.append((row.outcome, row.n))
        ev.first = row.first if ev.first is None else min(ev.first, row.first)
        ev.last = row.last if ev.last is None else max(ev.last, row.last)
    for row in samples:
        found[row.root].samples.append((row.hostname, row.outcome))
    return found


@dataclass(frozen=True)
class Exclusion:
    """What a new deny entry would take: hosts still shown, and of them those queued."""

    hosts: int
    queued: int


def exclusion_preview(conn, names: Sequence[str]) -> tuple[dict[str, Exclusion], Exclusion]:
    """Per candidate entry and for all of them together: the hosts at or under it
    that no entry has taken out yet, and how many of those are queued for crawling."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}, Exclusion(0, 0)
    bounds = [suffix_range(n) for n in names]
    params = {"names": names, "los": [b[0] for b in bounds], "his": [b[1] for b in bounds]}
    under = """
        FROM unnest(:names, :los, :his) AS e(name, lo, hi)
        CROSS JOIN LATERAL (
            SELECT q.hostname, q.next_claim_at FROM hosts q
             WHERE (q.hostname = e.name
                    OR (reverse(q.hostname::text) >= e.lo AND reverse(q.hostname::text) < e.hi))
               AND q.status_reason IS NULL AND q.denied_by IS NULL) AS q
    """
    arrays = [bindparam(p, type_=ARRAY(Text)) for p in ("names", "los", "his")]
    rows = conn.execute(
        text(
            "SELECT e.name, count(*) AS hosts, count(q.next_claim_at) AS queued"
            f" {under} GROUP BY e.name"
        ).bindparams(*arrays),
        params,
    ).all()
    total = conn.execute(
        text(
            "SELECT count(DISTINCT q.hostname) AS hosts,"
            f" count(DISTINCT q.hostname) FILTER (WHERE q.next_claim_at IS NOT NULL) AS queued"
            f" {under}"
        ).bindparams(*arrays),
        params,
    ).one()
    each = {n: Exclusion(0, 0) for n in names}
    each.update({r.name: Exclusion(r.hosts, r.queued) for r in rows})
    return each, Exclusion(total.hosts, total.queued)
