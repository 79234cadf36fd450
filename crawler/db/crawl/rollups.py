"""What the writers keep beside their rows: the roots' counters and due dates, the hourly figures.

Every statement that inserts or deletes hosts, records outcomes, dates queue rows or
changes trap windows calls one of these in its own transaction, with the rows it
changed (its RETURNING). They were statement triggers until migration 0015: Citus
refuses triggers on distributed tables, and one code path serves one server and a
cluster alike.

- roots.hosts / crawled_ok / failed: `count_hosts` (new, gone and re-crawled hosts);
- roots.next_due_at, a lower bound of the earliest date of the root's routable rows
  (the claim walks roots in that order): `lower_next_due`;
- roots.window_size / window_failed: `recount_windows`;
- host_hours, hosts discovered and crawled per hour and writer shard, with the last
  hosts that answered (the self-check's canaries): `count_hours`;
- source_hours, hosts discovered per hour, writer shard and source group (the strip's
  "found in the last 24 hours, by source"): `count_sources`;
- host_minutes, hosts crawled (failures by layer) and discovered per minute and writer
  shard, with the time of the last answer (the dashboard's health row): with
  `count_hours`, in the same write; and the tries an outage held back (`count_held`).

Each statement runs once per shard group of its roots (crawler.db.deployments'
`root_groups`: one group on one server), so that Citus routes every run to one worker.
A writer of several statements gathers their rows in one `Rollups` and writes it once,
before it commits: the rollups of the crawl's finish were six statements of its ten,
and a root's counters and its date two row versions (bench/README.md, growth.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Connection, bindparam, text

from crawler.core.outcomes import (
    ALIVE,
    LAYERS,
    NETWORK_FAILURES,
    counts_as_failed,
    layer_of,
    outcome_group,
)
from crawler.db.deployments import DUES, deployment_of, root_groups
from crawler.db.server.sql_pieces import INTS, names_param

# Rows in root order: the order every writer locks roots rows in. A root whose counters
# move takes its rows' earliest date in the same row version (`dues`; NULL: none).
# Lowering the dates alone and recounting the windows are each deployment's
# (crawler.db.deployments).
ADD_TO_ROOTS = text(
    """
    INSERT INTO roots AS r (root, hosts, crawled_ok, failed, next_due_at)
    SELECT * FROM unnest(:roots, :hosts, :ok, :failed, :dues) AS t ORDER BY 1
    ON CONFLICT (root) DO UPDATE SET hosts = r.hosts + excluded.hosts,
           crawled_ok = r.crawled_ok + excluded.crawled_ok, failed = r.failed + excluded.failed,
           next_due_at = CASE WHEN r.next_due_at > excluded.next_due_at
                                OR r.next_due_at IS NULL THEN excluded.next_due_at
                              ELSE r.next_due_at END
    """
).bindparams(
    *names_param("roots"),
    *(bindparam(n, type_=INTS) for n in ("hosts", "ok", "failed")),
    DUES,
)

HOUR_SHARDS = 8  # a row per hour and backend (pid modulo this): concurrent writers apart
LAST_OK = 3  # hosts that answered, newest first: the self-check's canaries
HOUR_COUNTS = ("discovered", "ok", "http", "network", "ignored")
GROUP_COLUMN = {"OK": "ok", "HTTP": "http", "NETWORK": "network", "IGNORED": "ignored"}
ADD_TO_HOUR = text(
    f"""
    INSERT INTO host_hours AS t (hour, shard, {", ".join(HOUR_COUNTS)}, last_ok)
    VALUES (date_trunc('hour', now(), 'UTC'), pg_backend_pid() % {HOUR_SHARDS},
            {", ".join(f":{c}" for c in HOUR_COUNTS)}, :last_ok)
    ON CONFLICT (hour, shard) DO UPDATE
       SET {", ".join(f"{c} = t.{c} + excluded.{c}" for c in HOUR_COUNTS)},
           last_ok = (coalesce(excluded.last_ok, ARRAY[]::text[])
                      || coalesce(t.last_ok, ARRAY[]::text[]))[1:{LAST_OK}]
    """
).bindparams(*names_param("last_ok"))


# The health row's minute: crawled and discovered, failures by layer (one column each), and
# the tries an outage held back among those failures (not settled: not in crawled).
MINUTE_COUNTS = ("crawled", "discovered", *(layer.lower() for layer in LAYERS), "held")
ADD_TO_MINUTE = text(
    f"""
    INSERT INTO host_minutes AS t (minute, shard, {", ".join(MINUTE_COUNTS)}, last_ok_at)
    VALUES (date_trunc('minute', now(), 'UTC'), pg_backend_pid() % {HOUR_SHARDS},
            {", ".join(f":{c}" for c in MINUTE_COUNTS)},
            CASE WHEN :answered THEN now() END)
    ON CONFLICT (minute, shard) DO UPDATE
       SET {", ".join(f"{c} = t.{c} + excluded.{c}" for c in MINUTE_COUNTS)},
           last_ok_at = greatest(t.last_ok_at, excluded.last_ok_at)
    """
)


class Rollups:
    """What one transaction's statements move in roots, host_hours and host_minutes,
    gathered, then written at once (`write`): a statement per table, not one per statement
    of the writer, and one row version for a root whose counters and date both move."""

    def __init__(self) -> None:
        self.hosts, self.ok, self.failed = Counter[str](), Counter[str](), Counter[str]()
        self.earliest: dict[str, datetime] = {}
        self.hours = Counter[str]()
        self.minute = Counter[str]()
        self.answered: list[str] = []

    def count_hosts(
        self,
        new: Iterable[str] = (),
        gone: Iterable[tuple[str, str | None]] = (),
        crawled: Iterable[tuple[str, str | None, str | None]] = (),
    ) -> None:
        """The roots' counters: `new` hosts' roots, `gone` hosts' (root, outcome), and
        `crawled` hosts' (root, outcome before, outcome now)."""
        for root in new:
            self.hosts[root] += 1
        for root, outcome in gone:
            self.hosts[root] -= 1
            self.ok[root] -= outcome in ALIVE
            self.failed[root] -= counts_as_failed(outcome)
        for root, before, now in crawled:
            self.ok[root] += (now in ALIVE) - (before in ALIVE)
            self.failed[root] += counts_as_failed(now) - counts_as_failed(before)

    def lower_next_due(self, dated: Iterable[tuple[str, datetime | None]]) -> None:
        """Routable rows' (root, next_claim_at) just written: their roots may be due
        sooner. Rows given no date (None: not routable, or dateless) move nothing."""
        for root, due in dated:
            if due is not None and (root not in self.earliest or due < self.earliest[root]):
                self.earliest[root] = due

    def count_hours(self, discovered: int = 0, crawled: Iterable[tuple[str, str]] = ()) -> None:
        """This hour's figures: hosts `discovered`, and `crawled` (hostname, outcome)."""
        self.hours["discovered"] += discovered
        self.minute["discovered"] += discovered
        for hostname, outcome in crawled:
            self.hours[GROUP_COLUMN[outcome_group(outcome)]] += 1
            self.minute["crawled"] += 1
            self.minute["answered"] += outcome in ALIVE
            layer = layer_of(outcome)
            if layer is not None:
                self.minute[layer.lower()] += 1
            if outcome == "OK" and len(self.answered) < LAST_OK:
                self.answered.append(hostname)

    def count_held(self, outcomes: Iterable[str | None]) -> None:
        """This minute's tries an outage held back (not settled): each a failure of its
        layer, as the banner counts them, and one held try."""
        for outcome in outcomes:
            layer = layer_of(outcome)
            if layer is not None:
                self.minute[layer.lower()] += 1
                self.minute["held"] += 1

    def write(self, conn: Connection) -> int:
        """Write what was gathered, and start again empty. Returns how many roots the
        dates alone wrote: moved, or given rows due now (a root whose counters move takes
        its date with them)."""
        hosts, ok, failed, earliest = self.hosts, self.ok, self.failed, self.earliest
        touched = set(hosts) | set(ok) | set(failed)  # Counter | would drop the negative
        counted = [r for r in touched if hosts[r] or ok[r] or failed[r]]
        columns = {"hosts": hosts, "ok": ok, "failed": failed}
        for group in root_groups(conn, counted):
            params = {name: [counter[r] for r in group] for name, counter in columns.items()}
            dues = [earliest.pop(r, None) for r in group]
            conn.execute(ADD_TO_ROOTS, {"roots": group, **params, "dues": dues})
        moved = 0
        lower = deployment_of(conn).lower_next_due
        for group in root_groups(conn, earliest):
            dues = [earliest[r] for r in group]
            moved += conn.execute(lower, {"roots": group, "dues": dues}).rowcount
        if any(self.hours.values()):
            params = {column: self.hours[column] for column in HOUR_COUNTS}
            conn.execute(ADD_TO_HOUR, {**params, "last_ok": self.answered or None})
        if any(self.minute.values()):
            minute = {column: self.minute[column] for column in MINUTE_COUNTS}
            conn.execute(ADD_TO_MINUTE, {**minute, "answered": self.minute["answered"] > 0})
        self.__init__()
        return moved


def count_hosts(
    conn: Connection,
    new: Iterable[str] = (),
    gone: Iterable[tuple[str, str | None]] = (),
    crawled: Iterable[tuple[str, str | None, str | None]] = (),
    due_now: bool = False,
) -> None:
    """Move the roots' counters now (Rollups.count_hosts). `due_now`: the `new` hosts are
    queued due now by this transaction, so their roots take its now() as their date in
    the same row version (now() is the transaction's: the rows' own date to the tick)."""
    new = list(new)
    pending = Rollups()
    pending.count_hosts(new, gone, crawled)
    if due_now and new:
        stamp = conn.execute(text("SELECT now()")).scalar_one()
        pending.lower_next_due((root, stamp) for root in new)
    pending.write(conn)


def lower_next_due(conn: Connection, dated: Iterable[tuple[str, datetime | None]]) -> int:
    """Lower the roots' dates now (Rollups.lower_next_due). Returns how many were written."""
    pending = Rollups()
    pending.lower_next_due(dated)
    return pending.write(conn)


def recount_windows(conn: Connection, roots: Iterable[str]) -> None:
    """The trap windows of these roots changed: count their size and failures again."""
    failures = sorted(NETWORK_FAILURES)
    statement = deployment_of(conn).recount_windows
    for group in root_groups(conn, roots):
        conn.execute(statement, {"roots": group, "failures": failures})


def count_hours(
    conn: Connection, discovered: int = 0, crawled: Iterable[tuple[str, str]] = ()
) -> None:
    """This hour's figures now (Rollups.count_hours)."""
    pending = Rollups()
    pending.count_hours(discovered, crawled)
    pending.write(conn)


# '' is no source group (a seed, an entry's own row): a key column cannot be NULL.
ADD_TO_SOURCE_HOUR = text(
    f"""
    INSERT INTO source_hours AS t (hour, shard, source, discovered)
    SELECT date_trunc('hour', now(), 'UTC'), pg_backend_pid() % {HOUR_SHARDS}, s, n
      FROM unnest(:sources, :counts) AS u(s, n) ORDER BY s
    ON CONFLICT (hour, shard, source) DO UPDATE SET discovered = t.discovered + excluded.discovered
    """
).bindparams(*names_param("sources"), bindparam("counts", type_=INTS))


def count_sources(conn: Connection, sources: Iterable[str | None]) -> None:
    """This hour's discoveries by source group: one `sources` item per new host."""
    counted = Counter(source or "" for source in sources)
    if counted:
        groups = sorted(counted)
        conn.execute(
            ADD_TO_SOURCE_HOUR, {"sources": groups, "counts": [counted[g] for g in groups]}
        )
