"""The polite claim on a Citus cluster: one shard group at a time, each claim one call
that Citus delegates to the group's worker (docs/design.md, rule 6; docs/scaling.md).

Citus routes a statement by a value of `root`, so a claim "in one shard" needs a value
that hashes into that shard: an anchor. `anchors` finds one per shard of `roots` (a
made-up name, never a real root), and the claim calls `claim_in_shard` (migrations 0020
and 0021), a distributed function co-located with `roots` by its anchor: Citus delegates
the call to the worker holding the anchor's shard, whose body runs the walk, the lock and
the claim there on that shard group's relations, as plain Postgres. Sent to the coordinator
as routed statements instead, the claim (modifying CTEs) was planned as eight
distributed subplans, a round trip each.

The statements are written here (WALK_IN_SHARD, LOCK_IN_SHARD) and, for the claim, in
crawler.db.claims, shared with one server: `in_shard` turns its text into the
function's form (`{queue}` for the relation, `$1` for `:locked`...).

Fairness: each process starts at its own offset in the shard groups (from its worker
name) and the next claim starts at the group after the one the last claim served, so
every group is served in turn whatever is due elsewhere; a group with nothing due (or
every due root held) costs one delegated call and the claim tries the next, at most
every group once per call. Due order is oldest-due-first within a group, round robin
across groups: a group's old due roots wait at most one turn of the groups.

The anchors are found once per process and database and found again after
ANCHOR_TTL: a shard move (citus_rebalance) changes nothing for them (Citus delegates to
wherever the shard is now), and after a change of shard count the function still works
on the shard its anchor hashes into now; until the anchors are found again, some shards
may be served twice a turn and others not at all.
"""

from __future__ import annotations

import re
import time
import zlib
from functools import cache

from sqlalchemy import Connection, text

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
CLAIM_IN_SHARD = (
    "SELECT kind, name FROM claim_in_shard('{anchor}', :walk_sql, :lock_sql, :claim_sql,"
    " :n, :walk, :walk_most, :concurrency, :budget, :lock_space, :lease, :worker)"
)
# The function's statements: `{roots}`, `{queue}`, `{root_claims}` are the shard group's
# relations. The walk: a page of the group's due roots, oldest due first ($1 concurrency,
# $2 the page's roots, $3 the roots before it: the function walks on until the locked
# roots have room for the batch, each page twice the last, as crawler.db.claims does).
WALK_IN_SHARD = """
    SELECT array_agg(w.root ORDER BY w.next_due_at), array_agg(w.most ORDER BY w.next_due_at)
      FROM (SELECT r.root, least(r.hosts, $1)::int AS most, r.next_due_at FROM {roots} r
             WHERE r.next_due_at <= now() AND (r.held_until IS NULL OR r.held_until <= now())
             ORDER BY r.next_due_at LIMIT $2 OFFSET $3) w
"""
# Of the locked roots (a CTE `locked`: root, its room — at most its hosts and the
# concurrency, less its claims running — and walk order i), the first whose room fills
# the claim ({wanted}) with a quarter to spare, as a root may have fewer hosts due than
# room (rows dated later): the claim's work grows with the roots it looks into. The rest
# stay locked, unused, until it ends. Counted without the running claims, a batch among
# roots with a claim running came back half full.
FILLING = """filling AS (
        SELECT root, most, i FROM (
            SELECT root, most, i, sum(most) OVER (ORDER BY i) - most AS before
              FROM locked) f
         WHERE before < {wanted} + {wanted} / 4)"""
# The lock: of the walked roots ($1, in walk order, $2 the most hosts each can give: its
# hosts, at most the concurrency, $3), up to $5 locked, skipping roots whose running
# claims leave no room and roots another claim holds (advisory locks in $4's space); of
# those, FILLING's, and their room. The fences and the CASE as in
# crawler.db.claims.WALK_AND_LOCK: a lock only on a root that is then returned.
LOCK_IN_SHARD = f"""
    WITH busy AS MATERIALIZED (
        SELECT q.root, count(*) AS n FROM {{queue}} q
         WHERE q.root = ANY($1) AND q.claimed_by IS NOT NULL AND q.next_claim_at > now()
         GROUP BY q.root),
    due AS MATERIALIZED (
        SELECT c.root, c.most, c.i, coalesce(b.n, 0) AS busy
          FROM unnest($1, $2) WITH ORDINALITY AS c(root, most, i)
          LEFT JOIN busy b ON b.root = c.root
         ORDER BY c.i),
    locked AS MATERIALIZED (
        SELECT due.root, due.most - due.busy AS most, due.i FROM due
         WHERE CASE WHEN due.busy < due.most
                    THEN pg_try_advisory_xact_lock($4, hashtext(due.root))
                    ELSE false END
         LIMIT $5),
    {FILLING.format(wanted="$5")}
    SELECT array_agg(root ORDER BY i), sum(most)::int FROM filling
"""
# The claim's parameters, in the order the function passes them ($1...).
CLAIM_PARAMETERS = ("locked", "concurrency", "budget", "n", "lease", "worker")
_BIND = re.compile(r"(?<![:\w]):(\w+)")
_RELATION = re.compile(r"\b(FROM|UPDATE|INTO|JOIN)\s+(queue|roots|root_claims)\b")

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


@cache
def in_shard(statement: str) -> str:
    """A claim statement's text in claim_in_shard's form: its relations as `{queue}`...,
    its bind parameters as $1... in CLAIM_PARAMETERS' order (once per text)."""
    positional = _BIND.sub(lambda m: f"${CLAIM_PARAMETERS.index(m[1]) + 1}", statement)
    return _RELATION.sub(lambda m: f"{m[1]} {{{m[2]}}}", positional)


def claim_by_group(conn: Connection, worker: str, claim_sql: str, params: dict) -> list:
    """The first shard group in this worker's turn that yields a claim: its rows (kind,
    name), or none when no group had a root to claim from; the group after the one that
    yielded is where the next claim starts."""
    shard_anchors = anchors(conn)
    url = conn.engine.url.render_as_string(hide_password=False)
    key = (url, worker)
    start = _NEXT_GROUP.get(key, first_group(worker, len(shard_anchors)))
    statements = {"walk_sql": WALK_IN_SHARD, "lock_sql": LOCK_IN_SHARD, "claim_sql": claim_sql}
    for step in range(len(shard_anchors)):
        group = (start + step) % len(shard_anchors)
        claimed = conn.execute(
            text(CLAIM_IN_SHARD.format(anchor=shard_anchors[group])),
            {**params, **statements, "worker": worker},
        ).all()
        if claimed:
            _NEXT_GROUP[key] = group + 1
            return claimed
    return []
