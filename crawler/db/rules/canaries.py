"""The self-check's default canaries: hosts that have answered us in this database.

A canary is a host whose front page answered OK (or, for the DNS-only audit,
whose name resolved) at any time: no "lately" limit, so a crawl that has
never seen a host answer has no canary, and no proof that the world answers
it. The newest answerers come first (host_hours keeps each writer's last few
per hour, migration 0009): the likeliest to answer now. Should they all be
gone, any host that answers is written and becomes the newest, so a world
that answers proves itself again at the next check.
"""

from __future__ import annotations

from sqlalchemy import Engine, text

from crawler.db.server.sql_pieces import names_param

# The last answerers kept in host_hours' newest rows (however old), that still answered
# at their last crawl, newest crawl first: a few dozen primary-key reads.
NEWEST_OK = text(
    """
    SELECT h.hostname FROM (
        SELECT unnest(last_ok) AS hostname FROM (
            SELECT last_ok FROM host_hours WHERE last_ok IS NOT NULL
             ORDER BY hour DESC LIMIT :rows) AS newest
    ) AS l JOIN hosts h USING (hostname)
     WHERE h.outcome = 'OK' AND h.root <> :root
     GROUP BY h.hostname, h.last_crawled_at ORDER BY h.last_crawled_at DESC
     LIMIT :n
    """
)
# host_hours rows read for them: an hour of every writer shard (migration 0009), and more.
NEWEST_ROWS = 24
# Any other host that answered (ix_hosts_outcome), when host_hours names too few.
ANY_OK = text(
    "SELECT hostname FROM hosts WHERE outcome = 'OK' AND root <> :root"
    " AND hostname <> ALL(:have) LIMIT :n"
).bindparams(*names_param("have"))
# For the DNS-only audit: names it resolved (no index: a scan that stops at the first n).
ANY_RESOLVED = text(
    "SELECT hostname FROM hosts WHERE audit_outcome = 'DNS_ALIVE' AND root <> :root"
    " AND hostname <> ALL(:have) LIMIT :n"
).bindparams(*names_param("have"))


def answered_hosts(
    engine: Engine, n: int, other_than: str = "", resolved: bool = False
) -> list[str]:
    """Up to `n` hosts of roots other than `other_than` that have ever answered OK (with
    `resolved`, also names the audit resolved), newest first; [] when none ever has."""
    with engine.connect() as conn:
        newest = {"n": n, "root": other_than, "rows": NEWEST_ROWS}
        found = list(conn.execute(NEWEST_OK, newest).scalars())
        for more in (ANY_OK, ANY_RESOLVED) if resolved else (ANY_OK,):
            if len(found) >= n:
                break
            params = {"n": n - len(found), "root": other_than, "have": found}
            found += conn.execute(more, params).scalars()
    return found
