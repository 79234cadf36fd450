"""Claiming due hosts (DESIGN.md §6): SKIP LOCKED, a lease, never under a deny entry.

A claim moves the rows' `next_claim_at` forward by the lease: if the worker
dies, they come back on their own when it runs out.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine, text

from crawler.db.hostsql import names_below, under_params

DEFAULT_LEASE = timedelta(minutes=10)

# Routable and due: no deny entry of its own or above it (q's own row is due,
# so only its parents can be entries). {under} narrows it to one root.
DUE = """
    SELECT q.hostname FROM queue q
     WHERE q.status_reason IS NULL AND q.denied_by IS NULL
       AND q.next_claim_at <= now() {under}
       AND NOT EXISTS (
           SELECT 1 FROM queue d
            WHERE d.hostname = ANY((host_parents(q.hostname))[2:])
              AND d.status_reason IS NOT NULL)
     ORDER BY q.next_claim_at
     LIMIT :n
"""
UNDER_ROOT = f"AND (q.hostname = :root OR ({names_below('q.hostname')}))"
CLAIM = """
    WITH due AS ({due} FOR UPDATE OF q SKIP LOCKED)
    UPDATE queue q
       SET next_claim_at = now() + :lease, claimed_by = :worker, claimed_at = now()
      FROM due WHERE q.hostname = due.hostname
    RETURNING q.hostname
"""
CLAIM_ALL = text(CLAIM.format(due=DUE.format(under="")))
CLAIM_UNDER = text(CLAIM.format(due=DUE.format(under=UNDER_ROOT)))
DUE_UNDER = text(DUE.format(under=UNDER_ROOT))
DUE_ALL = text(DUE.format(under=""))
CRAWL_PENDING = text(
    f"""
    SELECT EXISTS (SELECT 1 FROM queue
                    WHERE status_reason IS NULL AND denied_by IS NULL
                      AND next_claim_at > now() AND next_claim_at <= now() + :lease
                      AND claimed_by IS NOT NULL)
        OR EXISTS ({DUE.format(under="")})
    """
)


def claim(
    engine: Engine,
    n: int,
    worker: str,
    lease: timedelta = DEFAULT_LEASE,
    under: str | None = None,
) -> list[str]:
    """Claim up to n due hosts (only `under` and below, if given), oldest first."""
    statement = CLAIM_ALL if under is None else CLAIM_UNDER
    params = {"n": n, "worker": worker, "lease": lease, **under_params(under)}
    with engine.begin() as conn:
        return [h for (h,) in conn.execute(statement, params)]


def crawl_pending(engine: Engine, lease: timedelta = DEFAULT_LEASE) -> bool:
    """True while a host is due, or any worker holds an unexpired claim (its links
    may make more due).

    One statement, so one snapshot: a finish that releases its claim and makes
    its links due in the same transaction cannot slip between two checks.
    """
    with engine.connect() as conn:
        return conn.execute(CRAWL_PENDING, {"lease": lease, "n": 1}).scalar_one()


def count_due(engine: Engine, n: int, under: str | None = None) -> int:
    """How many hosts claim() could take now (counting at most n)."""
    statement = DUE_ALL if under is None else DUE_UNDER
    counted = text(f"SELECT count(*) FROM ({statement.text}) AS due")
    with engine.connect() as conn:
        return conn.execute(counted, {"n": n, **under_params(under)}).scalar_one()


def due_hosts(engine: Engine, n: int, under: str | None = None) -> list[str]:
    """What claim() would take, without claiming it (for dry runs)."""
    statement = DUE_ALL if under is None else DUE_UNDER
    with engine.connect() as conn:
        return [h for (h,) in conn.execute(statement, {"n": n, **under_params(under)})]
