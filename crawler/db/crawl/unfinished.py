"""Poison pills: a host whose processing never finishes is not handed from worker to worker.

A host whose fetch froze its worker (or killed it) keeps its claim until the lease
runs out; then the next claim hands it to another worker, which may freeze on it
too. Each claim of a host is counted here, and every release of its claim (a
finish, crawler.db.crawl.queue's SCHEDULE; a retry for our own outage; a deny entry)
sets the count back to 0: the count is the claims in a row whose lease ran out, plus
the one just made. The claim after MAX_UNFINISHED_LEASES such leases is not fetched:
the spider settles the host as HTTP_UNFINISHED, and its finish puts it off until
RECRAWL_AFTER like any crawled host. A worker that stops gracefully was not frozen:
it takes back the counts of the claims it still holds (`forgive`), so restarting
workers twice while a slow host is in flight does not make it a poison pill.

Kept out of the claim statements themselves (crawler.db.crawl.claims): one more statement per
claim, over the rows just claimed, locked by their keys.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Engine, text

from crawler.core.hostnames import root
from crawler.db import deployments
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import names_param

MAX_UNFINISHED_LEASES = 2

# Once per shard group: `root = ANY(:roots)` of one group routes it to one worker.
COUNT_CLAIMS = text(
    """
    UPDATE hosts SET unfinished_claims = least(unfinished_claims + 1, 32767)
     WHERE root = ANY(:roots) AND hostname = ANY(:names)
    RETURNING hostname, unfinished_claims
    """
).bindparams(*names_param("names", "roots"))


@retry_conflicts
def count_claims(engine: Engine, hostnames: Sequence[str]) -> list[str]:
    """Count a claim of each of `hostnames` (just claimed); the ones claimed after
    MAX_UNFINISHED_LEASES leases in a row ran out unfinished, in name order."""
    if not hostnames:
        return []
    poisoned = []
    with engine.begin() as conn:
        for roots, names in deployments.by_shard_group(conn, {h: root(h) for h in hostnames}):
            rows = conn.execute(COUNT_CLAIMS, {"names": names, "roots": roots}).all()
            poisoned += [name for name, count in rows if count > MAX_UNFINISHED_LEASES]
    return sorted(poisoned)


# A row another worker claimed meanwhile (this one's lease ran out) keeps its count.
FORGIVE = text(
    """
    UPDATE hosts SET unfinished_claims = greatest(unfinished_claims - 1, 0)
     WHERE root = ANY(:roots) AND hostname = ANY(:names) AND claimed_by = :worker
    """
).bindparams(*names_param("names", "roots"))


@retry_conflicts
def forgive(engine: Engine, hostnames: Sequence[str], worker: str) -> None:
    """Take back the count of `worker`'s claims of `hostnames` (it stops, not frozen)."""
    with engine.begin() as conn:
        for roots, names in deployments.by_shard_group(conn, {h: root(h) for h in hostnames}):
            conn.execute(FORGIVE, {"names": names, "roots": roots, "worker": worker})
