"""Seeds (crawler.db.operators.bulk) and deny entries (crawler.db.rules.deny_entries) in
batches, each whole."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from sqlalchemy import text

from crawler.db.operators import bulk, bulk_change_log
from crawler.db.rules import deny_entries
from crawler.rules.live_deny_list import LiveDenyList
from tests.unit.test_panel_support import insert_hosts
from tests.waiting import wait_until


def statuses(changes) -> list[tuple[str, str]]:
    return [(c.input, c.status) for c in changes]


def rows(db, sql: str, **params) -> list:
    with db.connect() as conn:
        return list(conn.execute(text(sql), params).all())


def test_seed_results_come_in_input_order_with_every_refusal_named(db):
    deny_entries.add_no_follow(db, ["social.test"])
    inputs = [
        "a.test",
        "A.test",  # the same name again
        "bad..name",
        "www.social.test",  # under an entry
        "social.test",  # the entry itself
        "co.uk",  # a bare public suffix
        "localhost",
        "192.168.1.1",
        "127.0.0.9",
        "8.8.8.8",  # a public address is a host like any other
        "b.test",
    ]
    changes = bulk.collect(bulk.seed(db, inputs, size=4))  # several batches
    assert statuses(changes) == [
        ("a.test", "queued"),
        ("A.test", "already"),
        ("bad..name", "refused"),
        ("www.social.test", "refused"),
        ("social.test", "refused"),
        ("co.uk", "refused"),
        ("localhost", "refused"),
        ("192.168.1.1", "refused"),
        ("127.0.0.9", "refused"),
        ("8.8.8.8", "queued"),
        ("b.test", "queued"),
    ]
    messages = {c.input: c.message for c in changes}
    assert messages["A.test"] == bulk.REPEATED
    assert messages["www.social.test"] == "under no_follow entry social.test"
    assert "bare public suffix" in messages["co.uk"]
    assert "localhost" in messages["localhost"]
    assert "private address" in messages["192.168.1.1"]
    assert "loopback address" in messages["127.0.0.9"]
    queued = rows(db, "SELECT hostname FROM queue WHERE next_claim_at IS NOT NULL ORDER BY 1")
    assert [h for (h,) in queued] == ["8.8.8.8", "a.test", "b.test"]
    assert rows(db, "SELECT root FROM queue WHERE hostname = 'a.test'") == [("a.test",)]


def test_a_name_given_twice_in_a_batch_shares_its_refusal(db):
    deny_entries.add_no_follow(db, ["social.test"])
    changes = bulk.collect(bulk.seed(db, ["x.social.test", "X.Social.test", "ok.test", "OK.test"]))
    assert statuses(changes) == [
        ("x.social.test", "refused"),
        ("X.Social.test", "refused"),
        ("ok.test", "queued"),
        ("OK.test", "already"),
    ]
    assert changes[1].message == "under no_follow entry social.test"


def test_seed_allows_what_the_operator_allows(db):
    changes = bulk.collect(
        bulk.seed(db, ["127.0.0.1", "localhost", "co.uk"], allow_private=True, force=True)
    )
    assert [c.status for c in changes] == ["queued", "queued", "queued"]


def test_a_second_run_answers_already_and_dates_a_dateless_row(db):
    insert_hosts(db, ["dateless.test"])
    with db.begin() as conn:
        conn.execute(text("UPDATE hosts SET next_claim_at = NULL"))
    assert [c.status for c in bulk.collect(bulk.seed(db, ["x.test"]))] == ["queued"]
    again = bulk.collect(bulk.seed(db, ["x.test", "dateless.test"]))
    assert [c.status for c in again] == ["already", "already"]
    dated = rows(db, "SELECT next_claim_at IS NOT NULL FROM queue WHERE hostname = 'dateless.test'")
    assert dated == [(True,)]


@pytest.mark.parametrize("writers", [1, 2])
def test_a_failed_batch_leaves_nothing_and_the_batches_before_it_whole(db, monkeypatch, writers):
    """With two writers, the batch after the failed one may have started: it is whole."""
    monkeypatch.setattr(bulk, "SEED_WRITERS", writers)
    names = [f"n{i}.test" for i in range(10)]
    real = bulk._write_seeds
    calls = []

    def fail_on_the_third(engine, batch):
        calls.append(len(batch.first))
        if "n6.test" in batch.first:  # the third batch
            with engine.begin() as conn:  # half the batch in, then the failure
                conn.execute(text("INSERT INTO hosts (hostname, root) VALUES ('n6.test', 'x')"))
                raise RuntimeError("killed")
        return real(engine, batch)

    monkeypatch.setattr(bulk, "_write_seeds", fail_on_the_third)
    with pytest.raises(RuntimeError):
        bulk.collect(bulk.seed(db, names, size=3))
    stored = {h for (h,) in rows(db, "SELECT hostname FROM hosts")}
    # Two whole batches, nothing of the third; the fourth (n9) was started beside the
    # third by a second writer, and is whole too. Nothing is started after the failure.
    started = names[:6] + names[9:] * (writers - 1)
    assert stored == set(started)
    assert sorted(calls) == sorted([3, 3, 3, 1][: 3 + writers - 1])
    monkeypatch.setattr(bulk, "_write_seeds", real)
    rerun = bulk.collect(bulk.seed(db, names, size=3))
    assert [c.status for c in rerun] == ["already" if n in started else "queued" for n in names]


def test_no_follow_in_bulk_takes_hosts_out_once_and_logs_one_row(db):
    insert_hosts(db, ["www.a.test", "y.x.a.test", "free.test", "deep.b.test"])
    deny_entries.upsert_blocked(db, "b.test", "a trap")
    deny_entries.add_no_follow(db, ["old.test"])
    names = ["a.test", "x.a.test", "b.test", "old.test", "bad..x", "a.test"]
    names += [f"e{i}.test" for i in range(150)]
    changes = deny_entries.add_no_follow(db, names, "ann", note="from a list")
    assert statuses(changes)[:6] == [
        ("a.test", "added"),
        ("x.a.test", "added"),
        ("b.test", "added"),  # a block becomes no_follow
        ("old.test", "already"),
        ("bad..x", "refused"),
        ("a.test", "already"),
    ]
    assert changes[2].message == "was blocked"
    denied_by = dict(rows(db, "SELECT hostname, denied_by FROM queue WHERE status_reason IS NULL"))
    assert denied_by["www.a.test"] == "a.test"
    assert denied_by["y.x.a.test"] == "x.a.test"  # the nearest entry of the batch
    assert denied_by["deep.b.test"] == "b.test"
    assert denied_by["free.test"] is None
    logged = rows(db, "SELECT id, action, detail FROM change_log WHERE actor = 'ann'")
    assert len(logged) == 1
    change_id, action, detail = logged[0]
    assert (action, detail) == ("no_follow.add", "153 names; from a list")
    (items,) = rows(db, "SELECT names FROM change_log_items WHERE change_id = :i", i=change_id)
    assert len(items.names) == 153 and "b.test" in items.names


def test_a_big_batch_reaches_a_listening_worker_by_one_reload(db):
    worker = LiveDenyList(db)
    worker.load()
    try:
        assert worker.listener.ready.wait(10)
        names = [f"w{i}.test" for i in range(bulk_change_log.NOTIFY_EACH_UP_TO + 50)]
        deny_entries.add_no_follow(db, names)
        wait_until(lambda: all(worker.denial(f"x.{n}") for n in names), what="the worker to reload")
    finally:
        worker.stop()


def test_removal_in_bulk_puts_back_what_each_entry_took(db):
    insert_hosts(db, ["www.a.test", "y.x.a.test", "www.b.test"])
    deny_entries.add_no_follow(db, ["a.test", "x.a.test"])
    deny_entries.upsert_blocked(db, "b.test", "a trap")
    removed = deny_entries.remove_no_follow(db, ["x.a.test", "nope.test", "b.test"])
    assert statuses(removed) == [
        ("x.a.test", "removed"),
        ("nope.test", "absent"),
        ("b.test", "absent"),  # a block is lifted by unblock, not here
    ]
    denied_by = dict(rows(db, "SELECT hostname, denied_by FROM queue WHERE status_reason IS NULL"))
    assert denied_by["y.x.a.test"] == "a.test"  # a.test still covers it
    unblocked = deny_entries.unblock(db, ["b.test"], "ann", note="false positive")
    assert statuses(unblocked) == [("b.test", "unblocked")]
    assert unblocked[0].message == "1 host back in routing"
    assert rows(db, "SELECT detail FROM change_log WHERE action = 'unblock'") == [
        ("false positive; a trap",)
    ]


def test_a_long_batch_pauses_every_pace_names_so_a_gevent_worker_serves_others(db, monkeypatch):
    pauses = []
    monkeypatch.setattr(bulk, "time", SimpleNamespace(sleep=pauses.append))
    monkeypatch.setattr(bulk, "cooperative", lambda: True)  # as under gevent's patching
    names = [f"n{i}.paced.test" for i in range(3 * bulk.PACE + 1)]

    changes = bulk.collect(bulk.seed(db, names))

    assert [c.status for c in changes] == ["queued"] * len(names)
    # normalizing the inputs and staging the names each pause 3 times
    assert pauses == [0] * 6


def test_outside_gevent_a_batch_never_pauses(db, monkeypatch):
    """The CLI: a pause would hand the GIL to the writing thread (or the CPU away)."""
    pauses = []
    monkeypatch.setattr(bulk, "time", SimpleNamespace(sleep=pauses.append))
    names = [f"n{i}.unpaced.test" for i in range(3 * bulk.PACE + 1)]

    assert not bulk.cooperative()
    assert {c.status for c in bulk.collect(bulk.seed(db, names))} == {"queued"}
    assert pauses == []
