"""Bulk writes over the API and the panel's paste and CSV import:
a batch of up to 10,000 names is written whole, with a result per name."""

from __future__ import annotations

from sqlalchemy import text

from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import give_api_token, insert_hosts, post_form

pytest_plugins = ["tests.unit.test_panel_support"]


def count(db, sql: str) -> int:
    with db.connect() as conn:
        return conn.execute(text(sql)).scalar_one()


def test_api_adds_10000_names_in_one_request_with_a_result_each(app, db, operators):
    auth = give_api_token(db, "bob", "bob-token")
    api = app.test_client()
    names = [f"n{i}.bulk.test" for i in range(9_998)] + ["bad..name", "n0.bulk.test"]
    added = api.post("/api/no_follow/add", json={"names": names, "note": "list"}, headers=auth)
    assert added.status_code == 200
    results = added.json["results"]
    assert [r["input"] for r in results] == names  # in the order sent
    assert [r["status"] for r in results[-3:]] == ["added", "refused", "already"]
    assert added.json["ok"] is False
    assert count(db, "SELECT count(*) FROM queue WHERE status_reason = 'no_follow'") == 9_998
    assert count(db, "SELECT count(*) FROM change_log") == 1  # one batch, one row

    removed = api.post("/api/no_follow/remove", json={"names": names[:5_000]}, headers=auth)
    assert {r["status"] for r in removed.json["results"]} == {"removed"}
    assert count(db, "SELECT count(*) FROM queue WHERE status_reason = 'no_follow'") == 4_998


def test_api_refuses_a_list_over_the_limit_with_413_json(app, db, operators):
    auth = give_api_token(db, "bob", "bob-token")
    names = [f"n{i}.test" for i in range(10_001)]
    for url in ("/api/no_follow/add", "/api/no_follow/remove", "/api/blocked/unblock"):
        response = app.test_client().post(url, json={"names": names}, headers=auth)
        assert response.status_code == 413, url
        assert "at most 10000" in response.json["error"]
    assert count(db, "SELECT count(*) FROM queue") == 0


def test_a_failed_batch_writes_nothing(app, db, operators, monkeypatch):
    auth = give_api_token(db, "bob", "bob-token")

    def broken(conn, *args):  # the change-log row fails after the entries were written
        raise RuntimeError("disk full")

    monkeypatch.setattr(deny_entries, "record_batch", broken)
    app.config["PROPAGATE_EXCEPTIONS"] = False
    try:
        response = app.test_client().post(
            "/api/no_follow/add", json={"names": ["a.test", "b.test"]}, headers=auth
        )
    finally:
        app.config["PROPAGATE_EXCEPTIONS"] = None
    assert response.status_code == 500
    assert count(db, "SELECT count(*) FROM queue WHERE status_reason IS NOT NULL") == 0


def test_api_unblock_in_bulk(app, db, operators):
    auth = give_api_token(db, "bob", "bob-token")
    insert_hosts(db, ["www.t1.test"])
    for name in ("t1.test", "t2.test"):
        deny_entries.upsert_blocked(db, name, "a trap")
    response = app.test_client().post(
        "/api/blocked/unblock", json={"names": ["t1.test", "t2.test", "t3.test"]}, headers=auth
    )
    assert [r["status"] for r in response.json["results"]] == ["unblocked", "unblocked", "absent"]
    assert response.json["results"][0]["message"] == "1 host back in routing"


def test_paste_of_a_block_list_saves_its_names_in_one_batch(client, db):
    pasted = "! adblock\n||a.paste.test^\n@@||ok.test^\n0.0.0.0 b.paste.test\nc.paste.test\n"
    saved = post_form(client, "/no_follow", {"entries": pasted, "note": "n", "save": "Save"})
    assert saved.status_code == 200
    assert "added 3, already present 0, refused 0" in saved.get_data(as_text=True)
    assert count(db, "SELECT count(*) FROM queue WHERE status_reason = 'no_follow'") == 3
    assert count(db, "SELECT count(*) FROM change_log") == 1


def test_csv_import_keeps_each_rows_note_and_links_the_batch_in_the_audit_log(client, db):
    data = "hostname,note\nx.csv.test,first\ny.csv.test,second\nbad..x,\n"
    form = {"csv_text": data, "save": "Import"}
    saved = post_form(client, "/no_follow/import", form, page="/no_follow/import")
    assert saved.status_code == 200, saved.get_data(as_text=True)[:500]
    with db.connect() as conn:
        notes = dict(
            conn.execute(text("SELECT hostname, note FROM queue WHERE note IS NOT NULL")).all()
        )
        change_id = conn.execute(text("SELECT id FROM change_log")).scalar_one()
    assert notes == {"x.csv.test": "first", "y.csv.test": "second"}
    log = client.get("/audit").get_data(as_text=True)
    assert f"/audit/{change_id}/items" in log
    items = client.get(f"/audit/{change_id}/items").get_data(as_text=True)
    assert "x.csv.test" in items and "second" in items
    assert client.get("/audit/999999/items").status_code == 404
