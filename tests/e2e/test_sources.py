"""Every source of hostnames end to end: a redirect to one https page behind a CNAME naming
a host in each place a browser reads, its headers, its certificate and its robots.txt."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.e2e.conftest import REDIRECT_TARGET, known_hosts
from tests.fakeweb import World

# (place, source group, HTML naming {h}) for each place in the document; {h} is a host.
DOCUMENT = [
    ("a href", "links", '<a href="https://{h}/">a</a>'),
    ("area href", "links", '<map name="m"><area href="//{h}/" alt=""></map>'),
    ("form action", "links", '<form action="https://{h}/post"></form>'),
    ("button formaction", "links", '<button formaction="https://{h}/b">b</button>'),
    ("blockquote cite", "links", '<blockquote cite="https://{h}/q">q</blockquote>'),
    ("link href", "resources", '<link rel="stylesheet" href="https://{h}/s.css">'),
    ("script src", "resources", '<script src="https://{h}/s.js"></script>'),
    ("img src", "resources", '<img src="https://{h}/i.png" alt="">'),
    ("img srcset", "resources", '<img srcset="/a.png 1x, https://{h}/b.png 2x" alt="">'),
    ("iframe src", "resources", '<iframe src="https://{h}/f"></iframe>'),
    ("video poster", "resources", '<video poster="https://{h}/p.png"></video>'),
    ("object data", "resources", '<object data="https://{h}/o"></object>'),
    ("table background", "resources", '<table background="https://{h}/bg.png"></table>'),
    ("meta content", "metadata", '<meta property="og:image" content="https://{h}/og.png">'),
    ("meta refresh", "metadata", '<meta http-equiv="refresh" content="0; url=https://{h}/">'),
    ("div data-src", "metadata", '<div data-src="https://{h}/lazy.png"></div>'),
    ("style url()", "metadata", "<div style=\"background: url('https://{h}/b.png')\"></div>"),
    (
        "json-ld",
        "metadata",
        '<script type="application/ld+json">{{"logo": "https:\\/\\/{h}\\/l.png"}}</script>',
    ),
    ("inline script", "scripts", "<script>var u = 'https://{h}/x.js';</script>"),
    (
        "inline json",
        "scripts",
        '<script type="application/json">{{"u": "https:\\/\\/{h}\\/"}}</script>',
    ),
]
# (place, group, header name, value naming {h}).
HEADERS = [
    ("header Link", "headers", "Link", "<https://{h}/font.woff2>; rel=preload"),
    ("header Content-Security-Policy", "headers", "Content-Security-Policy", "img-src *.{h}"),
    ("header Refresh", "headers", "Refresh", "30; url=https://{h}/"),
]


def host(slug: str, under: str) -> str:
    return f"{slug.replace(' ', '-').replace('()', '').replace('.', '').lower()}.{under}"


def page_naming(under: str) -> tuple[bytes, dict[str, str], dict[str, tuple[str, str]]]:
    """(body, headers, {host: (place, group)}) of a page naming a host in every place."""
    # The first <base> counts wherever it stands: a relative link before it resolves
    # to the base's host, so that host is first seen through the link.
    base = host("base", under)
    parts = [f'<a href="relative/page">r</a><base href="https://{base}/dir/">']
    expected = {base: ("a href", "links")}
    headers = {}
    for place, group, html in DOCUMENT:
        name = host(place, under)
        parts.append(html.format(h=name))
        expected[name] = (place, group)
    for place, group, header, value in HEADERS:
        name = host(place, under)
        headers[header] = value.format(h=name)
        expected[name] = (place, group)
    body = "<!DOCTYPE html><html><head><title>every place</title></head><body>"
    body += "\n".join(parts) + "</body></html>"
    return body.encode(), headers, expected


def found(db, hostname: str):
    with db.connect() as conn:
        sql = "SELECT discovered_from, found_source, found_via FROM hosts WHERE hostname = :h"
        return conn.execute(text(sql), {"h": hostname}).first()


def world_with(under: str, *, cert: str, cname_target: str, sitemap_host: str):
    """start.test redirects to src.test (a CNAME of cname_target) serving the page."""
    world = World()
    body, headers, expected = page_naming(under)
    world.raw("src.test", body, headers=headers, content_type="text/html; charset=utf-8")
    world.robots["src.test"] = f"User-agent: *\nDisallow:\nSitemap: https://{sitemap_host}/s.xml\n"
    world.host(cname_target, "ok")
    world.cname("src.test", cname_target)
    world.certify(cert)
    # The redirect response's own headers and body are sources too.
    hop_link, hop_body = host("hop link", under), host("hop body", under)
    world.redirect(
        "start.test",
        "https://src.test:{https_port}/",
        headers={"Link": f"<https://{hop_link}/font.woff2>; rel=preload"},
        body=f'<script src="https://{hop_body}/s.js"></script>',
    )
    expected[hop_link] = ("header Link", "headers")
    expected[hop_body] = ("script src", "resources")
    return world, expected


@pytest.mark.refetches(REDIRECT_TARGET)
def test_every_place_names_a_host_and_each_is_saved_with_its_source(
    db, fakeweb_factory, crawl, tmp_path
):
    world, expected = world_with(
        "named.test",
        cert="cert-extra.test",
        cname_target="edge.cdn.test",
        sitemap_host="sitemaps.test",
    )
    expected["cert-extra.test"] = ("certificate", "certificate")
    expected["edge.cdn.test"] = ("cname", "dns")
    expected["sitemaps.test"] = ("robots.txt Sitemap", "robots")
    expected["src.test"] = ("redirect", "redirects")
    web = fakeweb_factory(world)
    queue.seed(db, ["start.test"])
    feed = tmp_path / "found.jsonl"

    worker = crawl(web, "https", FEEDS=json.dumps({str(feed): {"format": "jsonlines"}}))

    assert set(expected) <= known_hosts(db)
    for name, (place, group) in expected.items():
        assert found(db, name) == ("start.test", group, place), name
    items = [json.loads(line) for line in feed.read_text().splitlines()]
    start = next(i for i in items if i["hostname"] == "start.test")
    by_host = {n["hostname"]: (n["place"], n["group"]) for n in start["links"]["names"]}
    assert by_host == expected
    log = worker.log()
    groups = ("links", "resources", "metadata", "scripts", "headers", "certificate", "dns")
    for group in (*groups, "robots"):
        assert f"'hostcrawl/found/{group}'" in log


@pytest.mark.refetches(REDIRECT_TARGET)
def test_no_place_saves_or_fetches_a_host_under_a_no_follow_entry(db, fakeweb_factory, crawl):
    world, expected = world_with(
        "social.test",
        cert="www.social.test",
        cname_target="edge.social.test",
        sitemap_host="maps.social.test",
    )
    web = fakeweb_factory(world)
    deny_entries.add_no_follow(db, ["social.test"])
    queue.seed(db, ["start.test"])

    crawl(web, "https")

    assert known_hosts(db) == {"start.test", "src.test", "social.test"}
    fetched = set(web.fetch_counts(path=None))
    assert fetched == {"start.test", "src.test"}
    asked = {q["name"] for q in web.dns_queries()}
    assert not {name for name in asked if name.endswith("social.test")}
