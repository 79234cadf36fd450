"""What the database forgets (issue 15): old audit rows, old wildcard probes, orphan hosts.

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

OLD_AUDIT = "SELECT id FROM audit_log WHERE at < now() - make_interval(days => :days)"
OLD_PROBES = (
    "SELECT root FROM wildcard_probes WHERE checked_at < now() - make_interval(days => :days)"
)
# Every writer makes a hosts row and its queue row in one transaction, and the
# queue row goes with its hosts row (ON DELETE CASCADE): a hosts row without
# one is a leftover of a hand-made change, and nothing shows or routes it.
ORPHAN_HOSTS = (
    "SELECT h.hostname FROM hosts h WHERE NOT EXISTS"
    " (SELECT 1 FROM queue q WHERE q.hostname = h.hostname)"
)
KINDS = {
    "audit_log": ("audit_log", "id", OLD_AUDIT),
    "wildcard_probes": ("wildcard_probes", "root", OLD_PROBES),
    "orphan_hosts": ("hosts", "hostname", ORPHAN_HOSTS),
}


@dataclass(frozen=True)
class Pruned:
    """Rows deleted (or, in a dry run, that would be) per kind."""

    audit_log: int
    wildcard_probes: int
    orphan_hosts: int


def prune(
    engine: Engine,
    audit_days: int = DEFAULT_AUDIT_DAYS,
    probe_days: int = DEFAULT_PROBE_DAYS,
    dry_run: bool = False,
) -> Pruned:
    """Forget audit rows older than audit_days, probes older than probe_days (0: keep
    all of that kind) and hosts rows without a queue row."""
    run = count if dry_run else delete
    return Pruned(
        audit_log=run(engine, "audit_log", {"days": audit_days}) if audit_days > 0 else 0,
        wildcard_probes=run(engine, "wildcard_probes", {"days": probe_days})
        if probe_days > 0
        else 0,
        orphan_hosts=run(engine, "orphan_hosts", {}),
    )


def count(engine: Engine, kind: str, params: dict) -> int:
    """How many rows of `kind` a prune would delete."""
    _, _, rows = KINDS[kind]
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM ({rows}) AS r"), params).scalar_one()


def delete(engine: Engine, kind: str, params: dict) -> int:
    """Delete the rows of `kind`, BATCH at a time; how many went."""
    table, key, rows = KINDS[kind]
    statement = text(f"DELETE FROM {table} WHERE {key} IN ({rows} LIMIT :batch)")
    total = 0
    while True:
        with engine.begin() as conn:
            gone = conn.execute(statement, {**params, "batch": BATCH}).rowcount
        total += gone
        if gone < BATCH:
            return total
