"""Scrapy users' expectations: items to feeds, and the add-on in a spider of their own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from crawler.db.server.engine import PROJECT_ROOT
from tests.e2e.conftest import EARLY_FAILURE, OWN_SPIDER
from tests.fakeweb import World

ADDON_SPIDER = Path(__file__).with_name("addon_spider.py")


@pytest.mark.refetches(EARLY_FAILURE)
def test_a_feed_gets_one_line_per_settled_host(db, fakeweb_factory, crawl, tmp_path):
    world = World(seed=5)
    names = world.graph(40, roots=["alpha.test", "beta.test"])
    world.site("hub.test", links=[f"http://{names[0]}/", "http://www.social.test/"])
    world.host("dead.alpha.test", "refused")
    world.site("links-dead.test", links=["http://dead.alpha.test/"])
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"])
    queue.seed(db, ["hub.test", "links-dead.test"])
    feed = tmp_path / "found.jsonl"

    crawl(web, FEEDS=json.dumps({str(feed): {"format": "jsonlines"}}))

    items = [json.loads(line) for line in feed.read_text().splitlines()]
    with db.connect() as conn:
        settled = conn.execute(
            text("SELECT hostname, outcome FROM hosts WHERE outcome IS NOT NULL")
        )
        in_database = dict(settled.all())
    assert {i["hostname"]: i["outcome"] for i in items} == in_database
    assert len(items) == len(in_database) == len(names) + 3
    hub = next(i for i in items if i["hostname"] == "hub.test")
    assert (hub["http_status"], hub["title"]) == (200, "hub.test")
    links = hub["links"]  # the page's links as the filter made them, one field
    assert [name["hostname"] for name in links["names"]] == [names[0]]
    assert links["found"] == 2 and links["dropped"] == {"no_follow": 1}  # social.test's link
    assert "new_hostnames" not in hub  # what was new is the database's answer, not the item's
    with db.connect() as conn:
        sql = text("SELECT discovered_from FROM hosts WHERE hostname = :h")
        assert conn.execute(sql, {"h": names[0]}).scalar_one() == "hub.test"
    assert in_database["dead.alpha.test"] == "TCP_REFUSED"


def run_addon_spider(web, urls: list[str], tmp_path: Path, **settings) -> tuple[list[dict], str]:
    """`scrapy runspider` outside the project: only the spider's ADDONS are hostcrawl's."""
    out = tmp_path / "items.jsonl"
    args = [sys.executable, "-m", "scrapy", "runspider", str(ADDON_SPIDER), "-o", str(out)]
    args += ["-a", "urls=" + ",".join(urls), "-s", f"DNS_NAMESERVERS={web.nameservers}"]
    for name, value in {"DOWNLOAD_TIMEOUT": 3, "DNS_TIMEOUT": 1, **settings}.items():
        args += ["-s", f"{name}={value}"]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "hostcrawl: DNS through OutcomeResolver" in done.stderr
    items = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return items, done.stderr


@pytest.mark.refetches(OWN_SPIDER)
def test_the_addon_brings_no_follow_and_the_trap_rule_to_any_spider(db, fakeweb_factory, tmp_path):
    world = World()
    world.site("ok.test")
    world.site("www.social.test")
    world.zone("trap.test", "nxdomain")
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"])
    site = web.url_template()
    junk = [site.format(hostname=f"junk{i}.trap.test") for i in range(5)]

    # This spider writes no hosts row, so no host has answered in the database: a block
    # needs a canary named, asked as the spider's pages are.
    proof = {"CANARY_HOSTS": "ok.test", "HOST_URL_TEMPLATE": site}
    first, _ = run_addon_spider(
        web, [site.format(hostname="ok.test"), *junk], tmp_path, TRAP_WINDOW=5, **proof
    )
    again = tmp_path / "again"
    again.mkdir()
    later_urls = [site.format(hostname=name) for name in ("www.social.test", "more.trap.test")]
    later, log = run_addon_spider(web, later_urls, again, TRAP_WINDOW=5, **proof)

    assert {"url": site.format(hostname="ok.test"), "status": 200} in first
    trapped = [i.get("error") for i in first if "trap" in i["url"]]
    assert trapped and set(trapped) == {"CannotResolveHostError"}
    [blocked] = deny_entries.list_entries(db, "blocked")
    assert blocked["hostname"] == "trap.test" and "DNS_NXDOMAIN 5" in blocked["blocked_reason"]
    assert later == []  # refused as they were scheduled: never downloaded
    assert "'hostcrawl/blacklist/filtered/no_follow': 1" in log
    assert "'hostcrawl/blacklist/filtered/blocked': 1" in log
    assert web.fetch_counts(path=None).get("www.social.test", 0) == 0
