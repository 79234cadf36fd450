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
  "found in the last 24 hours, by source"): `count_sources`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import Connection, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import Boolean, DateTime

from crawler.core.outcomes import ALIVE, NETWORK_FAILURES, counts_as_failed, outcome_group
from crawler.db.hostsql import INTS, names_param

# Rows in root order: the order every writer locks roots rows in. `due_now`: the roots'
# new hosts are queued due now by this transaction, so their bound is lowered here too
# (LEAST skips a NULL), not by a second statement over the same rows (lower_next_due).
ADD_TO_ROOTS = text(
    """
    INSERT INTO roots AS r (root, hosts, crawled_ok, failed, next_due_at)
    SELECT t.root, t.hosts, t.ok, t.failed, CASE WHEN :due_now THEN now() END
      FROM unnest(:roots, :hosts, :ok, :failed) AS t(root, hosts, ok, failed) ORDER BY 1
    ON CONFLICT (root) DO UPDATE SET hosts = r.hosts + excluded.hosts,
           crawled_ok = r.crawled_ok + excluded.crawled_ok, failed = r.failed + excluded.failed,
           next_due_at = least(r.next_due_at, excluded.next_due_at)
    """
).bindparams(
    *names_param("roots"),
    *(bindparam(n, type_=INTS) for n in ("hosts", "ok", "failed")),
    bindparam("due_now", type_=Boolean),
)
# Only roots whose bound moves are written: an UPDATE whose WHERE fails locks nothing.
LOWER_NEXT_DUE = text(
    """
    UPDATE roots r SET next_due_at = d.due
      FROM (SELECT * FROM unnest(:roots, :dues) AS t(root, due) ORDER BY root) d
     WHERE r.root = d.root AND (r.next_due_at IS NULL OR r.next_due_at > d.due)
    """
).bindparams(*names_param("roots"), bindparam("dues", type_=ARRAY(DateTime(timezone=True))))
RECOUNT_WINDOWS = text(
    """
    UPDATE roots r SET window_size = w.size, window_failed = w.failed
      FROM (SELECT t.root, count(w.hostname) AS size,
                   count(w.hostname) FILTER (WHERE w.outcome = ANY(:failures)) AS failed
              FROM unnest(:roots) AS t(root)
              LEFT JOIN trap_window w ON w.root = t.root
             GROUP BY t.root) w
     WHERE r.root = w.root
       AND (r.window_size, r.window_failed) IS DISTINCT FROM (w.size, w.failed)
    """
).bindparams(*names_param("roots", "failures"))

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


def count_hosts(
    conn: Connection,
    new: Iterable[str] = (),
    gone: Iterable[tuple[str, str | None]] = (),
    crawled: Iterable[tuple[str, str | None, str | None]] = (),
    due_now: bool = False,
) -> None:
    """Move the roots' counters: `new` hosts' roots, `gone` hosts' (root, outcome), and
    `crawled` hosts' (root, outcome before, outcome now). `due_now`: the rows counted are
    queued due now by this transaction (their roots' next_due_at is lowered to now())."""
    hosts, ok, failed = Counter[str](new), Counter[str](), Counter[str]()
    for root, outcome in gone:
        hosts[root] -= 1
        ok[root] -= outcome in ALIVE
        failed[root] -= counts_as_failed(outcome)
    for root, before, now in crawled:
        ok[root] += (now in ALIVE) - (before in ALIVE)
        failed[root] += counts_as_failed(now) - counts_as_failed(before)
    roots = sorted(r for r in hosts | ok | failed if hosts[r] or ok[r] or failed[r])
    if roots:
        columns = {"hosts": hosts, "ok": ok, "failed": failed}
        params = {name: [counter[r] for r in roots] for name, counter in columns.items()}
        conn.execute(ADD_TO_ROOTS, {"roots": roots, **params, "due_now": due_now})


def lower_next_due(conn: Connection, dated: Iterable[tuple[str, datetime | None]]) -> int:
    """Routable rows' (root, next_claim_at) just written: their roots may be due sooner.
    Rows given no date (None: not routable, or dateless) move nothing. Returns how many
    roots moved."""
    earliest: dict[str, datetime] = {}
    for root, due in dated:
        if due is not None and (root not in earliest or due < earliest[root]):
            earliest[root] = due
    if not earliest:
        return 0
    roots = sorted(earliest)
    dues = [earliest[r] for r in roots]
    return conn.execute(LOWER_NEXT_DUE, {"roots": roots, "dues": dues}).rowcount


def recount_windows(conn: Connection, roots: Iterable[str]) -> None:
    """The trap windows of these roots changed: count their size and failures again."""
    touched = sorted(set(roots))
    if touched:
        failures = sorted(NETWORK_FAILURES)
        conn.execute(RECOUNT_WINDOWS, {"roots": touched, "failures": failures})


def count_hours(
    conn: Connection, discovered: int = 0, crawled: Iterable[tuple[str, str]] = ()
) -> None:
    """This hour's figures: hosts `discovered`, and `crawled` (hostname, outcome)."""
    counts = Counter({"discovered": discovered})
    answered: list[str] = []
    for hostname, outcome in crawled:
        counts[GROUP_COLUMN[outcome_group(outcome)]] += 1
        if outcome == "OK" and len(answered) < LAST_OK:
            answered.append(hostname)
    if any(counts.values()):
        params = {column: counts[column] for column in HOUR_COUNTS}
        conn.execute(ADD_TO_HOUR, {**params, "last_ok": answered or None})


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
