"""The deployment: one Postgres server, or a Citus cluster sharded by root, picked once per
engine (`deployment_of`). Wherever the two differ, a caller asks the deployment, never
which one it is: its claim, its crawl writes, the deny test of a listed host, and how it
groups roots. Each deployment's statements are written out in its own modules, here:
one_server and claims_one_server, cluster and claims_cluster (params: the typed parameters
they share); nothing rewrites one into the other. Code outside this package asks the
deployment (`deployment_of`) and imports none of those modules
(tests/unit/test_layers.py).

Every writer of rows of many roots runs a statement per shard group of the roots, in
shard id order (`shard_groups`, one group on one server): Citus runs a statement that
locks rows only within one. The rows within one go in root or hostname order: one lock
order for all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol
from weakref import WeakKeyDictionary

from sqlalchemy import Connection, Engine, TextClause
from sqlalchemy.orm import Session, scoped_session
from sqlalchemy.sql.elements import ColumnElement

from crawler.db.deployments.cluster import Cluster
from crawler.db.deployments.one_server import OneServer
from crawler.db.deployments.params import DATED as DATED  # what a queue write returns
from crawler.db.deployments.params import DUES as DUES  # each root's earliest new date

# Aliased: crawler.db.deployments.cluster, imported below, is the cluster's statements.
from crawler.db.server import cluster as citus


class ClaimStrategy(Protocol):
    """How a deployment claims: the statements that lock and write, and their order."""

    def polite(self, conn: Connection, params: dict) -> list:
        """The polite claim in the caller's transaction: rows (kind, name), kind "host" for
        a claimed host, "over_budget" for a root now held. `params`: n, worker, lease,
        concurrency, budget, lock_space, walk_per_root, walk_most_per_root."""
        ...

    def bare(self, conn: Connection, params: dict) -> list[str]:
        """The bare claim: up to n due hosts, oldest first (under `root`, if given)."""
        ...


class Deployment(Protocol):
    """What differs between one server and a cluster, each written out once."""

    name: str
    claims: ClaimStrategy
    write_results: TextClause  # crawler.db.crawl.queue.write_results, a shard group's batch
    schedule: TextClause  # crawler.db.crawl.queue.schedule
    trim_windows: TextClause  # crawler.db.rules.trap_windows
    lower_next_due: TextClause  # crawler.db.crawl.rollups
    recount_windows: TextClause  # crawler.db.crawl.rollups

    def shard_groups(self, conn: Connection, roots: set[str]) -> list[set[str]]:
        """The roots (not empty) by shard group, in shard id order."""
        ...

    def visible(self, hostname: ColumnElement, root: ColumnElement) -> ColumnElement[bool]:
        """The listed name (with its root column) is under no deny entry."""
        ...

    def planned_rows(self, plan: dict) -> int:
        """The rows a statement's EXPLAIN (FORMAT JSON) expects (on a cluster, over every
        shard: Citus' own figure above its tasks is a fixed 100,000)."""
        ...

    def value_shares(self, conn: Connection, table: str, column: str) -> list:
        """A column's most common values (None: NULL) and their shares of the table's rows,
        from the planner's statistics (on a cluster, each shard's: the coordinator has
        none)."""
        ...


ONE_SERVER = OneServer()
CLUSTER = Cluster()

# Per engine (the engines made from it by execution_options share its connections'
# database, and so its deployment): picked at its first question, forgotten with it.
_PICKED: WeakKeyDictionary[Engine, Deployment] = WeakKeyDictionary()


def deployment_of(bound: Engine | Connection | Session | scoped_session) -> Deployment:
    """The deployment of the database behind an engine, a connection or the panel's
    session (asked of the database once per engine)."""
    conn = bound if isinstance(bound, Engine | Connection) else bound.connection()
    engine = conn if isinstance(conn, Engine) else conn.engine
    if engine not in _PICKED:
        _PICKED[engine] = pick(_topology(conn))
    return _PICKED[engine]


def pick(found: citus.Topology) -> Deployment:
    """The deployment of a database that is `found`."""
    return CLUSTER if found.is_cluster else ONE_SERVER


def _topology(conn: Engine | Connection) -> citus.Topology:
    if isinstance(conn, Engine):
        with conn.connect() as fresh:
            return citus.topology(fresh)
    return citus.topology(conn)


def shard_groups(conn: Connection, roots: Iterable[str]) -> list[set[str]]:
    """The roots by shard group, in shard id order (one group on one server)."""
    roots = set(roots)
    return deployment_of(conn).shard_groups(conn, roots) if roots else []


def root_groups(conn: Connection, roots: Iterable[str]) -> list[list[str]]:
    """The roots by shard group (`shard_groups`), each sorted: a statement naming many
    roots runs once per group, so that Citus routes each run to one worker."""
    return [sorted(group) for group in shard_groups(conn, roots)]


ShardGroup = tuple[list[str], list[str]]  # (roots, names), each sorted


def by_shard_group(conn: Connection, roots_of: Mapping[str, str]) -> list[ShardGroup]:
    """Names ({name: its root}) by the shard group of their roots (`shard_groups`, in its
    order), as (roots, names), each sorted: a statement that locks rows runs once per
    group, with `root = ANY(roots)` (one group on one server)."""
    groups = shard_groups(conn, roots_of.values())
    group_of = {root: i for i, roots in enumerate(groups) for root in roots}
    names: list[list[str]] = [[] for _ in groups]
    for name in sorted(roots_of):
        names[group_of[roots_of[name]]].append(name)
    return [(sorted(roots), group) for roots, group in zip(groups, names, strict=True)]
