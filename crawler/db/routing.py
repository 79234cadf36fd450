"""Which queue rows are routed: the nearest entry above a row, and a denied request's row.

`queue.denied_by` names the entry that took a row out of routing, so removing
an entry puts back exactly its rows (unless another entry still covers them: the
entry writer, crawler.db.deny_entries, asks NEAREST_ENTRY, as the claim does).
"""

from __future__ import annotations

from sqlalchemy import Engine, text

from crawler.db import rollups
from crawler.db.retry import retry_conflicts

# The nearest other deny entry above a row, or NULL when none covers it.
NEAREST_ENTRY = """
    (SELECT d.hostname FROM queue d
      WHERE d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
        AND d.status_reason IS NOT NULL
      ORDER BY length(d.hostname) DESC LIMIT 1)
"""

# The claim is released either way, and the host is due at once the moment it is
# routable: now if the entry was removed meanwhile (this worker heard late), or
# when the entry is removed later.
DENY_ONE = text(
    """
    WITH entry AS (
        SELECT EXISTS (SELECT 1 FROM queue
                        WHERE hostname = :entry AND status_reason IS NOT NULL)
               AS stands)
    UPDATE queue q SET claimed_by = NULL, claimed_at = NULL,
           denied_by = CASE WHEN q.status_reason IS NULL AND entry.stands
                            THEN :entry ELSE q.denied_by END,
           next_claim_at = CASE WHEN q.status_reason IS NULL
                                THEN now() ELSE q.next_claim_at END
      FROM entry
     WHERE q.hostname = :hostname
    RETURNING q.root, CASE WHEN q.status_reason IS NULL AND q.denied_by IS NULL
                           THEN q.next_claim_at END
    """
)


@retry_conflicts
def take_out_denied(engine: Engine, hostname: str, entry: str) -> None:
    """A request to `hostname` was denied by `entry`: its row leaves routing (and its claim)."""
    with engine.begin() as conn:
        dated = conn.execute(DENY_ONE, {"hostname": hostname, "entry": entry})
        rollups.lower_next_due(conn, dated.all())
