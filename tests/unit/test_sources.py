"""Every place a page names a host: the extractor, the headers, names, robots.txt, the filter."""

from __future__ import annotations

import lxml.html
import pytest

from crawler.core.denylist import NO_FOLLOW, DenyList
from crawler.core.links import filter_found
from crawler.core.pagelinks import document_title, document_urls, parse_document, srcset_urls
from crawler.core.sources import (
    CERTIFICATE,
    CNAME,
    DNS,
    GROUPS,
    HEADERS,
    LINKS,
    METADATA,
    RESOURCES,
    ROBOTS,
    SourcesError,
    group_of,
    header_urls,
    name_urls,
    parse_groups,
    robots_sitemaps,
)

PAGE = "page.test"

# (HTML body fragment naming x.test, the place, its group). One row per place.
DOCUMENT_PLACES = [
    ('<a href="https://x.test/">a</a>', "a href", LINKS),
    ('<map><area href="//x.test/"></map>', "area href", LINKS),
    ('<form action="https://x.test/post"></form>', "form action", LINKS),
    ('<button formaction="https://x.test/b">b</button>', "button formaction", LINKS),
    ('<input type=submit formaction="https://x.test/i">', "input formaction", LINKS),
    ('<blockquote cite="https://x.test/q">q</blockquote>', "blockquote cite", LINKS),
    ('<q cite="https://x.test/q">q</q>', "q cite", LINKS),
    ('<del cite="https://x.test/d">d</del>', "del cite", LINKS),
    ('<ins cite="https://x.test/i">i</ins>', "ins cite", LINKS),
    ('<link rel="stylesheet" href="https://x.test/s.css">', "link href", RESOURCES),
    ('<link rel="dns-prefetch" href="//x.test">', "link href", RESOURCES),
    ('<link rel="preload" imagesrcset="https://x.test/a.png 1x">', "link imagesrcset", RESOURCES),
    ('<script src="https://x.test/s.js"></script>', "script src", RESOURCES),
    ('<img src="https://x.test/i.png">', "img src", RESOURCES),
    ('<img srcset="/a.png 1x, https://x.test/b.png 2x">', "img srcset", RESOURCES),
    ('<iframe src="https://x.test/f"></iframe>', "iframe src", RESOURCES),
    ('<embed src="https://x.test/e">', "embed src", RESOURCES),
    ('<video src="https://x.test/v.mp4"></video>', "video src", RESOURCES),
    ('<video poster="https://x.test/p.png"></video>', "video poster", RESOURCES),
    ('<audio src="https://x.test/a.mp3"></audio>', "audio src", RESOURCES),
    ('<video><source src="https://x.test/v.webm"></video>', "source src", RESOURCES),
    ('<picture><source srcset="https://x.test/w.webp"></picture>', "source srcset", RESOURCES),
    ('<video><track src="https://x.test/t.vtt"></video>', "track src", RESOURCES),
    ('<input type=image src="https://x.test/i.png">', "input src", RESOURCES),
    ('<object data="https://x.test/o.swf"></object>', "object data", RESOURCES),
    ('<table background="https://x.test/bg.png"></table>', "table background", RESOURCES),
    ('<a href="/" ping="/p https://x.test/ping">a</a>', "a ping", RESOURCES),
    ('<meta http-equiv="Refresh" content="0; url=https://x.test/">', "meta refresh", METADATA),
    ('<meta property="og:image" content="https://x.test/og.png">', "meta content", METADATA),
    ('<meta name="twitter:image" content="//x.test/t.png">', "meta content", METADATA),
    ('<div data-src="https://x.test/lazy.png"></div>', "div data-src", METADATA),
    ("<div style=\"background: url('https://x.test/b.png')\"></div>", "style url()", METADATA),
    ("<style>@import 'https://x.test/i.css';</style>", "style url()", METADATA),
    ('<style>p { background: url("//x.test/p.png") }</style>', "style url()", METADATA),
    (
        '<script type="application/ld+json">{"logo": {"url": "https:\\/\\/x.test\\/l"}}</script>',
        "json-ld",
        METADATA,
    ),
]


def page(body: str, head: str = "") -> lxml.html.HtmlElement:
    return lxml.html.document_fromstring(f"<html><head>{head}</head><body>{body}</body></html>")


@pytest.mark.parametrize(("html", "place", "group"), DOCUMENT_PLACES, ids=lambda v: str(v)[:40])
def test_each_place_of_a_document_names_its_host(html, place, group):
    found = document_urls(page(html))
    assert place in {p for _, p in found.urls}
    links = filter_found(found.urls, PAGE, DenyList())
    assert "x.test" in links.hostnames
    assert links.via["x.test"] == place
    assert group_of(place) == group
    assert links.by_group[group] >= 1


def test_html_manifest():
    root = lxml.html.document_fromstring('<html manifest="https://x.test/m"><body></body></html>')
    assert ("https://x.test/m", "html manifest") in document_urls(root).urls


def test_a_relative_link_under_base_href_resolves_to_the_base_host():
    root = page('<a href="next/page">n</a>', head='<base href="https://cdn.base.test/dir/">')
    found = document_urls(root)
    assert found.base == "https://cdn.base.test/dir/"
    links = filter_found(found.urls, PAGE, DenyList(), "https", base=found.base)
    assert links.hostnames == {"cdn.base.test"}
    assert links.via["cdn.base.test"] == "base href"


@pytest.mark.parametrize("base", ["/other/", "javascript:void(0)", "data:text/html,x"])
def test_a_base_that_names_no_other_web_host_leaves_links_on_the_page(base):
    root = page('<a href="x">x</a>', head=f'<base href="{base}">')
    found = document_urls(root)
    assert filter_found(found.urls, PAGE, DenyList(), base=found.base).hostnames == {PAGE}


def test_only_the_first_base_counts():
    head = '<base href="https://one.test/"><base href="https://two.test/">'
    assert document_urls(page("", head)).base == "https://one.test/"


@pytest.mark.parametrize(
    ("value", "urls"),
    [
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("https://cdn.test/w_100,h_50/a.png 100w", ["https://cdn.test/w_100,h_50/a.png"]),
        ("a.png,b.png", ["a.png,b.png"]),  # no space: one URL with a comma
        ("a.png, b.png", ["a.png", "b.png"]),
        ("a.png (x, y) 1x, b.png", ["a.png", "b.png"]),
        ("  ,, a.png", ["a.png"]),
        ("", []),
    ],
)
def test_srcset_splits_as_the_html_standard(value, urls):
    assert list(srcset_urls(value)) == urls


def test_attribute_values_that_are_not_whole_urls_name_nothing():
    html = '<div title="see https://x.test/ for more" data-x="x.test" class="//"></div>'
    assert document_urls(page(html)).urls == []


def test_comments_name_nothing_and_a_scripts_string_names_its_host():
    html = "<!-- https://x.test/ --><script>var u = 'https://y.test/';</script>"
    assert document_urls(page(html)).urls == [("//y.test", "inline script")]


def test_json_ld_that_does_not_parse_is_read_by_pattern():
    html = '<script type="application/ld+json">{"url": "https:\\/\\/x.test\\/", </script>'
    assert ("https://x.test/", "json-ld") in document_urls(page(html)).urls


HEADER_PLACES = [
    ("Link", "<https://x.test/s.css>; rel=preload; as=style", "header Link"),
    ("link", "</rel>; rel=a, <//x.test/f>; rel=preconnect", "header Link"),
    ("Content-Security-Policy", "script-src 'self' *.x.test; img-src data:", None),
    ("Content-Security-Policy", "default-src https://x.test:*/path", None),
    ("Content-Security-Policy-Report-Only", "connect-src x.test:443", None),
    ("Refresh", "5; url=https://x.test/", "header Refresh"),
]


@pytest.mark.parametrize(("name", "value", "place"), HEADER_PLACES)
def test_each_header_names_its_host(name, value, place):
    found = list(header_urls([(name, value)]))
    links = filter_found(found, PAGE, DenyList())
    assert "x.test" in links.hostnames
    assert group_of(links.via["x.test"]) == HEADERS
    assert links.via["x.test"] == (place or "header Content-Security-Policy")


def test_csp_keywords_schemes_and_star_name_no_host():
    policy = "default-src 'self' 'nonce-abc' * https: data: blob:; report-to main"
    assert list(header_urls([("Content-Security-Policy", policy)])) == []


def test_certificate_names_and_cnames_go_through_the_same_door():
    found = [
        *name_urls(["*.cert.test", "www.cert.test", "bad name!", "*.test"], "certificate"),
        *name_urls(["*.co.uk"], "certificate"),
        *name_urls(["edge.cdn.test"], CNAME),
    ]
    links = filter_found(found, PAGE, DenyList())
    assert links.hostnames == {"cert.test", "www.cert.test", "edge.cdn.test"}
    assert group_of(links.via["cert.test"]) == CERTIFICATE
    assert group_of(links.via["edge.cdn.test"]) == DNS


def test_robots_sitemaps():
    text = "User-agent: *\nDisallow: /\nSITEMAP: https://x.test/s.xml # main\nsitemap:\n"
    found = list(robots_sitemaps(text))
    assert found == [("https://x.test/s.xml", "robots.txt Sitemap")]
    assert group_of(found[0][1]) == ROBOTS


def test_a_denied_host_is_dropped_whatever_its_source():
    denylist = DenyList()
    denylist.add("x.test", NO_FOLLOW)
    found = [
        ("https://x.test/", "script src"),
        ("//cdn.x.test/", "header Link"),
        ("//www.x.test/", "certificate"),
        ("//edge.x.test/", CNAME),
        ("https://ok.test/", "meta content"),
    ]
    links = filter_found(found, PAGE, denylist)
    assert links.hostnames == {"ok.test"}
    assert links.dropped[NO_FOLLOW] == 4


def test_groups_turned_off_are_not_read():
    found = [("https://a.test/", "a href"), ("https://s.test/", "script src")]
    links = filter_found(found, PAGE, DenyList(), groups=frozenset({LINKS}))
    assert links.hostnames == {"a.test"}
    assert links.found == 1


@pytest.mark.parametrize(
    ("value", "groups"),
    [
        ("all", set(GROUPS)),
        (" ALL ", set(GROUPS)),
        ("links, resources", {LINKS, RESOURCES}),
        ("", set()),
    ],
)
def test_discovery_sources_setting(value, groups):
    assert parse_groups(value) == groups


def test_discovery_sources_refuses_an_unknown_group_by_name():
    with pytest.raises(SourcesError, match="'cookies'"):
        parse_groups("links,cookies")


def test_a_redirect_hops_findings_merge_into_the_pages():
    page = filter_found([("https://a.test/", "a href")], PAGE, DenyList())
    hop = filter_found(
        [("https://a.test/", "header Link"), ("//b.test/", "script src"), ("mailto:x", "a href")],
        "hop.test",
        DenyList(),
    )
    page = page.merged(hop)
    assert page.hostnames == {"a.test", "b.test"}
    assert page.via == {"a.test": "a href", "b.test": "script src"}
    assert page.found == 4 and page.dropped["no_hostname"] == 1
    assert page.by_group == {LINKS: 1, HEADERS: 1, RESOURCES: 1}


@pytest.mark.parametrize("text", ["", "   ", "\x00\x00"])
def test_a_page_with_nothing_to_parse_has_no_document(text):
    assert parse_document(text) is None
    assert document_urls(None).urls == []
    assert document_title(None) is None


def test_the_title_comes_from_the_same_parse():
    root = parse_document("<html><head><title> A \n title </title></head><body></body></html>")
    assert document_title(root) == "A title"


def test_json_ld_reads_urls_not_double_slashes_inside_paths():
    ld = '{"a": "path//segment", "b": "ftp://f.test/", "c": "//cdn.test/x", "d": "see https://x.test"}'
    html = f'<script type="application/ld+json">{ld}</script>'
    urls = [url for url, _ in document_urls(page(html)).urls]
    assert urls == ["//cdn.test/x", "https://x.test"]
