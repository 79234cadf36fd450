"""The panel and the exports on a Citus cluster: every page with data, through a
logged-in Flask test client, and `hostcrawl hosts export` and `blocked list`. A real
one-machine cluster; skips with one line without `make citus`.

Most deny entries are written here as rows, the way the writer leaves them (the entry's
own queue row, denied_by on the rows under it, a change-log row), so that a page's test
does not hang on the writer; the bulk list goes through the writer itself.
"""

from __future__ import annotations

import csv
import io
import json
import time
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from crawler.core.hostnames import root
from crawler.db.crawl import dropped_links
from crawler.db.rules import trap_windows
from tests.unit.test_cli import hostcrawl
from tests.unit.test_panel_support import (
    give_api_token,
    insert_hosts,
    next_link,
    panel_config,
    shown_hosts,
)
from webpanel import create_app
from webpanel.security import LOGGED_IN_AT

pytest_plugins = ["tests.unit.test_panel_support"]

SITES = [f"site{i}.test" for i in range(8)]
SHOWN = sorted(
    [f"www{i}.{site}" for site in SITES for i in range(3)] + SITES + ["x.nx.test", "nx.test"]
)
HIDDEN = ["trap.test", "a.trap.test", "b.trap.test", "social.test", "www.social.test"]
ENTRY = text(
    """
    UPDATE hosts SET status_reason = :rule, next_claim_at = NULL, note = :note,
           blocked_reason = :reason, blocked_at = CAST(:blocked_at AS timestamptz)
     WHERE root = :root AND hostname = :name
    """
)
TAKE_OUT = text(
    """
    UPDATE hosts SET denied_by = :name
     WHERE root = :root AND hostname LIKE '%.' || :name AND status_reason IS NULL
    """
)
LOGGED = text(
    "INSERT INTO change_log (actor, action, hostname) VALUES ('alice', :action, :name) RETURNING id"
)


def add_entry(engine, name: str, rule: str, note: str) -> int:
    """A deny entry as the writer leaves it; the id of its change-log row."""
    blocked = rule == "blocked"
    params = {"name": name, "root": root(name), "rule": rule, "note": None if blocked else note}
    params |= {
        "reason": note if blocked else None,
        "blocked_at": datetime.now(UTC) if blocked else None,
    }
    action = "block" if blocked else "no_follow.add"
    with engine.begin() as conn:
        conn.execute(ENTRY, params)
        conn.execute(TAKE_OUT, params)
        return conn.execute(LOGGED, {**params, "action": action}).scalar_one()


@pytest.fixture
def on_cluster(cluster_db, password_hash):
    """The cluster with hosts of many roots (over several shards), a blocked root with its
    window, a no_follow entry, and alice: (engine, change-log ids, alice's API headers)."""
    engine = cluster_db
    insert_hosts(engine, SHOWN + HIDDEN, outcome="OK", http_status=200, title="Hello")
    insert_hosts(engine, ["x.nx.test"], outcome="DNS_NXDOMAIN")
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM login_failures"))
        conn.execute(
            text("INSERT INTO users (username, password_hash) VALUES ('alice', :p)"),
            {"p": password_hash},
        )
        conn.execute(
            text(
                "UPDATE hosts SET discovered_at = now() - make_interval(days => 10)"
                " WHERE root = 'site0.test'"
            )
        )
        conn.execute(
            text(
                "INSERT INTO wildcard_probes (root, probe, outcome)"
                " VALUES ('trap.test', 'hc-1.trap.test', 'DNS_NXDOMAIN')"
            )
        )
    trap_windows.record_outcomes(engine, [("a.trap.test", "DNS_NXDOMAIN")], 50)
    ids = [
        add_entry(engine, "trap.test", "blocked", "subdomain generator: 50 of 50 failed"),
        add_entry(engine, "social.test", "no_follow", "giant platform"),
    ]
    return engine, ids, give_api_token(engine, "alice", "t" * 40)


@pytest.fixture
def client(on_cluster, citus_cluster):
    """alice logged in to a panel on the cluster."""
    engine, _, _ = on_cluster
    app = create_app(panel_config(citus_cluster.url))
    client = app.test_client()
    with engine.connect() as conn:
        alice = conn.execute(text("SELECT id FROM users WHERE username = 'alice'")).scalar_one()
    with client.session_transaction() as session:
        session["_user_id"] = f"{alice}.1"
        session["_fresh"] = True
        session[LOGGED_IN_AT] = int(time.time())
    return client


def page(client, url: str) -> str:
    answer = client.get(url)
    assert answer.status_code == 200, (url, answer.status_code)
    return answer.get_data(as_text=True)


def api(client, headers: dict, url: str) -> dict:
    answer = client.get(url, headers=headers)
    assert answer.status_code == 200, (url, answer.status_code, answer.get_data(as_text=True))
    return answer.get_json()


def listed(client, headers: dict, query: str) -> list[str]:
    """Every host /api/hosts lists for the query, page by keyset page of 5."""
    names, url = [], f"/api/hosts?n=5&{query}"
    while True:
        found = api(client, headers, url)
        names += [h["hostname"] for h in found["hosts"]]
        if not found["next"]:
            return names
        url = f"/api/hosts?n=5&{query}&after={found['next']}"


def test_the_host_list_pages_searches_and_filters_on_the_cluster(client, on_cluster):
    _, _, headers = on_cluster
    assert listed(client, headers, "") == SHOWN  # nothing under an entry
    assert listed(client, headers, "q=www1") == [f"www1.{s}" for s in SITES]
    domain = sorted(["site3.test", *(f"www{i}.site3.test" for i in range(3))])
    assert listed(client, headers, "q=site3.test&match=domain") == domain
    assert listed(client, headers, "outcome=DNS_NXDOMAIN") == ["x.nx.test"]
    assert listed(client, headers, "root=site5.test&outcome=OK") == [
        "site5.test",
        *(f"www{i}.site5.test" for i in range(3)),
    ]
    newest = listed(client, headers, "sort=newest")
    assert sorted(newest) == SHOWN and newest[-4:] == sorted(domain_of("site0.test"))[::-1]
    since = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    assert set(listed(client, headers, f"since={since}")) == set(SHOWN) - domain_of("site0.test")


def domain_of(site: str) -> set[str]:
    return {site, *(f"www{i}.{site}" for i in range(3))}


def test_the_host_list_page_on_the_cluster(client):
    html = page(client, "/?n=5")
    assert shown_hosts(html) == SHOWN[:5] and next_link(html)


def test_host_root_and_entry_pages_on_the_cluster(client, on_cluster):
    _, ids, headers = on_cluster
    host = page(client, "/hosts/www1.site2.test")
    assert "Hello" in host and "200" in host and "next claim" in host
    hidden = page(client, "/hosts/a.trap.test")
    assert "Under the blocked entry" in hidden and "trap.test" in hidden
    assert client.get("/hosts/nowhere.test").status_code == 404

    roots = page(client, "/roots?sort=name")
    for domain in ("site0.test", "site7.test", "trap.test"):
        assert f">{domain}<" in roots
    trap = page(client, "/roots/trap.test")
    assert "a.trap.test" in trap and "DNS_NXDOMAIN" in trap and "hc-1.trap.test" in trap
    assert "www2.site4.test" in page(client, "/roots/site4.test")
    found = api(client, headers, "/api/roots?sort=name&n=50")["roots"]
    by_root = {r["root"]: r for r in found}
    assert set(by_root) == {root(h) for h in SHOWN + HIDDEN}
    assert by_root["site1.test"]["hosts"] == 4 and by_root["site1.test"]["due"] == 4
    assert by_root["trap.test"]["entry"] == {"hostname": "trap.test", "rule": "blocked"}
    assert by_root["social.test"]["entry"] == {"hostname": "social.test", "rule": "no_follow"}

    blocked = page(client, "/blocked")
    assert "trap.test" in blocked and "subdomain generator" in blocked and "alice" in blocked
    entries = api(client, headers, "/api/blocked")["entries"]
    assert [(e["hostname"], e["took_out"], e["added_by"]) for e in entries] == [
        ("trap.test", 2, "alice")
    ]
    assert "2 hosts this block took out" in page(client, "/blocked/trap.test/unblock")
    no_follow = page(client, "/no_follow")
    assert "social.test" in no_follow and "giant platform" in no_follow
    entries = api(client, headers, "/api/no_follow")["entries"]
    assert [(e["hostname"], e["took_out"], e["added_by"]) for e in entries] == [
        ("social.test", 1, "alice")
    ]
    assert "1 host it took out" in page(client, "/no_follow/social.test/remove")
    assert "social.test" in page(client, "/no_follow/export.csv")
    checked = api(client, headers, "/api/check_host?name=www.social.test")
    assert checked["denied"] and checked["entry"] == "social.test"

    audit = page(client, "/audit")
    assert "trap.test" in audit and "social.test" in audit
    assert client.get(f"/audit/{ids[0]}/items").status_code in (200, 404)


def test_the_export_on_the_cluster(client, on_cluster, citus_cluster):
    rows = list(csv.DictReader(io.StringIO(page(client, "/hosts/export.csv"))))
    assert [r["hostname"] for r in rows] == SHOWN

    cli = hostcrawl("hosts", "export", "--format", "csv", "--root", "site2.test")
    assert cli.returncode == 0, cli.stderr
    assert [r["hostname"] for r in csv.DictReader(io.StringIO(cli.stdout))] == sorted(
        domain_of("site2.test")
    )
    cli = hostcrawl("hosts", "export", "--format", "jsonl", "--outcome", "DNS_NXDOMAIN")
    assert cli.returncode == 0, cli.stderr
    assert [json.loads(line)["hostname"] for line in cli.stdout.splitlines()] == ["x.nx.test"]
    since = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%S")
    cli = hostcrawl("hosts", "export", "--format", "jsonl", "--since", since)
    assert cli.returncode == 0, cli.stderr
    exported = {json.loads(line)["hostname"] for line in cli.stdout.splitlines()}
    assert exported == set(SHOWN) - domain_of("site0.test")

    cli = hostcrawl("blocked", "list")
    assert cli.returncode == 0, cli.stderr
    assert "trap.test" in cli.stdout and "subdomain generator: 50 of 50 failed" in cli.stdout
    cli = hostcrawl("no-follow", "list")
    assert cli.returncode == 0, cli.stderr
    assert "social.test" in cli.stdout


def test_a_bulk_no_follow_list_on_the_cluster(on_cluster, tmp_path):
    listed = tmp_path / "giants.txt"
    listed.write_text("||big.test^\nhuge.test\n")
    cli = hostcrawl("no-follow", "add", "-f", str(listed))
    assert cli.returncode == 0, cli.stderr
    assert {"big.test", "huge.test"} <= set(hostcrawl("no-follow", "list").stdout.split())


def test_what_entries_did_and_the_health_row_on_the_cluster(client, on_cluster):
    """The hidden matches of an emptied list, the links an entry dropped, the roots'
    counts and the health row: each read of the cluster's tables runs."""
    engine, _, _ = on_cluster
    emptied = page(client, "/?q=www.social&match=prefix")
    assert "No hosts match." in emptied
    assert 'id="hidden-matches">1 host that matches is hidden by deny entries' in emptied
    with engine.begin() as conn:
        dropped_links.add(conn, {"social.test": 4, "trap.test": 1})
    assert 'data-label="links dropped">4<' in page(client, "/no_follow")
    assert 'data-label="hosts">4<' in page(client, "/roots?q=site0.test")
    health = page(client, "/health-row")
    assert 'id="health-workers">0<' in health and 'id="health-due">' in health
