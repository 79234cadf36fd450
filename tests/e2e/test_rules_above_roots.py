"""Every deny rule on a Citus cluster, end to end (a real one-machine cluster of a
coordinator and two workers; skips with one line without `make citus`).

The one-server e2e tests of the rules run here again, unchanged, on the cluster: this
module's `db` is the cluster's database, and the crawlers they start use it. Beside them,
what only a cluster makes hard: an entry above a root (a forced bare suffix, whose rows
are in every shard). The no_follow test runs once per door (the writer, the CLI, the API).
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from sqlalchemy import text

from crawler.db import deny_entries, queue
from tests.conftest import insert_stale_row
from tests.e2e.conftest import known_hosts
from tests.e2e.test_crawl import (  # noqa: F401 (collected again, on the cluster)
    test_no_follow_added_while_crawling_reaches_the_worker,
    test_no_follow_links_are_never_saved_nor_fetched,
    test_redirects_to_denied_hosts_are_never_followed,
    test_start_requests_to_denied_hosts_leave_routing,
)
from tests.e2e.test_noproof import (  # noqa: F401 (collected again, on the cluster)
    test_a_canary_that_answered_then_gets_nxdomain_with_the_rest_blocks_nothing,
)
from tests.e2e.test_unblock import (  # noqa: F401 (collected again, on the cluster)
    test_an_unblocked_trap_is_blocked_again_on_new_failures_only,
)
from tests.fakeweb import World

ROOTS = [f"s{i}.test" for i in range(12)]  # spread over the cluster's 8 shards


@pytest.fixture
def db(cluster_db):
    """The cluster's database: every test here, and every crawler it starts, uses it."""
    return cluster_db


def hostcrawl(*args: str) -> subprocess.CompletedProcess:
    run = subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args],
        input="",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    return run


def denied_by(db) -> dict[str, str | None]:
    with db.connect() as conn:
        rows = conn.execute(
            text("SELECT hostname, denied_by FROM queue WHERE status_reason IS NULL")
        )
        return dict(rows.all())


# How each rule is put above every root and lifted again: a block as the trap rule
# writes it, a no_follow through the CLI (forced: `test` is a bare suffix).
ABOVE = {
    "blocked": (
        lambda db: deny_entries.upsert_blocked(db, "test", "test block"),
        ("blocked", "unblock", "test"),
    ),
    "no_follow": (
        lambda db: hostcrawl("no-follow", "add", "--force", "test", "--note", "all of it"),
        ("no-follow", "remove", "test"),
    ),
}


@pytest.mark.parametrize("rule", sorted(ABOVE))
def test_an_entry_above_every_root_denies_before_download_and_lifts(
    db, fakeweb_factory, crawl, rule
):
    world = World()
    for name in ROOTS:
        world.site(name)
    world.site("late.s0.test")
    web = fakeweb_factory(world)
    queue.seed(db, ROOTS)
    add, lift = ABOVE[rule]

    add(db)

    assert set(denied_by(db).values()) == {"test"}  # every root's rows, out of routing
    # Saved by a worker that had not heard of the entry yet: routable, and the claim's
    # check sees only entries in the row's own root, so it is claimed.
    insert_stale_row(db, "late.s0.test", "s0.test")
    worker = crawl(web)
    assert web.fetch_counts(path=None) == {}  # refused before download
    assert f"'hostcrawl/blacklist/filtered/{rule}': 1" in worker.log()
    assert denied_by(db)["late.s0.test"] == "test"  # and out of routing

    hostcrawl(*lift)

    assert set(denied_by(db).values()) == {None}
    crawl(web)
    counts = web.fetch_counts(path="/")
    assert set(counts) == {*ROOTS, "late.s0.test"} and max(counts.values()) == 1
    assert "test" not in known_hosts(db)  # the entry's own row went with it
