-- claim_in_shard: the cluster's polite claim of one shard group (walk, lock, claim), in one
-- call. crawler.db.server.cluster.distribute makes it a distributed function co-located with
-- `roots` by its `anchor` argument, so Citus delegates a call to the worker holding the
-- anchor's shard group, where it runs one server's statements (crawler.db.deployments.
-- claims_one_server) on that group's shards: %1$s the shard of `roots`, %2$s of `hosts`,
-- %3$s of `root_claims`. Called on a node that does not hold the group it raises; a group
-- whose shards a shard move or DDL holds is passed over. On one server (no citus) it runs
-- on the tables themselves.
--
-- version: 5
--
-- Its versions, each named by the migration that installs it (crawler/db/functions):
--   1 (0020) the walk, lock and claim as three texts from the caller;
--   2 (0021) walks on, page after page, until the locked roots have room;
--   3 (0023) the three statements written out here, no texts (a new signature);
--   4 (0024) keeps a root's date that a writer lowered while the claim ran;
--   5 (0030) claims from hosts, which holds the queue's columns (one row per host).
-- The body is installed as it stands: a change of one word in it is a new version and a
-- migration that names it. Its comments name the modules as they were when it was written
-- (crawler.db.claims_one_server is now crawler.db.deployments.claims_one_server).
CREATE OR REPLACE FUNCTION claim_in_shard(
    anchor varchar, n int, walk int, walk_most int, concurrency int, budget int,
    lock_space int, lease interval, worker varchar)
RETURNS TABLE (kind text, name varchar)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $fn$
DECLARE
    shards text[] := ARRAY['roots', 'hosts', 'root_claims'];
    walk_sql text;
    lock_sql text;
    claim_sql text;
    due varchar[];
    most int[];
    page int := walk;
    skip int := 0;
    page_locked varchar[];
    page_room int;
    locked varchar[] := '{}';
    room int := 0;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
        -- Planned at its first run only, so one server (no citus) never parses it.
        shards := ARRAY(
            SELECT shard_name(t::regclass, get_shard_id_for_distribution_column(t, anchor))
              FROM unnest(shards) WITH ORDINALITY AS s(t, i) ORDER BY i);
        IF EXISTS (SELECT 1 FROM unnest(shards) AS s WHERE to_regclass(s) IS NULL) THEN
            RAISE EXCEPTION 'claim_in_shard(%): shards % are not all on this node', anchor, shards;
        END IF;
        -- A group whose shards a shard move or DDL holds is passed over, not waited on:
        -- the claim goes on to the next group.
        BEGIN
            EXECUTE format('LOCK TABLE %s, %s, %s IN ROW EXCLUSIVE MODE NOWAIT',
                           VARIADIC shards);
        EXCEPTION WHEN lock_not_available THEN
            RETURN;
        END;
    END IF;

    -- A page of the group's due roots, oldest due first, with the most hosts each can
    -- give ($1 concurrency, $2 the page's roots, $3 the roots before it).
    walk_sql := format($sql$
    SELECT array_agg(w.root ORDER BY w.next_due_at), array_agg(w.most ORDER BY w.next_due_at)
      FROM (SELECT r.root, least(r.hosts, $1)::int AS most, r.next_due_at FROM %1$s r
             WHERE r.next_due_at <= now() AND (r.held_until IS NULL OR r.held_until <= now())
             ORDER BY r.next_due_at LIMIT $2 OFFSET $3) w
    $sql$, VARIADIC shards);

    -- Of the walked roots ($1, in walk order, $2 the most each can give), up to $5
    -- locked, skipping roots whose running claims leave no room and roots another claim
    -- holds (advisory locks in $4's space); of those, the first whose room fills the
    -- claim with a quarter to spare, and their room. The fences and the CASE: a lock only
    -- on a root that is then returned (crawler.db.claims_one_server.WALK_AND_LOCK).
    lock_sql := format($sql$
    WITH busy AS MATERIALIZED (
        SELECT q.root, count(*) AS n FROM %2$s q
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
    filling AS (
        SELECT root, most, i FROM (
            SELECT root, most, i, sum(most) OVER (ORDER BY i) - most AS before
              FROM locked) f
         WHERE before < $5 + $5 / 4)
    SELECT array_agg(root ORDER BY i), sum(most)::int FROM filling
    $sql$, VARIADIC shards);

    -- The claim from the locked roots ($1), the rules of one server's
    -- (crawler.db.claims_one_server.CLAIM_FROM_ROOTS): $2 concurrency, $3 budget, $4 the
    -- batch, $5 the lease, $6 the worker.
    claim_sql := format($sql$
    WITH busy AS (
        SELECT root, count(*) AS n FROM %2$s
         WHERE root = ANY($1) AND claimed_by IS NOT NULL AND next_claim_at > now()
         GROUP BY root),
    used AS (
        SELECT root, sum(claimed) AS n, min(minute) AS first FROM %3$s
         WHERE root = ANY($1) AND minute > now() - interval '61 minutes'
         GROUP BY root),
    room AS (
        SELECT l.root, coalesce(u.n, 0) AS used, u.first,
               least($2 - coalesce(b.n, 0), $3 - coalesce(u.n, 0)) AS room
          FROM unnest($1) AS l(root)
          LEFT JOIN busy b ON b.root = l.root LEFT JOIN used u ON u.root = l.root),
    found AS (
        SELECT r.root, r.room, p.hostname, p.next_claim_at,
               row_number() OVER (PARTITION BY r.root ORDER BY p.next_claim_at) AS rank
          FROM room r CROSS JOIN LATERAL (
               SELECT q.hostname, q.next_claim_at FROM %2$s q
                WHERE q.root = r.root
                  AND q.status_reason IS NULL AND q.denied_by IS NULL
                  AND q.next_claim_at <= now()
                  AND NOT EXISTS (
                      SELECT 1 FROM %2$s d
                       WHERE d.root = q.root
                         AND d.hostname = ANY((host_parents(q.hostname))[2:])
                         AND d.status_reason IS NOT NULL)
                ORDER BY q.next_claim_at LIMIT $2
                  FOR UPDATE OF q SKIP LOCKED) p
         WHERE r.room > 0),
    picked AS (
        SELECT hostname FROM found WHERE rank <= room ORDER BY next_claim_at LIMIT $4),
    healed AS (
        UPDATE %2$s q SET denied_by = (
                SELECT d.hostname FROM %2$s d
                 WHERE d.root = q.root
                   AND d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
                   AND d.status_reason IS NOT NULL
                 ORDER BY length(d.hostname) DESC LIMIT 1)
          FROM (SELECT c.hostname FROM room r CROSS JOIN LATERAL (
                    SELECT c.hostname FROM %2$s c
                     WHERE c.root = r.root
                       AND c.status_reason IS NULL AND c.denied_by IS NULL
                       AND c.next_claim_at <= now()
                       AND EXISTS (
                           SELECT 1 FROM %2$s d
                            WHERE d.root = c.root
                              AND d.hostname = ANY((host_parents(c.hostname))[2:])
                              AND d.status_reason IS NOT NULL)
                     ORDER BY c.next_claim_at LIMIT $4
                       FOR UPDATE OF c SKIP LOCKED) c
                 WHERE r.room > 0 AND r.root NOT IN (SELECT root FROM found)) AS covered
         WHERE q.hostname = covered.hostname
        RETURNING q.hostname),
    claimed AS (
        UPDATE %2$s q
           SET next_claim_at = now() + $5, claimed_by = $6, claimed_at = now()
          FROM picked WHERE q.hostname = picked.hostname
        RETURNING q.hostname, q.root),
    per_root AS (SELECT root, count(*) AS n FROM claimed GROUP BY root),
    counted AS (
        INSERT INTO %3$s AS c (root, minute, claimed)
        SELECT root, date_trunc('minute', now()), n FROM per_root ORDER BY root
        ON CONFLICT (root, minute) DO UPDATE SET claimed = c.claimed + excluded.claimed),
    settled AS (
        SELECT r.root,
               least((SELECT min(q.next_claim_at) FROM %2$s q
                       WHERE q.root = r.root
                         AND q.status_reason IS NULL AND q.denied_by IS NULL
                         AND q.hostname NOT IN (SELECT hostname FROM claimed)
                         AND q.hostname NOT IN (SELECT hostname FROM healed)),
                     CASE WHEN pr.n > 0 THEN now() + $5 END) AS next_due_at,
               CASE WHEN r.used + coalesce(pr.n, 0) >= $3
                    THEN coalesce(r.first, date_trunc('minute', now()))
                         + interval '61 minutes' END AS held_until,
               (SELECT seen.xmin FROM %1$s seen WHERE seen.root = r.root) AS seen
          FROM room r LEFT JOIN per_root pr ON pr.root = r.root),
    marked AS (
        UPDATE %1$s t
           SET next_due_at = CASE WHEN t.xmin IS DISTINCT FROM s.seen
                                  THEN least(s.next_due_at, t.next_due_at)
                                  ELSE s.next_due_at END,
               held_until = s.held_until
          FROM settled s
         WHERE t.root = s.root AND t.root = ANY($1)
           AND (t.next_due_at, t.held_until) IS DISTINCT FROM (s.next_due_at, s.held_until)
        RETURNING t.root, t.held_until)
    SELECT 'host' AS kind, hostname AS name FROM claimed
    UNION ALL
    SELECT 'over_budget', root FROM marked WHERE held_until IS NOT NULL
    $sql$, VARIADIC shards);

    LOOP
        EXECUTE format('EXECUTE %I(%s, %s, %s)',
                       claim_in_shard_prepared(walk_sql, 'int, int, int'),
                       concurrency, page, skip)
           INTO due, most;
        EXIT WHEN due IS NULL;  -- the group's due roots are done
        EXECUTE format('EXECUTE %I(%L, %L, %s, %s, %s)',
                       claim_in_shard_prepared(lock_sql, 'varchar[], int[], int, int, int'),
                       due, most, concurrency, lock_space, n - room)
           INTO page_locked, page_room;
        locked := locked || ARRAY(SELECT r FROM unnest(page_locked) AS r
                                   WHERE r <> ALL(locked));
        room := room + coalesce(page_room, 0);
        skip := skip + page;
        EXIT WHEN room >= n OR cardinality(due) < page OR skip >= walk_most;
        page := page * 2;
    END LOOP;
    IF cardinality(locked) = 0 THEN
        RETURN;  -- every due root held by another claim or at its concurrency
    END IF;
    RETURN QUERY EXECUTE format(
        'EXECUTE %I(%L, %s, %s, %s, %L, %L)',
        claim_in_shard_prepared(claim_sql, 'varchar[], int, int, int, interval, varchar'),
        locked, concurrency, budget, n, lease, worker);
END
$fn$
