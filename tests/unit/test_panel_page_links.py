"""The pager's links on every paged page keep the query as it came, whatever its names.

`page_url` once handed the request's query to `url_for` as keyword arguments, so a
query argument named like one of url_for's own (`_anchor`, `_external`, ...) or the
view's (`hostname`, `change_id`) was a 500 or rewrote the page's links.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from sqlalchemy import text

from crawler.db.rules import deny_entries
from tests.unit.test_panel_support import insert_hosts, next_link

pytest_plugins = ["tests.unit.test_panel_support"]

# url_for's own keyword arguments, and the names of the paged views' path arguments.
COLLIDING = ["endpoint", "hostname", "change_id", "_method", "_external", "_scheme", "_anchor"]
VALUE = "zz-injected"  # findable anywhere in the page; truthy for _external


@pytest.fixture
def paged(db) -> dict[str, str]:
    """Two rows or more on every paged page: {page id: its path}."""
    insert_hosts(db, ["a.paged.test", "b.paged.test", "c.other.test"])
    deny_entries.add_no_follow(db, ["nf1.test", "nf2.test"])  # one batch: one change, 2 names
    deny_entries.upsert_blocked(db, "bl1.test", "a trap")
    deny_entries.upsert_blocked(db, "bl2.test", "a trap")
    with db.connect() as conn:
        batch = conn.execute(text("SELECT min(id) FROM change_log")).scalar_one()
    return {
        "hosts": "/",
        "no_follow": "/no_follow",
        "blocked": "/blocked",
        "roots": "/roots",
        "root": "/roots/paged.test",
        "audit": "/audit",
        "audit_items": f"/audit/{batch}/items",
    }


PAGES = ["hosts", "no_follow", "blocked", "roots", "root", "audit", "audit_items"]


@pytest.mark.parametrize("name", COLLIDING)
@pytest.mark.parametrize("page", PAGES)
def test_a_query_arg_named_like_url_for_s_own_stays_a_query_arg(client, paged, page, name):
    path = paged[page]
    response = client.get(path, query_string={"n": "1", name: VALUE})
    html = response.get_data(as_text=True)
    assert response.status_code == 200, html[:500]
    link = next_link(html)
    assert link, f"no next link on {path}"
    parts = urlsplit(link)
    # Same page, relative: no scheme nor host of another, no fragment injected.
    assert (parts.scheme, parts.netloc, parts.path, parts.fragment) == ("", "", path, "")
    query = parse_qs(parts.query)
    assert query[name] == [VALUE] and query["n"] == ["1"] and query["after"]
    assert f"#{VALUE}" not in html
    assert not re.search(r'href="[a-z]+://', html), "an absolute link on the page"
    # The link works: it gives the second page, not an error.
    assert client.get(link).status_code == 200
