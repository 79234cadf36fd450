"""The queue rows deny entries take out of routing (the claim's path) and put back.

The rows under new entries taken out, those of lifted entries put back (for the entry
writer, crawler.db.rules.deny_entries), and a denied request's row.

`queue.denied_by` names the entry that took a row out of routing, so removing
an entry puts back exactly its rows (unless another entry still covers them:
NEAREST_ENTRY, as the claim asks).

An entry covers a row from the row's own root (at or under it: the same shard group on
a Citus cluster) or from above it (a forced bare public suffix, `test`, `co.uk`: in the
shard of its own root). A statement that locks rows runs within one shard group, so the
entries above the rows' roots come in as a parameter (`:above`, read beforehand).
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from crawler.core.hostnames import is_public_suffix, parents, root
from crawler.db import deployments
from crawler.db.crawl import rollups
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import names_below, names_param, suffix_range

# The nearest other deny entry above a row `q` of the shard group's :roots, or NULL when
# none covers it: one in the row's root, else the nearest of the standing entries above
# roots (:above), which are always shorter.
NEAREST_ENTRY = """
    coalesce(
      (SELECT d.hostname FROM hosts d
        WHERE d.root = q.root AND d.root = ANY(:roots)
          AND d.hostname = ANY(host_parents(q.hostname)) AND d.hostname <> q.hostname
          AND d.status_reason IS NOT NULL
        ORDER BY length(d.hostname) DESC LIMIT 1),
      (SELECT a FROM unnest(:above) AS a
        WHERE a = ANY(host_parents(q.hostname)) ORDER BY length(a) DESC LIMIT 1))
"""

# Every routed row under a new entry (:entries, of the group), in the entry's root, leaves
# routing, credited to the nearest new entry. OFFSET 0 keeps the row filters out of the
# lateral scan, so it is always the range scan of ix_hosts_reversed, whatever the planner
# believes of the queue's size.
TAKE_OUT_UNDER = text(
    """
    WITH under AS (
        SELECT DISTINCT ON (r.hostname) r.hostname, s.hostname AS entry
          FROM unnest(:entries, :entry_roots) AS s(hostname, root)
         CROSS JOIN LATERAL (
               SELECT hostname, denied_by, status_reason FROM hosts
                WHERE root = ANY(:roots) AND root = s.root
                  AND reverse(hostname::text) >= reverse(s.hostname) || '.'
                  AND reverse(hostname::text) < reverse(s.hostname) || '/'
               OFFSET 0) r
         WHERE r.denied_by IS NULL AND r.status_reason IS NULL
         ORDER BY r.hostname, length(s.hostname) DESC),
    locked AS (
        SELECT q.hostname, under.entry FROM hosts q JOIN under USING (hostname)
         WHERE q.root = ANY(:roots) ORDER BY q.hostname FOR UPDATE OF q)
    UPDATE hosts q SET denied_by = locked.entry FROM locked
     WHERE q.hostname = locked.hostname AND q.root = ANY(:roots)
    """
).bindparams(*names_param("entries", "entry_roots", "roots"))
# The routed rows under a new entry above a root (a forced bare suffix), in every root:
# no shard group holds them all, so a plain UPDATE (Citus runs it on every shard; it
# locks no row before it changes it). Run for the longest such entry first: a row gets
# the nearest.
TAKE_OUT_UNDER_ABOVE = text(
    f"""
    UPDATE hosts SET denied_by = :entry
     WHERE {names_below("hostname")} AND denied_by IS NULL AND status_reason IS NULL
    """
)
# The roots holding rows taken out by entries above roots: the shard groups to put back in.
ROOTS_DENIED_BY = text(
    "SELECT DISTINCT root FROM hosts WHERE denied_by = ANY(:entries)"
).bindparams(*names_param("entries"))
# The standing entries among the given names (in their own roots: bare suffixes).
STANDING = text(
    "SELECT hostname FROM hosts"
    " WHERE hostname = ANY(:names) AND root = ANY(:names) AND status_reason IS NOT NULL"
).bindparams(*names_param("names"))
PUT_BACK = text(
    f"""
    UPDATE hosts q SET denied_by = {NEAREST_ENTRY}
      FROM (SELECT hostname, denied_by FROM hosts
             WHERE root = ANY(:roots) AND denied_by = ANY(:entries)
             ORDER BY hostname FOR UPDATE) AS t
     WHERE q.hostname = t.hostname AND q.root = ANY(:roots)
    RETURNING t.denied_by AS entry, q.denied_by, q.root,
              CASE WHEN q.denied_by IS NULL AND q.status_reason IS NULL THEN q.next_claim_at END
    """
).bindparams(*names_param("entries", "roots", "above"))
# The claim is released either way, and the host is due at once the moment it is
# routable: now if the entry was removed meanwhile (this worker heard late), or
# when the entry is removed later. A host that is itself the entry (blocked while
# claimed) is dated now too: the date it had was the released claim's lease end, and
# lifting the entry keeps a row's date. (now() is read in the CTE: Citus allows no
# non-immutable function in a CASE of an UPDATE.)
DENY_ONE = text(
    """
    WITH entry AS (
        SELECT EXISTS (SELECT 1 FROM hosts
                        WHERE hostname = :entry AND root = :entry_root
                          AND status_reason IS NOT NULL)
               AS stands, now() AS now)
    UPDATE hosts q SET claimed_by = NULL, claimed_at = NULL, unfinished_claims = 0,
           denied_by = CASE WHEN q.status_reason IS NULL AND entry.stands
                            THEN :entry ELSE q.denied_by END,
           next_claim_at = CASE WHEN q.status_reason IS NULL OR q.claimed_by IS NOT NULL
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


def take_out_under(
    conn: Connection, groups: list[deployments.ShardGroup], added: list[str]
) -> None:
    """The routed rows under the new entries leave routing: those of each entry's root
    within its shard group, then those under an entry above a root, in every root."""
    new = set(added)
    for roots, names in groups:
        entries = [h for h in names if h in new]
        if entries:
            params = {"entries": entries, "entry_roots": [root(h) for h in entries]}
            conn.execute(TAKE_OUT_UNDER, {**params, "roots": roots})
    for entry in sorted(filter(is_public_suffix, added), key=len, reverse=True):
        lo, hi = suffix_range(entry)
        conn.execute(TAKE_OUT_UNDER_ABOVE, {"entry": entry, "lo": lo, "hi": hi})


def put_back(conn: Connection, entries: list[str]) -> list:
    """The rows the lifted entries took out, back in routing unless another entry covers
    them (credited to it then): within each shard group of the roots holding them (an
    entry's own root, and every root for an entry above one)."""
    roots_of = {root(h): root(h) for h in entries}
    above = [h for h in entries if is_public_suffix(h)]
    if above:
        roots_of.update((r, r) for r in conn.execute(ROOTS_DENIED_BY, {"entries": above}).scalars())
    over = sorted({p for r in roots_of for p in parents(r)[1:]})  # the suffixes of the roots
    standing = list(conn.execute(STANDING, {"names": over}).scalars()) if over else []
    back = []
    for roots, _ in deployments.by_shard_group(conn, roots_of):
        params = {"entries": entries, "roots": roots, "above": standing}
        back += conn.execute(PUT_BACK, params).all()
    return back
