"""Claiming due hosts (docs/design.md, rule 6): SKIP LOCKED, a lease, never under a deny entry.

A claim moves the rows' `next_claim_at` forward by the lease: if the worker
dies, they come back on their own when it runs out.

The crawl claims politely (`claim_polite`): per root, at most
`concurrency` hosts claimed and unfinished across all workers, at most `budget`
claimed per rolling hour, and a batch spread over roots. The roots table
(migration 0006) orders the roots by their oldest due host, so a root with
100,000 due hosts costs a claim what a root with one does. The bare `claim`
(no per-root limits) is what the DNS audit uses: it fetches no page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from functools import reduce

from sqlalchemy import Connection, Engine, text

from crawler.db import claims_cluster, cluster, rollups
from crawler.db.hostsql import names_below, names_param, under_params, unpinned
from crawler.db.retry import retry_conflicts

DEFAULT_LEASE = timedelta(minutes=10)
DEFAULT_CONCURRENCY = 2
DEFAULT_BUDGET = 3600

# A deny entry above the row (its own row is routable, so only its parents can be one),
# at or under the row's root: a join on root, which Citus runs within a shard. An entry
# above a root (a forced bare suffix) lives in another shard: a host saved under one by a
# worker that had not heard of it yet is refused by the blacklist middleware before
# download, and its row leaves routing there. {scope} narrows d to the claim's roots.
UNDER_AN_ENTRY = """EXISTS (
           SELECT 1 FROM queue d
            WHERE d.root = {row}.root {scope}
              AND d.hostname = ANY((host_parents({row}.hostname))[2:])
              AND d.status_reason IS NOT NULL)"""
# Routable and due, under no deny entry. {under} narrows it to one root.
DUE = f"""
    SELECT q.hostname FROM queue q
     WHERE q.status_reason IS NULL AND q.denied_by IS NULL
       AND q.next_claim_at <= now() {{under}}
       AND NOT {UNDER_AN_ENTRY.format(row="q", scope="")}
     ORDER BY q.next_claim_at
     LIMIT :n
"""
UNDER_ROOT = f"AND (q.hostname = :root OR ({names_below('q.hostname')}))"
CLAIM = """
    WITH due AS ({due} FOR UPDATE OF q SKIP LOCKED)
    UPDATE queue q
       SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
      FROM due WHERE q.hostname = due.hostname
    RETURNING q.hostname
"""
CLAIM_ALL = text(CLAIM.format(due=DUE.format(under="")))
CLAIM_UNDER = text(CLAIM.format(due=DUE.format(under=UNDER_ROOT)))
DUE_UNDER = text(DUE.format(under=UNDER_ROOT))
DUE_ALL = text(DUE.format(under=""))
# On a cluster the bare claim reads the due rows' roots first (every shard, no lock), then
# locks and claims within one shard group's roots (:group), as the polite claim does.
GROUP_PINS = {
    "AND q.next_claim_at <= now()": "AND q.next_claim_at <= now() AND q.root = ANY(:group)",
    "WHERE d.root = q.root": "WHERE d.root = q.root AND d.root = ANY(:group)",
    "WHERE q.hostname = due.": "WHERE q.root = ANY(:group) AND q.hostname = due.",
}
CLAIM_IN_GROUP = {
    under: text(
        reduce(lambda sql, pin: sql.replace(*pin), GROUP_PINS.items(), claim.text)
    ).bindparams(*names_param("group"))
    for under, claim in ((False, CLAIM_ALL), (True, CLAIM_UNDER))
}
# A root held over its budget has nothing claimable until then: not pending.
NOT_HELD = """AND NOT EXISTS (SELECT 1 FROM roots r
                         WHERE r.root = q.root AND r.held_until > now())"""
CRAWL_PENDING = text(
    f"""
    SELECT EXISTS (SELECT 1 FROM queue
                    WHERE status_reason IS NULL AND denied_by IS NULL
                      AND next_claim_at > now() AND next_claim_at <= now() + :lease
                      AND claimed_by IS NOT NULL)
        OR EXISTS ({DUE.format(under=NOT_HELD)})
    """
)

# -- polite claims -----------------------------------------------------------------
#
# A walk that locks the roots to claim from (oldest due first, skipping roots another
# claim holds: two workers never take from one root at once), then the claim, which
# starts after those locks, so its snapshot sees every claim committed before: its count
# of a root's unexpired claims is exact.
#
# On a Citus cluster every statement must name one shard group's roots (`root =
# ANY(:roots)` with roots of one shard: Citus routes it to one worker), so a claim is one
# call of a function Citus delegates to one shard group's worker, which walks, locks and
# claims there, the groups served in turn (crawler.db.claims_cluster); its claim is
# CLAIM_FROM_ROOTS. On one server the walk and the lock are one lazy statement a page
# (WALK_AND_LOCK), and the claim is the same statement without the filters that only
# name the shard: measured, the cluster's form costs one server a third of its claims/s
# (bench/README.md).
#
# The locks are bounded by :roots whatever the plan: the candidates come in walk order
# through a materialized CTE (a fence the planner cannot flatten or push the lock
# into), and the outer query checks a root's claims before it tries the lock (CASE fixes
# the order), so a lock is taken only on a root that is then returned. Flattened, the
# lock once ran on every due root before the sort and the LIMIT: one advisory lock per
# due root, "out of shared memory" at ~6,000 due roots (a seed list of many domains).
# The walk's own LIMIT keeps a seq scan's sort a top-N heapsort.
# One page of the walk and its lock (walk_and_lock runs a page after another).
WALK_AND_LOCK = text(
    f"""
    WITH due AS MATERIALIZED (
        SELECT w.root, w.most, row_number() OVER () AS i FROM (
            SELECT r.root, least(r.hosts, :concurrency) AS most FROM roots r
             WHERE r.next_due_at <= now() AND (r.held_until IS NULL OR r.held_until <= now())
             ORDER BY r.next_due_at
             LIMIT :walk OFFSET :skip) w),
    locked AS MATERIALIZED (
        SELECT due.root, due.most - busy.n AS most, due.i FROM due
         CROSS JOIN LATERAL (
               SELECT count(*) AS n FROM queue q
                WHERE q.root = due.root AND q.claimed_by IS NOT NULL
                  AND q.next_claim_at > now()) busy
         WHERE CASE WHEN busy.n < due.most
                    THEN pg_try_advisory_xact_lock(:lock_space, hashtext(due.root))
                    ELSE false END
         LIMIT :roots),
    {claims_cluster.FILLING.format(wanted=":roots")}
    SELECT f.root, f.most, (SELECT count(*) FROM due) AS walked
      FROM (SELECT) AS page LEFT JOIN filling f ON true ORDER BY f.i
    """
)
# The oldest due rows, for a claim that found no root: a row dated by a hand-made change
# (not through crawler.db.rollups) leaves its root's bound too late, and its root would
# never be claimed. Bounded by the batch: an index range scan of ix_queue_due.
OLDEST_DUE = text(
    """
    SELECT root, next_claim_at FROM queue
     WHERE status_reason IS NULL AND denied_by IS NULL AND next_claim_at <= now()
     ORDER BY next_claim_at LIMIT :n
    """
)
# How far down the due roots one claim's first page walks, in roots per root it wants
# (past roots at their concurrency and roots another claim holds), and how far its pages
# go at most.
WALK_PER_ROOT = 4
WALK_MOST_PER_ROOT = 64
# The transaction-scoped advisory locks of WALK_AND_LOCK and claims_cluster.LOCK_ROOTS
# (one per root): in memory only, unlike row locks, and held until the claim commits. A
# hash collision only skips a root.
LOCK_SPACE = 1212

# The polite claim's deny check, within the locked roots' shard group.
ENTRY_IN_ROOT = UNDER_AN_ENTRY.replace("{scope}", "AND d.root = ANY(:locked)")
NEAREST_ENTRY_IN_ROOT = """
    (SELECT d.hostname FROM queue d
      WHERE d.root = q.root AND d.root = ANY(:locked)
        AND d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
        AND d.status_reason IS NOT NULL
      ORDER BY length(d.hostname) DESC LIMIT 1)
"""
# A claim counts while its lease runs: claimed_by IS NOT NULL AND next_claim_at > now().
# Each root's rows are taken up to the constant concurrency, then ranked against its
# room: a LIMIT that varies per root makes Postgres plan the LATERAL far slower.
# The budget counts minutes that overlap the last hour, so no rolling hour holds more.
CLAIM_FROM_ROOTS = text(
    f"""
    WITH busy AS (
        SELECT root, count(*) AS n FROM queue
         WHERE root = ANY(:locked) AND claimed_by IS NOT NULL AND next_claim_at > now()
         GROUP BY root),
    used AS (
        SELECT root, sum(claimed) AS n, min(minute) AS first FROM root_claims
         WHERE root = ANY(:locked) AND minute > now() - interval '61 minutes'
         GROUP BY root),
    room AS (
        SELECT l.root, coalesce(u.n, 0) AS used, u.first,
               least(:concurrency - coalesce(b.n, 0), :budget - coalesce(u.n, 0)) AS room
          FROM unnest(:locked) AS l(root)
          LEFT JOIN busy b ON b.root = l.root LEFT JOIN used u ON u.root = l.root),
    found AS (
        SELECT r.root, r.room, p.hostname, p.next_claim_at,
               row_number() OVER (PARTITION BY r.root ORDER BY p.next_claim_at) AS rank
          FROM room r CROSS JOIN LATERAL (
               SELECT q.hostname, q.next_claim_at FROM queue q
                WHERE q.root = r.root AND q.root = ANY(:locked)
                  AND q.status_reason IS NULL AND q.denied_by IS NULL
                  AND q.next_claim_at <= now() AND NOT {ENTRY_IN_ROOT.format(row="q")}
                ORDER BY q.next_claim_at LIMIT :concurrency
                  FOR UPDATE OF q SKIP LOCKED) p
         WHERE r.room > 0),
    picked AS (
        SELECT hostname FROM found WHERE rank <= room ORDER BY next_claim_at LIMIT :n),
    healed AS (
        UPDATE queue q SET denied_by = {NEAREST_ENTRY_IN_ROOT}
          FROM (SELECT c.hostname FROM room r CROSS JOIN LATERAL (
                    SELECT c.hostname FROM queue c
                     WHERE c.root = r.root AND c.root = ANY(:locked)
                       AND c.status_reason IS NULL AND c.denied_by IS NULL
                       AND c.next_claim_at <= now() AND {ENTRY_IN_ROOT.format(row="c")}
                     ORDER BY c.next_claim_at LIMIT :n
                       FOR UPDATE OF c SKIP LOCKED) c
                 WHERE r.room > 0 AND r.root NOT IN (SELECT root FROM found)) AS covered
         WHERE q.root = ANY(:locked) AND q.hostname = covered.hostname
        RETURNING q.hostname),
    claimed AS (
        UPDATE queue q
           SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
          FROM picked WHERE q.root = ANY(:locked) AND q.hostname = picked.hostname
        RETURNING q.hostname, q.root),
    per_root AS (SELECT root, count(*) AS n FROM claimed GROUP BY root),
    counted AS (
        INSERT INTO root_claims AS c (root, minute, claimed)
        SELECT root, date_trunc('minute', now()), n FROM per_root ORDER BY root
        ON CONFLICT (root, minute) DO UPDATE SET claimed = c.claimed + excluded.claimed),
    settled AS (
        SELECT r.root,
               least((SELECT min(q.next_claim_at) FROM queue q
                       WHERE q.root = r.root AND q.root = ANY(:locked)
                         AND q.status_reason IS NULL AND q.denied_by IS NULL
                         AND q.hostname NOT IN (SELECT hostname FROM claimed)
                         AND q.hostname NOT IN (SELECT hostname FROM healed)),
                     CASE WHEN pr.n > 0 THEN now() + :lease END) AS next_due_at,
               CASE WHEN r.used + coalesce(pr.n, 0) >= :budget
                    THEN coalesce(r.first, date_trunc('minute', now()))
                         + interval '61 minutes' END AS held_until
          FROM room r LEFT JOIN per_root pr ON pr.root = r.root),
    marked AS (
        UPDATE roots t SET next_due_at = s.next_due_at, held_until = s.held_until
          FROM settled s
         WHERE t.root = s.root AND t.root = ANY(:locked)
           AND (t.next_due_at, t.held_until) IS DISTINCT FROM (s.next_due_at, s.held_until)
        RETURNING t.root, t.held_until)
    SELECT 'host' AS kind, hostname AS name FROM claimed
    UNION ALL
    SELECT 'over_budget', root FROM marked WHERE held_until IS NOT NULL
    """
).bindparams(*names_param("locked"))


# Filters that only tell Citus which shard a statement is for (beside an equality on root
# that already says which rows): on one server they go, as a planner takes an ANY for an
# index condition and probes every locked root for every row (half the claims/s).
ROUTING_PINS = (
    " AND d.root = ANY(:locked)",
    " AND q.root = ANY(:locked)",
    " AND c.root = ANY(:locked)",
    "q.root = ANY(:locked) AND ",
)
CLAIM_ON_ONE_SERVER = unpinned(CLAIM_FROM_ROOTS, ROUTING_PINS, *names_param("locked"))


@dataclass(frozen=True)
class RootLimits:
    """Per-root politeness across all workers (settings ROOT_CONCURRENCY, ROOT_BUDGET)."""

    concurrency: int = DEFAULT_CONCURRENCY
    budget: int = DEFAULT_BUDGET  # hosts of one root claimed per rolling hour


@dataclass
class Claim:
    """What a polite claim took, and the roots it found over their budget (now held)."""

    hosts: list[str] = field(default_factory=list)
    over_budget: list[str] = field(default_factory=list)


@retry_conflicts
def claim_polite(
    engine: Engine,
    n: int,
    worker: str,
    lease: timedelta = DEFAULT_LEASE,
    limits: RootLimits = RootLimits(),
) -> Claim:
    """Claim up to n due hosts spread over roots, oldest first, within the per-root limits.

    A root at its concurrency is skipped (its hosts stay due); a root over its
    budget is held until enough of the last hour's claims age out.
    """
    with engine.begin() as conn:
        return claim_polite_in(conn, n, worker, lease, limits)


def candidates_by_shard(candidates: list) -> list[dict[str, int]]:
    """The candidates (root, most hosts, shard) by shard group, {root: most} in walk order,
    the group of the oldest due root first: on one server, one group."""
    groups: dict[int, dict[str, int]] = {}
    for root, most, shard in candidates:
        groups.setdefault(shard, {})[root] = most
    return list(groups.values())


def walk_and_lock(conn: Connection, n: int, params: dict) -> list[str]:
    """One server: the due roots walked and locked, a page a statement, until the locked
    roots have room for n hosts or the walk has passed WALK_MOST_PER_ROOT roots per host
    wanted (most due roots have a host or two: a list of top sites, a page's links; a
    claim that comes back short makes the spider wait). The crawl's running claims leave
    roots with no room at the front (they have hosts due still); each page is twice the
    last, so a front of k such roots costs about log2(k / 4n) pages more."""
    room: dict[str, int] = {}
    skip, walk = 0, n * WALK_PER_ROOT
    while True:
        wanted = n - sum(room.values())
        page = {**params, "roots": wanted, "walk": walk, "skip": skip}
        rows = conn.execute(WALK_AND_LOCK, page).all()
        for root, most, _ in rows:
            if root is not None:
                room.setdefault(root, most)
        skip += walk
        if sum(room.values()) >= n or rows[0].walked < walk or skip >= n * WALK_MOST_PER_ROOT:
            return list(room)
        walk *= 2


def claim_polite_in(
    conn: Connection, n: int, worker: str, lease: timedelta, limits: RootLimits
) -> Claim:
    """claim_polite's work in the caller's transaction (its locks last until it ends)."""
    params = {"concurrency": limits.concurrency, "budget": limits.budget, "lock_space": LOCK_SPACE}
    params |= {"n": n, "lease": lease, "worker": worker}
    claim_in = claim_on_cluster if cluster.is_cluster(conn) else claim_on_one_server
    rows = claim_in(conn, params)
    if not rows and rollups.lower_next_due(conn, conn.execute(OLDEST_DUE, {"n": n})):
        rows = claim_in(conn, params)
    result = Claim()
    for kind, name in rows:
        (result.hosts if kind == "host" else result.over_budget).append(name)
    return result


def claim_on_one_server(conn: Connection, params: dict) -> list:
    """The due roots walked and locked in one statement, then the claim from them."""
    locked = walk_and_lock(conn, params["n"], params)
    if not locked:
        return []
    return conn.execute(CLAIM_ON_ONE_SERVER, {**params, "locked": locked}).all()


def claim_on_cluster(conn: Connection, params: dict) -> list:
    """One call per shard group, in this worker's turn, until one yields (the walk, the
    lock and the claim run on the group's worker: crawler.db.claims_cluster)."""
    claim_sql = claims_cluster.in_shard(CLAIM_FROM_ROOTS.text)
    walk = {"walk": params["n"] * WALK_PER_ROOT, "walk_most": params["n"] * WALK_MOST_PER_ROOT}
    return claims_cluster.claim_by_group(conn, params["worker"], claim_sql, {**params, **walk})


def claim(
    engine: Engine,
    n: int,
    worker: str,
    lease: timedelta = DEFAULT_LEASE,
    under: str | None = None,
) -> list[str]:
    """Claim up to n due hosts (only `under` and below, if given), oldest first. On a
    cluster, of one shard group (the oldest due host's, else the next): ask again for more."""
    params = {"n": n, "worker": worker, "lease": lease, **under_params(under)}
    with engine.begin() as conn:
        if not cluster.is_cluster(conn):
            statement = CLAIM_ALL if under is None else CLAIM_UNDER
            return [h for (h,) in conn.execute(statement, params)]
        statement = CLAIM_IN_GROUP[under is not None]
        for group in due_groups(conn, params, under):
            claimed = [h for (h,) in conn.execute(statement, {**params, "group": group})]
            if claimed:
                return claimed
        return []


def due_groups(conn: Connection, params: dict, under: str | None) -> list[list[str]]:
    """The roots of the n oldest due hosts by shard group, the oldest host's group first."""
    due = (DUE_ALL if under is None else DUE_UNDER).text.replace("SELECT q.hostname", "SELECT q.*")
    shard = cluster.shard_of_root(conn, "due.root")
    walk = text(f"SELECT due.root, 0, {shard} FROM ({due}) AS due ORDER BY due.next_claim_at")
    return [list(group) for group in candidates_by_shard(conn.execute(walk, params).all())]


def crawl_pending(engine: Engine, lease: timedelta = DEFAULT_LEASE) -> bool:
    """True while a host is due, or any worker holds an unexpired claim (its links
    may make more due).

    One statement, so one snapshot: a finish that releases its claim and makes
    its links due in the same transaction cannot slip between two checks.
    """
    with engine.connect() as conn:
        return conn.execute(CRAWL_PENDING, {"lease": lease, "n": 1}).scalar_one()


def count_due(engine: Engine, n: int, under: str | None = None) -> int:
    """How many hosts claim() could take now (counting at most n)."""
    statement = DUE_ALL if under is None else DUE_UNDER
    counted = text(f"SELECT count(*) FROM ({statement.text}) AS due")
    with engine.connect() as conn:
        return conn.execute(counted, {"n": n, **under_params(under)}).scalar_one()


def due_hosts(engine: Engine, n: int, under: str | None = None) -> list[str]:
    """What claim() would take, without claiming it (for dry runs)."""
    statement = DUE_ALL if under is None else DUE_UNDER
    with engine.connect() as conn:
        return [h for (h,) in conn.execute(statement, {"n": n, **under_params(under)})]
