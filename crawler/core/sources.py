r"""A hostname's sources: the groups operators turn on or off, and the places in each.

A *place* says where on a page a URL stood (`script src`, `meta refresh`,
`header Link`, `certificate`...); each place belongs to one *source group*:

- links: what a reader follows: `a`/`area` `href`, `form action`, `formaction`,
  `cite`, `base href`;
- resources: what a browser fetches: `link href` (every rel), `src` of script, img,
  iframe, frame, embed, source, track, video, audio, input; `srcset`/`imagesrcset`;
  `poster`; `object data`; `background`; `html manifest`; `a`/`area` `ping`;
- metadata: a meta refresh, any other attribute whose whole value is an absolute or
  scheme-relative http(s) URL (`og:*`, `data-src`...), CSS `url()` and `@import`,
  JSON-LD;
- scripts: absolute and scheme-relative http(s) URLs that open a string literal in the
  text of an inline script, code or JSON data block alike (`"https:\/\/x"` too);
- headers: `Link`, `Content-Security-Policy` host sources (`*.x` gives `x`), `Refresh`;
- redirects: every redirect hop's target;
- certificate: the DNS names of the TLS certificate the host presented;
- dns: the names of the CNAME chain the resolver followed;
- robots: the `Sitemap:` lines of robots.txt.

Every URL a source gives goes through the same door (crawler.core.links), so one
normalization and one deny rule hold for all of them. Pure: text in, URLs out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from crawler.core.config import SettingError
from crawler.core.hostnames import is_public_suffix, normalize_or_none

LINKS = "links"
RESOURCES = "resources"
METADATA = "metadata"
SCRIPTS = "scripts"
HEADERS = "headers"
REDIRECTS = "redirects"
CERTIFICATE = "certificate"
DNS = "dns"
ROBOTS = "robots"
GROUPS = (LINKS, RESOURCES, METADATA, SCRIPTS, HEADERS, REDIRECTS, CERTIFICATE, DNS, ROBOTS)
ALL = "all"

# Places outside the document (the document's own places are `tag attribute`).
REDIRECT = "redirect"
CERTIFICATE_NAME = "certificate"
CNAME = "cname"
SITEMAP = "robots.txt Sitemap"
LINK_HEADER = "header Link"
CSP_HEADER = "header Content-Security-Policy"
REFRESH_HEADER = "header Refresh"
META_REFRESH = "meta refresh"
STYLE_URL = "style url()"
JSON_LD = "json-ld"
INLINE_SCRIPT = "inline script"
INLINE_JSON = "inline json"  # a <script type="application/json"> (or any other JSON) block
PLACE_CHARS = 64  # a place is stored; one built from a page's attribute names is cut here

_PLACE_GROUPS = {
    REDIRECT: REDIRECTS,
    CERTIFICATE_NAME: CERTIFICATE,
    CNAME: DNS,
    SITEMAP: ROBOTS,
    LINK_HEADER: HEADERS,
    CSP_HEADER: HEADERS,
    REFRESH_HEADER: HEADERS,
    INLINE_SCRIPT: SCRIPTS,
    INLINE_JSON: SCRIPTS,
}


_FETCHED = ("script", "img", "iframe", "frame", "embed", "source", "track", "video", "audio")
# The HTML standard's URL-valued attributes (its attribute index), by attribute, then
# by element ("*": any element). srcset and imagesrcset hold lists of candidates.
URL_ATTRIBUTES: dict[str, dict[str, str]] = {
    "href": {"a": LINKS, "area": LINKS, "base": LINKS, "link": RESOURCES},
    "src": {**dict.fromkeys(_FETCHED, RESOURCES), "input": RESOURCES},
    "srcset": {"img": RESOURCES, "source": RESOURCES},
    "imagesrcset": {"link": RESOURCES},
    "poster": {"video": RESOURCES},
    "data": {"object": RESOURCES},
    "action": {"form": LINKS},
    "formaction": {"button": LINKS, "input": LINKS},
    "cite": dict.fromkeys(("blockquote", "q", "del", "ins"), LINKS),
    "background": {"*": RESOURCES},  # legacy: body, table, td, th
    "manifest": {"html": RESOURCES},
    "ping": {"a": RESOURCES, "area": RESOURCES},  # space-separated URLs the browser posts to
}
CANDIDATE_LISTS = frozenset({"srcset", "imagesrcset"})
SPACE_SEPARATED = frozenset({"ping"})


class SourcesError(SettingError):
    """A DISCOVERY_SOURCES value naming no group; the message names it and the groups."""


def parse_groups(value: str) -> frozenset[str]:
    """DISCOVERY_SOURCES (`all`, or a comma list of groups) → the groups turned on."""
    names = {part.strip().lower() for part in value.split(",") if part.strip()}
    if not names or names == {ALL}:
        return frozenset(GROUPS) if names else frozenset()
    unknown = sorted(names - set(GROUPS))
    if unknown:
        raise SourcesError(
            f"DISCOVERY_SOURCES={value!r}: no source group {', '.join(map(repr, unknown))}"
            f" (groups: {ALL}, {', '.join(GROUPS)})"
        )
    return frozenset(names)


def group_of(place: str) -> str:
    """The source group of a place (an unknown `tag attribute` is metadata)."""
    group = _PLACE_GROUPS.get(place)
    if group is not None:
        return group
    tag, _, attribute = place.partition(" ")
    return attribute_group(tag, attribute) or METADATA


_PLACE_WORDS = {
    REDIRECT: "a redirect to it",
    CERTIFICATE_NAME: "its TLS certificate",
    CNAME: "its CNAME chain",
    SITEMAP: "its robots.txt Sitemap: lines",
    LINK_HEADER: "its Link header",
    CSP_HEADER: "its Content-Security-Policy header",
    REFRESH_HEADER: "its Refresh header",
    META_REFRESH: "a <meta http-equiv=refresh>",
    STYLE_URL: "a CSS url()",
    JSON_LD: "its JSON-LD",
    INLINE_SCRIPT: "an inline <script>",
    INLINE_JSON: "an inline JSON <script> block",
}


def describe_place(place: str) -> str:
    """A place in words for an operator: `script src` → `a <script src>`."""
    words = _PLACE_WORDS.get(place)
    return words if words is not None else f"a <{place}>"


def attribute_group(tag: str, attribute: str) -> str | None:
    """The group of a URL attribute of the HTML standard, or None for any other."""
    tags = URL_ATTRIBUTES.get(attribute)
    if tags is None:
        return None
    return tags.get(tag) or tags.get("*")


# --- headers -------------------------------------------------------------------------

# A target runs to the next `<` at most, possessively: `<<<<...` without a `>` is read
# once, not once per `<` (linear; bench/hostile.py).
_LINK_TARGET = re.compile(r"<([^<>]*+)>")
# A refresh: seconds, then `;` or `,`, then optional `url=`, then the URL, maybe quoted.
_REFRESH = re.compile(
    r"\s*[\d.]*\s*[;,]?\s*(?:url\s*=\s*)?(?P<q>['\"]?)(?P<url>[^'\"]*)(?P=q)?", re.IGNORECASE
)
_CSP_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")


def header_urls(headers: Iterable[tuple[str, str]]) -> Iterator[tuple[str, str]]:
    """(url, place) from response headers given as (name, value) pairs."""
    for name, value in headers:
        name = name.lower()
        if name == "link":
            for url in _LINK_TARGET.findall(value):
                yield url, LINK_HEADER
        elif name in ("content-security-policy", "content-security-policy-report-only"):
            for url in csp_hosts(value):
                yield url, CSP_HEADER
        elif name == "refresh":
            url = refresh_url(value)
            if url:
                yield url, REFRESH_HEADER


def refresh_url(content: str) -> str | None:
    """The URL of a Refresh header or meta refresh (`5; url=https://x/`), or None."""
    match = _REFRESH.match(content)
    url = match.group("url").strip() if match else ""
    return url or None


def csp_hosts(policy: str) -> Iterator[str]:
    """Host sources of a Content-Security-Policy, as scheme-relative or absolute URLs.

    Keywords ('self', 'nonce-...'), bare schemes (`https:`, `data:`) and `*` name no
    host; `*.example.com` gives example.com and a port `:*` is dropped.
    """
    for directive in policy.split(";"):
        tokens = directive.split()
        if not tokens or not _names_hosts(tokens[0].lower()):
            continue
        for token in tokens[1:]:
            if token.startswith("'") or token == "*" or _CSP_SCHEME.fullmatch(token):
                continue
            scheme, sep, rest = token.partition("://")
            if not sep:
                scheme, rest = "", token
            if rest.startswith("*."):
                rest = rest[2:]
            host, _, path = rest.partition("/")
            if host.endswith(":*"):
                host = host[:-2]
            if host:
                yield f"{scheme}://{host}/{path}" if scheme else f"//{host}/{path}"


def _names_hosts(directive: str) -> bool:
    """True for a directive whose values are sources or URLs (not `sandbox`, `report-to`...)."""
    return directive.endswith("-src") or directive in _URL_DIRECTIVES


_URL_DIRECTIVES = frozenset({"form-action", "frame-ancestors", "base-uri", "report-uri"})


# --- names that are no URL -----------------------------------------------------------


def name_urls(names: Iterable[str], place: str) -> Iterator[tuple[str, str]]:
    """Hostnames (certificate names, a CNAME chain) as scheme-relative URLs: one door.

    A wildcard `*.example.com` gives example.com, but a wildcard over a public suffix
    (`*.com`, `*.test`) names no site and gives nothing; a name that is no hostname is
    dropped by the door like any link.
    """
    for name in names:
        name = name.strip()
        if name.startswith("*."):
            name = name[2:]
            suffix = normalize_or_none(name)
            if suffix is None or is_public_suffix(suffix):
                continue
        if name and "/" not in name:
            yield f"//{name}/", place


def robots_sitemaps(text: str) -> Iterator[tuple[str, str]]:
    """(url, place) of the `Sitemap:` lines of a robots.txt."""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "sitemap":
            url = value.split("#", 1)[0].strip()
            if url:
                yield url, SITEMAP
