"""link_hostname() against the WHATWG URL tests of web-platform-tests (urltestdata.json).

A case applies when its base is an http(s) page, or when it has no base (null or
about:blank) and its input is an absolute http(s) URL. Each one must give the WPT
`hostname` in our normalized form (no trailing dot, IPv6 as `ipaddress` writes it
without brackets), or None where WPT says failure or the result is not http(s).
A case is left out only for a reason of our hostname rules: LEFT_OUT, below.
Inputs with no base and another scheme (mailto:, ftp:, ws:...) are checked to give
None on an http page. Provenance: tests/data/wpt/PROVENANCE.md.
"""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawler.core.hostnames import normalize
from crawler.core.urls import link_hostname

DATA = Path(__file__).parent.parent / "data" / "wpt" / "urltestdata.json"
CASES = [case for case in json.loads(DATA.read_text("utf-8")) if isinstance(case, dict)]

# WHATWG: leading/trailing C0 controls and spaces are stripped, tabs and newlines removed.
_C0_OR_SPACE = "".join(map(chr, range(0x21)))
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
_NO_PAGE = "page.invalid"

# Applicable cases our hostname rules refuse on purpose (link_hostname gives None).
LEFT_OUT = {
    "an xn-- label that is no valid IDNA: browsers keep an all-ASCII name as it is;"
    " our rules refuse it, as normalize() does for operators (no registry delegates it)": {
        "http://a.b.c.xn--pokxncvks",
        "http://10.0.0.xn--pokxncvks",
        "http://a.b.c.XN--pokxncvks",
        "http://a.b.c.Xn--pokxncvks",
        "http://10.0.0.XN--pokxncvks",
        "http://10.0.0.xN--pokxncvks",
        "https://xn--/",
    },
    "an empty label (a name of dots only, or '..' inside): no DNS name": {
        "http://./",
        "http://../",
        "http://foo.09..",
    },
    "characters outside letters, digits, '-' and '_' in a label: no DNS hostname": {
        "http://!\"$&'()*+,-.;=_`{}~/",
    },
}
LEFT_OUT_INPUTS = {text for inputs in LEFT_OUT.values() for text in inputs}


def _scheme(text: str) -> str | None:
    """The scheme WHATWG reads at the start of an input, lower case, or None."""
    text = text.strip(_C0_OR_SPACE).replace("\t", "").replace("\n", "").replace("\r", "")
    match = _SCHEME.match(text)
    return match.group(1).lower() if match else None


def _page(case: dict) -> tuple[str, str] | None:
    """(page_host, page_scheme) to resolve the case against, or None if it does not apply.

    With no base, an http(s) input is given the *other* web scheme as its page's:
    WHATWG reads a special URL whose scheme differs from the base's exactly as one
    with no base (authority first), so `http:foo.com` names the host foo.com.
    """
    base = case.get("base")
    if base and _scheme(base) in ("http", "https"):
        return normalize(urlsplit(base).hostname), _scheme(base)
    if base in (None, "about:blank") and _scheme(case["input"]) in ("http", "https"):
        return _NO_PAGE, "https" if _scheme(case["input"]) == "http" else "http"
    return None


def _expected(case: dict) -> str | None:
    """The WPT hostname in our normalized form; None for a failure or a non-http(s) URL."""
    if case.get("failure") or case["protocol"] not in ("http:", "https:"):
        return None
    hostname = case["hostname"]
    if hostname.startswith("["):
        return ipaddress.IPv6Address(hostname[1:-1]).compressed
    if hostname.endswith(".") and not hostname.endswith(".."):
        return hostname[:-1]
    return hostname


APPLICABLE = [(case, _page(case)) for case in CASES if _page(case) is not None]
COMPARED = [
    pytest.param(case["input"], *page, _expected(case), id=f"{n}:{case['input']!r:.40}")
    for n, (case, page) in enumerate(APPLICABLE)
    if case["input"] not in LEFT_OUT_INPUTS
]
OTHER_SCHEMES = [
    pytest.param(case["input"], id=f"{n}:{case['input']!r:.40}")
    for n, case in enumerate(CASES)
    if case.get("base") in (None, "about:blank")
    and _scheme(case["input"]) not in (None, "http", "https")
]


@pytest.mark.parametrize(("href", "page_host", "page_scheme", "expected"), COMPARED)
def test_link_hostname_reads_links_as_browsers_do(href, page_host, page_scheme, expected):
    assert link_hostname(href, page_host, page_scheme) == expected


@pytest.mark.parametrize("href", sorted(LEFT_OUT_INPUTS))
def test_left_out_cases_are_refused_by_our_rules(href):
    ((case, page),) = [(case, page) for case, page in APPLICABLE if case["input"] == href]
    assert _expected(case) is not None  # browsers reach it: we refuse on purpose
    assert link_hostname(href, *page) is None


@pytest.mark.parametrize("href", OTHER_SCHEMES)
def test_other_schemes_have_no_hostname_on_an_http_page(href):
    assert link_hostname(href, "example.org", "http") is None
    assert link_hostname(href, "example.org", "https") is None


def test_the_table_is_the_vendored_file():
    """Counts as recorded in PROVENANCE.md: a changed file must be looked at again."""
    not_applicable = len(CASES) - len(APPLICABLE) - len(OTHER_SCHEMES)
    assert (len(CASES), len(APPLICABLE), len(COMPARED), len(LEFT_OUT_INPUTS)) == (891, 482, 471, 11)
    assert (len(OTHER_SCHEMES), not_applicable) == (267, 142)
