"""The known names (crawler.db.crawl.known_names): the crawl's finish leaves out of its
write the names this process saw committed, and never one it has not: nothing is lost."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from crawler.core.links import FilteredLinks
from crawler.db.crawl import known_names, queue
from crawler.db.crawl.known_names import KnownNames
from crawler.db.crawl.queue import Crawled, CrawlResult
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import insert_hosts


def crawled(host: str, *names: str) -> Crawled:
    return Crawled(host, CrawlResult("OK", 200), FilteredLinks.of(set(names), len(names)))


def statements_naming(db, name: str, run) -> int:
    """How many statements `run` sent that name `name` in their parameters."""
    from sqlalchemy import event

    seen = []

    def count(conn, cursor, statement, parameters, context, executemany):
        seen.append(name in repr(parameters))

    event.listen(db, "before_cursor_execute", count)
    try:
        run()
    finally:
        event.remove(db, "before_cursor_execute", count)
    return sum(seen)


def test_a_name_seen_committed_is_left_out_of_the_next_write(db):
    insert_hosts(db, ["a.test", "b.test"])
    queue.finish_many(db, [crawled("a.test", "popular.test", "new1.test")])
    again = [crawled("b.test", "popular.test", "new2.test")]
    assert statements_naming(db, "popular.test", lambda: queue.finish_many(db, again)) == 0
    assert known_names.known_names(db).skipped == 1
    with db.connect() as conn:
        names = set(conn.execute(text("SELECT hostname FROM hosts")).scalars())
    assert {"popular.test", "new1.test", "new2.test"} <= names


def test_a_write_that_failed_leaves_no_name_known(db, monkeypatch):
    insert_hosts(db, ["a.test"])

    def broken(*args, **kwargs):
        raise RuntimeError("the write failed")

    monkeypatch.setattr(queue.dropped_links, "add", broken)
    with pytest.raises(RuntimeError):
        queue.finish_many(db, [crawled("a.test", "lost.test")])
    monkeypatch.undo()
    queue.finish_many(db, [crawled("a.test", "lost.test")])  # the crawl's next try
    with db.connect() as conn:
        found = conn.execute(text("SELECT count(*) FROM hosts WHERE hostname = 'lost.test'"))
        assert found.scalar() == 1


@pytest.mark.parametrize(
    ("names", "size", "kept"),
    [
        (["a", "b", "c"], 2, {"b", "c"}),  # the oldest goes
        (["a", "b", "a", "c"], 2, {"a", "c"}),  # seen again: fresh
        (["a", "b"], 0, set()),  # 0: off
    ],
)
def test_the_known_names_are_an_lru_of_their_size(names, size, kept):
    known = KnownNames(size)
    for name in names:
        known.remember([name])
    assert {n for n in "abc" if not known.unknown([FoundNameStub(n)])} == kept


class FoundNameStub:
    def __init__(self, hostname: str) -> None:
        self.hostname = hostname


def test_a_removed_entry_makes_the_worker_forget_what_it_knew(db):
    from crawler.rules.live_deny_list import LiveDenyList

    insert_hosts(db, ["a.test"])
    deny_entries.add_no_follow(db, ["gone.test", "kept.test"])
    live = LiveDenyList(db)
    live.reload()  # loaded, not listening: the changes below come as this test says
    queue.finish_many(db, [crawled("a.test", "x.test")])
    assert len(known_names.known_names(db)) == 1
    live.remember("kept.test", "no_follow")  # an entry added: nothing known goes
    assert len(known_names.known_names(db)) == 1
    live.remember("gone.test", None)  # an entry removed, as announced
    assert len(known_names.known_names(db)) == 0

    queue.finish_many(db, [crawled("a.test", "x.test")])
    live.reload()  # nothing removed
    assert len(known_names.known_names(db)) == 1
    deny_entries.remove_no_follow(db, ["kept.test"])
    live.reload()  # a removal the listener missed, found at the reload
    assert len(known_names.known_names(db)) == 0
