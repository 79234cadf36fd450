"""normalize(), root(), parents() and the DenyList: the normalization and
matching rules of docs/design.md."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.core.hostnames import (
    HostnameError,
    is_public_suffix,
    normalize,
    normalize_entry,
    parents,
    root,
    seed_refusal,
    shown,
)
from crawler.core.urls import link_hostname

# The matching table of docs/design.md, verbatim: entry → (stored entry, URLs it denies).
URLS = [
    "example.org/a",
    "www.example.org/a",
    "bob.www.example.org/a",
    "EXAMPLE.ORG/a",
    "example.org:8080/a",
    "notexample.org/a",
    "example.org.evil.com/a",
    "example.orgx/a",
    "api.example.org/a",
    "[::1]/a",
    "127.0.0.1:9000/a",
]
EXAMPLE_ORG_ROW = "D D D D D . . . D . ."
MATCHING_TABLE = [
    ("example.org", "example.org", EXAMPLE_ORG_ROW),
    ("www.example.org", "www.example.org", ". D D . . . . . . . ."),
    ("example.org:8080", "example.org", EXAMPLE_ORG_ROW),
    ("http://example.org", "example.org", EXAMPLE_ORG_ROW),
    ("127.0.0.1", "127.0.0.1", ". . . . . . . . . . D"),
    ("::1", "::1", ". . . . . . . . . D ."),
    (None, None, ". . . . . . . . . . ."),
]
CASES = [
    pytest.param(entry, stored, url, mark == "D", id=f"{entry}|{url}")
    for entry, stored, row in MATCHING_TABLE
    for url, mark in zip(URLS, row.split(), strict=True)
]


@pytest.mark.parametrize(("entry", "stored", "url", "denied"), CASES)
def test_matching_table(entry, stored, url, denied):
    denylist = DenyList()
    if entry is not None:
        assert normalize_entry(entry) == stored
        denylist.add(normalize_entry(entry), NO_FOLLOW)
    hostname = link_hostname("http://" + url, "page.test")
    assert denylist.is_denied(hostname) is denied


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("bücher.de", "xn--bcher-kva.de"),
        ("BÜCHER.de", "xn--bcher-kva.de"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("example.org.", "example.org"),
        ("Example.ORG", "example.org"),
        ("http://user:secret@Example.org:8443/path?q#f", "example.org"),
        ("user@example.org", "example.org"),
        ("*.example.org", "example.org"),
        ("https://*.Example.org/", "example.org"),
        ("192.168.1.20", "192.168.1.20"),
        ("http://192.168.1.20:80/", "192.168.1.20"),
        ("[2001:DB8:0:0:0:0:0:1]", "2001:db8::1"),
        ("http://[2001:db8::1]:8080/x", "2001:db8::1"),
        ("  example.org  ", "example.org"),
        ("_dmarc.example.org", "_dmarc.example.org"),
        ("a" * 63 + ".org", "a" * 63 + ".org"),
    ],
)
def test_normalize(value, expected):
    assert normalize(value) == expected


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("http://", "empty"),
        ("a" * 64 + ".org", "label longer than 63"),
        (".".join(["a" * 60] * 5), "name longer than 253"),
        ("exa mple.org", "bad label"),
        ("-example.org", "bad label"),
        ("example-.org", "bad label"),
        ("example..org", "empty label"),
        ("xn--zz.de", "bad IDNA"),
        ("\u2603.example.org", "bad IDNA"),
        ("example.org:99999", "bad port"),
        ("example.org:http", "bad port"),
        ("example.org:²", "bad port"),
        ("[::1", "bad IPv6"),
        ("1.2.3.999", "bad IPv4"),
        ("[fe80::1%eth0]", "bad IPv6"),
        ("*.[", "bad IPv6"),  # found by fuzzing: once normalized to ""
    ],
)
def test_normalize_refuses_with_reason(value, reason):
    with pytest.raises(HostnameError) as info:
        normalize(value)
    assert info.value.value == value
    assert reason in info.value.reason
    assert shown(value) in str(info.value)  # cut to about 80 characters when longer
    assert len(str(info.value)) < 80 + len(info.value.reason) + 4


def test_a_refused_value_is_quoted_whole_up_to_80_characters_then_cut():
    assert shown("a" * 70 + ".test") == repr("a" * 70 + ".test")
    long = shown("x" * 10_000_000)
    assert len(long) < 90 and long.endswith("… (10,000,000 characters)")


def test_punycode_of_a_name_browsers_reach_is_a_hostname():
    # A link to http://☃.net/ gives xn--n3h.net (UTS #46, as browsers): normalize()
    # must take it back unchanged. Typed in Unicode, IDNA2008 still refuses it.
    assert normalize("xn--n3h.net") == "xn--n3h.net"
    assert normalize("XN--LS8H.la.") == "xn--ls8h.la"
    with pytest.raises(HostnameError, match="bad IDNA"):
        normalize("\u2603.net")


@pytest.mark.parametrize("suffix", ["com", "co.uk", "COM.", "test"])
def test_bare_public_suffix_entry_needs_force(suffix):
    with pytest.raises(HostnameError, match="public suffix"):
        normalize_entry(suffix)
    assert normalize_entry(suffix, force=True) == normalize(suffix)


# hostname, allow_private, force → the words of the refusal (None: a crawlable seed)
SEEDS = [
    ("example.org", False, False, None),
    ("www.example.co.uk", False, False, None),
    ("x.trap.test", False, False, None),
    ("8.8.8.8", False, False, None),
    ("2606:4700:4700::1111", False, False, None),
    ("com", False, False, "a bare public suffix"),
    ("co.uk", False, False, "a bare public suffix"),
    ("github.io", False, False, "a bare public suffix"),
    ("com", False, True, None),
    ("com", True, False, "a bare public suffix"),
    ("localhost", False, False, "localhost"),
    ("localhost", False, True, "localhost"),
    ("app.localhost", False, False, "localhost"),
    ("localhost", True, False, None),
    ("notlocalhost.org", False, False, None),
    ("127.0.0.9", False, False, "a loopback address"),
    ("127.8.9.10", False, False, "a loopback address"),
    ("::1", False, False, "a loopback address"),
    ("::ffff:127.0.0.9", False, False, "a loopback address"),
    ("10.1.2.3", False, False, "a private address"),
    ("172.16.0.1", False, False, "a private address"),
    ("192.168.0.1", False, False, "a private address"),
    ("fc00::1", False, False, "a private address"),
    ("169.254.169.254", False, False, "a link-local address"),
    ("fe80::1", False, False, "a link-local address"),
    ("0.0.0.0", False, False, "an unspecified address"),
    ("::", False, False, "an unspecified address"),
    ("224.0.0.1", False, False, "a multicast address"),
    ("ff02::1", False, False, "a multicast address"),
    ("240.0.0.1", False, False, "a reserved address"),
    ("255.255.255.255", False, False, "a reserved address"),
    ("100.64.0.1", False, False, "a shared (carrier-grade NAT) address"),
    ("127.0.0.1", True, False, None),
    ("192.168.0.1", True, False, None),
    ("fe80::1", True, False, None),
]


@pytest.mark.parametrize(("hostname", "allow_private", "force", "refusal"), SEEDS)
def test_seed_refusal(hostname, allow_private, force, refusal):
    reason = seed_refusal(hostname, allow_private=allow_private, force=force)
    if refusal is None:
        assert reason is None
    else:
        assert reason is not None and refusal in reason


@pytest.mark.parametrize(
    ("hostname", "expected"),
    [
        ("a.b.example.co.uk", "example.co.uk"),
        ("example.co.uk", "example.co.uk"),
        ("www.example.org", "example.org"),
        ("x.trap.test", "trap.test"),
        ("deep.x.trap.test", "trap.test"),
        ("trap.test", "trap.test"),
        ("localhost", "localhost"),
        ("co.uk", "co.uk"),
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
    ],
)
def test_root(hostname, expected):
    assert root(hostname) == expected


def test_public_suffix_knows_registrable_names():
    assert is_public_suffix("co.uk") and is_public_suffix("com")
    assert not is_public_suffix("example.co.uk") and not is_public_suffix("trap.test")
    assert not is_public_suffix("127.0.0.1")


def test_parents():
    assert parents("a.b.example.org") == ["a.b.example.org", "b.example.org", "example.org", "org"]
    assert parents("127.0.0.1") == ["127.0.0.1"]
    assert parents("::1") == ["::1"]


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("/about", "page.test"),
        ("about#x", "page.test"),
        ("?q=1", "page.test"),
        ("//CDN.Example.org/x.js", "cdn.example.org"),
        ("HTTPS://Www.Example.org:443/", "www.example.org"),
        ("http:relative", "page.test"),
        ("mailto:bob@example.org", None),
        ("javascript:alert(1)", None),
        ("data:text/html,hi", None),
        ("tel:+123", None),
        ("ftp://example.org/", None),
        ("http://exa mple.org/", None),
        ("http://" + "a" * 300 + ".com/", None),
        ("http://evil.test\\@good.test/", "evil.test"),
        (" http://\tspaced.test/ ", "spaced.test"),
    ],
)
def test_link_hostname(href, expected):
    assert link_hostname(href, "page.test") == expected


def test_denial_names_nearest_entry_and_rule():
    denylist = DenyList([("example.org", NO_FOLLOW), ("trap.example.org", BLOCKED)])
    assert denylist.denial("x.trap.example.org") == ("trap.example.org", BLOCKED)
    assert denylist.denial("www.example.org") == ("example.org", NO_FOLLOW)
    assert denylist.denial("example.com") is None


def test_denylist_follows_rule_changes_removals_and_reloads():
    denylist = DenyList([("example.org", NO_FOLLOW), ("trap.test", BLOCKED)])
    denylist.add("example.org", BLOCKED)  # a block converted the entry
    assert denylist.denial("www.example.org") == ("example.org", BLOCKED)
    denylist.add("trap.test", NO_FOLLOW)
    assert denylist.entries() == {"example.org": BLOCKED, "trap.test": NO_FOLLOW}
    denylist.remove("trap.test")
    assert denylist.denial("a.trap.test") is None and len(denylist) == 1
    denylist.replace([("trap.test", NO_FOLLOW)])
    assert denylist.entries() == {"trap.test": NO_FOLLOW}
    assert denylist.denial("www.example.org") is None
    with pytest.raises(ValueError, match="unknown rule 'nofollow'"):
        denylist.add("x.test", "nofollow")


# -- properties ------------------------------------------------------------------

LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
HOSTNAMES = st.lists(LABEL, min_size=2, max_size=5).map(".".join)


@settings(max_examples=500)
@given(st.text(max_size=80))
def test_normalize_raises_only_its_own_error_and_is_idempotent(value):
    try:
        hostname = normalize(value)
    except HostnameError:
        return
    assert normalize(hostname) == hostname


@settings(max_examples=300)
@given(HOSTNAMES, st.lists(LABEL, min_size=1, max_size=4))
def test_every_subdomain_of_a_denied_name_is_denied(entry, labels):
    denylist = DenyList([(entry, BLOCKED)])
    assert denylist.is_denied(".".join([*labels, entry]))


@settings(max_examples=300)
@given(HOSTNAMES, LABEL)
def test_near_misses_are_never_denied(entry, extra):
    denylist = DenyList([(entry, NO_FOLLOW)])
    for miss in (extra + entry, entry + "." + extra, entry + extra, "not" + entry):
        if miss != entry and not miss.endswith("." + entry):
            assert not denylist.is_denied(miss), miss
