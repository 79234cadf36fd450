"""The one-machine Citus cluster of the tests (tests/citus_cluster.py) is a real one: the
coordinator knows two active workers, a distributed table's shards lie on both, and a
restart of the coordinator keeps the data. Skips with one line without `make citus`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Connection, make_url


@contextmanager
def connected(url: str) -> Iterator[Connection]:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


@contextmanager
def distributed_table(url: str, name: str, rows: int) -> Iterator[None]:
    """`name` (k int, v text) distributed by k with `rows` rows; dropped afterwards (over
    a new connection: the test may have restarted the coordinator meanwhile)."""
    try:
        with connected(url) as conn:
            conn.execute(text(f"CREATE TABLE {name} (k int PRIMARY KEY, v text NOT NULL)"))
            conn.execute(text(f"SELECT create_distributed_table('{name}', 'k')"))
            conn.execute(
                text(f"INSERT INTO {name} SELECT k, 'row ' || k FROM generate_series(1, :n) k"),
                {"n": rows},
            )
        yield
    finally:
        with connected(url) as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {name}"))


def active_workers(conn: Connection) -> int:
    return conn.execute(text("SELECT count(*) FROM citus_get_active_worker_nodes()")).scalar()


def test_the_coordinator_has_two_active_workers(citus_cluster):
    assert make_url(citus_cluster.url).database == "hostcrawl"
    with connected(citus_cluster.url) as conn:
        assert active_workers(conn) == 2
    for url in citus_cluster.worker_urls:
        with connected(url) as conn:
            assert conn.execute(text("SELECT citus_version()")).scalar().startswith("Citus")


def test_a_distributed_table_has_shards_on_both_workers(citus_cluster):
    worker_ports = {make_url(url).port for url in citus_cluster.worker_urls}
    with distributed_table(citus_cluster.url, "t", rows=200), connected(citus_cluster.url) as conn:
        ports = conn.execute(
            text(
                "SELECT DISTINCT p.nodeport FROM pg_dist_shard_placement p"
                " JOIN pg_dist_shard s USING (shardid) WHERE s.logicalrelid = 't'::regclass"
            )
        ).scalars()
        assert set(ports) == worker_ports
        # Rows on each worker, counted on the shards themselves.
        per_port = conn.execute(
            text(
                "SELECT p.nodeport, sum(r.result::bigint) FROM run_command_on_shards("
                "'t', 'SELECT count(*) FROM %s') r"
                " JOIN pg_dist_shard_placement p USING (shardid) GROUP BY p.nodeport"
            )
        ).all()
        assert {port for port, count in per_port if count > 0} == worker_ports
        assert sum(count for _, count in per_port) == 200
        assert conn.execute(text("SELECT count(*) FROM t")).scalar() == 200


def test_a_restart_of_the_coordinator_keeps_the_data(citus_cluster):
    with distributed_table(citus_cluster.url, "kept", rows=50):
        citus_cluster.restart_coordinator()
        with connected(citus_cluster.url) as conn:
            assert active_workers(conn) == 2
            assert conn.execute(text("SELECT count(*), sum(k) FROM kept")).one() == (50, 1275)
            assert conn.execute(text("SELECT v FROM kept WHERE k = 7")).scalar() == "row 7"
