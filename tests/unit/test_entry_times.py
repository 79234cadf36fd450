"""/no_follow and /blocked show when each entry was added and by whom, a batch's names too."""

from __future__ import annotations

from crawler.core.denylist import NO_FOLLOW
from crawler.db.rules import deny_entries
from webpanel.queries import deny_lists


def test_every_name_of_a_batch_shows_its_time_and_actor(db):
    names = [f"n{i}.test" for i in range(5)]
    for _ in deny_entries.add_no_follow_batches(db, names, actor="alice", size=3):  # two batches
        pass
    deny_entries.add_no_follow(db, ["single.test"], actor="bob")
    with db.connect() as conn:
        rows = deny_lists.entry_page(conn, NO_FOLLOW).rows
    added = {row.hostname: (row.added_by, row.added_at is not None) for row in rows}
    assert added == {**dict.fromkeys(names, ("alice", True)), "single.test": ("bob", True)}


def test_a_name_added_again_shows_the_latest_time(db):
    for _ in deny_entries.add_no_follow_batches(db, ["a.test", "b.test"], actor="alice"):
        pass
    deny_entries.remove_no_follow(db, ["b.test"])
    for _ in deny_entries.add_no_follow_batches(db, ["b.test", "c.test"], actor="carol"):
        pass
    with db.connect() as conn:
        rows = deny_lists.entry_page(conn, NO_FOLLOW).rows
    assert {row.hostname: row.added_by for row in rows} == {
        "a.test": "alice",
        "b.test": "carol",
        "c.test": "carol",
    }
