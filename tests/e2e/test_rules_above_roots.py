"""A deny entry above every root (a forced bare suffix): on a cluster its rows are in
every shard, so the entry must reach each one; on one server the same rule holds."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests import cli
from tests.cli import Ran
from tests.conftest import insert_stale_row
from tests.e2e.conftest import known_hosts
from tests.fakeweb import World

ROOTS = [f"s{i}.test" for i in range(12)]  # spread over the cluster's 8 shards


def hostcrawl(*args: str) -> Ran:
    """`hostcrawl ARGS` on the test's database (in this process: tests/cli.py), which succeeds."""
    run = cli.hostcrawl(*args)
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
