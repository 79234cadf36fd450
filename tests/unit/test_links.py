"""Links as browsers read them: link_hostname() and filter_links()."""

from __future__ import annotations

import can_ada
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.core.hostnames import normalize
from crawler.core.links import NO_HOSTNAME, filter_links
from crawler.core.urls import _link_host, link_hostname

PAGE = "page.test"

# Where the hand-made parser disagreed with browsers: each lost a host or credited
# a link to the wrong one. (href, page scheme, expected hostname)
BROWSER_READINGS = [
    ("\\\\x\\hello", "http", "x"),
    ("http:\\\\foo.com\\", "http", "foo.com"),
    ("https:\\\\foo.com\\", "http", "foo.com"),
    ("/\\evil.test/", "https", "evil.test"),
    ("///example.org/path", "http", "example.org"),
    ("https:example.com/", "http", "example.com"),  # another scheme: absolute
    ("https:example.com/", "https", PAGE),  # the page's own scheme: a path
    ("http:relative", "http", PAGE),
    ("http://0xffffffff/", "http", "255.255.255.255"),
    ("http://0x7f.1/", "http", "127.0.0.1"),
    ("http://3232235521/", "http", "192.168.0.1"),
    ("http://foo.0x4/", "http", None),  # ends in a number that is no IPv4: failure
    ("http://1.2.3.4.5/", "http", None),
    ("\x01\x1f http://c0.test/", "http", "c0.test"),
    ("\x00//c0.test/", "http", "c0.test"),
    ("\u00a0//nbsp.test/", "http", PAGE),  # not a C0 control: a relative path
    ("/\t/tab.test/", "http", "tab.test"),  # tabs and newlines are removed first
    ("ht\ntp://newline.test/", "http", "newline.test"),
    ("http://::1/", "http", None),  # IPv6 needs brackets
    ("http://2001:db8::1/", "http", None),
    ("http://[2001:DB8:0:0::1]:8080/", "http", "2001:db8::1"),
    ("http://[::ffff:1.2.3.4]/", "http", "::ffff:102:304"),
    ("http://ΟΔΟΣ-1.com/", "http", "xn---1-k9b7bby.com"),  # final sigma, UTS #46
    ("http://faß.de/", "http", "xn--fa-hia.de"),  # non-transitional: ß kept
    ("http://☃.net/", "http", "xn--n3h.net"),
    ("https://💩.la/", "http", "xn--ls8h.la"),
    ("http://xn--n3h.net/", "http", "xn--n3h.net"),
    ("http://BÜCHER.de./", "http", "xn--bcher-kva.de"),
    ("http://%41.test/", "http", "a.test"),
    ("http://user:pw@host.test:8080/", "http", "host.test"),
    ("http://evil.test\\@good.test/", "http", "evil.test"),
    ("http://*.wild.test/", "http", None),  # '*' is no label character of ours
    ("http://a..b.test/", "http", None),
    ("http://" + "a" * 64 + ".test/", "http", None),
    ("mailto:bob@example.org", "http", None),
    ("javascript:alert(1)", "http", None),
    ("data:text/html,hi", "http", None),
    ("ftp://example.org/", "http", None),
    ("ws://example.org/", "http", None),
    ("", "http", PAGE),
    ("#top", "http", PAGE),
    ("http://x.test/\ud800", "http", "x.test"),  # a lone surrogate reads as U+FFFD
    ("http://\ud800.test/", "http", None),
]


@pytest.mark.parametrize(("href", "page_scheme", "expected"), BROWSER_READINGS)
def test_link_hostname_reads_links_as_browsers_do(href, page_scheme, expected):
    assert link_hostname(href, PAGE, page_scheme) == expected


def test_relative_links_on_an_ipv6_page_keep_its_host():
    assert link_hostname("/about", "2001:db8::1") == "2001:db8::1"
    assert link_hostname("//other.test/", "2001:db8::1") == "other.test"


def _parsed(href: str) -> str | None:
    """The reference: every href through the parser, no fast path."""
    try:
        url = can_ada.parse("http://page.test/") + href
    except ValueError:
        return None
    return _link_host(url.hostname) if url.protocol in ("http:", "https:") else None


HREF_CHARS = st.sampled_from(list("/\\:.?#@aAhHtTpPsS1 \t\n\r\x00\x1f\u00a0ü") + ["http", "x.test"])


@settings(max_examples=3000, deadline=None)
@given(st.lists(HREF_CHARS, max_size=12).map("".join))
def test_the_fast_path_agrees_with_the_parser(href):
    assert link_hostname(href, PAGE) == _parsed(href)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=40))
def test_every_link_hostname_is_a_fixed_point_of_normalize(href):
    hostname = link_hostname("http://" + href, PAGE)
    if hostname is not None:
        assert normalize(hostname) == hostname


def test_filter_links_keeps_allowed_names_and_counts_the_rest():
    denylist = DenyList([("ads.test", NO_FOLLOW), ("trap.test", BLOCKED)])
    hrefs = [
        "/a",
        "//cdn.test/x.js",
        "http:\\\\Other.TEST\\",
        "https://x.ads.test/",
        "http://a.trap.test/",
        "http://b.trap.test/",
        "mailto:me@page.test",
        "http://foo.0x4/",
    ]
    links = filter_links(hrefs, PAGE, denylist)
    assert links.hostnames == {PAGE, "cdn.test", "other.test"}
    assert links.found == 8 and links.filtered == 5
    assert links.dropped == {NO_FOLLOW: 1, BLOCKED: 2, NO_HOSTNAME: 2}


def test_filter_links_reads_a_link_against_the_page_scheme():
    links = filter_links(["https:other.test/"], PAGE, DenyList(), page_scheme="https")
    assert links.hostnames == {PAGE}
    assert filter_links(["https:other.test/"], PAGE, DenyList()).hostnames == {"other.test"}


def test_the_plain_absolute_fast_path_reads_links_as_the_parser_does():
    """Absolute links skip the WHATWG parse only where it would give the same host."""
    import random

    from crawler.core import urls

    rng = random.Random(20261201)
    alphabet = "abcXYZ019-_.:/?#@%\\ \t[]"
    checked = 0
    for _ in range(50_000):
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14)))
        href = rng.choice(["http://", "https://", "HTTP://", "hTtPs://"]) + body
        plain = urls._PLAIN_ABSOLUTE.match(href)
        if plain is None or not urls._plain_port(plain.group("port")):
            continue
        url = urls._parse(href, urls._base_url("http", PAGE))
        parsed = None if url is None else _link_host(url.hostname)
        assert link_hostname(href, PAGE) == parsed, href
        checked += 1
    assert checked > 1_000
