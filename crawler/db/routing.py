"""Which queue rows are routed: deny entries take rows out, removals put them back.

`queue.denied_by` names the entry that took a row out of routing, so removing
an entry puts back exactly its rows (unless another entry still covers them).
Multi-row updates lock rows in hostname order, as every bulk write here does,
so operators' changes and workers' writes never deadlock for long.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from crawler.db.hostsql import names_below, suffix_range
from crawler.db.retry import retry_conflicts

# The nearest other deny entry above a row, or NULL when none covers it.
NEAREST_ENTRY = """
    (SELECT d.hostname FROM queue d
      WHERE d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
        AND d.status_reason IS NOT NULL
      ORDER BY length(d.hostname) DESC LIMIT 1)
"""

TAKE_OUT_UNDER = text(
    f"""
    UPDATE queue q SET denied_by = :entry
      FROM (SELECT hostname FROM queue WHERE {names_below("hostname")}
              AND denied_by IS NULL AND status_reason IS NULL
             ORDER BY hostname FOR UPDATE) AS t
     WHERE q.hostname = t.hostname
    """
)
PUT_BACK = text(
    f"""
    UPDATE queue q SET denied_by = {NEAREST_ENTRY}
      FROM (SELECT hostname FROM queue WHERE denied_by = :entry
             ORDER BY hostname FOR UPDATE) AS t
     WHERE q.hostname = t.hostname
    RETURNING q.denied_by
    """
)
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
    """
)


def take_out_under(conn: Connection, entry: str) -> int:
    """Every routed row below a new entry leaves routing; returns how many."""
    lo, hi = suffix_range(entry)
    return conn.execute(TAKE_OUT_UNDER, {"entry": entry, "lo": lo, "hi": hi}).rowcount


def put_back(conn: Connection, entry: str) -> int:
    """Rows the entry took out: back to routing, unless another entry covers them."""
    rows = conn.execute(PUT_BACK, {"entry": entry}).fetchall()
    return sum(1 for (by,) in rows if by is None)


@retry_conflicts
def take_out_denied(engine: Engine, hostname: str, entry: str) -> None:
    """A request to `hostname` was denied by `entry`: its row leaves routing (and its claim)."""
    with engine.begin() as conn:
        conn.execute(DENY_ONE, {"hostname": hostname, "entry": entry})
