"""One Postgres server's statements (crawler.db.deployments): the crawl's writes, the deny
test of a listed host, and its one group of roots. The cluster's are
crawler.db.deployments.cluster, the same statements with the filters that route them.

Here every equality on root is enough: a filter `root = ANY(:roots)` beside one would only
mislead the planner, which takes such an ANY for an index condition and probes every
listed root for every row (the finish's costliest statement at 1M hosts,
bench/README.md).
"""

from __future__ import annotations

from sqlalchemy import Connection, Text, exists, func, literal, select, text, true
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.sql.elements import ColumnElement

from crawler.db.deployments.claims_one_server import OneServer as OneServerClaims
from crawler.db.deployments.params import DATED, DUES, RESULT_PARAMS, SCHEDULE_PARAMS
from crawler.db.models import Host
from crawler.db.server.sql_pieces import names_param

# A crawled host's finish, in one write of its row: its result, its claim released and
# its next date (as SCHEDULE below dates it, the date taken in the subquery, as the
# cluster must). The outcome before is read with the row locked (FOR UPDATE: no writer
# changes it before the update), each row by its key.
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
             ORDER BY hostname FOR UPDATE OF o) AS t
     WHERE h.hostname = t.hostname AND h.root = t.root
    RETURNING h.root, h.hostname, t.before, h.outcome,
              CASE WHEN h.status_reason IS NULL AND h.denied_by IS NULL
                   THEN h.next_claim_at END
    """
).bindparams(*RESULT_PARAMS)
# The dates are taken before the update, in a materialized CTE (as on the cluster, where
# Citus allows no now() in a CASE of an UPDATE). A claimed row that became an entry gets
# its date too, kept for when the entry is lifted: the one it had was its lease's end.
SCHEDULE = text(
    f"""
    WITH t AS MATERIALIZED (
        SELECT hostname, host_root, now() + after AS at
          FROM unnest(:names, :host_roots, :afters) AS u(hostname, host_root, after))
    UPDATE hosts q SET claimed_by = NULL, claimed_at = NULL, unfinished_claims = 0,
           next_claim_at = CASE WHEN q.status_reason IS NULL OR q.claimed_by IS NOT NULL
                                THEN t.at ELSE q.next_claim_at END
      FROM t
     WHERE q.hostname = t.hostname AND q.root = t.host_root
    RETURNING {DATED}
    """
).bindparams(*SCHEDULE_PARAMS)
TRIM_WINDOWS = text(
    """
    DELETE FROM trap_window w USING (
        SELECT root, hostname,
               row_number() OVER (PARTITION BY root ORDER BY seen_at DESC) AS rank
          FROM trap_window WHERE root = ANY(:roots)) AS r
     WHERE w.root = r.root AND w.hostname = r.hostname
       AND r.rank > :size
    """
).bindparams(*names_param("roots"))
# Roots whose bound moves are written, and roots given rows due now even when it does
# not: a claim running beside this sets the root's date from a snapshot without those
# rows, and it keeps the lower date only when it finds the row written since
# (crawler.db.deployments.claims_one_server). A later date whose bound stays is not written: an
# UPDATE whose WHERE fails locks nothing.
LOWER_NEXT_DUE = text(
    """
    UPDATE roots r SET next_due_at = least(r.next_due_at, d.due)
      FROM (SELECT * FROM unnest(:roots, :dues) AS t(root, due) ORDER BY root) d
     WHERE r.root = d.root
       AND (r.next_due_at IS NULL OR r.next_due_at > d.due OR d.due <= now())
    """
).bindparams(*names_param("roots"), DUES)
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

ENTRY = Host.__table__.alias("d")
# A column's most common values and their shares of the rows (ANALYZE's sample).
VALUE_SHARES = text(
    "SELECT null_frac, most_common_vals::text::text[] AS vals, most_common_freqs AS freqs"
    " FROM pg_stats WHERE schemaname = current_schema() AND tablename = :table"
    " AND attname = :column"
)


def visible(hostname: ColumnElement, root: ColumnElement) -> ColumnElement[bool]:
    """No parent of the name, at any level, is a deny entry (docs/design.md, rule 2).

    Each parent is looked up on its own (a LATERAL ... LIMIT 1 per element of the
    parents array), so the only plans are a few index probes per name, whatever the
    planner believes of the entries' number: as an anti-join it once compared every
    host with every entry when statistics predating a big block list said they were
    few. `root` is not needed: every entry is in the one table.
    """
    parents = func.unnest(func.host_parents(hostname, type_=ARRAY(Text))).table_valued("name")
    parent = parents.render_derived(name="p")
    entry = (
        select(literal(1))
        .select_from(ENTRY)
        .where(ENTRY.c.hostname == parent.c.name, ENTRY.c.status_reason.is_not(None))
        .limit(1)
        .lateral("e")
    )
    return ~exists(select(literal(1)).select_from(parent).join(entry, true()))


class OneServer:
    """One Postgres server (crawler.db.deployments.Deployment)."""

    name = "one server"
    claims = OneServerClaims()
    write_results = WRITE_RESULTS
    schedule = SCHEDULE
    trim_windows = TRIM_WINDOWS
    lower_next_due = LOWER_NEXT_DUE
    recount_windows = RECOUNT_WINDOWS

    def shard_groups(self, conn: Connection, roots: set[str]) -> list[set[str]]:
        """One group, and no question asked."""
        return [roots] if roots else []

    def visible(self, hostname: ColumnElement, root: ColumnElement) -> ColumnElement[bool]:
        return visible(hostname, root)

    def planned_rows(self, plan: dict) -> int:
        """The rows the statement's EXPLAIN (FORMAT JSON) expects."""
        return int(plan["Plan"]["Plan Rows"])

    def value_shares(self, conn: Connection, table: str, column: str) -> list:
        """The column's most common values (None: NULL) and their shares of the rows."""
        stats = conn.execute(VALUE_SHARES, {"table": table, "column": column}).first()
        if stats is None:
            return []
        return [(None, stats.null_frac), *zip(stats.vals or [], stats.freqs or [], strict=True)]
