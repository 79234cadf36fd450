"""One schema, two deployments: on a Citus cluster `hostcrawl db upgrade` distributes the
per-root tables by root, co-located; run twice it changes nothing; `hostcrawl db status`
names the deployment on either. Skips with one line without `make citus`."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from crawler.db.server.cluster import PER_ROOT_TABLES
from tests import cli
from tests.cli import Ran

PARTITIONS = text(
    "SELECT logicalrelid::regclass::text, partmethod,"
    " column_to_column_name(logicalrelid, partkey), colocationid"
    " FROM pg_dist_partition ORDER BY 1"
)


def hostcrawl(url: str, *args: str) -> Ran:
    """`hostcrawl ARGS` on the database at `url` (in this process: tests/cli.py)."""
    return cli.hostcrawl(*args, env={"DATABASE_URL": url})


def partitions(url: str) -> list[tuple]:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(PARTITIONS)]
    finally:
        engine.dispose()


@pytest.fixture(scope="module")
def upgraded(citus_cluster):
    """The cluster's database after `hostcrawl db upgrade`, and what the command said."""
    done = hostcrawl(citus_cluster.url, "db", "upgrade")
    assert done.returncode == 0, done.stderr
    return citus_cluster.url, done.stdout


def test_db_upgrade_distributes_every_per_root_table_by_root_in_one_colocation(upgraded):
    url, said = upgraded
    rows = partitions(url)
    assert {table for table, *_ in rows} == set(PER_ROOT_TABLES)
    assert {(method, column) for _, method, column, _ in rows} == {("h", "root")}
    assert len({colocation for *_, colocation in rows}) == 1
    assert "a Citus" in said and "cluster of 2 workers" in said
    assert f"{len(PER_ROOT_TABLES)} of {len(PER_ROOT_TABLES)} per-root tables" in said


def test_db_upgrade_twice_changes_nothing(upgraded):
    url, _ = upgraded
    before = partitions(url)
    again = hostcrawl(url, "db", "upgrade")
    assert again.returncode == 0, again.stderr
    assert partitions(url) == before


@pytest.mark.parametrize("where", ["cluster", "one server"])
def test_db_status_names_the_deployment(upgraded, database_url, where):
    url = upgraded[0] if where == "cluster" else database_url
    said = hostcrawl(url, "db", "status")
    assert said.returncode == 0, said.stderr
    if where == "cluster":
        assert "Citus" in said.stdout and "distributed by root" in said.stdout
    else:
        assert said.stdout.splitlines()[1] == "one Postgres server (no citus extension)"
    assert said.stdout.startswith("database: DATABASE_URL postgresql+psycopg://")
    assert said.stdout.splitlines()[-1].startswith("schema at head (")
