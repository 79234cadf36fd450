"""The queue's writes (docs/design.md, rules 3 and 6): new hosts in, crawled hosts' results out.

A crawled host's result, its new links and its next date are written in one
transaction (`finish_many`), and the claim is released in it: a worker killed
before it commits loses nothing — the lease runs out and the host comes back.
Links arrive filtered, as the core's FilteredLinks, each name with its root and
source group; this module only writes them, and answers with the names that
were new.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import Connection, Engine, text

from crawler.core.hostnames import root
from crawler.core.links import FilteredLinks, FoundName
from crawler.core.namecaps import OVER_CAP
from crawler.core.outcomes import is_network_failure
from crawler.core.sources import PLACE_CHARS
from crawler.db.crawl import dropped_links, rollups
from crawler.db.crawl.known_names import known_names
from crawler.db.deployments import DATED, by_shard_group, deployment_of, shard_groups
from crawler.db.operators import bulk
from crawler.db.operators.bulk import EntryChange
from crawler.db.server.retry import retry_conflicts
from crawler.db.server.sql_pieces import names_param


@dataclass(frozen=True)
class CrawlResult:
    """What fetching one host's front page came to."""

    outcome: str
    http_status: int | None = None
    final_url: str | None = None
    title: str | None = None
    scheme: str | None = None  # the scheme that answered (https, or http by the fallback)
    # Why reading stopped early (None: it did not).
    extract_stopped: str | None = None


@dataclass(frozen=True)
class Crawled:
    """One crawled host for finish_many(): its result, its page's filtered links, its next date."""

    hostname: str
    result: CrawlResult
    links: FilteredLinks = field(default_factory=FilteredLinks)
    recrawl_after: timedelta = timedelta(days=7)


# New names in, due now; a known dateless row (made by a deny entry, whose entry went) is
# dated when a link finds it. `new`: the row was inserted, not found (xmax 0).
INSERT_HOSTS = text(
    f"""
    INSERT INTO hosts (hostname, root, discovered_from, found_source, found_via, next_claim_at)
    SELECT *, now() FROM unnest(:names, :roots, :pages, :sources, :places)
    ON CONFLICT (hostname, root) DO UPDATE SET next_claim_at = excluded.next_claim_at
     WHERE hosts.next_claim_at IS NULL AND hosts.status_reason IS NULL
    RETURNING hostname, xmax = 0 AS new, {DATED}
    """
).bindparams(*names_param("names", "roots", "pages", "sources", "places"))


@retry_conflicts
def save_hosts(engine: Engine, hostnames: Iterable[str], discovered_from: str | None = None) -> int:
    """Insert normalized, allowed hostnames into hosts, due now.

    Idempotent. Returns how many hosts were new. Callers filter first; a
    dateless row (made by a deny entry) gets a date when a link finds it.
    """
    names = [FoundName.of(name) for name in dict.fromkeys(hostnames)]
    if not names:
        return 0
    with engine.begin() as conn:
        return len(insert_hosts(conn, [(discovered_from, names)]))


# Per page (None: none, as for seeds), the names it named.
Named = Sequence[tuple[str | None, Sequence[FoundName]]]


def insert_hosts(
    conn: Connection, named: Named, pending: rollups.Rollups | None = None
) -> list[tuple[str | None, FoundName]]:
    """Insert the names each page named (the first page to name one is its
    discovered_from), a statement per shard group of their roots, in hostname order
    within one (the lock order every writer keeps).

    Returns the (page, name) of each name that was new. Their rollups go to `pending`
    (the caller writes it before it commits), or are written here.
    """
    first: dict[str, tuple[str | None, FoundName]] = {}
    for page, names in named:
        for name in names:
            first.setdefault(name.hostname, (page, name))
    gathered = rollups.Rollups() if pending is None else pending
    new = []
    # Once per shard group (one on one server): Citus sends each run's rows to one shard.
    for _, hostnames in by_shard_group(conn, {h: name.root for h, (_, name) in first.items()}):
        rows = [first[h] for h in hostnames]
        params = {"names": hostnames, "roots": [name.root for _, name in rows]}
        written = conn.execute(INSERT_HOSTS, {**params, **_found_columns(rows)}).all()
        gathered.lower_next_due((root, due) for _, _, root, due in written)
        new += [first[h] for h, is_new, _, _ in written if is_new]
    gathered.count_hosts(new=[name.root for _, name in new])
    gathered.count_hours(discovered=len(new))
    rollups.count_sources(conn, (name.group for _, name in new))
    if pending is None:
        gathered.write(conn)
    return new


def _found_columns(rows: list[tuple[str | None, FoundName]]) -> dict[str, list]:
    """Where each name was found: the page, the source group, the place (cut to fit)."""
    return {
        "pages": [page for page, _ in rows],
        "sources": [name.group for _, name in rows],
        "places": [name.place and name.place[:PLACE_CHARS] for _, name in rows],
    }


def seed(engine: Engine, values: Sequence[str], allow_private: bool = False) -> list[EntryChange]:
    """Queue operator-given hostnames; denied, malformed or uncrawlable ones are refused.

    The bulk path's seeding (crawler.db.operators.bulk.seed), for a few names.
    """
    return bulk.collect(bulk.seed(engine, values, allow_private=allow_private))


# What the database answered for one crawled host: the names its page added.
Added = tuple[FoundName, ...]


@retry_conflicts
def finish_many(engine: Engine, crawled: Sequence[Crawled]) -> list[Added]:
    """Write crawled hosts' results, new links, next dates and the links each deny entry
    dropped from their pages (crawler.db.crawl.dropped_links) in one transaction.

    All are written, or none. Returns, per host, the names its page added (as its
    links carried them).
    """
    named = [(host.hostname, _named_by(host)) for host in crawled]
    known = known_names(engine)
    unknown = [(page, known.unknown(names)) for page, names in named]
    with engine.begin() as conn:
        pending = rollups.Rollups()
        write_results(conn, crawled, pending)
        new = insert_hosts(conn, unknown, pending) if any(n for _, n in unknown) else []
        pending.write(conn)
        dropped_links.add(conn, dropped_links.gathered(h.links.by_entry for h in crawled))
    known.remember(name.hostname for _, names in unknown for name in names)  # committed
    added: dict[str | None, list[FoundName]] = {}
    for page, name in new:
        added.setdefault(page, []).append(name)
    return [tuple(added.get(host.hostname, ())) for host in crawled]


def _named_by(host: Crawled) -> tuple[FoundName, ...]:
    """The names a crawled host's page named, but its own: a page does not discover itself."""
    return tuple(name for name in host.links.names if name.hostname != host.hostname)


def write_results(conn: Connection, crawled: Sequence[Crawled], pending: rollups.Rollups) -> None:
    """The hosts' results, their claims released and their next dates, one statement per
    shard group (on one server, one): it locks the rows to read their outcome before,
    which Citus runs only within one shard. Their rollups go to `pending`."""
    roots = [root(host.hostname) for host in crawled]
    statement = deployment_of(conn).write_results
    for group in shard_groups(conn, set(roots)):
        part = [i for i, r in enumerate(roots) if r in group]
        params = results_params([crawled[i] for i in part], [roots[i] for i in part])
        written = conn.execute(statement, params).all()
        pending.count_hosts(crawled=[(r, before, now) for r, _, before, now, _ in written])
        pending.count_hours(crawled=[(h, now) for _, h, _, now, _ in written])
        pending.lower_next_due((r, due) for r, _, _, _, due in written)


def results_params(crawled: Sequence[Crawled], roots: Sequence[str]) -> dict:
    """The columns of write_results; the links' counts as the page's links carry them."""
    results = [host.result for host in crawled]
    return {
        "names": [host.hostname for host in crawled],
        "roots": list(roots),
        "outcomes": [r.outcome for r in results],
        "statuses": [r.http_status for r in results],
        "urls": [r.final_url for r in results],
        "titles": [r.title for r in results],
        "schemes": [r.scheme for r in results],
        "found": [host.links.found for host in crawled],
        "saved": [len(_named_by(host)) for host in crawled],
        "filtered": [host.links.filtered for host in crawled],
        "over_cap": [host.links.dropped.get(OVER_CAP, 0) for host in crawled],
        "stopped": [r.extract_stopped for r in results],
        "failed": [is_network_failure(r.outcome) for r in results],
        "afters": [host.recrawl_after for host in crawled],
    }


def schedule(
    conn: Connection, delays: list[tuple[str, timedelta]], pending: rollups.Rollups | None = None
) -> None:
    """Release claims (entry rows too) and set each routable row's next date; the roots'
    dates go to `pending` (written by the caller), or are written here."""
    after = dict(delays)
    gathered = rollups.Rollups() if pending is None else pending
    statement = deployment_of(conn).schedule
    roots_of = {h: root(h) for h in after}
    for roots, names in by_shard_group(conn, roots_of):
        params = {"names": names, "host_roots": [roots_of[h] for h in names], "roots": roots}
        gathered.lower_next_due(
            conn.execute(statement, {**params, "afters": [after[h] for h in names]})
        )
    if pending is None:
        gathered.write(conn)


# Once per shard group: `root = ANY(:roots)` of one group routes it to one worker.
RETRY_SOON = text(
    "UPDATE hosts SET next_claim_at = now() + :after, unfinished_claims = 0"
    " WHERE root = ANY(:roots)"
    f" AND hostname = ANY(:names) AND status_reason IS NULL RETURNING {DATED}"
).bindparams(*names_param("names", "roots"))
# In hostname order: the lock order of a finish (write_results).
HELD_BACK = text(
    "UPDATE hosts h SET held_tries = h.held_tries + 1, held_at = now(), held_outcome = :outcome"
    " FROM (SELECT hostname, root FROM hosts WHERE root = ANY(:roots) AND hostname = ANY(:names)"
    "        ORDER BY hostname FOR UPDATE) AS t"
    " WHERE h.root = ANY(:roots) AND h.hostname = t.hostname AND h.root = t.root"
).bindparams(*names_param("names", "roots"))


# The claim that led to a try held back is given back to its root's hourly budget (it
# was counted in the minute it was made: claimed_at's): an outage's tries are ours, not
# the root's, and one host tried every OUTAGE_RETRY_AFTER would spend 240 an hour.
UNCHARGE = text(
    "UPDATE root_claims c SET claimed = greatest(c.claimed - t.n, 0)"
    " FROM (SELECT root, date_trunc('minute', claimed_at) AS minute, count(*) AS n FROM hosts"
    "        WHERE root = ANY(:roots) AND hostname = ANY(:names) AND claimed_at IS NOT NULL"
    "        GROUP BY 1, 2) AS t"
    " WHERE c.root = ANY(:roots) AND c.root = t.root AND c.minute = t.minute"
).bindparams(*names_param("names", "roots"))


# A held-back host its worker still holds: given back, due now, for any worker to claim.
RELEASE_HELD = text(
    "UPDATE hosts SET next_claim_at = now(), claimed_by = NULL, claimed_at = NULL,"
    " unfinished_claims = 0"
    " WHERE root = ANY(:roots) AND hostname = ANY(:names) AND claimed_by = :worker"
    f" AND status_reason IS NULL RETURNING {DATED}"
).bindparams(*names_param("names", "roots"))


# Its lease renewed while the outage lasts: a lease shorter than the outage would hand it
# to a claim (a try on a timer). A later date needs no root's date lowered.
RENEW_HELD = text(
    "UPDATE hosts SET next_claim_at = now() + :after"
    " WHERE root = ANY(:roots) AND hostname = ANY(:names) AND claimed_by = :worker"
    " AND status_reason IS NULL"
).bindparams(*names_param("names", "roots"))


@retry_conflicts
def retry_soon(
    engine: Engine, hostnames: Sequence[str], after: timedelta, outcome: str | None = None
) -> None:
    """Claimed hosts whose try said nothing about them (our own outage): held back, due
    again `after` from now (the lease, released sooner by `release_held`), still claimed
    by their worker, so a draining crawl waits. The try is counted on the host
    (held_tries, and its `outcome` as the last one held back) and in this minute's
    failures of its layer (host_minutes), and not in its root's budget."""
    with engine.begin() as conn:
        pending = rollups.Rollups()
        for roots, names in by_shard_group(conn, {h: root(h) for h in hostnames}):
            params = {"names": names, "roots": roots}
            conn.execute(HELD_BACK, {**params, "outcome": outcome})
            conn.execute(UNCHARGE, params)
            pending.lower_next_due(conn.execute(RETRY_SOON, {**params, "after": after}).all())
        pending.count_held([outcome] * len(hostnames))
        pending.write(conn)


@retry_conflicts
def release_held(engine: Engine, hostnames: Sequence[str], worker: str) -> None:
    """The world answers again: `worker`'s held-back hosts are due now (a row another
    worker claimed since, its lease having run out, is left to it)."""
    with engine.begin() as conn:
        pending = rollups.Rollups()
        for roots, names in by_shard_group(conn, {h: root(h) for h in hostnames}):
            params = {"names": names, "roots": roots, "worker": worker}
            pending.lower_next_due(conn.execute(RELEASE_HELD, params).all())
        pending.write(conn)


@retry_conflicts
def renew_held(engine: Engine, hostnames: Sequence[str], worker: str, after: timedelta) -> None:
    """`worker`'s held-back hosts stay claimed: due again `after` from now."""
    with engine.begin() as conn:
        for roots, names in by_shard_group(conn, {h: root(h) for h in hostnames}):
            params = {"names": names, "roots": roots, "worker": worker, "after": after}
            conn.execute(RENEW_HELD, params)


@retry_conflicts
def release(engine: Engine, hostnames: Sequence[str]) -> None:
    """Give claimed hosts back, due now."""
    with engine.begin() as conn:
        schedule(conn, [(h, timedelta(0)) for h in hostnames])
