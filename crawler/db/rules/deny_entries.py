"""Deny entries (docs/design.md, rules 2 and 8): blocked and no_follow rows, and their writer.

An entry is a queue row with `status_reason` set. Every change, of one name or of a
million, goes through the same batch writer (crawler.db.operators.bulk's staging table): a block,
a no_follow added or removed, an unblock. Each batch is written with its change-log row
and its NOTIFY in one transaction (crawler.db.operators.bulk_change_log), so every listening worker
hears of it when, and only when, it commits.

Each change comes twice: `add_no_follow()` returns every result in one list (a few names:
the panel, the API, a block), `add_no_follow_batches()` yields each batch's results as it
commits (a file of any size: the CLI's progress). Both are the same writer.

Lifting an entry (an unblock, a no_follow removed) also empties the trap window of the
root it names, in the same transaction: a new block then needs a full window of new
failures, and the change log says the window was cleared.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from sqlalchemy import Connection, Engine, text

from crawler.core.denylist import BLOCKED, NO_FOLLOW, Denial, DenyList
from crawler.core.hostnames import normalize, normalize_entry, root
from crawler.core.words import counted
from crawler.db import deployments
from crawler.db.crawl import rollups
from crawler.db.operators.bulk import (
    BATCH,
    UNSTAGE,
    Batch,
    EntryChange,
    Item,
    batches,
    collect,
    insert_staged_hosts,
    overlapped,
    prepare,
    stage,
)
from crawler.db.operators.bulk_change_log import STAGED_NOTES, announce, record_batch
from crawler.db.rules import denied_rows
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import names_param
from crawler.db.server.statistics import analyzes_after

log = logging.getLogger(__name__)

SYSTEM = "system"  # the change log's actor when none is named
ADD_ACTION = {BLOCKED: "block", NO_FOLLOW: "no_follow.add"}
# The rules already on a name that a new entry leaves as they are: the operator's
# no_follow wins over a block.
KEPT = {BLOCKED: (BLOCKED, NO_FOLLOW), NO_FOLLOW: (NO_FOLLOW,)}
REMOVAL = {BLOCKED: ("unblock", "unblocked"), NO_FOLLOW: ("no_follow.remove", "removed")}

COVERING_ENTRIES = text(
    "SELECT hostname, status_reason FROM hosts"
    " WHERE hostname = ANY(host_parents(:h)) AND status_reason IS NOT NULL"
)
ALL_ENTRIES = text("SELECT hostname, status_reason FROM hosts WHERE status_reason IS NOT NULL")
LIST_ENTRIES = text(
    "SELECT hostname, blocked_reason, blocked_at, note FROM hosts"
    " WHERE status_reason = :rule ORDER BY hostname"
)

# The staged names become entries: rows new to hosts (made dateless) and known ones.
SET_ENTRY = {
    NO_FOLLOW: text(
        """
        UPDATE hosts q SET status_reason = 'no_follow', note = s.note
          FROM bulk_names s
         WHERE q.hostname = s.hostname AND q.status_reason IS DISTINCT FROM 'no_follow'
        """
    ),
    BLOCKED: text(
        """
        UPDATE hosts q SET status_reason = 'blocked', blocked_reason = s.note, blocked_at = now()
          FROM bulk_names s
         WHERE q.hostname = s.hostname AND q.status_reason IS DISTINCT FROM 'blocked'
        """
    ),
}
# Each statement that locks rows runs once per shard group of the names' roots
# (crawler.db.deployments.by_shard_group; one group on one server), narrowed to its :roots,
# with the group's :names as an array: Citus loses columns of a join to the stage (a
# table of the coordinator's) inside a locking CTE.
LOCK_NAMED = text(
    """
    SELECT hostname, status_reason FROM hosts
     WHERE root = ANY(:roots) AND hostname = ANY(:names)
     ORDER BY hostname FOR UPDATE
    """
).bindparams(*names_param("roots", "names"))
REMOVE_ENTRIES = text(
    """
    WITH old AS (
        SELECT hostname, blocked_reason, note FROM hosts
         WHERE root = ANY(:roots) AND hostname = ANY(:names) AND status_reason = :rule
         ORDER BY hostname FOR UPDATE)
    UPDATE hosts q SET status_reason = NULL, blocked_reason = NULL, blocked_at = NULL, note = NULL
      FROM old WHERE q.hostname = old.hostname AND q.root = ANY(:roots)
    RETURNING q.hostname, coalesce(old.blocked_reason, old.note), q.root,
              CASE WHEN q.denied_by IS NULL THEN q.next_claim_at END
    """
).bindparams(*names_param("roots", "names"))
# A row made only to hold an entry (never routed, crawled or audited) is no host:
# once the entry goes, so does the row.
FORGET_ENTRY_ONLY_ROWS = text(
    """
    DELETE FROM hosts h
     WHERE h.hostname = ANY(:names) AND h.status_reason IS NULL AND h.next_claim_at IS NULL
       AND h.last_crawled_at IS NULL AND h.audited_at IS NULL AND h.crawl_count = 0
    RETURNING h.root, h.outcome
    """
).bindparams(*names_param("names"))
# The trap windows of the lifted roots (their counts in roots follow: rollups).
CLEAR_WINDOWS = text("DELETE FROM trap_window WHERE root = ANY(:names) RETURNING root").bindparams(
    *names_param("names")
)


# -- reads -------------------------------------------------------------------------------


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


# -- the write path ----------------------------------------------------------------------


def upsert_blocked(engine: Engine, hostname: str, reason: str, actor: str = SYSTEM) -> bool:
    """Block a hostname (a trap root) with a readable reason; True if newly blocked.

    A no_follow entry stays as it is: the operator's word wins.
    """
    (change,) = collect(_add_batches(engine, BLOCKED, [(hostname, reason)], actor, None, normalize))
    if change.status != "added":
        return False
    log.warning("blocked %s: %s", hostname, reason)
    return True


def add_no_follow(
    engine: Engine,
    items: Iterable[Item],
    actor: str = SYSTEM,
    note: str | None = None,
    force: bool = False,
) -> list[EntryChange]:
    """Add no_follow entries; every input's result, in order (add_no_follow_batches())."""
    return collect(add_no_follow_batches(engine, items, actor, note, force))


def add_no_follow_batches(
    engine: Engine,
    items: Iterable[Item],
    actor: str = SYSTEM,
    note: str | None = None,
    force: bool = False,
    size: int = BATCH,
) -> Iterator[list[EntryChange]]:
    """Add no_follow entries a batch at a time; a blocked entry becomes no_follow.

    The hosts under each new entry leave routing; one change-log row per batch.
    """

    def name_of(value: str) -> str:
        return normalize_entry(value, force=force)

    return _add_batches(engine, NO_FOLLOW, items, actor, note, name_of, size)


def remove_no_follow(
    engine: Engine, items: Iterable[Item], actor: str = SYSTEM, note: str | None = None
) -> list[EntryChange]:
    """Remove no_follow entries; every input's result, in order."""
    return collect(remove_no_follow_batches(engine, items, actor, note))


def remove_no_follow_batches(
    engine: Engine, items: Iterable[Item], actor: str = SYSTEM, note: str | None = None
) -> Iterator[list[EntryChange]]:
    """Remove no_follow entries a batch at a time; the hosts they took out come back."""
    return _remove_batches(engine, items, NO_FOLLOW, actor, note)


def unblock(
    engine: Engine, items: Iterable[Item], actor: str = SYSTEM, note: str | None = None
) -> list[EntryChange]:
    """Lift blocks (false positives); every input's result, in order."""
    return collect(unblock_batches(engine, items, actor, note))


def unblock_batches(
    engine: Engine, items: Iterable[Item], actor: str = SYSTEM, note: str | None = None
) -> Iterator[list[EntryChange]]:
    """Lift blocks a batch at a time; the hosts they took out come back."""
    return _remove_batches(engine, items, BLOCKED, actor, note)


def no_refusal(hostname: str) -> None:
    """Deny entries and removals refuse nothing beyond normalization's rules."""


def _add_batches(
    engine: Engine,
    rule: str,
    items: Iterable[Item],
    actor: str,
    note: str | None,
    name_of: Callable[[str], str],
    size: int = BATCH,
) -> Iterator[list[EntryChange]]:
    prepared = (prepare(c, name_of, no_refusal, note, "already") for c in batches(items, size))
    return overlapped(prepared, lambda batch: _write_entries(engine, batch, rule, actor, note))


@analyzes_after
@retry_conflicts
def _write_entries(engine: Engine, batch: Batch, rule: str, actor: str, note: str | None) -> None:
    with engine.begin() as conn:
        stage(conn, batch)
        # The roots' and hours' counters are written last, after the queue rows' locks,
        # in the crawl's finish order: a block taking a trap's rows out of routing while
        # a finish wrote their results deadlocked (each held what the other wanted next).
        pending = rollups.Rollups()
        fresh = insert_staged_hosts(conn, pending=pending)
        groups = deployments.by_shard_group(conn, {h: root(h) for h in batch.first})
        previous: dict[str, str | None] = {}
        for roots, names in groups:
            locked = conn.execute(LOCK_NAMED, {"roots": roots, "names": names})
            previous.update((h, None if h in fresh else r) for h, r in locked)
        kept = [h for h, r in previous.items() if r in KEPT[rule]]
        if kept:
            conn.execute(UNSTAGE, {"names": kept})
        added = [h for h in batch.first if previous.get(h) not in KEPT[rule]]
        if added:
            conn.execute(SET_ENTRY[rule])  # rows all locked above: in any order
            denied_rows.take_out_under(conn, groups, added)
            details = [batch.notes[added[0]]] if len(added) == 1 else STAGED_NOTES
            record_batch(conn, actor, ADD_ACTION[rule], added, details, note)
            announce(conn, "add", added, rule)
        pending.write(conn)
        rollups.count_sources(conn, (None for _ in fresh))  # an entry's own row: no source
    for hostname in batch.first:
        was = previous.get(hostname)
        if was in KEPT[rule]:
            batch.settle(hostname, "already", "" if was == rule else f"a {was} entry")
        else:
            batch.settle(hostname, "added", f"was {was}" if was else "")


def _remove_batches(
    engine: Engine, items: Iterable[Item], rule: str, actor: str, note: str | None
) -> Iterator[list[EntryChange]]:
    prepared = (prepare(c, normalize, no_refusal, note, "absent") for c in batches(items, BATCH))
    return overlapped(prepared, lambda batch: _write_removal(engine, batch, rule, actor, note))


@analyzes_after
@retry_conflicts
def _write_removal(engine: Engine, batch: Batch, rule: str, actor: str, note: str | None) -> None:
    action, status = REMOVAL[rule]
    with engine.begin() as conn:
        groups = deployments.by_shard_group(conn, {h: root(h) for h in batch.first})
        lifted = []
        for roots, names in groups:
            params = {"rule": rule, "roots": roots, "names": names}
            lifted += conn.execute(REMOVE_ENTRIES, params).all()
        removed = {hostname: reason for hostname, reason, _, _ in lifted}
        restored = dict.fromkeys(removed, 0)
        cleared: Counter[str] = Counter()
        if removed:
            names = sorted(removed)
            put_back = denied_rows.put_back(conn, names)
            for entry, now_by, _, _ in put_back:
                restored[entry] += now_by is None
            dated = [(r, due) for _, _, r, due in lifted + put_back]
            rollups.lower_next_due(conn, dated)
            gone = conn.execute(FORGET_ENTRY_ONLY_ROWS, {"names": names}).all()
            rollups.count_hosts(conn, gone=gone)
            roots = [h for h in names if root(h) == h]
            cleared.update(conn.execute(CLEAR_WINDOWS, {"names": roots}).scalars())
            rollups.recount_windows(conn, cleared)
            details = [_lifted(removed[h], cleared[h]) for h in names]
            record_batch(conn, actor, action, names, details, note)
            announce(conn, "remove", names, rule)
    for hostname in batch.first:
        if hostname in removed:
            message = f"{counted(restored[hostname], 'host')} back in routing"
            if cleared[hostname]:
                message += f"; trap window cleared ({counted(cleared[hostname], 'outcome')})"
            batch.settle(hostname, status, message)
        else:
            batch.settle(hostname, "absent", f"no {rule} entry")


def _lifted(reason_or_note: str | None, cleared: int) -> str | None:
    """A lifted entry's change-log detail: its reason or note, and the window it cleared."""
    window = f"trap window cleared ({counted(cleared, 'outcome')})" if cleared else None
    return "; ".join(filter(None, [reason_or_note, window])) or None
