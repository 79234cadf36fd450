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
    cast,
    func,
    select,
    text,
    true,
    union_all,
)
from sqlalchemy.dialects.postgresql import ARRAY, array

from crawler.core.denylist import BLOCKED, RULES
from crawler.db.hostsql import suffix_range
from crawler.db.models import ChangeLogEntry, ChangeLogItems, QueueRow
from crawler.db.pages.paging import (
    DEFAULT_LIMIT,
    ENTRY,
    PREFIX,
    QUEUE_REVERSED,
    SAMPLE_NAMES,
    Order,
    Page,
    paginate,
    search_condition,
)

# -- deny entries (/no_follow, /blocked) ------------------------------------------------

ENTRY_ORDER = Order((QueueRow.hostname,), ("str",))


def entry_statement(rule: str, q: str = "", match: str = PREFIX) -> Select:
    """Deny entries of one rule, each with how many hosts it took out of routing."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}")
    took = (
        select(func.count())
        .select_from(ENTRY)
        .where(ENTRY.c.denied_by == QueueRow.hostname)
        .scalar_subquery()
    )
    added = added_by(rule)
    stmt = (
        select(
            QueueRow.hostname,
            QueueRow.note,
            QueueRow.blocked_reason,
            QueueRow.blocked_at,
            took.label("took_out"),
            added.c.at.label("added_at"),
            added.c.actor.label("added_by"),
        )
        .outerjoin(added, true())
        .where(QueueRow.status_reason == rule)
    )
    searched = search_condition(QueueRow.hostname, QUEUE_REVERSED, q, match)
    return stmt if searched is None else stmt.where(searched)


def added_by(rule: str):
    """The latest change that added an entry (its time and actor): a change-log row of its
    own, or a batch whose names hold it (by ix_change_log_items_names)."""
    action = ChangeLogEntry.action == ("block" if rule == BLOCKED else "no_follow.add")
    own = (
        select(ChangeLogEntry.id, ChangeLogEntry.at, ChangeLogEntry.actor)
        .where(ChangeLogEntry.hostname == QueueRow.hostname, action)
        .correlate(QueueRow)
    )
    in_batch = (
        select(ChangeLogEntry.id, ChangeLogEntry.at, ChangeLogEntry.actor)
        .join(ChangeLogItems, ChangeLogItems.change_id == ChangeLogEntry.id)
        .where(ChangeLogItems.names.contains(cast(array([QueueRow.hostname]), ARRAY(Text))), action)
        .correlate(QueueRow)
    )
    both = union_all(own, in_batch).subquery()
    return select(both.c.at, both.c.actor).order_by(both.c.id.desc()).limit(1).lateral("added")


def entry_page(
    conn,
    rule: str,
    q: str = "",
    match: str = PREFIX,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """One keyset page of a rule's entries, by hostname."""
    return paginate(conn, entry_statement(rule, q, match), ENTRY_ORDER, after, before, limit)


def entry(conn, rule: str, hostname: str):
    """One deny entry (as on its list), or None."""
    return conn.execute(entry_statement(rule).where(QueueRow.hostname == hostname)).first()


def entry_rules(conn, names: Sequence[str]) -> dict[str, str]:
    """{name: its rule} for those of `names` that are deny entries now."""
    if not names:
        return {}
    rows = conn.execute(
        select(QueueRow.hostname, QueueRow.status_reason).where(
            QueueRow.hostname == any_(bindparam("names", list(names), type_=ARRAY(Text))),
            QueueRow.status_reason.is_not(None),
        )
    )
    return dict(rows.all())


def entries_for_export(conn, rule: str):
    """Every entry of a rule, by hostname (for CSV)."""
    return conn.execute(
        select(QueueRow.hostname, QueueRow.note, QueueRow.blocked_reason, QueueRow.blocked_at)
        .where(QueueRow.status_reason == rule)
        .order_by(QueueRow.hostname)
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
            SELECT q.hostname, q.next_claim_at FROM queue q
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
