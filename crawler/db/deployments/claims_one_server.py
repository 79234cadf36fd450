"""The claim on one Postgres server (docs/design.md, rule 6): every due root in one table,
so a claim walks them oldest due first and locks and claims in one transaction's few
statements. The cluster's claim is crawler.db.deployments.claims_cluster; crawler.db.crawl.claims
picks one per database and holds what both share.

The polite claim: a walk that locks the roots to claim from (oldest due first, skipping
roots another claim holds: two workers never take from one root at once), then the
claim, which starts after those locks, so its snapshot sees every claim committed
before: its count of a root's unexpired claims is exact. The walk and the lock are one
lazy statement a page (WALK_AND_LOCK), the claim one statement (CLAIM_FROM_ROOTS).

The locks are bounded by :roots whatever the plan: the candidates come in walk order
through a materialized CTE (a fence the planner cannot flatten or push the lock into),
and the outer query checks a root's claims before it tries the lock (CASE fixes the
order), so a lock is taken only on a root that is then returned. Flattened, the lock
once ran on every due root before the sort and the LIMIT: one advisory lock per due
root, "out of shared memory" at ~6,000 due roots (a seed list of many domains). The
walk's own LIMIT keeps a seq scan's sort a top-N heapsort.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from crawler.db.server.sql_pieces import DUE, UNDER_ROOT, filled, names_param, under_an_entry

# One page of the walk and its lock (walk_and_lock runs a page after another). `filling`:
# of the locked roots (their room: at most their hosts and the concurrency, less their
# claims running), the first whose room fills the claim with a quarter to spare, as a
# root may have fewer hosts due than room (rows dated later); the rest stay locked,
# unused, until the claim ends. Counted without the running claims, a batch among roots
# with a claim running came back half full.
WALK_AND_LOCK = text(
    """
    WITH due AS MATERIALIZED (
        SELECT w.root, w.most, row_number() OVER () AS i FROM (
            SELECT r.root, least(r.hosts, :concurrency) AS most FROM roots r
             WHERE r.next_due_at <= now() AND (r.held_until IS NULL OR r.held_until <= now())
             ORDER BY r.next_due_at
             LIMIT :walk OFFSET :skip) w),
    locked AS MATERIALIZED (
        SELECT due.root, due.most - busy.n AS most, due.i FROM due
         CROSS JOIN LATERAL (
               SELECT count(*) AS n FROM hosts q
                WHERE q.root = due.root AND q.claimed_by IS NOT NULL
                  AND q.next_claim_at > now()) busy
         WHERE CASE WHEN busy.n < due.most
                    THEN pg_try_advisory_xact_lock(:lock_space, hashtext(due.root))
                    ELSE false END
         LIMIT :roots),
    filling AS (
        SELECT root, most, i FROM (
            SELECT root, most, i, sum(most) OVER (ORDER BY i) - most AS before
              FROM locked) f
         WHERE before < :roots + :roots / 4)
    SELECT f.root, f.most, (SELECT count(*) FROM due) AS walked
      FROM (SELECT) AS page LEFT JOIN filling f ON true ORDER BY f.i
    """
)

# A claim counts while its lease runs: claimed_by IS NOT NULL AND next_claim_at > now().
# Each root's rows are taken up to the constant concurrency, then ranked against its
# room: a LIMIT that varies per root makes Postgres plan the LATERAL far slower.
# The budget counts minutes that overlap the last hour, so no rolling hour holds more.
# A row under a deny entry of its root is never claimed; a root with only such rows due
# gets them marked (`healed`: denied_by, the nearest entry), so its walk moves on. An
# entry above a root (a forced bare suffix) is the blacklist middleware's to refuse.
# The root's date is set from this statement's snapshot, blind to rows made due by a
# writer that commits after it; every such writer writes the root's row too (its date,
# crawler.db.crawl.rollups), so a row version other than the one the snapshot saw means the
# lower of the two dates stays, or those rows would wait unclaimed for the later one.
CLAIM_FROM_ROOTS = text(
    f"""
    WITH busy AS (
        SELECT root, count(*) AS n FROM hosts
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
               SELECT q.hostname, q.next_claim_at FROM hosts q
                WHERE q.root = r.root
                  AND q.status_reason IS NULL AND q.denied_by IS NULL
                  AND q.next_claim_at <= now() AND NOT {under_an_entry("q")}
                ORDER BY q.next_claim_at LIMIT :concurrency
                  FOR UPDATE OF q SKIP LOCKED) p
         WHERE r.room > 0),
    picked AS (
        SELECT hostname FROM found WHERE rank <= room ORDER BY next_claim_at LIMIT :n),
    healed AS (
        UPDATE hosts q SET denied_by = (
                SELECT d.hostname FROM hosts d
                 WHERE d.root = q.root
                   AND d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
                   AND d.status_reason IS NOT NULL
                 ORDER BY length(d.hostname) DESC LIMIT 1)
          FROM (SELECT c.hostname FROM room r CROSS JOIN LATERAL (
                    SELECT c.hostname FROM hosts c
                     WHERE c.root = r.root
                       AND c.status_reason IS NULL AND c.denied_by IS NULL
                       AND c.next_claim_at <= now() AND {under_an_entry("c")}
                     ORDER BY c.next_claim_at LIMIT :n
                       FOR UPDATE OF c SKIP LOCKED) c
                 WHERE r.room > 0 AND r.root NOT IN (SELECT root FROM found)) AS covered
         WHERE q.hostname = covered.hostname
        RETURNING q.hostname),
    claimed AS (
        UPDATE hosts q
           SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
          FROM picked WHERE q.hostname = picked.hostname
        RETURNING q.hostname, q.root),
    per_root AS (SELECT root, count(*) AS n FROM claimed GROUP BY root),
    counted AS (
        INSERT INTO root_claims AS c (root, minute, claimed)
        SELECT root, date_trunc('minute', now()), n FROM per_root ORDER BY root
        ON CONFLICT (root, minute) DO UPDATE SET claimed = c.claimed + excluded.claimed),
    settled AS (
        SELECT r.root,
               least((SELECT min(q.next_claim_at) FROM hosts q
                       WHERE q.root = r.root
                         AND q.status_reason IS NULL AND q.denied_by IS NULL
                         AND q.hostname NOT IN (SELECT hostname FROM claimed)
                         AND q.hostname NOT IN (SELECT hostname FROM healed)),
                     CASE WHEN pr.n > 0 THEN now() + :lease END) AS next_due_at,
               CASE WHEN r.used + coalesce(pr.n, 0) >= :budget
                    THEN coalesce(r.first, date_trunc('minute', now()))
                         + interval '61 minutes' END AS held_until,
               (SELECT seen.xmin FROM roots seen WHERE seen.root = r.root) AS seen
          FROM room r LEFT JOIN per_root pr ON pr.root = r.root),
    marked AS (
        UPDATE roots t
           SET next_due_at = CASE WHEN t.xmin IS DISTINCT FROM s.seen
                                  THEN least(s.next_due_at, t.next_due_at)
                                  ELSE s.next_due_at END,
               held_until = s.held_until
          FROM settled s
         WHERE t.root = s.root AND t.root = ANY(:locked)
           AND (t.next_due_at, t.held_until) IS DISTINCT FROM (s.next_due_at, s.held_until)
        RETURNING t.root, t.held_until)
    SELECT 'host' AS kind, hostname AS name FROM claimed
    UNION ALL
    SELECT 'over_budget', root FROM marked WHERE held_until IS NOT NULL
    """
).bindparams(*names_param("locked"))

# The bare claim (no per-root limits, the DNS audit's): the oldest due rows under no deny
# entry of their root, all of them or (UNDER_ROOT) those of one root and below.
BARE_CLAIM = f"""
    WITH due AS ({DUE} FOR UPDATE OF q SKIP LOCKED)
    UPDATE hosts q
       SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
      FROM due WHERE q.hostname = due.hostname
    RETURNING q.hostname
"""
CLAIM_ALL = text(filled(BARE_CLAIM, under=""))
CLAIM_UNDER = text(filled(BARE_CLAIM, under=UNDER_ROOT))


class OneServer:
    """The claim strategy of one Postgres server (crawler.db.deployments.ClaimStrategy)."""

    def polite(self, conn: Connection, params: dict) -> list:
        """The due roots walked and locked a page a statement, then the claim from them."""
        locked = walk_and_lock(conn, params)
        if not locked:
            return []
        return conn.execute(CLAIM_FROM_ROOTS, {**params, "locked": locked}).all()

    def bare(self, conn: Connection, params: dict) -> list[str]:
        statement = CLAIM_UNDER if "root" in params else CLAIM_ALL
        return list(conn.execute(statement, params).scalars())


def walk_and_lock(conn: Connection, params: dict) -> list[str]:
    """The due roots walked and locked, a page a statement, until the locked roots have
    room for n hosts or the walk has passed `walk_most_per_root` roots per host wanted
    (most due roots have a host or two: a list of top sites, a page's links; a claim that
    comes back short makes the spider wait). The crawl's running claims leave roots with
    no room at the front (they have hosts due still); each page is twice the last, so a
    front of k such roots costs about log2(k / (n * walk_per_root)) pages more."""
    n = params["n"]
    room: dict[str, int] = {}
    skip, walk = 0, n * params["walk_per_root"]
    while True:
        page = {**params, "roots": n - sum(room.values()), "walk": walk, "skip": skip}
        rows = conn.execute(WALK_AND_LOCK, page).all()
        for root, most, _ in rows:
            if root is not None:
                room.setdefault(root, most)
        skip += walk
        if (
            sum(room.values()) >= n
            or rows[0].walked < walk
            or skip >= n * params["walk_most_per_root"]
        ):
            return list(room)
        walk *= 2
