"""The self-check's default canaries: hosts that have answered us in this database.

A canary is a host whose front page answered OK (or, for the DNS-only audit,
whose name resolved) at any time: no "lately" limit, so a crawl that has
never seen a host answer has no canary, and no proof that the world answers
it. The newest answerers come first (host_hours keeps each writer's last few
per hour, migration 0009): the likeliest to answer now.
"""

from __future__ import annotations

from sqlalchemy import Engine, text

from crawler.db.hostsql import names_param

# Each hour's last answerers, newest hour first, that still answered at their last crawl.
NEWEST_OK = text(
    """
    SELECT h.hostname FROM (
        SELECT unnest(last_ok) AS hostname, hour FROM host_hours WHERE last_ok IS NOT NULL
    ) AS l JOIN hosts h USING (hostname)
     WHERE h.outcome = 'OK' AND h.root <> :root
     GROUP BY h.hostname ORDER BY max(l.hour) DESC, h.hostname
     LIMIT :n
    """
)
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
        found = list(conn.execute(NEWEST_OK, {"n": n, "root": other_than}).scalars())
        for more in (ANY_OK, ANY_RESOLVED) if resolved else (ANY_OK,):
            if len(found) >= n:
                break
            params = {"n": n - len(found), "root": other_than, "have": found}
            found += conn.execute(more, params).scalars()
    return found
