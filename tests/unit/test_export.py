"""Export of the discovered hosts: the CLI, the panel's CSV and GET /api/hosts give the
panel's host list for the same filter, every page of it."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from crawler.db.operators import export
from crawler.db.operators.host_filter import HostFilter
from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import give_api_token, insert_hosts
from webpanel.queries.host_rows import host_page

pytest_plugins = ["tests.unit.test_panel_support"]


@pytest.fixture
def world(db):
    """600 hosts over 3 roots, some crawled, a subtree under a no_follow entry."""
    insert_hosts(db, [f"h{i:03d}.alpha.test" for i in range(300)], outcome="OK")
    insert_hosts(db, [f"h{i:03d}.beta.test" for i in range(200)])
    insert_hosts(db, [f"h{i:03d}.gamma.test" for i in range(100)], outcome="DNS_NXDOMAIN")
    insert_hosts(db, ["x.hidden.alpha.test", "y.hidden.alpha.test"], outcome="OK")
    insert_hosts(db, ["evil.beta.test"], title='=HYPERLINK("http://x")', outcome="OK")
    deny_entries.add_no_follow(db, ["hidden.alpha.test"])
    with db.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET discovered_at = now() - interval '3 days'"
                " WHERE root = 'gamma.test'"
            )
        )
    return db


def panel_names(db, flt: HostFilter) -> list[str]:
    """Every page of the panel's host list for `flt`."""
    names, after = [], None
    with db.connect() as conn:
        while True:
            page = host_page(conn, flt, after=after, limit=500)
            names += [row.hostname for row in page.rows]
            if page.next is None:
                return names
            after = page.next


def csv_names(db, flt: HostFilter) -> list[str]:
    data = b"".join(export.csv_chunks(db, flt)).decode()
    return [row["hostname"] for row in csv.DictReader(io.StringIO(data))]


FILTERS = [
    HostFilter(),
    HostFilter(outcome="OK"),
    HostFilter(outcome="none"),
    HostFilter(root="beta.test"),
    HostFilter(q="h01"),
    HostFilter(q="alpha.test", match="domain"),
    HostFilter(since=datetime.now(UTC) - timedelta(days=1)),
]


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f)[10:60])
def test_export_is_the_panel_list_for_the_same_filter(world, flt):
    expected = panel_names(world, flt)
    assert expected  # each filter keeps something
    assert csv_names(world, flt) == expected
    assert [json.loads(line)["hostname"] for line in export.jsonl_lines(world, flt)] == expected


def test_names_under_an_entry_only_on_request(world):
    names = csv_names(world, HostFilter(root="alpha.test"))
    assert "x.hidden.alpha.test" not in names and "hidden.alpha.test" not in names
    everything = csv_names(world, HostFilter(root="alpha.test", include_denied=True))
    assert {"x.hidden.alpha.test", "hidden.alpha.test"} <= set(everything)


def test_a_formula_in_a_title_is_neutralised_in_csv_only(world):
    data = b"".join(export.csv_chunks(world, HostFilter(q="evil"))).decode()
    (row,) = csv.DictReader(io.StringIO(data))
    assert row["title"] == '\'=HYPERLINK("http://x")'
    (line,) = export.jsonl_lines(world, HostFilter(q="evil"))
    assert json.loads(line)["title"] == '=HYPERLINK("http://x")'


def test_the_cli_exports_to_a_file_or_says_why_not(world, tmp_path):
    out = tmp_path / "ok.jsonl"
    cli = [sys.executable, "-m", "crawler.cli", "hosts", "export"]
    run = subprocess.run(
        [*cli, "--format", "jsonl", "--outcome", "OK", "--root", "alpha.test", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 300 and {r["outcome"] for r in rows} == {"OK"}
    bad = subprocess.run([*cli, "--root", "bad..name"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and bad.stderr.startswith("error: --root")


def test_the_panel_exports_the_list_it_shows(client, world):
    page = client.get("/?outcome=OK&root=beta.test").get_data(as_text=True)
    assert 'id="export-csv"' in page and "outcome=OK" in page
    response = client.get("/hosts/export.csv?outcome=OK&root=beta.test")
    assert response.status_code == 200 and response.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))
    assert [r["hostname"] for r in rows] == ["evil.beta.test"]
    assert client.get("/hosts/export.csv?root=bad..name").status_code == 400


def test_api_hosts_pages_through_the_same_list(app, world, operators):
    auth = give_api_token(world, "bob", "bob-token")
    api = app.test_client()
    names, url = [], "/api/hosts?outcome=OK&n=70"
    while url:
        body = api.get(url, headers=auth).json
        names += [h["hostname"] for h in body["hosts"]]
        url = f"/api/hosts?outcome=OK&n=70&after={body['next']}" if body["next"] else None
    assert names == panel_names(world, HostFilter(outcome="OK"))
    assert api.get("/api/hosts?root=bad..x", headers=auth).status_code == 400
    assert api.get("/api/hosts?since=yesterday", headers=auth).status_code == 400
