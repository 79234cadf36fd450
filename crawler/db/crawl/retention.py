"""What the database forgets: every table that grows with time has a rule here.

    change_log (+ change_log_items)   CHANGE_LOG_RETENTION_DAYS (90)
    wildcard_probes                   PROBE_RETENTION_DAYS (30): the root is probed again
    root_claims                       ROOT_CLAIMS_RETENTION_MINUTES (65): the budget reads 61
    host_hours, source_hours          HOST_HOURS_RETENTION_DAYS (30): the panel reads 24 hours
    trap_window                       TRAP_WINDOW_RETENTION_DAYS (30): outcomes that old leave
                                      their root's window (each window is also trimmed to
                                      TRAP_WINDOW rows on every write)
    trap_deferrals                    DEFERRAL_RETENTION_DAYS (7): a held-back block no worker
                                      has looked at for that long
    crawl_workers                     a day after a worker's last heartbeat (it was killed)
    host_minutes                      MINUTES_KEPT (3 hours): the health row reads one
    the whole crawl, figures and all  `forget_the_crawl`: a new demo in the demo's database

Each worker runs `scheduled` every PRUNE_INTERVAL seconds (crawler/extensions/pruning.py);
`hostcrawl prune` runs `prune` by hand. Deletes go BATCH rows at a time, each
batch its own short transaction that first takes the retention advisory lock:
so a large first prune never holds row locks (or a snapshot that keeps vacuum
from cleaning) for long, and two processes never prune at once. Transaction
locks, not session ones, so PgBouncer in transaction mode keeps them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from sqlalchemy import Connection, Engine, text

from crawler.core import config
from crawler.db.crawl import known_names, rollups
from crawler.db.models import Base

BATCH = 1_000
# pg_advisory locks are one bigint space per database: ours is "hostcrawl retention".
LOCK_KEY = 0x686F73745F726574

# The rows past each rule, by their primary key: a delete names its rows by key, the same
# on one server and on a Citus cluster (which cannot run a delete by ctid on a
# distributed table: a ctid is only a place in one shard).
OLD_CHANGES = "SELECT id FROM change_log WHERE at < now() - make_interval(days => :keep)"
OLD_PROBES = (
    "SELECT root FROM wildcard_probes WHERE checked_at < now() - make_interval(days => :keep)"
)
OLD_ROOT_CLAIMS = (
    "SELECT root, minute FROM root_claims WHERE minute < now() - make_interval(mins => :keep)"
)
OLD_HOST_HOURS = (
    "SELECT hour, shard FROM host_hours WHERE hour < now() - make_interval(days => :keep)"
)
OLD_SOURCE_HOURS = (
    "SELECT hour, shard, source FROM source_hours WHERE hour < now() - make_interval(days => :keep)"
)
OLD_WINDOW_ROWS = (
    "SELECT root, hostname FROM trap_window WHERE seen_at < now() - make_interval(days => :keep)"
)
STALE_DEFERRALS = (
    "SELECT root FROM trap_deferrals WHERE checked_at < now() - make_interval(days => :keep)"
)
DEAD_WORKERS = "SELECT name FROM crawl_workers WHERE heartbeat_at < now() - interval '1 day'"
# The dashboard's health row charts the last hour: a few more are kept for a look back.
MINUTES_KEPT = 3
OLD_MINUTES = (
    f"SELECT minute, shard FROM host_minutes WHERE minute < now() - interval '{MINUTES_KEPT} hours'"
)
# kind: (table, its primary key, the rows past retention, the setting that keeps them;
# None = no setting)
KINDS = {
    "change_log": ("change_log", "id", OLD_CHANGES, "CHANGE_LOG_RETENTION_DAYS"),
    "wildcard_probes": ("wildcard_probes", "root", OLD_PROBES, "PROBE_RETENTION_DAYS"),
    "root_claims": (
        "root_claims",
        "root, minute",
        OLD_ROOT_CLAIMS,
        "ROOT_CLAIMS_RETENTION_MINUTES",
    ),
    "host_hours": ("host_hours", "hour, shard", OLD_HOST_HOURS, "HOST_HOURS_RETENTION_DAYS"),
    "source_hours": (
        "source_hours",
        "hour, shard, source",
        OLD_SOURCE_HOURS,
        "HOST_HOURS_RETENTION_DAYS",
    ),
    "trap_window": (
        "trap_window",
        "root, hostname",
        OLD_WINDOW_ROWS,
        "TRAP_WINDOW_RETENTION_DAYS",
    ),
    "trap_deferrals": ("trap_deferrals", "root", STALE_DEFERRALS, "DEFERRAL_RETENTION_DAYS"),
    "crawl_workers": ("crawl_workers", "name", DEAD_WORKERS, None),
    "host_minutes": ("host_minutes", "minute, shard", OLD_MINUTES, None),
}


@dataclass(frozen=True)
class Rules:
    """How much of each kind is kept (days, or minutes for root_claims); 0 = all of it."""

    change_log: int = config.setting("CHANGE_LOG_RETENTION_DAYS").default
    wildcard_probes: int = config.setting("PROBE_RETENTION_DAYS").default
    root_claims: int = config.setting("ROOT_CLAIMS_RETENTION_MINUTES").default
    host_hours: int = config.setting("HOST_HOURS_RETENTION_DAYS").default
    source_hours: int = config.setting("HOST_HOURS_RETENTION_DAYS").default
    trap_window: int = config.setting("TRAP_WINDOW_RETENTION_DAYS").default
    trap_deferrals: int = config.setting("DEFERRAL_RETENTION_DAYS").default

    @classmethod
    def from_values(cls, value_of) -> Rules:
        """The rules from a reader of settings by name (the environment, Scrapy's)."""
        return cls(**{f.name: value_of(KINDS[f.name][3]) for f in fields(cls)})

    @classmethod
    def from_environment(cls) -> Rules:
        return cls.from_values(lambda name: config.from_environment(name, os.environ))


@dataclass(frozen=True)
class Pruned:
    """Rows deleted (or, in a dry run, that would be) per kind."""

    change_log: int = 0
    wildcard_probes: int = 0
    root_claims: int = 0
    host_hours: int = 0
    source_hours: int = 0
    trap_window: int = 0
    trap_deferrals: int = 0
    crawl_workers: int = 0
    host_minutes: int = 0

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))


class Busy(Exception):
    """Another process holds the retention lock: it is pruning now."""


def prune(engine: Engine, rules: Rules = Rules(), dry_run: bool = False) -> Pruned:
    """Forget what is past each rule of `rules`. Waits for a batch of another process to
    end; never prunes at once with it."""
    return _prune(engine, rules, dry_run, wait=True)


def scheduled(engine: Engine, rules: Rules) -> Pruned | None:
    """The schedule's prune: None, deleting nothing, when another process is pruning."""
    try:
        return _prune(engine, rules, dry_run=False, wait=False)
    except Busy:
        return None


def _prune(engine: Engine, rules: Rules, dry_run: bool, wait: bool) -> Pruned:
    run = count if dry_run else delete
    gone = {
        kind: run(engine, kind, {"keep": keep}, wait)
        for kind, keep in ((f.name, getattr(rules, f.name)) for f in fields(rules))
        if keep > 0
    }
    for kind in ("crawl_workers", "host_minutes"):  # kept by a rule of their own
        gone[kind] = run(engine, kind, {}, wait)
    return Pruned(**gone)


def count(engine: Engine, kind: str, params: dict, wait: bool = True) -> int:
    """How many rows of `kind` a prune would delete."""
    _, _, rows, _ = KINDS[kind]
    with engine.connect() as conn:
        return conn.execute(text(f"SELECT count(*) FROM ({rows}) AS r"), params).scalar_one()


# What a delete from these tables returns, and what it moves in crawler.db.crawl.rollups.
ROLLED_UP = {
    "trap_window": ("root", lambda conn, rows: rollups.recount_windows(conn, (r for (r,) in rows))),
}


def delete(engine: Engine, kind: str, params: dict, wait: bool = True) -> int:
    """Delete the rows of `kind`, BATCH at a time under the retention lock; how many went."""
    table, key, rows, _ = KINDS[kind]
    returning, roll_up = ROLLED_UP.get(table, ("1", None))
    statement = text(
        f"DELETE FROM {table} WHERE ({key}) IN ({rows} LIMIT :batch) RETURNING {returning}"
    )
    total = 0
    while True:
        with engine.begin() as conn:
            take_lock(conn, wait)
            deleted = conn.execute(statement, {**params, "batch": BATCH}).all()
            if roll_up and deleted:
                roll_up(conn, deleted)
        gone = len(deleted)
        total += gone
        if gone < BATCH:
            return total


def take_lock(conn: Connection, wait: bool) -> None:
    """The retention lock for this transaction; Busy if taken and not `wait`."""
    if wait:
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": LOCK_KEY})
    elif not conn.execute(
        text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": LOCK_KEY}
    ).scalar_one():
        raise Busy


# What a fresh start keeps: the operators (their accounts) and the schema's version.
KEPT_ON_A_FRESH_START = frozenset({"users", "login_failures"})


def forget_the_crawl(engine: Engine) -> int:
    """Empty every table of the crawl: its hosts (the queue with them), its deny entries and change
    log, and every figure kept beside them (roots, claims, host_hours, source_hours,
    host_minutes, workers, silences), so that a new crawl in this database (a second demo)
    starts its figures from zero; the operators stay. Returns how many hosts went."""
    tables = [t for t in Base.metadata.tables if t not in KEPT_ON_A_FRESH_START]
    with engine.begin() as conn:
        hosts = conn.execute(text("SELECT count(*) FROM hosts")).scalar_one()
        conn.execute(text(f"TRUNCATE {', '.join(tables)}"))
    known_names.forget_all()  # this process's: no name is known any more
    return hosts
