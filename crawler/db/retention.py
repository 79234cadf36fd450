"""What the database forgets: old change-log rows, old wildcard probes, per-root
claim counts past the rolling hour, orphan hosts.

Run by `hostcrawl prune` (from cron or a systemd timer). Deletes go in batches
of BATCH rows, each its own transaction, so a large first prune never holds
locks (or a snapshot that keeps vacuum from cleaning) for long.

Trap windows need no pruning: `windows.record_outcomes` trims each root's
window to its size on every write.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine, text

DEFAULT_AUDIT_DAYS = 90
# A zone's wildcard answer can change; past this the next crawl probes it again.
DEFAULT_PROBE_DAYS = 30
BATCH = 10_000

OLD_AUDIT = "SELECT ctid FROM change_log WHERE at < now() - make_interval(days => :days)"
OLD_PROBES = (
    "SELECT ctid FROM wildcard_probes WHERE checked_at < now() - make_interval(days => :days)"
)
# The per-root claim counts are read for the last rolling hour only, and a
# busy crawl adds a row per root per minute: kept two hours, whatever the settings.
OLD_ROOT_CLAIMS = "SELECT ctid FROM root_claims WHERE minute < now() - interval '2 hours'"
# Every writer makes a hosts row and its queue row in one transaction, and the
# queue row goes with its hosts row (ON DELETE CASCADE): a hosts row without
# one is a leftover of a hand-made change, and nothing shows or routes it.
ORPHAN_HOSTS = (
    "SELECT h.ctid FROM hosts h WHERE NOT EXISTS"
    " (SELECT 1 FROM queue q WHERE q.hostname = h.hostname)"
)
KINDS = {
    "change_log": ("change_log", OLD_AUDIT),
    "wildcard_probes": ("wildcard_probes", OLD_PROBES),
    "root_claims": ("root_claims", OLD_ROOT_CLAIMS),
    "orphan_hosts": ("hosts", ORPHAN_HOSTS),
}


@dataclass(frozen=True)
class Pruned:
    """Rows deleted (or, in a dry run, that would be) per kind."""

    change_log: int
    wildcard_probes: int
    orphan_hosts: int
    root_claims: int = 0


def prune(
    engine: Engine,
    audit_days: int = DEFAULT_AUDIT_DAYS,
    probe_days: int = DEFAULT_PROBE_DAYS,
    dry_run: bool = False,
) -> Pruned:
    """Forget change-log rows older than audit_days, probes older than probe_days (0: keep
    all of that kind), root_claims past two hours and hosts rows without a queue row."""
    run = count if dry_run else delete
    return Pruned(
        change_log=run(engine, "change_log", {"days": audit_days}) if audit_days > 0 else 0,
        wildcard_probes=run(engine, "wildcard_probes", {"days": probe_days})
        if probe_days > 0
        else 0,
        orphan_hosts=run(engine, "orphan_hosts", {}),
        root_claims=run(engine, "root_claims", {}),
    )


def count(engine: Engine, kind: str, params: dict) -> int:
    """How many rows of `kind` a prune would delete."""
    _, rows = KINDS[kind]
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM ({rows}) AS r"), params).scalar_one()


def delete(engine: Engine, kind: str, params: dict) -> int:
    """Delete the rows of `kind`, BATCH at a time; how many went."""
    table, rows = KINDS[kind]
    statement = text(f"DELETE FROM {table} WHERE ctid = ANY(ARRAY({rows} LIMIT :batch))")
    total = 0
    while True:
        with engine.begin() as conn:
            gone = conn.execute(statement, {**params, "batch": BATCH}).rowcount
        total += gone
        if gone < BATCH:
            return total
