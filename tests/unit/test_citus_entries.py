"""The deny-entry writer on both deployments: one server and a Citus cluster (a real
one-machine cluster of a coordinator and two workers, tests/citus_cluster.py).

Each test runs on both and asserts the same rows: entries in many shard groups at once,
an entry above a root (a forced bare suffix, whose rows live in every shard), an
unblock that empties the window, the API, and the NOTIFY that reaches a listener.
"""

from __future__ import annotations

from sqlalchemy import text

from crawler.core.hostnames import root
from crawler.db import deployments
from crawler.db.crawl import queue
from crawler.db.rules import deny_entries, trap_windows
from crawler.db.server.listener import EntryListener
from tests.unit.test_panel_support import give_api_token, panel_config
from tests.waiting import wait_until
from webpanel import create_app

pytest_plugins = ["tests.unit.test_panel_support"]

ROOTS = [f"r{i}.test" for i in range(12)]  # spread over the cluster's 8 shards
HOSTS = [name for r in ROOTS for name in (r, f"a.{r}", f"b.a.{r}")]


def routing(engine) -> dict[str, tuple[str | None, str | None]]:
    """{hostname: (status_reason, denied_by)} of every queue row."""
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT hostname, status_reason, denied_by FROM queue"))
        return {h: (reason, by) for h, reason, by in rows}


def routed(engine) -> set[str]:
    """The rows in routing: no entry, taken out by none."""
    return {h for h, state in routing(engine).items() if state == (None, None)}


def statuses(changes) -> list[tuple[str, str, str]]:
    return [(c.hostname, c.status, c.message) for c in changes]


def test_the_roots_spread_over_several_shard_groups_on_the_cluster(cluster_db):
    with cluster_db.connect() as conn:
        groups = deployments.by_shard_group(conn, {h: root(h) for h in HOSTS})
    assert len(groups) > 2  # else the tests below would not lock across shards
    assert sorted(n for _, names in groups for n in names) == sorted(HOSTS)


def test_entries_in_many_shards_take_out_and_put_back_their_rows(either):
    queue.seed(either, HOSTS)

    added = deny_entries.add_no_follow(either, ["a.r1.test", "a.r2.test", "r3.test", "a.r3.test"])
    blocked = deny_entries.upsert_blocked(either, "r5.test", "a trap")

    assert [c.status for c in added] == ["added"] * 4 and blocked
    state = routing(either)
    assert state["b.a.r1.test"] == (None, "a.r1.test")
    assert state["b.a.r2.test"] == (None, "a.r2.test")
    assert state["b.a.r3.test"] == (None, "a.r3.test")  # the nearest new entry
    assert state["a.r3.test"] == ("no_follow", None) and state["r3.test"] == ("no_follow", None)
    assert state["a.r5.test"] == state["b.a.r5.test"] == (None, "r5.test")
    assert state["r5.test"] == ("blocked", None)
    untouched = {h for h in HOSTS if root(h) not in {"r1.test", "r2.test", "r3.test", "r5.test"}}
    assert untouched | {"r1.test", "r2.test"} == routed(either)

    # The operator's no_follow takes a blocked name over; a second add changes nothing.
    again = deny_entries.add_no_follow(either, ["r5.test", "a.r1.test"])
    assert statuses(again) == [
        ("r5.test", "added", "was blocked"),
        ("a.r1.test", "already", ""),
    ]
    assert not deny_entries.upsert_blocked(either, "r5.test", "again")

    removed = deny_entries.remove_no_follow(either, ["a.r1.test", "a.r3.test", "r5.test", "x.test"])
    assert statuses(removed) == [
        ("a.r1.test", "removed", "1 host back in routing"),
        ("a.r3.test", "removed", "0 hosts back in routing"),  # r3.test still covers it
        ("r5.test", "removed", "2 hosts back in routing"),
        ("x.test", "absent", "no no_follow entry"),
    ]
    state = routing(either)
    assert state["b.a.r3.test"] == (None, "r3.test")
    assert untouched | {"r1.test", "r2.test", "a.r1.test", "b.a.r1.test", "r5.test"} <= routed(
        either
    )
    with either.connect() as conn:
        log = conn.execute(text("SELECT action, hostname FROM change_log ORDER BY id")).all()
    assert [a for a, _ in log] == ["no_follow.add", "block", "no_follow.add", "no_follow.remove"]


def test_an_entry_above_a_root_takes_out_every_root_under_it(either):
    queue.seed(either, HOSTS)
    deny_entries.add_no_follow(either, ["a.r1.test"])

    (forced,) = deny_entries.add_no_follow(either, ["test"], force=True)

    assert forced.status == "added"
    state = routing(either)
    assert state["test"] == ("no_follow", None)
    assert state["b.a.r1.test"] == (None, "a.r1.test")  # taken out before: stays credited
    others = set(HOSTS) - {"a.r1.test", "b.a.r1.test"}
    assert {h for h in others if state[h] == (None, "test")} == others
    assert routed(either) == set()

    # Lifted under it, a row falls to the entry above its root, not back to routing.
    (lifted,) = deny_entries.remove_no_follow(either, ["a.r1.test"])
    assert lifted.message == "0 hosts back in routing"
    assert routing(either)["b.a.r1.test"] == (None, "test")

    (gone,) = deny_entries.remove_no_follow(either, ["test"])

    assert gone.message == f"{len(HOSTS) - 1} hosts back in routing"
    assert routed(either) == set(HOSTS)
    assert "test" not in routing(either)  # a row made only for the entry goes with it


def test_an_unblock_empties_the_window_and_brings_the_rows_back(either):
    queue.seed(either, ["x0.r7.test", "x1.r7.test", "r8.test"])
    failures = [(f"x{i}.r7.test", "DNS_NXDOMAIN") for i in range(50)]
    assert "r7.test" in trap_windows.record_outcomes(either, failures, 50)
    deny_entries.upsert_blocked(either, "r7.test", "DNS_NXDOMAIN 50")
    assert routing(either)["x1.r7.test"] == (None, "r7.test")

    (lifted,) = deny_entries.unblock(either, ["r7.test"], "ops", note="false positive")

    assert lifted.status == "unblocked"
    assert lifted.message == "2 hosts back in routing; trap window cleared (50 outcomes)"
    assert trap_windows.window(either, "r7.test") == []
    with either.connect() as conn:
        counts = conn.execute(
            text("SELECT window_size, window_failed FROM roots WHERE root = 'r7.test'")
        )
        assert counts.one() == (0, 0)
    assert {"x0.r7.test", "x1.r7.test", "r8.test"} <= routed(either)


def test_the_api_adds_and_removes_names_of_every_shard(either, password_hash):
    app = create_app(panel_config(either.url.render_as_string(hide_password=False)))
    with either.begin() as conn:
        conn.execute(
            text("INSERT INTO users (username, password_hash) VALUES ('bob', :p)"),
            {"p": password_hash},
        )
    auth = give_api_token(either, "bob", "bob-token")
    api = app.test_client()
    queue.seed(either, HOSTS)

    added = api.post("/api/no_follow/add", json={"names": [f"a.{r}" for r in ROOTS]}, headers=auth)
    assert added.status_code == 200 and added.json["ok"] is True
    assert routed(either) == set(ROOTS)

    removed = api.post(
        "/api/no_follow/remove", json={"names": [f"a.{r}" for r in ROOTS]}, headers=auth
    )
    assert {r["status"] for r in removed.json["results"]} == {"removed"}
    assert routed(either) == set(HOSTS)


def test_a_change_reaches_a_listener_through_the_database(either):
    heard: list[tuple[str, str | None]] = []
    listener = EntryListener(either, lambda h, rule: heard.append((h, rule)), lambda: None)
    listener.start()
    try:
        wait_until(listener.ready.is_set, 30, "the listener to LISTEN")
        deny_entries.add_no_follow(either, ["a.r1.test", "a.r2.test"])
        deny_entries.remove_no_follow(either, ["a.r2.test"])
        expected = [("a.r1.test", "no_follow"), ("a.r2.test", "no_follow"), ("a.r2.test", None)]
        wait_until(lambda: heard == expected, 30, f"the NOTIFYs to arrive (heard {heard})")
    finally:
        listener.stop()
