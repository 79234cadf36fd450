"""Accounts and sessions in a real browser (Debian's chromium): a cookie replayed after logout is
refused; a viewer sees and may do less than an admin; every page at 420 px wide."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect
from sqlalchemy import text

from crawler.db.rules import deny_entries
from tests.browser.conftest import ARTIFACTS
from tests.unit.test_panel_support import PASSWORD, insert_hosts

pytest_plugins = ["tests.unit.test_panel_support"]

NARROW = {"width": 420, "height": 900}


def log_in(page: Page, username: str = "alice", then: str = "/") -> None:
    page.goto(then)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".who")).to_contain_text(username)


def no_follow(engine) -> list[str]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT hostname FROM queue WHERE status_reason = 'no_follow'"))
        return sorted(r[0] for r in rows)


@pytest.fixture
def viewer(db, operators, password_hash):
    with db.begin() as conn:
        conn.execute(
            text("INSERT INTO users (username, password_hash, role) VALUES ('val', :p, 'viewer')"),
            {"p": password_hash},
        )
    return "val"


def test_a_cookie_replayed_after_logout_is_refused(browser, live_server, page, db, operators):
    log_in(page)
    saved = page.context.cookies()
    assert sorted(c["name"] for c in saved) == ["hostcrawl_device", "hostcrawl_session"]
    page.get_by_role("button", name="Log out").click()
    expect(page.locator(".flashes")).to_have_text("Logged out.")
    # The browser stays a known device of alice's (webpanel.devices): no storm of guesses
    # at her account slows her next login here.
    assert "hostcrawl_device" in [c["name"] for c in page.context.cookies()]

    thief = browser.new_context(base_url=live_server)
    try:
        thief.add_cookies(saved)
        stolen = thief.new_page()
        stolen.goto("/no_follow")
        expect(stolen).to_have_url(re.compile(r"/login\?next="))  # not logged in
        answer = thief.request.post("/no_follow", form={"entries": "evil.test", "save": "Save"})
        assert answer.url.split("?")[0].endswith("/login")  # sent to log in, nothing stored
        stolen.screenshot(path=str(ARTIFACTS / "replayed_cookie_after_logout.png"))
    finally:
        thief.close()
    assert no_follow(db) == []


def test_a_viewer_reads_but_changes_nothing_an_admin_can(browser, live_server, page, db, viewer):
    deny_entries.add_no_follow(db, ["gone.test"])
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator: 50 of 50 failed")
    log_in(page, "val", "/no_follow")
    expect(page.locator(".who")).to_have_text("val (viewer)")
    expect(page.locator("#entry-list td.host")).to_have_text(["gone.test"])
    expect(page.get_by_role("button", name="Preview")).to_have_count(0)
    expect(page.get_by_role("link", name="Remove…")).to_have_count(0)
    page.goto("/blocked")
    expect(page.get_by_text("subdomain generator: 50 of 50 failed")).to_be_visible()
    expect(page.get_by_role("link", name="Unblock…")).to_have_count(0)
    # Typed by hand, the confirmation page's POST is refused all the same.
    token = page.locator('input[name="csrf_token"]').first.get_attribute("value")
    answer = page.request.post("/blocked/trap.test/unblock", form={"csrf_token": token})
    assert answer.status == 403 and "viewer" in answer.text()
    assert deny_entries.deny_entries(db) == [("gone.test", "no_follow"), ("trap.test", "blocked")]

    admin = browser.new_context(base_url=live_server)
    try:
        admin_page = admin.new_page()
        log_in(admin_page, "alice", "/blocked")
        admin_page.get_by_role("link", name="Unblock…").click()
        admin_page.get_by_role("button", name="Unblock trap.test").click()
        expect(admin_page.locator(".flashes")).to_contain_text("trap.test: unblocked")
    finally:
        admin.close()
    assert deny_entries.deny_entries(db) == [("gone.test", "no_follow")]


@pytest.mark.parametrize(
    "url", ["/", "/no_follow", "/no_follow/import", "/blocked", "/audit", "/hosts/www.a.test"]
)
def test_every_page_is_usable_at_420_px(browser, live_server, db, operators, url):
    insert_hosts(db, ["www.a.test", "a-rather-long-hostname-for-a-narrow-screen.example.test"])
    deny_entries.add_no_follow(
        db, ["gone.test"], note="a note that is long enough to wrap somewhere"
    )
    deny_entries.upsert_blocked(db, "trap.test", "subdomain generator: " + "x" * 300)
    context = browser.new_context(base_url=live_server, viewport=NARROW)
    try:
        page = context.new_page()
        log_in(page, then=url)
        expect(page.locator("main h1").first).to_be_visible()
        # Nothing wider than the screen: the page never scrolls sideways.
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= NARROW["width"], f"{url}: {width} px wide at {NARROW['width']} px"
        # The whole header is on screen: every nav link and the logout button.
        for link in page.locator("header.top a, header.top button").all():
            box = link.bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= NARROW["width"], link
        ARTIFACTS.mkdir(exist_ok=True)
        name = "420px" + (url.replace("/", "_") if url != "/" else "_hosts")
        page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    finally:
        context.close()
