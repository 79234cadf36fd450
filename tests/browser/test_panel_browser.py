"""The panel in a real browser (Debian's chromium through Playwright): log in, add a
no_follow domain and watch its hosts leave `/`, paste a list with a bad line, remove
an entry, read a blocked_reason and unblock."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from crawler.db.rules import deny_entries
from tests.dbhelpers import record_outcome
from tests.unit.test_panel_support import PASSWORD, insert_hosts

pytest_plugins = ["tests.unit.test_panel_support"]


def log_in(page: Page, then: str = "/") -> None:
    page.goto(then)
    expect(page).to_have_url(re.compile(r"/login\?next="))
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator(".who")).to_have_text("alice")


def host_links(page: Page):
    return page.locator("#hosts a.host")


def test_log_in(page, operators):
    page.goto("/")
    expect(page).to_have_url(re.compile(r"/login\?next=(/|%2F)$"))
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("#password-errors")).to_have_text("Wrong username or password.")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.get_by_role("heading", name="Hosts")).to_be_visible()
    expect(page.locator(".who")).to_have_text("alice")


def test_add_a_no_follow_domain_and_its_hosts_leave_the_list(page, db, operators):
    insert_hosts(db, ["www.social.test", "m.social.test", "keep.test", "social.test.ok"])
    log_in(page)
    expect(host_links(page)).to_have_text(
        ["keep.test", "m.social.test", "social.test.ok", "www.social.test"]
    )
    page.get_by_role("link", name="no_follow", exact=True).first.click()
    page.get_by_label("Domains, one per line").fill("HTTPS://Social.TEST/path")
    page.get_by_label("Note (why)").fill("a giant platform")
    page.get_by_role("button", name="Preview").click()
    expect(page.locator("#preview-total")).to_contain_text("Would exclude 2 known hosts, 2 queued")
    page.get_by_role("button", name="Save 1 entry").click()
    expect(page.locator("#summary")).to_have_text("added 1, already present 0, refused 0")
    expect(page.locator("#stored")).to_contain_text("HTTPS://Social.TEST/path → social.test: added")
    page.get_by_role("link", name="Hosts").click()
    expect(host_links(page)).to_have_text(["keep.test", "social.test.ok"])


def test_paste_a_list_with_a_bad_line_and_read_the_summary(page, db, operators):
    deny_entries.add_no_follow(db, ["old.test"])
    log_in(page, "/no_follow")
    page.get_by_label("Domains, one per line").fill("a.test\nbad..test\nold.test\n*.b.test")
    page.get_by_role("button", name="Preview").click()
    errors = page.locator("#entries-errors")
    expect(errors).to_have_text("'bad..test': empty label")
    expect(page.locator("#preview-total")).to_contain_text("3 of 4 lines can be stored")
    page.get_by_role("button", name="Save 2 new entries (1 already there)").click()
    expect(page.locator("#summary")).to_have_text("added 2, already present 1, refused 1")
    expect(page.locator("#refused")).to_have_text("'bad..test': empty label")
    expect(page.locator("#stored")).to_contain_text("*.b.test → b.test: added")


def test_remove_an_entry_with_its_confirmation(page, db, operators):
    insert_hosts(db, ["www.gone.test"])
    deny_entries.add_no_follow(db, ["gone.test", "stays.test"], note="for now")
    log_in(page, "/no_follow")
    row = page.locator("#entry-list tr", has_text="gone.test")
    row.get_by_role("link", name="Remove…").click()
    expect(page.get_by_role("heading")).to_have_text("Remove gone.test from no_follow?")
    page.get_by_label("Note (kept in the change log)").fill("not a giant after all")
    page.get_by_role("button", name="Remove gone.test").click()
    expect(page.locator(".flashes")).to_have_text("gone.test: removed (1 host back in routing)")
    expect(page.locator("#entry-list td.host")).to_have_text(["stays.test"])
    page.get_by_role("link", name="Change log").first.click()
    expect(page.locator("#change-log tbody tr").first).to_contain_text("no_follow.remove")
    expect(page.locator("#change-log tbody tr").first).to_contain_text("not a giant after all")


def test_read_a_blocked_reason_and_unblock(page, db, operators):
    insert_hosts(db, ["www.trap.test"])
    for i in range(3):
        record_outcome(db, f"junk{i}.trap.test", "DNS_NXDOMAIN", size=3)
    log_in(page, "/blocked")
    row = page.locator("#blocked tbody tr", has_text="trap.test")
    expect(row.locator("td.reason .headline")).to_have_text("subdomain generator (DNS_NXDOMAIN 3)")
    expect(row.locator("td.reason .details li").first).to_have_text(
        "the last 3 unique subdomains of trap.test all failed at DNS/TCP/TLS level"
    )
    expect(row.locator(".counts")).to_have_text("DNS_NXDOMAIN 3")
    row.get_by_role("link", name="Unblock…").click()
    expect(page.locator("blockquote.reason")).to_contain_text("DNS_NXDOMAIN 3")
    page.get_by_role("button", name="Unblock trap.test").click()
    expect(page.locator(".flashes")).to_have_text(
        "trap.test: unblocked (1 host back in routing; trap window cleared (3 outcomes))"
    )
    expect(page.locator("#blocked td.empty")).to_have_text("No blocked hosts match.")
    page.get_by_role("link", name="Hosts").click()
    expect(host_links(page)).to_contain_text(["www.trap.test"])
