"""The claim on a Citus cluster (docs/design.md, rule 6; docs/scaling.md): shard group
after shard group, each group's part one call that Citus delegates to the group's worker,
until the batch is full. One server's claim is crawler.db.deployments.claims_one_server;
crawler.db.crawl.claims picks one per database and holds what both share.

Citus runs a statement that locks rows within one shard group, and routes it by a value
of `root`, so a claim "in one group" needs a value that hashes into the group's shard:
an anchor. `anchors` finds one per shard of `roots` (a made-up name, never a real root),
and the polite claim calls `claim_in_shard` (crawler/db/functions), a distributed function
co-located with `roots` by its anchor: Citus delegates the call to the worker holding
the anchor's shard, whose body walks the group's due roots, locks them and claims there
on the group's shards, as plain Postgres, in one round trip. Its statements are written
out in its file, with the rules of one server's (tests/unit/test_claim_in_shard_text.py).

Filling: most due roots have a host or two, spread over every group, so one group's due
roots rarely fill a batch (with 32 groups, a thirty-second of the due roots). A claim
goes on to the next group with what is left of its batch, each group at most once a
claim, until the batch is full or it has been round every group. Claims never wait on
each other (rows with SKIP LOCKED, roots with try-locks, a group whose shards are locked
passed over); the roots rows a claim settles can wait on a finish's rollups, and a claim
that wraps round the ring takes groups out of shard order, the one lock order of every
writer (crawler.db.deployments.shard_groups): a deadlock with a finish is then possible,
broken by Postgres or Citus (deadlock detected, either way) and the claim run again
(retry_conflicts). Stopping at the ring's end instead would leave a claim short once a
turn, and a short claim makes the spider wait for a poll.

Fairness: each process starts at its own offset in the groups (from its worker name),
and the next claim starts at the group after the last one that gave it hosts, so every
group is served in turn whatever is due elsewhere. Due order is oldest due first within
a group, round robin across groups: a group's old due roots wait at most one turn.

The anchors are found once per process and database and found again after ANCHOR_TTL: a
shard move (citus_rebalance) changes nothing for them (Citus delegates to wherever the
shard is now), and after a change of shard count the function still works on the shard
its anchor hashes into now; until the anchors are found again, some shards may be served
twice a turn and others not at all.
"""

from __future__ import annotations

import re
import time
import zlib

from sqlalchemy import Connection, text

from crawler.db.server.sql_pieces import UNDER_ROOT, filled, names_param, under_an_entry

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
ANCHOR = re.compile(r"anchor-\d+")
# Citus delegates a call in a transaction only when its distribution argument is a
# constant, so the anchor is a literal (one of ANCHORS', checked against ANCHOR).
CLAIM_IN_SHARD = (
    "SELECT kind, name FROM claim_in_shard('{anchor}', :n, :walk, :walk_most,"
    " :concurrency, :budget, :lock_space, :lease, :worker)"
)

# The bare claim (the DNS audit's): the roots of the n oldest due hosts and their shard
# groups, read on every shard with no lock; then the claim within one group's roots
# (`:group`, which routes it), group after group.
DUE_ROOTS = f"""
    SELECT q.root, get_shard_id_for_distribution_column('roots', q.root) FROM hosts q
     WHERE q.status_reason IS NULL AND q.denied_by IS NULL
       AND q.next_claim_at <= now() {{under}}
       AND NOT {under_an_entry("q")}
     ORDER BY q.next_claim_at
     LIMIT :n
"""
CLAIM_IN_GROUP = f"""
    WITH due AS (
        SELECT q.hostname FROM hosts q
         WHERE q.status_reason IS NULL AND q.denied_by IS NULL
           AND q.next_claim_at <= now() AND q.root = ANY(:group) {{under}}
           AND NOT {under_an_entry("q", scope="AND d.root = ANY(:group)")}
         ORDER BY q.next_claim_at
         LIMIT :n
           FOR UPDATE OF q SKIP LOCKED)
    UPDATE hosts q
       SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
      FROM due WHERE q.root = ANY(:group) AND q.hostname = due.hostname
    RETURNING q.hostname
"""
# {under: the statement}: every due host, or one root's and below.
BARE_DUE_ROOTS = {
    under: text(filled(DUE_ROOTS, under=UNDER_ROOT if under else "")) for under in (False, True)
}
BARE_CLAIM_IN_GROUP = {
    under: text(filled(CLAIM_IN_GROUP, under=UNDER_ROOT if under else "")).bindparams(
        *names_param("group")
    )
    for under in (False, True)
}

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


def claim_in_shard(anchor: str):
    """The delegated call of claim_in_shard for the group of `anchor` (one of ANCHORS')."""
    if not ANCHOR.fullmatch(anchor):
        raise ValueError(f"{anchor!r} is not an anchor: it would go into the SQL as it is")
    return text(filled(CLAIM_IN_SHARD, anchor=anchor))


class Cluster:
    """The claim strategy of a Citus cluster (crawler.db.deployments.ClaimStrategy)."""

    def polite(self, conn: Connection, params: dict) -> list:
        """The groups in this worker's turn, each asked for what the batch still lacks,
        until it is full or every group was asked once: the rows (kind, name). The group
        after the last one that gave hosts is where the next claim starts."""
        shard_anchors = anchors(conn)
        key = (conn.engine.url.render_as_string(hide_password=False), params["worker"])
        start = _NEXT_GROUP.get(key, first_group(params["worker"], len(shard_anchors)))
        rows: list = []
        wanted = params["n"]
        for step in range(len(shard_anchors)):
            group = (start + step) % len(shard_anchors)
            call = claim_in_shard(shard_anchors[group])
            claimed = conn.execute(call, {**params, **walk_for(params, wanted)}).all()
            rows += claimed
            hosts = sum(kind == "host" for kind, _ in claimed)
            if hosts:
                _NEXT_GROUP[key] = group + 1
            wanted -= hosts
            if wanted <= 0:
                break
        return rows

    def bare(self, conn: Connection, params: dict) -> list[str]:
        """The groups of the n oldest due hosts' roots, the oldest host's first, each
        asked for what the batch still lacks, until it is full."""
        under = "root" in params
        due = conn.execute(BARE_DUE_ROOTS[under], params).all()
        taken: list[str] = []
        for group in groups_in_due_order(due):
            wanted = {**params, "n": params["n"] - len(taken), "group": group}
            taken += conn.execute(BARE_CLAIM_IN_GROUP[under], wanted).scalars()
            if len(taken) >= params["n"]:
                break
        return taken


def walk_for(params: dict, wanted: int) -> dict:
    """A group's part of the claim: `wanted` hosts, and the walk scaled to them."""
    walk, most = params["walk_per_root"], params["walk_most_per_root"]
    return {"n": wanted, "walk": wanted * walk, "walk_most": wanted * most}


def groups_in_due_order(due: list) -> list[list[str]]:
    """Due rows (root, shard) as each shard's roots, the shard of the first row first."""
    groups: dict[int, dict[str, None]] = {}
    for root, shard in due:
        groups.setdefault(shard, {})[root] = None
    return [list(roots) for roots in groups.values()]
