"""A Citus cluster's statements (crawler.db.deployments): one server's
(crawler.db.deployments.one_server), each with the filters that route it.

Citus runs a statement that locks rows only within one shard group, and routes a
statement to one worker by a filter on `root`: each runs once per shard group of its
roots (`shard_groups`), with `root = ANY(:roots)` (the roots of that group) on every
distributed table it names, its pins. A test checks that each statement is one server's
with its pins and nothing else (tests/unit/test_deployments.py).
"""

from __future__ import annotations

from sqlalchemy import Connection, Text, exists, func, literal, select, text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import ColumnElement

from crawler.db.deployments.claims_cluster import Cluster as ClusterClaims
from crawler.db.deployments.params import DATED, DUES, RESULT_PARAMS, SCHEDULE_PARAMS
from crawler.db.models import Host
from crawler.db.server import cluster as citus
from crawler.db.server.sql_pieces import names_param

WRITE_RESULTS = text(
    """
    UPDATE hosts h SET last_crawled_at = now(), outcome = t.outcome, http_status = t.status,
           final_url = t.url, title = t.title, scheme = t.scheme,
           links_found = t.found, links_saved = t.saved,
           links_filtered = t.filtered, links_over_cap = t.over_cap,
           extract_stopped = t.stopped, crawl_count = h.crawl_count + 1,
           fail_streak = CASE WHEN t.failed THEN h.fail_streak + 1 ELSE 0 END,
           claimed_by = NULL, claimed_at = NULL, unfinished_claims = 0,
           next_claim_at = CASE WHEN h.status_reason IS NULL OR h.claimed_by IS NOT NULL
                                THEN t.at ELSE h.next_claim_at END
      FROM (SELECT u.*, o.outcome AS before, now() + u.after AS at
              FROM unnest(:names, :roots, :outcomes, :statuses, :urls, :titles, :schemes,
                          :found, :saved, :filtered, :over_cap, :stopped, :failed, :afters)
                AS u(hostname, root, outcome, status, url, title, scheme, found, saved,
                     filtered, over_cap, stopped, failed, after)
              JOIN hosts o USING (hostname, root)
             WHERE o.root = ANY(:roots)
             ORDER BY hostname FOR UPDATE OF o) AS t
     WHERE h.root = ANY(:roots) AND h.hostname = t.hostname AND h.root = t.root
    RETURNING h.root, h.hostname, t.before, h.outcome,
              CASE WHEN h.status_reason IS NULL AND h.denied_by IS NULL
                   THEN h.next_claim_at END
    """
).bindparams(*RESULT_PARAMS)
# The dates are taken before the update, in a materialized CTE: Citus allows no
# non-immutable function (now()) in a CASE of an UPDATE of a distributed table.
SCHEDULE = text(
    f"""
    WITH t AS MATERIALIZED (
        SELECT hostname, host_root, now() + after AS at
          FROM unnest(:names, :host_roots, :afters) AS u(hostname, host_root, after))
    UPDATE hosts q SET claimed_by = NULL, claimed_at = NULL, unfinished_claims = 0,
           next_claim_at = CASE WHEN q.status_reason IS NULL OR q.claimed_by IS NOT NULL
                                THEN t.at ELSE q.next_claim_at END
      FROM t
     WHERE q.root = ANY(:roots) AND q.hostname = t.hostname AND q.root = t.host_root
    RETURNING {DATED}
    """
).bindparams(*SCHEDULE_PARAMS, *names_param("roots"))
TRIM_WINDOWS = text(
    """
    DELETE FROM trap_window w USING (
        SELECT root, hostname,
               row_number() OVER (PARTITION BY root ORDER BY seen_at DESC) AS rank
          FROM trap_window WHERE root = ANY(:roots)) AS r
     WHERE w.root = ANY(:roots) AND w.root = r.root AND w.hostname = r.hostname
       AND r.rank > :size
    """
).bindparams(*names_param("roots"))
LOWER_NEXT_DUE = text(
    """
    UPDATE roots r SET next_due_at = least(r.next_due_at, d.due)
      FROM (SELECT * FROM unnest(:roots, :dues) AS t(root, due) ORDER BY root) d
     WHERE r.root = ANY(:roots) AND r.root = d.root
       AND (r.next_due_at IS NULL OR r.next_due_at > d.due OR d.due <= now())
    """
).bindparams(*names_param("roots"), DUES)
RECOUNT_WINDOWS = text(
    """
    UPDATE roots r SET window_size = w.size, window_failed = w.failed
      FROM (SELECT t.root, count(w.hostname) AS size,
                   count(w.hostname) FILTER (WHERE w.outcome = ANY(:failures)) AS failed
              FROM unnest(:roots) AS t(root)
              LEFT JOIN trap_window w ON w.root = ANY(:roots) AND w.root = t.root
             GROUP BY t.root) w
     WHERE r.root = ANY(:roots) AND r.root = w.root
       AND (r.window_size, r.window_failed) IS DISTINCT FROM (w.size, w.failed)
    """
).bindparams(*names_param("roots", "failures"))

ENTRY = Host.__table__.alias("d")


def visible(hostname: ColumnElement, root: ColumnElement) -> ColumnElement[bool]:
    """No parent of the name at or under its root is a deny entry (docs/design.md, rule
    2): one EXISTS on the name's own shard that Citus pushes down to it (it runs no
    LATERAL into a shard). An entry above a root (a forced bare suffix) lives in another
    shard: the hosts it took out of routing carry denied_by, as the claim's rule says
    (crawler.db.server.sql_pieces.under_an_entry).

    OFFSET 0 keeps the EXISTS a probe per name (a subplan: Postgres makes no anti-join of
    an EXISTS with an OFFSET): as an anti-join, with statistics that predate a block list,
    a shard's planner read all its entries once into memory and compared every name of the
    page with each (the main list x4.6 at 100,000 entries, bench/_stale_statistics.py).
    """
    in_root = (
        select(literal(1))
        .select_from(ENTRY)
        .where(
            ENTRY.c.root == root,
            ENTRY.c.hostname == func.any(func.host_parents(hostname, type_=ARRAY(Text))),
            ENTRY.c.status_reason.is_not(None),
        )
        .offset(0)
    )
    return ~exists(in_root)


class Cluster:
    """A Citus cluster sharded by root (crawler.db.deployments.Deployment)."""

    name = "cluster"
    claims = ClusterClaims()
    write_results = WRITE_RESULTS
    schedule = SCHEDULE
    trim_windows = TRIM_WINDOWS
    lower_next_due = LOWER_NEXT_DUE
    recount_windows = RECOUNT_WINDOWS

    def shard_groups(self, conn: Connection, roots: set[str]) -> list[set[str]]:
        """The roots by shard group, in shard id order."""
        groups: dict[int, set[str]] = {}
        for root, shard in citus.shard_ids(conn, roots).items():
            groups.setdefault(shard, set()).add(root)
        return [groups[shard] for shard in sorted(groups)]

    def visible(self, hostname: ColumnElement, root: ColumnElement) -> ColumnElement[bool]:
        return visible(hostname, root)

    def planned_rows(self, plan: dict) -> int:
        """The rows the statement's EXPLAIN (FORMAT JSON) expects, over every shard."""
        return citus.planned_rows(plan)

    def value_shares(self, conn: Connection, table: str, column: str) -> list:
        """The column's most common values (None: NULL) and their shares of the rows,
        from every shard's statistics."""
        return citus.shard_value_shares(conn, table, column)
