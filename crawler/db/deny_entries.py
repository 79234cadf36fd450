"""Deny entries (docs/design.md, rules 2 and 8): blocked and no_follow rows, and NOTIFY to workers.

An entry is a queue row with `status_reason` set. Every change is written with
its change-log row and a pg_notify in one transaction, so every listening worker
hears of it when, and only when, it commits.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, Engine, text

from crawler.core.denylist import BLOCKED, NO_FOLLOW, Denial, DenyList
from crawler.core.hostnames import HostnameError, normalize, normalize_entry, root, shown
from crawler.db import change_log, routing
from crawler.db.hostsql import names_param
from crawler.db.retry import retry_conflicts

log = logging.getLogger(__name__)

DENYLIST_CHANNEL = "hostcrawl_denylist"
SYSTEM = "system"  # the change log's actor when none is named


@dataclass(frozen=True)
class EntryChange:
    """The result of one operator input: what was stored, or why not."""

    input: str
    hostname: str | None
    status: str  # added | already | removed | absent | refused | queued | unblocked
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "refused"

    def describe(self) -> str:
        if self.hostname is None:
            return f"{shown(self.input)}: {self.message}"
        stored = self.hostname if self.input == self.hostname else f"{self.input} → {self.hostname}"
        return f"{stored}: {self.status}" + (f" ({self.message})" if self.message else "")


COVERING_ENTRIES = text(
    "SELECT hostname, status_reason FROM queue"
    " WHERE hostname = ANY(host_parents(:h)) AND status_reason IS NOT NULL"
)
ALL_ENTRIES = text("SELECT hostname, status_reason FROM queue WHERE status_reason IS NOT NULL")
LIST_ENTRIES = text(
    "SELECT hostname, blocked_reason, blocked_at, note FROM queue"
    " WHERE status_reason = :rule ORDER BY hostname"
)


def current_denial(conn: Connection, hostname: str) -> Denial | None:
    """The entry covering a normalized hostname now, asked of the database: for one-off
    questions (a seed, a panel page) that should not load the whole deny list."""
    entries = [(h, r) for h, r in conn.execute(COVERING_ENTRIES, {"h": hostname})]
    return DenyList(entries).denial(hostname)


def deny_entries(engine: Engine) -> list[tuple[str, str]]:
    """Every deny entry as (hostname, rule): what a worker's deny list is loaded from."""
    with engine.connect() as conn:
        return [(h, r) for h, r in conn.execute(ALL_ENTRIES)]


def list_entries(engine: Engine, rule: str) -> list[dict]:
    """Deny entries of one rule with their reason, note and date, by hostname."""
    with engine.connect() as conn:
        return [dict(r._mapping) for r in conn.execute(LIST_ENTRIES, {"rule": rule})]


@retry_conflicts
def upsert_blocked(engine: Engine, hostname: str, reason: str, actor: str = SYSTEM) -> bool:
    """Block a hostname (a trap root) with a readable reason; True if newly blocked.

    A no_follow entry stays as it is: the operator's word wins.
    """
    with engine.begin() as conn:
        previous = ensure_row(conn, hostname)
        if previous in (BLOCKED, NO_FOLLOW):
            return False
        conn.execute(
            text(
                "UPDATE queue SET status_reason = 'blocked', blocked_reason = :reason,"
                " blocked_at = now() WHERE hostname = :hostname"
            ),
            {"hostname": hostname, "reason": reason},
        )
        routing.take_out_under(conn, hostname)
        change_log.record(conn, actor, "block", hostname, reason)
        notify(conn, "add", hostname, BLOCKED)
    log.warning("blocked %s: %s", hostname, reason)
    return True


def add_no_follow(
    engine: Engine,
    values: Sequence[str],
    actor: str = SYSTEM,
    note: str | None = None,
    force: bool = False,
) -> list[EntryChange]:
    """Add operator no_follow entries; each input normalized and reported."""
    changes = []
    for value in values:
        try:
            hostname = normalize_entry(value, force=force)
        except HostnameError as exc:
            changes.append(EntryChange(value, None, "refused", exc.reason))
            continue
        changes.append(_add_no_follow(engine, value, hostname, note, actor))
    return changes


@retry_conflicts
def _add_no_follow(
    engine: Engine, value: str, hostname: str, note: str | None, actor: str
) -> EntryChange:
    with engine.begin() as conn:
        previous = ensure_row(conn, hostname)
        if previous == NO_FOLLOW:
            return EntryChange(value, hostname, "already")
        conn.execute(
            text("UPDATE queue SET status_reason = 'no_follow', note = :note WHERE hostname = :h"),
            {"h": hostname, "note": note},
        )
        routing.take_out_under(conn, hostname)
        change_log.record(conn, actor, "no_follow.add", hostname, note)
        notify(conn, "add", hostname, NO_FOLLOW)
    return EntryChange(value, hostname, "added", "was blocked" if previous else "")


def remove_no_follow(
    engine: Engine, values: Sequence[str], actor: str = SYSTEM, note: str | None = None
) -> list[EntryChange]:
    """Remove no_follow entries; the hosts they took out of routing come back."""
    return [_remove_entry(engine, v, NO_FOLLOW, "no_follow.remove", actor, note) for v in values]


def unblock(
    engine: Engine, values: Sequence[str], actor: str = SYSTEM, note: str | None = None
) -> list[EntryChange]:
    """Lift blocks (false positives); the hosts they took out come back."""
    return [_remove_entry(engine, v, BLOCKED, "unblock", actor, note) for v in values]


REMOVE_ENTRY = text(
    """
    WITH old AS (
        SELECT hostname, blocked_reason, note FROM queue
         WHERE hostname = :hostname AND status_reason = :rule FOR UPDATE)
    UPDATE queue q SET status_reason = NULL, blocked_reason = NULL,
           blocked_at = NULL, note = NULL
      FROM old WHERE q.hostname = old.hostname
    RETURNING old.blocked_reason, old.note
    """
)
# A row made only to hold an entry (never routed, crawled or audited) is no host:
# once the entry goes, so does the row (its queue row with it, ON DELETE CASCADE).
# Used by every removal, one name or a batch.
FORGET_ENTRY_ONLY_ROWS = text(
    """
    DELETE FROM hosts h USING queue q
     WHERE h.hostname = ANY(:names) AND q.hostname = h.hostname
       AND q.status_reason IS NULL AND q.next_claim_at IS NULL
       AND h.last_crawled_at IS NULL AND h.audited_at IS NULL AND h.crawl_count = 0
    """
).bindparams(*names_param("names"))


@retry_conflicts
def _remove_entry(
    engine: Engine, value: str, rule: str, action: str, actor: str, note: str | None
) -> EntryChange:
    try:
        hostname = normalize(value)
    except HostnameError as exc:
        return EntryChange(value, None, "refused", exc.reason)
    with engine.begin() as conn:
        found = conn.execute(REMOVE_ENTRY, {"hostname": hostname, "rule": rule}).first()
        if found is None:
            return EntryChange(value, hostname, "absent", f"no {rule} entry")
        restored = routing.put_back(conn, hostname)
        conn.execute(FORGET_ENTRY_ONLY_ROWS, {"names": [hostname]})
        detail = "; ".join(filter(None, [note, found.blocked_reason or found.note]))
        change_log.record(conn, actor, action, hostname, detail or None)
        notify(conn, "remove", hostname, rule)
    status = "unblocked" if rule == BLOCKED else "removed"
    return EntryChange(value, hostname, status, f"{restored} hosts back in routing")


def ensure_row(conn: Connection, hostname: str) -> str | None:
    """Make sure hosts and queue rows exist (locked); return the current rule."""
    conn.execute(
        text("INSERT INTO hosts (hostname, root) VALUES (:h, :r) ON CONFLICT DO NOTHING"),
        {"h": hostname, "r": root(hostname)},
    )
    conn.execute(
        text("INSERT INTO queue (hostname) VALUES (:h) ON CONFLICT DO NOTHING"), {"h": hostname}
    )
    return conn.execute(
        text("SELECT status_reason FROM queue WHERE hostname = :h FOR UPDATE"), {"h": hostname}
    ).scalar_one()


def notify(conn: Connection, change: str, hostname: str, rule: str) -> None:
    """Tell every listening worker, when this transaction commits."""
    payload = json.dumps({"change": change, "hostname": hostname, "rule": rule})
    conn.execute(
        text("SELECT pg_notify(:channel, :payload)"),
        {"channel": DENYLIST_CHANNEL, "payload": payload},
    )
