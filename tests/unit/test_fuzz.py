"""Fuzzing the one door and the link filter: ≥ 10,000 generated inputs each, per run."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.core.hostnames import MAX_NAME, HostnameError, normalize
from crawler.core.links import filter_links

FUZZ = settings(max_examples=3_000, deadline=None, suppress_health_check=list(HealthCheck))

LABEL_CHARS = st.sampled_from(list("abcxyz019-_.:@[]/%*") + ["ü", "ß", "\u200b", "é", "\x00"])
HOSTISH = st.text(LABEL_CHARS, max_size=80)
SCHEMES = st.sampled_from(
    [
        "http://",
        "https://",
        "//",
        "HTTP://",
        "mailto:",
        "javascript:",
        "data:",
        "ftp://",
        "",
        "http:",
    ]
)
URLS = st.builds(
    lambda scheme, userinfo, host, port, path: f"{scheme}{userinfo}{host}{port}{path}",
    SCHEMES,
    st.sampled_from(["", "user@", "u:p@", "@"]),
    st.one_of(HOSTISH, st.text(max_size=40)),
    st.sampled_from(["", ":80", ":8080", ":", ":99999", ":x"]),
    st.sampled_from(["", "/", "/a?b#c", "\\@evil.test/", "?q", "#f"]),
)
DENYLIST = DenyList([("example.test", NO_FOLLOW), ("trap.test", BLOCKED), ("::1", BLOCKED)])


def assert_normalized(hostname: str) -> None:
    assert hostname == normalize(hostname)
    assert 0 < len(hostname) <= MAX_NAME
    assert hostname == hostname.lower() and hostname.isascii()


@FUZZ
@given(st.one_of(st.text(max_size=120), HOSTISH, URLS))
def test_normalize_answers_or_refuses_with_its_own_error(value):
    try:
        hostname = normalize(value)
    except HostnameError as exc:
        assert exc.value == value and exc.reason
        return
    assert_normalized(hostname)


@FUZZ
@given(st.lists(st.one_of(URLS, st.text(max_size=60)), max_size=8))
def test_link_filter_keeps_only_allowed_normalized_hostnames(hrefs):
    links = filter_links(hrefs, "page.test", DENYLIST)
    assert links.found == len(hrefs)
    assert len(links.hostnames) + links.filtered <= links.found
    for hostname in links.hostnames:
        assert_normalized(hostname)
        assert not DENYLIST.is_denied(hostname)
