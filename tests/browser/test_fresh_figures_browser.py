"""A new no_follow entry leaves every figure of `/` at once, in a real browser: the panel
here keeps its dashboard figures for an hour (PANEL_STATS_TTL), as a busy one does, and
still neither its strip, its charts nor GET /api/stats name or count the entry's hosts
right after it is saved."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.browser.conftest import served_panel
from tests.unit.test_panel_support import PASSWORD, give_api_token, insert_hosts

pytest_plugins = ["tests.unit.test_panel_support"]


@pytest.fixture(scope="module")
def live_server(database_url):
    """This module's panel (the folder's own computes its figures on every request)."""
    with served_panel(database_url, STATS_TTL=3600) as url:
        yield url


def log_in(page: Page) -> None:
    page.goto("/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".who")).to_have_text("alice")


def test_a_new_no_follow_entry_leaves_the_main_page_and_its_charts_at_once(page, db, operators):
    insert_hosts(db, ["www.social.test", "m.social.test", "cdn.social.test"])
    insert_hosts(db, ["a.keep.test", "b.keep.test"])
    headers = give_api_token(db, "alice", "b" * 32)
    log_in(page)
    charts = page.locator("section.charts")
    expect(charts.locator("svg.roots")).to_contain_text("social.test")
    expect(page.locator("#stat-hosts")).to_have_text("5")

    page.get_by_role("link", name="no_follow", exact=True).first.click()
    page.get_by_label("Domains, one per line").fill("social.test")
    page.get_by_role("button", name="Preview").click()
    page.get_by_role("button", name="Save 1 entry").click()
    expect(page.locator("#summary")).to_have_text("added 1, already present 0, refused 0")

    page.get_by_role("link", name="Hosts").click()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("main")).not_to_contain_text("social.test")
    expect(charts.locator("svg.roots")).to_contain_text("keep.test")
    expect(page.locator("#stat-hosts")).to_have_text("2")
    expect(page.locator("#stat-no-follow")).to_have_text("1")
    stats = page.request.get("/api/stats", headers=headers).json()
    assert stats["top_roots"] == [{"root": "keep.test", "hosts": 2}]
    assert stats["hosts_known"] == 2 and stats["no_follow"] == 1
