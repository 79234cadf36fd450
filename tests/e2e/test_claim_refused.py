"""A claim the database refuses (not an outage: a statement Citus will not run, a bug)
ends the crawl with a reason and exit status 1, so a supervisor restarts the worker;
it never closes as if the queue were drained."""

from __future__ import annotations

import pytest

from crawler.db.crawl import queue
from crawler.spiders.hosts import CLAIM_FAILED
from tests.e2e.conftest import CRAWL_TIMEOUT, claims_held, known_hosts
from tests.fakeweb import World

# What Citus answers a claim it cannot route (SQLSTATE 0A000), from a trigger on the
# claim's UPDATE: the refusal comes from the real server, on the real statement.
REFUSE = """
CREATE FUNCTION hc_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'could not run distributed query with FOR UPDATE/SHARE commands'
        USING ERRCODE = 'feature_not_supported';
END $$;
CREATE TRIGGER hc_test_refuse BEFORE UPDATE ON hosts
    FOR EACH STATEMENT EXECUTE FUNCTION hc_test_refuse();
"""
ALLOW = "DROP TRIGGER IF EXISTS hc_test_refuse ON hosts; DROP FUNCTION IF EXISTS hc_test_refuse();"


@pytest.fixture
def refuse_claims(db):
    """Call it to make every UPDATE of hosts (the queue's rows) fail from then on."""

    def refuse() -> None:
        with db.begin() as conn:
            conn.exec_driver_sql(REFUSE)

    yield refuse
    with db.begin() as conn:  # the schema is the session's: leave no trigger behind
        conn.exec_driver_sql(ALLOW)


@pytest.mark.one_server(
    "refuses the claim with a trigger, which Citus refuses on a distributed table"
)
def test_a_refused_claim_closes_the_crawl_with_a_reason_and_exit_1(
    db, fakeweb_factory, start_crawler, refuse_claims
):
    world = World()
    world.site("a.test", links=["http://b.test/"])
    world.site("b.test")
    queue.seed(db, ["a.test"])
    refuse_claims()

    worker = start_crawler(fakeweb_factory(world))
    code = worker.proc.wait(timeout=CRAWL_TIMEOUT)

    log = worker.log()
    assert code == 1, log[-4000:]
    assert f"'finish_reason': '{CLAIM_FAILED}'" in log
    assert "could not run distributed query" in log and "drained" not in log
    assert known_hosts(db) == {"a.test"} and claims_held(db) == 0  # nothing taken, nothing held
