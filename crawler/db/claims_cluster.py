"""The polite claim's walk on a Citus cluster: one shard group at a time, every
statement routed to one worker (docs/design.md, rule 6; docs/scaling.md).

Citus routes a statement by a value of `root`, so a walk of the due roots "in one shard"
needs a value that hashes into that shard: an anchor. `anchors` finds one per shard of
`roots` (a made-up name, never a real root), and the walk calls `due_roots_of_shard`
(migration 0019), a distributed function co-located with `roots` by its anchor: Citus
delegates the call to the worker holding the anchor's shard, whose body reads that
shard's rows. The lock (LOCK_ROOTS) then names the walked roots, all of that shard.

Fairness: each process starts at its own offset in the shard groups (from its worker
name) and the next claim starts at the group after the one the last claim served, so
every group is served in turn whatever is due elsewhere; a group with nothing due (or
every due root held) costs one routed call and the claim tries the next, at most every
group once per call. Due order is oldest-due-first within a group, round robin across
groups: a group's old due roots wait at most one turn of the groups.

The anchors are found once per process and database and found again after
ANCHOR_TTL: a shard move (citus_rebalance) changes nothing for them (Citus delegates to
wherever the shard is now), and after a change of shard count the function still reads
the shard its anchor hashes into now; until the anchors are found again, some shards may
be walked twice a turn and others not at all.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterator

from sqlalchemy import Connection, text

from crawler.db.hostsql import names_param

# Seconds before the anchors are found again (a change of shard count shows by then).
ANCHOR_TTL = 60.0
# Made-up names tried for anchors, per shard: with 32 shards, 64 tries each leave a
# shard without one with odds of (31/32)^2048; the query tries again with more if so.
TRIES_PER_SHARD = 64
ANCHORS = text(
    """
    WITH shards AS (
        SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'roots'::regclass),
    tried AS (
        SELECT 'anchor-' || i AS anchor, i,
               get_shard_id_for_distribution_column('roots', 'anchor-' || i) AS shardid
          FROM generate_series(1, :tries * (SELECT count(*) FROM shards)) AS i)
    SELECT (SELECT t.anchor FROM tried t WHERE t.shardid = s.shardid
                        ORDER BY t.i LIMIT 1)
      FROM shards s ORDER BY s.shardid
    """
)
# Literal anchor (made up here, letters, digits and a dash): Citus delegates a call in a
# transaction only when its distribution argument is a constant.
WALK_SHARD = "SELECT root, most FROM due_roots_of_shard('{anchor}', :concurrency, :walk)"
LOCK_ROOTS = text(
    """
    WITH busy AS MATERIALIZED (
        SELECT q.root, count(*) AS n FROM queue q
         WHERE q.root = ANY(:candidates) AND q.claimed_by IS NOT NULL
           AND q.next_claim_at > now()
         GROUP BY q.root),
    due AS MATERIALIZED (
        SELECT c.root, coalesce(b.n, 0) AS busy
          FROM unnest(:candidates) WITH ORDINALITY AS c(root, i)
          LEFT JOIN busy b ON b.root = c.root
         ORDER BY c.i)
    SELECT due.root FROM due
     WHERE CASE WHEN due.busy < :concurrency
                THEN pg_try_advisory_xact_lock(:lock_space, hashtext(due.root))
                ELSE false END
     LIMIT :roots
    """
).bindparams(*names_param("candidates"))

# Per database URL: (when found, the anchors in shard order).
_ANCHORS: dict[str, tuple[float, list[str]]] = {}
# Per database URL and worker: the group the next claim starts at.
_NEXT_GROUP: dict[tuple[str, str], int] = {}


def anchors(conn: Connection) -> list[str]:
    """One value of `root` per shard of `roots`, in shard order (cached, ANCHOR_TTL)."""
    url = conn.engine.url.render_as_string(hide_password=False)
    found = _ANCHORS.get(url)
    if found is None or time.monotonic() - found[0] > ANCHOR_TTL:
        tries = TRIES_PER_SHARD
        while None in (shard_anchors := list(conn.execute(ANCHORS, {"tries": tries}).scalars())):
            tries *= 4
        found = _ANCHORS[url] = (time.monotonic(), shard_anchors)
    return found[1]


def forget() -> None:
    """Find the anchors again at the next claim (after a change of shard count), and start
    each worker's turn afresh."""
    _ANCHORS.clear()
    _NEXT_GROUP.clear()


def first_group(worker: str, groups: int) -> int:
    """Where a worker's first claim starts in the groups: its own offset, from its name."""
    return zlib.crc32(worker.encode()) % groups


def due_roots_by_group(
    conn: Connection, worker: str, concurrency: int, walk: int
) -> Iterator[dict[str, int]]:
    """Each shard group's due roots ({root: most hosts}, oldest due first, at most `walk`),
    one group at a time in this worker's rotation, skipping groups with none; the group
    after the last one yielded is where the next claim starts."""
    shard_anchors = anchors(conn)
    url = conn.engine.url.render_as_string(hide_password=False)
    key = (url, worker)
    start = _NEXT_GROUP.get(key, first_group(worker, len(shard_anchors)))
    for step in range(len(shard_anchors)):
        group = (start + step) % len(shard_anchors)
        walked = conn.execute(
            text(WALK_SHARD.format(anchor=shard_anchors[group])),
            {"concurrency": concurrency, "walk": walk},
        )
        due = dict(walked.all())
        if due:
            _NEXT_GROUP[key] = group + 1
            yield due


def lock_roots(conn: Connection, due: dict[str, int], n: int, params: dict) -> list[str]:
    """Of one group's due roots, up to n locked (in walk order), skipping roots at their
    concurrency and roots another claim holds."""
    locking = {**params, "candidates": list(due), "roots": n}
    return list(conn.execute(LOCK_ROOTS, locking).scalars())
