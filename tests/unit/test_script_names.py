"""The scripts source: URLs that open a string literal in an inline script or JSON block."""

from __future__ import annotations

import pytest

from crawler.core.denylist import NO_FOLLOW, DenyList
from crawler.core.links import filter_found
from crawler.core.pagelinks import document_urls, parse_document, script_urls
from crawler.core.sources import (
    INLINE_JSON,
    INLINE_SCRIPT,
    JSON_LD,
    METADATA,
    SCRIPTS,
    describe_place,
    group_of,
)

# (script text, the hostnames it names: None for none).
SCRIPT_TEXTS = [
    ('var u = "https://cdn.x.test/a.js";', {"cdn.x.test"}),
    ("load('http://x.test/');", {"x.test"}),
    ("const u = `https://x.test/path?q=1`;", {"x.test"}),
    ("fetch('//api.x.test/v1')", {"api.x.test"}),
    ('{"img": "https:\\/\\/img.x.test\\/a.png"}', {"img.x.test"}),
    ('{"cdn": "\\/\\/cdn.x.test\\/"}', {"cdn.x.test"}),
    ("s = 'HTTPS://UPPER.X.TEST:8443/';", {"upper.x.test"}),
    ("h = '<a href=\"https://inner.x.test/\">x</a>';", {"inner.x.test"}),
    ("a = 'https://one.x.test', b = \"//two.x.test\";", {"one.x.test", "two.x.test"}),
    # Identifiers and properties that look like names are no URL.
    ("window.cdn.x.test = location.host; x.test.run();", None),
    # A bare name in a string is no URL either, nor is a relative URL.
    ("var host = 'x.test'; var p = '/api/x.test/'; var r = 'img/a.png';", None),
    ("var p = './x.test/a'; var q = '../x.test/';", None),
    # Comments are no string: `// see ...` and a URL after prose.
    ("// https://comment.x.test/ and //comment.x.test\nvar a = 1;", None),
    ("var t = 'see https://prose.x.test/ for more';", None),
    # A URL built at run time names nothing yet.
    ("var u = 'https://' + host + '/'; var v = `https://${host}/`;", None),
    ("var u = `https://cdn.${domain}/a.js`; var w = 'https://{{host}}/';", None),
    ("var e = 'https:///x'; var f = '//';", None),
]


@pytest.mark.parametrize(("text", "names"), SCRIPT_TEXTS)
def test_script_text_names_the_hosts_its_strings_open_with(text, names):
    found = [(url, INLINE_SCRIPT) for url in script_urls(text)]
    links = filter_found(found, "page.test", DenyList())
    assert links.hostnames == (names or set())
    assert links.found == len(names or ())


def page(body: str):
    return parse_document(f"<!DOCTYPE html><html><head></head><body>{body}</body></html>")


# (HTML, the (url, place) pairs the document gives).
SCRIPT_BLOCKS = [
    ("<script>var u = 'https://x.test/a';</script>", [("//x.test", INLINE_SCRIPT)]),
    (
        '<script type="module">import a from "https://x.test/m.js";</script>',
        [("//x.test", INLINE_SCRIPT)],
    ),
    (
        '<script type="application/json">{"api": "https:\\/\\/api.x.test\\/"}</script>',
        [("//api.x.test", INLINE_JSON)],
    ),
    (
        '<script id="__NEXT_DATA__" type="application/json">{"u": "//cdn.x.test/"}</script>',
        [("//cdn.x.test", INLINE_JSON)],
    ),
    (
        '<script>window.__STATE__ = {"cdn": "https:\\/\\/s.x.test\\/"};</script>',
        [("//s.x.test", INLINE_SCRIPT)],
    ),
    # JSON-LD stays metadata, read as JSON (a URL anywhere in its strings).
    (
        '<script type="application/ld+json">{"logo": "see https:\\/\\/x.test\\/l.png"}</script>',
        [("https://x.test/l.png", JSON_LD)],
    ),
    # A script's src is a resource; its (empty) text names nothing more.
    ('<script src="https://x.test/s.js"></script>', [("https://x.test/s.js", "script src")]),
]


@pytest.mark.parametrize(("html", "urls"), SCRIPT_BLOCKS)
def test_a_documents_scripts_give_their_urls_with_their_place(html, urls):
    assert document_urls(page(html)).urls == urls


def test_scripts_places_are_the_scripts_group_and_json_ld_stays_metadata():
    assert group_of(INLINE_SCRIPT) == group_of(INLINE_JSON) == SCRIPTS
    assert group_of(JSON_LD) == METADATA
    assert describe_place(INLINE_SCRIPT) == "an inline <script>"
    assert describe_place(INLINE_JSON) == "an inline JSON <script> block"


def test_scripts_names_go_through_the_deny_list_and_the_group_switch():
    html = (
        "<script>var a = 'https://kept.x.test/', b = '//cdn.social.test/';</script>"
        '<script type="application/json">{"u": "https://data.x.test/"}</script>'
    )
    found = document_urls(page(html))
    denylist = DenyList()
    denylist.add("social.test", NO_FOLLOW)
    links = filter_found(found.urls, "page.test", denylist)
    assert links.hostnames == {"kept.x.test", "data.x.test"}
    assert links.via == {"kept.x.test": INLINE_SCRIPT, "data.x.test": INLINE_JSON}
    assert links.by_group == {SCRIPTS: 2}
    assert links.dropped == {NO_FOLLOW: 1}
    off = filter_found(found.urls, "page.test", denylist, groups=frozenset({METADATA}))
    assert off.hostnames == set() and off.found == 0
