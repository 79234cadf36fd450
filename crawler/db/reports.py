"""Read-only queries for the operators' panel (DESIGN.md §8).

Every function takes a SQLAlchemy Connection (or Session) and only reads;
every write goes through crawler.db.database.Database. Lists page by keyset
on (sort key, hostname), never by OFFSET, so a deep page costs what the first
one does. Searches are index range scans: a prefix of the hostname (the
primary key, C collation) or a domain and every name under it (the
reverse(hostname) index, see database.suffix_range()).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    Select,
    Text,
    and_,
    any_,
    bindparam,
    cast,
    exists,
    func,
    literal,
    or_,
    select,
    text,
    true,
    tuple_,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import ColumnElement

from crawler.db.database import suffix_range
from crawler.db.models import AuditEntry, Host, QueueRow, User
from crawler.denylist import BLOCKED, RULES
from crawler.hostnames import normalize

PREFIX = "prefix"
DOMAIN = "domain"
MATCHES = (PREFIX, DOMAIN)
NEVER_CRAWLED = "none"
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
SAMPLE_NAMES = 5

# The expression of the ix_*_reversed indexes: reverse(hostname::text).
QUEUE_REVERSED = func.reverse(cast(QueueRow.hostname, Text))

_entry = QueueRow.__table__.alias("d")


def visible(hostname: ColumnElement) -> ColumnElement[bool]:
    """True when neither the name nor any parent of it is a deny entry (DESIGN.md §2).

    The exact rule, not only queue.denied_by: a stale worker may have saved a
    host under an entry after the entry took its subtree out of routing.
    """
    parents = func.host_parents(hostname, type_=ARRAY(Text))
    return ~exists().where(_entry.c.hostname == any_(parents), _entry.c.status_reason.is_not(None))


# -- keyset pages -----------------------------------------------------------------


class BadCursor(ValueError):
    """A page cursor that this module did not make (or made for another sort)."""


@dataclass(frozen=True)
class Order:
    """A keyset order: key expressions (unique together) and their direction."""

    keys: tuple[ColumnElement, ...]
    kinds: tuple[str, ...]  # "str" | "datetime" | "int", to decode a cursor
    descending: bool = False


@dataclass
class Page:
    """One page of rows and the cursors of its neighbours (None at either end)."""

    rows: list[Any]
    next: str | None = None
    prev: str | None = None


def encode_cursor(values: Sequence[Any]) -> str:
    plain = [v.isoformat() if isinstance(v, datetime) else v for v in values]
    raw = json.dumps(plain, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_KINDS = {"str": str, "int": int}


def decode_cursor(cursor: str, kinds: Sequence[str]) -> list[Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        values = json.loads(raw)
    except (binascii.Error, ValueError) as exc:
        raise BadCursor(f"bad page cursor {cursor!r}") from exc
    if not isinstance(values, list) or len(values) != len(kinds):
        raise BadCursor(f"bad page cursor {cursor!r}")
    decoded = []
    for value, kind in zip(values, kinds, strict=True):
        try:
            if kind == "datetime":
                value = datetime.fromisoformat(value)
            elif type(value) is not _KINDS[kind]:
                raise TypeError(kind)
        except (TypeError, ValueError) as exc:
            raise BadCursor(f"bad page cursor {cursor!r}") from exc
        decoded.append(value)
    return decoded


def paginate(
    conn,
    stmt: Select,
    order: Order,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Run `stmt` as one keyset page after (or before) a cursor."""
    return _run_page(conn, *keyset(stmt, order, after, before, limit))


def keyset(
    stmt: Select, order: Order, after: str | None, before: str | None, limit: int
) -> tuple[Select, Order, bool, bool, int]:
    """The page's statement (with its key columns as _k0, _k1…), and how to read it."""
    limit = max(1, min(limit, MAX_LIMIT))
    backwards = before is not None
    cursor = before if backwards else after
    desc = order.descending != backwards
    keys = order.keys
    if cursor:
        values = decode_cursor(cursor, order.kinds)
        if len(keys) == 1:
            stmt = stmt.where(keys[0] < values[0] if desc else keys[0] > values[0])
        else:
            row, bound = tuple_(*keys), tuple_(*values)
            stmt = stmt.where(row < bound if desc else row > bound)
    stmt = stmt.add_columns(*(k.label(f"_k{i}") for i, k in enumerate(keys)))
    stmt = stmt.order_by(*(k.desc() if desc else k.asc() for k in keys)).limit(limit + 1)
    return stmt, order, backwards, bool(cursor), limit


def page_settings(conn) -> None:
    """For this transaction: no parallel plans. A page is a few dozen rows off an
    index, and parallel workers only add their start-up time (the planner cannot
    tell how many rows the deny test keeps, so it often expects thousands)."""
    conn.execute(text("SET LOCAL max_parallel_workers_per_gather = 0"))


def _run_page(conn, stmt, order: Order, backwards: bool, had_cursor: bool, limit: int) -> Page:
    page_settings(conn)
    rows = list(conn.execute(stmt).all())
    more = len(rows) > limit
    rows = rows[:limit]
    if backwards:
        rows.reverse()
    if not rows:
        return Page([])

    def key(row) -> str:
        return encode_cursor([row._mapping[f"_k{i}"] for i in range(len(order.keys))])

    if backwards:
        return Page(rows, next=key(rows[-1]), prev=key(rows[0]) if more else None)
    return Page(
        rows, next=key(rows[-1]) if more else None, prev=key(rows[0]) if had_cursor else None
    )


# -- search -------------------------------------------------------------------------


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


# -- hosts (/) ----------------------------------------------------------------------

# The list walks queue rows that no entry took out of routing (the ix_queue_shown
# partial index, in hostname order), so a page never wades through thousands of
# hidden hosts; each row then passes the exact test above.
SHOWN = and_(QueueRow.status_reason.is_(None), QueueRow.denied_by.is_(None))

HOST_SORTS: dict[str, Order] = {
    "name": Order((QueueRow.hostname,), ("str",)),
    "newest": Order((Host.discovered_at, Host.hostname), ("datetime", "str"), descending=True),
    "oldest": Order((Host.discovered_at, Host.hostname), ("datetime", "str")),
}


@dataclass(frozen=True)
class HostFilter:
    """What the main list shows: search, outcome, root and sort."""

    q: str = ""
    match: str = PREFIX
    outcome: str = ""  # "" any, "none" never crawled, else an outcome type
    root: str = ""
    sort: str = "name"

    def conditions(self) -> tuple[list[ColumnElement[bool]], list[ColumnElement[bool]]]:
        """(on queue, on hosts) SQL conditions; HostnameError for a search or root
        that is no hostname."""
        on_queue = [SHOWN, visible(QueueRow.hostname)]
        searched = search_condition(QueueRow.hostname, QUEUE_REVERSED, self.q, self.match)
        if searched is not None:
            on_queue.append(searched)
        on_hosts = []
        if self.outcome == NEVER_CRAWLED:
            on_hosts.append(Host.outcome.is_(None))
        elif self.outcome:
            on_hosts.append(Host.outcome == self.outcome)
        if self.root.strip():
            on_hosts.append(Host.root == normalize(self.root))
        return on_queue, on_hosts


HOST_COLUMNS = (
    Host.hostname,
    Host.root,
    Host.outcome,
    Host.http_status,
    Host.title,
    Host.discovered_at,
    Host.last_crawled_at,
)


def _hosts(flt: HostFilter) -> Select:
    """The list's query. By name and with no filter on hosts' columns, it walks
    ix_queue_shown in order and looks each row's facts up by primary key (a
    LATERAL … LIMIT 1, so the planner cannot choose a merge join along all of
    hosts, hidden rows included). Otherwise the planner picks: the discovered_at,
    outcome or root index may lead, each host's queue row looked up."""
    on_queue, on_hosts = flt.conditions()
    if flt.sort == "name" and not on_hosts:
        facts = (
            select(*HOST_COLUMNS)
            .where(Host.hostname == QueueRow.hostname, *on_hosts)
            .limit(1)
            .lateral("h")
        )
        return select(*facts.c).select_from(QueueRow).join(facts, true()).where(*on_queue)
    return (
        select(*HOST_COLUMNS)
        .select_from(QueueRow)
        .join(Host, Host.hostname == QueueRow.hostname)
        .where(*on_queue, *on_hosts)
    )


def host_statement(
    flt: HostFilter,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Select:
    """The SQL of one page of `/` (for EXPLAIN in the benchmark)."""
    return keyset(_hosts(flt), HOST_SORTS[flt.sort], after, before, limit)[0]


def host_page(
    conn,
    flt: HostFilter,
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Discovered hosts, never one under a deny entry, one keyset page."""
    return paginate(conn, _hosts(flt), HOST_SORTS[flt.sort], after, before, limit)


def host_detail(conn, hostname: str):
    """One host's crawl facts and its queue row (next claim, deny state), or None."""
    stmt = (
        select(
            *HOST_COLUMNS,
            Host.discovered_from,
            Host.final_url,
            Host.links_found,
            Host.links_saved,
            Host.links_filtered,
            Host.fail_streak,
            Host.crawl_count,
            Host.audited_at,
            Host.audit_outcome,
            QueueRow.next_claim_at,
            QueueRow.status_reason,
            QueueRow.blocked_reason,
            QueueRow.blocked_at,
            QueueRow.note,
            QueueRow.denied_by,
            QueueRow.claimed_by,
            QueueRow.claimed_at,
        )
        .outerjoin(QueueRow, QueueRow.hostname == Host.hostname)
        .where(Host.hostname == hostname)
    )
    return conn.execute(stmt).first()


# -- the dashboard strip ---------------------------------------------------------------


@dataclass
class Chart:
    """Discoveries per bucket (hour or day), oldest first, empty buckets included."""

    unit: str
    buckets: list[tuple[datetime, int]] = field(default_factory=list)

    @property
    def peak(self) -> int:
        return max((n for _, n in self.buckets), default=0)


@dataclass
class Dashboard:
    hosts_known: int
    due_now: int
    crawled_last_hour: int
    blocked: int
    no_follow: int
    out_of_routing: int
    outcomes: list[tuple[str | None, int]]
    chart: Chart
    computed_at: datetime

    def as_dict(self) -> dict:
        return {
            "hosts_known": self.hosts_known,
            "due_now": self.due_now,
            "crawled_last_hour": self.crawled_last_hour,
            "blocked": self.blocked,
            "no_follow": self.no_follow,
            "out_of_routing": self.out_of_routing,
            "outcomes": {(o or NEVER_CRAWLED): n for o, n in self.outcomes},
            "discoveries": {
                "unit": self.chart.unit,
                "buckets": [[b.isoformat(), n] for b, n in self.chart.buckets],
            },
            "computed_at": self.computed_at.isoformat(),
        }


def dashboard(conn) -> Dashboard:
    """The figures of the strip on `/`. Scans hosts twice: callers cache it."""
    outcome_rows = conn.execute(
        text(
            "SELECT outcome, count(*) AS n,"
            " count(*) FILTER (WHERE last_crawled_at > now() - interval '1 hour') AS recent"
            " FROM hosts GROUP BY outcome ORDER BY n DESC, outcome"
        )
    ).all()
    entries = conn.execute(
        text(
            "SELECT count(*) FILTER (WHERE status_reason = 'blocked') AS blocked,"
            " count(*) FILTER (WHERE status_reason = 'no_follow') AS no_follow"
            " FROM queue WHERE status_reason IS NOT NULL"
        )
    ).one()
    due = conn.execute(
        text(
            "SELECT count(*) FROM queue WHERE status_reason IS NULL AND denied_by IS NULL"
            " AND next_claim_at <= now()"
        )
    ).scalar_one()
    out = conn.execute(text("SELECT count(*) FROM queue WHERE denied_by IS NOT NULL")).scalar_one()
    return Dashboard(
        hosts_known=sum(r.n for r in outcome_rows),
        due_now=due,
        crawled_last_hour=sum(r.recent for r in outcome_rows),
        blocked=entries.blocked,
        no_follow=entries.no_follow,
        out_of_routing=out,
        outcomes=[(r.outcome, r.n) for r in outcome_rows],
        chart=discoveries(conn),
        computed_at=datetime.now(UTC),
    )


def discoveries(conn, hours: int = 48, days: int = 30) -> Chart:
    """Hosts discovered per hour over the last `hours` of discovery, or per day if older."""
    span = conn.execute(text("SELECT min(discovered_at), max(discovered_at) FROM hosts")).one()
    if span[1] is None:
        return Chart("hour")
    last = span[1].astimezone(UTC)
    if span[0] >= last - timedelta(hours=hours):
        unit, step, count = "hour", timedelta(hours=1), hours
    else:
        unit, step, count = "day", timedelta(days=1), days
    end = last.replace(minute=0, second=0, microsecond=0)
    if unit == "day":
        end = end.replace(hour=0)
    start = end - step * (count - 1)
    rows = conn.execute(
        text(
            "SELECT date_trunc(:unit, discovered_at, 'UTC') AS b, count(*) FROM hosts"
            " WHERE discovered_at >= :start GROUP BY b"
        ),
        {"unit": unit, "start": start},
    ).all()
    found = {b.astimezone(UTC): n for b, n in rows}
    return Chart(unit, [(start + step * i, found.get(start + step * i, 0)) for i in range(count)])


# -- deny entries (/no_follow, /blocked) ------------------------------------------------

ENTRY_ORDER = Order((QueueRow.hostname,), ("str",))


def entry_statement(rule: str, q: str = "", match: str = PREFIX) -> Select:
    """Deny entries of one rule, each with how many hosts it took out of routing."""
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}")
    took = (
        select(func.count())
        .select_from(_entry)
        .where(_entry.c.denied_by == QueueRow.hostname)
        .scalar_subquery()
    )
    added = (
        select(AuditEntry.at, AuditEntry.actor)
        .where(
            AuditEntry.hostname == QueueRow.hostname,
            AuditEntry.action == ("block" if rule == BLOCKED else "no_follow.add"),
        )
        .order_by(AuditEntry.id.desc())
        .limit(1)
        .lateral("added")
    )
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


# -- the audit log --------------------------------------------------------------------

AUDIT_ORDER = Order((AuditEntry.id,), ("int",), descending=True)


def audit_page(
    conn,
    q: str = "",
    action: str = "",
    actor: str = "",
    after: str | None = None,
    before: str | None = None,
    limit: int = DEFAULT_LIMIT,
) -> Page:
    """Audit entries, newest first; q is a hostname prefix."""
    stmt = select(
        AuditEntry.id,
        AuditEntry.at,
        AuditEntry.actor,
        AuditEntry.action,
        AuditEntry.hostname,
        AuditEntry.detail,
    )
    searched = search_condition(AuditEntry.hostname, literal(""), q, PREFIX)
    if searched is not None:
        stmt = stmt.where(searched)
    if action:
        stmt = stmt.where(AuditEntry.action == action)
    if actor:
        stmt = stmt.where(AuditEntry.actor == actor)
    return paginate(conn, stmt, AUDIT_ORDER, after, before, limit)


def audit_actions(conn) -> list[str]:
    return list(conn.execute(text("SELECT DISTINCT action FROM audit_log ORDER BY 1")).scalars())


# -- operators ----------------------------------------------------------------------------


def api_token_hash(token: str) -> str:
    """How an API token is stored: tokens are 256 random bits, so one SHA-256 suffices
    (and lets the lookup be an equality on the stored hash)."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


def user_by_id(conn, user_id: int):
    """(id, username) of an operator, or None."""
    return conn.execute(select(User.id, User.username).where(User.id == user_id)).first()


def user_by_token(conn, token: str):
    """The users row whose API token this is, or None."""
    if not token:
        return None
    return conn.execute(
        select(User.id, User.username).where(User.api_token_hash == api_token_hash(token))
    ).first()
