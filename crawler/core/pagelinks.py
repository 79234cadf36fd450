"""Every URL a parsed HTML document offers, with the place it stood, in one pass.

`parse_document` parses a page once, with lxml's HTML parser into plain elements
(lxml.html's element classes cost a Python call per element visited, more than
half the walk); the title and every URL come from that one tree.
`document_urls` walks its elements once and reads, per element, the
URL attributes of the HTML standard (crawler.core.sources.URL_ATTRIBUTES), any
other attribute whose whole value is an absolute or scheme-relative http(s) URL,
CSS `url()` in `style` attributes and `<style>`, a meta refresh, JSON-LD, the URLs
string literals open in inline scripts and JSON blocks (`script_urls`), and the first
`<base href>` (relative URLs resolve against it, as browsers do). Pure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from lxml import etree

from crawler.core.budget import ExtractBudget
from crawler.core.sources import (
    CANDIDATE_LISTS,
    INLINE_JSON,
    INLINE_SCRIPT,
    JSON_LD,
    META_REFRESH,
    PLACE_CHARS,
    SPACE_SEPARATED,
    STYLE_URL,
    URL_ATTRIBUTES,
    refresh_url,
)

# A whole value that is an absolute or scheme-relative http(s) URL (no space inside).
_ABSOLUTE = re.compile(r"\s*(?:[hH][tT][tT][pP][sS]?:)?//[^\s/]\S*\s*")
# Linear on any text (bench/hostile.py): every run is possessive, so a failed match gives
# nothing back to try again, and no run can cross the start of the next match (an
# unquoted URL stops at `(`, which CSS refuses in one anyway; a string at its own quote),
# so no character is read by more than a few attempts.
_CSS_URL = re.compile(
    r"""url\(\s*+(?:"([^"]*+)"|'([^']*+)'|([^()'"\s]*+))\s*+\)"""
    r"""|@import\s++(?:"([^"]*+)"|'([^']*+)')""",
    re.IGNORECASE,
)
# An http(s) URL, or a scheme-relative one standing alone (not the `//` inside a path).
_JSON_URL = re.compile(r"""(?:https?:|(?<![\w:/.]))//[^\s"'<>\\/][^\s"'<>\\]*""", re.IGNORECASE)


def _script_url(slashes: str) -> re.Pattern[str]:
    """The authority after `slashes` (`//` or `\\/\\/`) that open a string literal (", '
    or `) or follow its http(s) scheme. The pattern starts with its literal slashes, which
    the regex engine finds fast; the quote and scheme are looked back at. An authority that
    goes on into a template (`${`, `{{`) is no name."""
    s, quote = re.escape(slashes), "[\"'`]"
    http = f"{quote}[hH][tT][tT][pP]"
    return re.compile(
        rf"{s}(?:(?<={quote}{s})|(?<={http}:{s})|(?<={http}[sS]:{s}))"
        r"""([^\s"'`\\/<>?#{}$]++)(?![{$])"""
    )


_SCRIPT_URL = _script_url("//")
_ESCAPED_SCRIPT_URL = _script_url("\\/\\/")
_SRCSET_URL = re.compile(r"[\s,]*(\S*)")
_SRCSET_DESCRIPTORS = re.compile(r"(?:[^,(]|\([^)]*\)?)*,?")


# As parsel parses for Scrapy's selectors: recover from bad markup, text given as UTF-8.
_PARSER = etree.HTMLParser(recover=True, encoding="utf8", huge_tree=True)
_TITLE = etree.XPath("normalize-space(//title)")


def parse_document(text: str):
    """The lxml root element of an HTML page's text, or None where nothing parses."""
    # A NUL is what HTML parsing makes it (U+FFFD), not dropped: `a\0b` names no `ab`.
    body = text.strip().strip("\x00").replace("\x00", "\ufffd").encode("utf8")
    if not body:
        return None
    try:
        return etree.fromstring(body, parser=_PARSER)
    except (etree.ParserError, ValueError):
        return None


def document_title(root) -> str | None:
    """The page's title, whitespace normalized, or None."""
    title = _TITLE(root) if root is not None else ""
    return title or None


@dataclass
class PageUrls:
    """The URLs of one document as (url, place) pairs, and its `<base href>` if any."""

    urls: list[tuple[str, str]] = field(default_factory=list)
    base: str | None = None


def document_urls(root, budget: ExtractBudget | None = None) -> PageUrls:
    """Every URL of the lxml document `root` (an element; None gives none), in document
    order; the walk stops where `budget` is spent."""
    page = PageUrls()
    if root is None:
        return page
    add = page.urls.append
    places = _URL_PLACES  # the hot loop: one dict lookup for most attributes
    whole_url = _ABSOLUTE.fullmatch
    for element in root.iter():
        if budget is not None and budget.spent():
            break
        tag = element.tag
        if not isinstance(tag, str):  # a comment or processing instruction
            continue
        for name, value in element.items():
            place = places.get((tag, name))
            if place is not None:
                add((value, place))
            elif name in _SPECIAL_ATTRIBUTES:
                _special_attribute(add, tag, name, value)
            elif "//" in value and whole_url(value):
                add((value, f"{tag} {name}"[:PLACE_CHARS]))
        if tag in _SPECIAL_ELEMENTS:
            _special_element(add, page, tag, element)
    return page


# (tag, attribute) → place, for URL attributes holding one URL on their own elements.
_URL_PLACES = {
    (tag, name): f"{tag} {name}"
    for name, tags in URL_ATTRIBUTES.items()
    if name not in CANDIDATE_LISTS and name not in SPACE_SEPARATED
    for tag in tags
    if tag != "*"
}
# Attributes that need more than one lookup: lists of URLs, any-element ones, CSS.
_SPECIAL_ATTRIBUTES = (
    CANDIDATE_LISTS
    | SPACE_SEPARATED
    | {name for name, tags in URL_ATTRIBUTES.items() if "*" in tags}
    | {"style"}
)
_SPECIAL_ELEMENTS = frozenset({"base", "meta", "style", "script"})


def _special_attribute(add, tag: str, name: str, value: str) -> None:
    tags = URL_ATTRIBUTES.get(name)
    if tags is not None and (tag in tags or "*" in tags):
        _attribute_urls(add, tag, name, value)
    elif name == "style":
        if "url(" in value or "URL(" in value:
            _css_urls(add, value)
    elif "//" in value and _ABSOLUTE.fullmatch(value):
        add((value, f"{tag} {name}"[:PLACE_CHARS]))


def _special_element(add, page: PageUrls, tag: str, element) -> None:
    if tag == "base":
        if page.base is None:
            page.base = element.get("href")
    elif tag == "meta":
        _meta_refresh(add, element)
    elif tag == "style":
        _css_urls(add, element.text or "")
    elif element.text:  # a script
        kind = (element.get("type") or "").strip().lower()
        if kind == "application/ld+json":
            _json_ld_urls(add, element.text)
        else:
            place = INLINE_JSON if "json" in kind else INLINE_SCRIPT
            for url in script_urls(element.text):
                add((url, place))


def _attribute_urls(add, tag: str, name: str, value: str) -> None:
    place = f"{tag} {name}"
    if name in CANDIDATE_LISTS:
        for url in srcset_urls(value):
            add((url, place))
    elif name in SPACE_SEPARATED:
        for url in value.split():
            add((url, place))
    else:
        add((value, place))


def srcset_urls(value: str) -> Iterator[str]:
    """The URLs of a srcset, as the HTML standard's parser splits its candidates.

    A URL runs to the next whitespace (commas inside it stay: image CDNs use them);
    commas ending it end the candidate; otherwise descriptors run to a comma outside
    parentheses.
    """
    position = 0
    while position < len(value):
        url = _SRCSET_URL.match(value, position)
        text = url.group(1)
        if not text:
            return
        position = url.end()
        if text.endswith(","):
            yield text.rstrip(",")
            continue
        yield text
        position = _SRCSET_DESCRIPTORS.match(value, position).end()


def _css_urls(add, css: str) -> None:
    for match in _CSS_URL.finditer(css):
        url = next((g for g in match.groups() if g), None)
        if url:
            add((url, STYLE_URL))


def _meta_refresh(add, element) -> None:
    if (element.get("http-equiv") or "").strip().lower() == "refresh":
        url = refresh_url(element.get("content") or "")
        if url:
            add((url, META_REFRESH))


def script_urls(text: str) -> Iterator[str]:
    r"""The absolute and scheme-relative http(s) URLs that open a string literal of a script
    or JSON text (`"https://x/"`, `'//cdn.x/a.js'`, `"https:\/\/x"`), as `//host`.

    Only strings: an identifier or property (`a.b.com`) and a comment are no URL, nor is
    a relative one; a URL in the middle of a string's prose is not read either.
    """
    for authority in _SCRIPT_URL.findall(text):
        yield "//" + authority
    if "\\/\\/" in text:
        for authority in _ESCAPED_SCRIPT_URL.findall(text):
            yield "//" + authority


def _json_ld_urls(add, text: str) -> None:
    """Absolute URLs among the JSON-LD's strings (JSON that does not parse: by pattern)."""
    try:
        strings = list(_json_strings(json.loads(text)))
    except (ValueError, RecursionError):
        strings = [text.replace("\\/", "/")]
    for string in strings:
        if "//" in string:
            for url in _JSON_URL.findall(string):
                add((url, JSON_LD))


def _json_strings(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_strings(item)
