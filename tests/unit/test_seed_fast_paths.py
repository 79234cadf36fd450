"""The shortcuts a million-name seed takes give exactly what the long way gives.

read_line() takes a line of name characters only as one name, without looking for the
marks of the other formats (blocklists._read_marked, every format); normalize() returns
an already-normal name after its checks alone, without parsing it as a URL
(hostnames._parsed, every step); root(), is_public_suffix() and the can-exist rules ask
the suffix list once per name (public_suffix) instead of each asking tldextract. Each is
compared with the long way on generated input, hypothesis leaning towards the cases
where a shortcut could differ: digits, hyphens, underscores, `xn--`, upper case, long
labels, suffixes with wildcards and exceptions, the marks of every list format.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from crawler.core import blocklists, hostnames, suffixes
from crawler.core.hostnames import (
    HostnameError,
    entry_name_refusal,
    is_public_suffix,
    normalize,
    public_suffix,
    root,
    seed_refusal,
)

# Labels of the characters a name may have, and a few it may not, short and long.
LABEL = st.from_regex(r"[a-z0-9_-]{0,70}|xn--[a-z0-9-]{0,12}|[0-9]{1,3}", fullmatch=True)
NAMES = st.lists(LABEL, min_size=1, max_size=5).map(".".join)
# Suffixes of the bundled list, some with wildcard rules (*.ck, *.kawasaki.jp) and
# exceptions (!www.ck, !city.kawasaki.jp), and private ones (github.io, blogspot.com).
SUFFIXES = st.sampled_from(
    [
        "com", "co.uk", "uk", "ck", "www.ck", "kawasaki.jp", "city.kawasaki.jp", "jp",
        "github.io", "blogspot.com", "s3.amazonaws.com", "compute.amazonaws.com",
        "xn--p1ai", "xn--fiqs8s", "test", "invalid", "nosuchtld", "home.arpa", "arpa",
    ]
)  # fmt: skip
ON_SUFFIXES = st.tuples(st.lists(LABEL, max_size=3), SUFFIXES).map(
    lambda parts: ".".join([*parts[0], parts[1]])
)


def outcome(function, value):
    """What `function(value)` gives: its result, or the reason it refuses."""
    try:
        return ("name", function(value))
    except HostnameError as exc:
        return ("refused", exc.reason)


@settings(max_examples=2000)
@given(st.one_of(NAMES, ON_SUFFIXES, NAMES.map(str.upper), st.text(max_size=40)))
@example("a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 61)  # 253: the longest
@example("a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 62)  # 254
@example("1.2.3.4")
@example("1.2.3.256")
@example("123")
@example("xn--n3h.net")
@example("xn--a.com")
@example("_dmarc.example.com")
def test_the_fast_path_of_normalize_gives_what_parsing_gives(value):
    assert outcome(normalize, value) == outcome(hostnames._parsed, value)


def extract_root(hostname: str) -> str:
    """root() as it was written before public_suffix(): tldextract's own fields."""
    if hostnames.is_ip(hostname) or "." not in hostname:
        return hostname
    parts = suffixes._extract(hostname)
    if parts.suffix:
        return f"{parts.domain}.{parts.suffix}" if parts.domain else hostname
    return ".".join(hostname.rsplit(".", 2)[-2:])


def normalized(value: str) -> str | None:
    try:
        return normalize(value)
    except HostnameError:
        return None


@settings(max_examples=2000)
@given(st.one_of(ON_SUFFIXES, NAMES))
def test_one_suffix_lookup_gives_what_tldextract_gives(value):
    hostname = normalized(value)
    if hostname is None or hostnames.is_ip(hostname):
        return
    parts = suffixes._extract(hostname)
    assert public_suffix(hostname) == parts.suffix
    assert root(hostname) == extract_root(hostname)
    bare = not parts.domain if parts.suffix else "." not in hostname
    assert is_public_suffix(hostname) is bare


@pytest.mark.parametrize(
    ("hostname", "suffix", "registered"),
    [
        ("a.b.example.co.uk", "co.uk", "example.co.uk"),
        ("foo.bar.ck", "bar.ck", "foo.bar.ck"),  # *.ck
        ("www.ck", "ck", "www.ck"),  # !www.ck
        ("x.city.kawasaki.jp", "kawasaki.jp", "city.kawasaki.jp"),  # !city.kawasaki.jp
        ("me.github.io", "github.io", "me.github.io"),  # the private section
        ("co.uk", "co.uk", "co.uk"),
        ("a.b.nosuchtld", "", "b.nosuchtld"),  # the default rule '*'
    ],
)
def test_public_suffix_and_root_of_wildcards_exceptions_and_unknown_tlds(
    hostname, suffix, registered
):
    assert (public_suffix(hostname), root(hostname)) == (suffix, registered)


def test_a_seed_given_the_local_suffixes_refuses_as_one_reading_them(monkeypatch):
    """bulk.seed reads LOCAL_SUFFIXES once for a whole list, not once a name."""
    monkeypatch.setattr(hostnames, "_environ", {"LOCAL_SUFFIXES": "corp.example"})
    local = hostnames.local_suffixes()
    for name in ("intranet.corp.example", "a.nosuchtld", "www.example.com", "foo.test"):
        assert seed_refusal(name, local=local) == seed_refusal(name)
        assert entry_name_refusal(name, local) == entry_name_refusal(name)
    assert seed_refusal("intranet.corp.example", local=local) is None
    assert seed_refusal("intranet.corp.example", local=frozenset()) is not None


# Lines near a bare name: the characters of every format's marks around name-like text.
MARKED = st.text(alphabet="aZ9_-.,#!|^$@/[] \t\ufeff*", max_size=30)


@settings(max_examples=2000)
@given(st.one_of(NAMES, ON_SUFFIXES, MARKED, st.text(max_size=30)))
@example("0.0.0.0")
@example(".")
@example("\ufeffexample.com")
@example("  a.example  ")
def test_the_fast_path_of_read_line_gives_what_reading_every_format_gives(raw):
    line = raw.strip().lstrip("\ufeff")
    assert blocklists.read_line(7, raw) == blocklists._read_marked(7, line)
