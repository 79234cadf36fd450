"""A page's inline script and JSON block name hosts: each saved with source `scripts`, none
under a no_follow entry saved or fetched, and names that cannot exist refused and counted."""

from __future__ import annotations

import json
import re

from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.e2e.conftest import known_hosts
from tests.fakeweb import World

SCRIPTS_PAGE = """<!DOCTYPE html><html><head><title>scripts</title>
<script>
  var cdn = "https://cdn.named.test/lib.js", api = '//api.named.test/v1';
  window.social = "https://www.social.test/widget";  // https://comment.named.test/
  var sloppy = ["https://3pp/", "https://x.comundefined/", "//printer.local/"];
  var dev = 'http://localhost:8080/'; var prop = window.host.named.test;
</script>
<script type="application/json" id="state">
  {"assets": "https:\\/\\/assets.named.test\\/a.css", "share": "https:\\/\\/x.social.test\\/"}
</script>
</head><body><p>scripts only</p></body></html>"""
SAVED = {
    "cdn.named.test": "inline script",
    "api.named.test": "inline script",
    "assets.named.test": "inline json",
}
CANNOT_EXIST = {"3pp", "x.comundefined", "printer.local", "localhost"}
DROPPED = {"single_label": 1, "unknown_tld": 1, "special_use": 2, "no_follow": 2}


def facts(db, hostname: str):
    with db.connect() as conn:
        sql = (
            "SELECT discovered_from, found_source, found_via, links_found, links_filtered"
            " FROM hosts WHERE hostname = :h"
        )
        return conn.execute(text(sql), {"h": hostname}).first()


def crawl_stats(log: str) -> dict[str, int]:
    """The `hostcrawl/links/dropped/<reason>` stats of the crawl's final stats dump."""
    pairs = re.findall(r"'hostcrawl/links/dropped/(\w+)': (\d+)", log)
    return {reason: int(count) for reason, count in pairs}


def test_script_names_are_saved_as_scripts_and_names_that_cannot_exist_are_counted(
    db, fakeweb_factory, crawl, tmp_path
):
    world = World()
    world.raw("start.test", SCRIPTS_PAGE.encode(), content_type="text/html; charset=utf-8")
    for name in (*SAVED, "www.social.test", "x.social.test"):
        world.host(name, "ok")
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"])
    queue.seed(db, ["start.test"])
    feed = tmp_path / "found.jsonl"

    worker = crawl(web, "http", FEEDS=json.dumps({str(feed): {"format": "jsonlines"}}))

    assert known_hosts(db) == {"start.test", "social.test", *SAVED}
    for name, place in SAVED.items():
        assert facts(db, name)[:3] == ("start.test", "scripts", place), name
    start = facts(db, "start.test")
    assert start.links_found == len(SAVED) + sum(DROPPED.values())
    assert start.links_filtered == sum(DROPPED.values())
    items = [json.loads(line) for line in feed.read_text().splitlines()]
    page = next(i for i in items if i["hostname"] == "start.test")
    links = page["links"]
    assert {n["hostname"]: n["group"] for n in links["names"]} == dict.fromkeys(SAVED, "scripts")
    assert links["dropped"] == DROPPED
    log = worker.log()
    assert crawl_stats(log) == DROPPED
    assert re.search(r"'hostcrawl/found/scripts': 3\b", log)
    fetched = set(web.fetch_counts(path=None))
    assert fetched == {"start.test", *SAVED}
    asked = {q["name"] for q in web.dns_queries()}
    assert not {n for n in asked if n.endswith("social.test") or n in CANNOT_EXIST}
    assert "comment.named.test" not in asked and "host.named.test" not in asked
