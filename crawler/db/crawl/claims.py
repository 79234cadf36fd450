"""Claiming due hosts (docs/design.md, rule 6): SKIP LOCKED, a lease, never under a deny entry.

A claim moves the rows' `next_claim_at` forward by the lease: if the worker
dies, they come back on their own when it runs out.

The crawl claims politely (`claim_polite`): per root, at most
`concurrency` hosts claimed and unfinished across all workers, at most `budget`
claimed per rolling hour, and a batch spread over roots. The roots table
(migration 0006) orders the roots by their oldest due host, so a root with
100,000 due hosts costs a claim what a root with one does. The bare `claim`
(no per-root limits) is what the DNS audit uses: it fetches no page.

The claim that locks and writes is the deployment's (crawler.db.deployments'
`ClaimStrategy`): one server's (crawler.db.deployments.claims_one_server) or the cluster's
(crawler.db.deployments.claims_cluster), each with its statements written out, picked once per
engine. What is here reads without a lock and runs as it is on both: what is due,
whether the crawl is pending.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import Connection, Engine, text

from crawler.db.crawl import rollups
from crawler.db.crawl.counts import HELD
from crawler.db.deployments import deployment_of
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import DUE, UNDER_ROOT, filled, under_params

DEFAULT_LEASE = timedelta(minutes=10)
DEFAULT_CONCURRENCY = 2
DEFAULT_BUDGET = 3600

# How far down the due roots one claim's first page walks, in roots per root it wants
# (past roots at their concurrency and roots another claim holds), and how far its pages
# go at most.
WALK_PER_ROOT = 4
WALK_MOST_PER_ROOT = 64
# The transaction-scoped advisory locks of a polite claim's walk (one per root): in
# memory only, unlike row locks, and held until the claim commits. A hash collision only
# skips a root.
LOCK_SPACE = 1212

# What a bare claim would take (sql_pieces.DUE), for count_due and due_hosts.
DUE_UNDER = text(filled(DUE, under=UNDER_ROOT))
DUE_ALL = text(filled(DUE, under=""))
# A root held over its budget has nothing claimable until then: not pending.
NOT_HELD = """AND NOT EXISTS (SELECT 1 FROM roots r
                         WHERE r.root = q.root AND r.held_until > now())"""
# A host held back in our outage (crawler.rules.held_back) and not settled since: it is
# asked again when the outage ends, so the crawl is pending whatever its row's date (a
# lease renewed late, or run out, or a date read in another snapshot's now() on a cluster
# made a draining crawl stop with every host held). Only hosts ever held back (the
# partial ix_hosts_held_at); a row an entry took out of routing is not waited for.
HELD_NOW = f"""
    SELECT 1 FROM hosts h WHERE {HELD} AND h.status_reason IS NULL AND h.denied_by IS NULL"""
CRAWL_PENDING = text(
    f"""
    SELECT EXISTS (SELECT 1 FROM hosts
                    WHERE status_reason IS NULL AND denied_by IS NULL
                      AND next_claim_at > now() AND next_claim_at <= now() + :lease
                      AND claimed_by IS NOT NULL)
        OR EXISTS ({filled(DUE, under=NOT_HELD)})
        OR EXISTS ({HELD_NOW})
    """
)
# The oldest due rows, for a claim that found no root: a row dated by a hand-made change
# (not through crawler.db.crawl.rollups) leaves its root's bound too late, and its root would
# never be claimed. Bounded by the batch: an index range scan of ix_hosts_due.
OLDEST_DUE = text(
    """
    SELECT root, next_claim_at FROM hosts
     WHERE status_reason IS NULL AND denied_by IS NULL AND next_claim_at <= now()
     ORDER BY next_claim_at LIMIT :n
    """
)


@dataclass(frozen=True)
class RootLimits:
    """Per-root politeness across all workers (settings ROOT_CONCURRENCY, ROOT_BUDGET)."""

    concurrency: int = DEFAULT_CONCURRENCY
    budget: int = DEFAULT_BUDGET  # hosts of one root claimed per rolling hour


@dataclass
class Claim:
    """What a polite claim took, and the roots it found over their budget (now held)."""

    hosts: list[str] = field(default_factory=list)
    over_budget: list[str] = field(default_factory=list)


@retry_conflicts
def claim_polite(
    engine: Engine,
    n: int,
    worker: str,
    lease: timedelta = DEFAULT_LEASE,
    limits: RootLimits = RootLimits(),
) -> Claim:
    """Claim up to n due hosts spread over roots, oldest first, within the per-root limits.

    A root at its concurrency is skipped (its hosts stay due); a root over its
    budget is held until enough of the last hour's claims age out.
    """
    with engine.begin() as conn:
        return claim_polite_in(conn, n, worker, lease, limits)


def claim_polite_in(
    conn: Connection, n: int, worker: str, lease: timedelta, limits: RootLimits
) -> Claim:
    """claim_polite's work in the caller's transaction (its locks last until it ends)."""
    params = {"n": n, "worker": worker, "lease": lease, "lock_space": LOCK_SPACE}
    params |= {"concurrency": limits.concurrency, "budget": limits.budget}
    params |= {"walk_per_root": WALK_PER_ROOT, "walk_most_per_root": WALK_MOST_PER_ROOT}
    claims = deployment_of(conn).claims
    rows = claims.polite(conn, params)
    if not rows and rollups.lower_next_due(conn, conn.execute(OLDEST_DUE, {"n": n})):
        rows = claims.polite(conn, params)
    result = Claim()
    for kind, name in rows:
        (result.hosts if kind == "host" else result.over_budget).append(name)
    return result


def claim(
    engine: Engine,
    n: int,
    worker: str,
    lease: timedelta = DEFAULT_LEASE,
    under: str | None = None,
) -> list[str]:
    """Claim up to n due hosts (only `under` and below, if given), oldest first."""
    params = {"n": n, "worker": worker, "lease": lease, **under_params(under)}
    with engine.begin() as conn:
        return deployment_of(conn).claims.bare(conn, params)


def crawl_pending(engine: Engine, lease: timedelta = DEFAULT_LEASE) -> bool:
    """True while a host is due, any worker holds an unexpired claim (its links may
    make more due), or a host is held back in an outage, whatever its date.

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
