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


@pytest.fixture(scope="session")
def migrated_cluster(citus_cluster) -> CitusCluster:
    """The cluster, its database migrated and distributed: once a session, as the one
    server's is (tests/conftest.py's database_url); no test changes the schema."""
    from crawler.db.server.migrate import upgrade_to_head

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DATABASE_URL", citus_cluster.url)  # what upgrade_to_head migrates
        upgrade_to_head()
    return citus_cluster


@pytest.fixture
def cluster_db(migrated_cluster, monkeypatch):
    """The cluster's database, migrated and distributed, every table empty; processes
    started from the test (crawlers, the CLI) use it through DATABASE_URL."""
    from sqlalchemy import create_engine

    from tests.conftest import empty_tables

    monkeypatch.setenv("DATABASE_URL", migrated_cluster.url)
    engine = create_engine(migrated_cluster.url)
    empty_tables(engine)
    yield engine
    engine.dispose()


@pytest.fixture(params=["one server", "citus"])
def either(request):
    """The empty database of each deployment in turn (the cluster's DATABASE_URL set for
    its run): a rule of the database, checked where it must hold, on both."""
    return request.getfixturevalue("cluster_db" if request.param == "citus" else "db")
