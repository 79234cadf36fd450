"""The `citus_cluster` fixture: a one-machine Citus cluster (tests/citus_cluster.py) for
the session, started on first use and stopped at the end (each pytest-xdist worker its
own, on free ports).

Without the extension in the embedded server the tests that use it skip with one line
(`make citus` builds it); in CI (HOSTCRAWL_REQUIRE_CITUS=1) that is a failure instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.citus_cluster import CitusCluster, citus_available


@pytest.fixture(scope="session")
def citus_cluster() -> Iterator[CitusCluster]:
    """A started coordinator and two workers; `.url` is the coordinator's database."""
    reason = citus_available()
    if reason is not None:
        why = f"citus: {reason}; make citus builds it"
        # A developer without it gets one skip line; CI (HOSTCRAWL_REQUIRE_CITUS=1) must not.
        if os.environ.get("HOSTCRAWL_REQUIRE_CITUS"):
            pytest.fail(why, pytrace=False)
        pytest.skip(why)
    cluster = CitusCluster().start()
    yield cluster
    cluster.stop()


@pytest.fixture
def cluster_db(citus_cluster, monkeypatch):
    """The cluster's database, migrated and distributed, every table empty; processes
    started from the test (crawlers, the CLI) use it through DATABASE_URL."""
    from sqlalchemy import create_engine, text

    from crawler.db.migrate import upgrade_to_head
    from tests.conftest import TABLES

    monkeypatch.setenv("DATABASE_URL", citus_cluster.url)
    upgrade_to_head()
    engine = create_engine(citus_cluster.url)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {TABLES} RESTART IDENTITY CASCADE"))
    yield engine
    engine.dispose()
