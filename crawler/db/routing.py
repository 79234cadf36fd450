"""Which queue rows are routed: the nearest entry above a row, and a denied request's row.

`queue.denied_by` names the entry that took a row out of routing, so removing
an entry puts back exactly its rows (unless another entry still covers them: the
entry writer, crawler.db.deny_entries, asks NEAREST_ENTRY, as the claim does).

An entry covers a row from the row's own root (at or under it: the same shard group on
a Citus cluster) or from above it (a forced bare public suffix, `test`, `co.uk`: in the
shard of its own root). A statement that locks rows runs within one shard group, so the
entries above the rows' roots come in as a parameter (`:above`, read beforehand).
"""

from __future__ import annotations

from sqlalchemy import Engine, text

from crawler.core.hostnames import root
from crawler.db import rollups
from crawler.db.retry import retry_conflicts

# The nearest other deny entry above a row `q` of the shard group's :roots, or NULL when
# none covers it: one in the row's root, else the nearest of the standing entries above
# roots (:above), which are always shorter.
NEAREST_ENTRY = """
    coalesce(
      (SELECT d.hostname FROM queue d
        WHERE d.root = q.root AND d.root = ANY(:roots)
          AND d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
          AND d.status_reason IS NOT NULL
        ORDER BY length(d.hostname) DESC LIMIT 1),
      (SELECT a FROM unnest(:above) AS a
        WHERE a = ANY(host_parents(q.hostname)) ORDER BY length(a) DESC LIMIT 1))
"""

# The claim is released either way, and the host is due at once the moment it is
# routable: now if the entry was removed meanwhile (this worker heard late), or
# when the entry is removed later. (now() is read in the CTE: Citus allows no
# non-immutable function in a CASE of an UPDATE.)
DENY_ONE = text(
    """
    WITH entry AS (
        SELECT EXISTS (SELECT 1 FROM queue
                        WHERE hostname = :entry AND root = :entry_root
                          AND status_reason IS NOT NULL)
               AS stands, now() AS now)
    UPDATE queue q SET claimed_by = NULL, claimed_at = NULL,
           denied_by = CASE WHEN q.status_reason IS NULL AND entry.stands
                            THEN :entry ELSE q.denied_by END,
           next_claim_at = CASE WHEN q.status_reason IS NULL
                                THEN entry.now ELSE q.next_claim_at END
      FROM entry
     WHERE q.hostname = :hostname AND q.root = :root
    RETURNING q.root, CASE WHEN q.status_reason IS NULL AND q.denied_by IS NULL
                           THEN q.next_claim_at END
    """
)


@retry_conflicts
def take_out_denied(engine: Engine, hostname: str, entry: str) -> None:
    """A request to `hostname` was denied by `entry`: its row leaves routing (and its claim)."""
    with engine.begin() as conn:
        names = {"hostname": hostname, "root": root(hostname)}
        entries = {"entry": entry, "entry_root": root(entry)}
        dated = conn.execute(DENY_ONE, {**names, **entries})
        rollups.lower_next_due(conn, dated.all())
