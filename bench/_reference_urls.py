"""A reference extractor of the hostnames a page names, kept apart from the crawler's code.

Written from the HTML standard's index of URL-valued attributes, on another parser
(the standard library's html.parser) and another resolver (urllib's urljoin), so a
mistake in the crawler's extractor does not repeat here. Groups as the crawler's:
links (what a reader follows), resources (what a browser fetches), metadata
(meta refresh, URL-valued attributes, CSS url(), JSON-LD).
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from _browser_truth import spelled  # bench's own spelling of names (idna), nothing of ours

# The HTML standard, "Attributes" index: attributes whose value is a URL (or URLs).
FOLLOWED = {
    ("a", "href"),
    ("area", "href"),
    ("base", "href"),
    ("form", "action"),
    ("button", "formaction"),
    ("input", "formaction"),
    ("blockquote", "cite"),
    ("q", "cite"),
    ("del", "cite"),
    ("ins", "cite"),
}
FETCHED = {
    ("link", "href"),
    ("script", "src"),
    ("img", "src"),
    ("iframe", "src"),
    ("frame", "src"),
    ("embed", "src"),
    ("source", "src"),
    ("track", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("input", "src"),
    ("video", "poster"),
    ("object", "data"),
    ("html", "manifest"),
}
CANDIDATES = {("img", "srcset"), ("source", "srcset"), ("link", "imagesrcset")}
ABSOLUTE = re.compile(r"(?i)^\s*(https?:)?//[^\s/][^\s]*\s*$")
CSS_URL = re.compile(r"""(?i)url\(\s*['"]?([^'")\s]+)|@import\s+['"]([^'"]+)""")
REFRESH_URL = re.compile(r"""(?i)url\s*=\s*['"]?([^'"\s]+)""")
JSON_URL = re.compile(r"""(?i)(?:https?:|(?<![\w:/.]))//[^\s"'<>\\]+""")


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []  # (group, url)
        self.base: str | None = None
        self._text_of: str | None = None  # "style" or "ld+json" while inside one

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is not None:
                self._attribute(tag, name, value)
        attributes = dict(attrs)
        if tag == "base" and self.base is None and attributes.get("href"):
            self.base = attributes["href"]
        if tag == "meta" and (attributes.get("http-equiv") or "").lower() == "refresh":
            match = REFRESH_URL.search(attributes.get("content") or "")
            if match:
                self.found.append(("metadata", match.group(1)))
        if tag == "style":
            self._text_of = "style"
        elif tag == "script" and (attributes.get("type") or "").lower() == "application/ld+json":
            self._text_of = "ld+json"

    handle_startendtag = handle_starttag

    def _attribute(self, tag: str, name: str, value: str) -> None:
        if (tag, name) in FOLLOWED:
            self.found.append(("links", value))
        elif (tag, name) in FETCHED or name == "background":
            self.found.append(("resources", value))
        elif (tag, name) in CANDIDATES:
            for candidate in value.split(","):
                parts = candidate.split()
                if parts:
                    self.found.append(("resources", parts[0]))
        elif name == "ping" and tag in ("a", "area"):
            self.found.extend(("resources", url) for url in value.split())
        elif name == "style":
            self.found.extend(("metadata", u or i) for u, i in CSS_URL.findall(value))
        elif ABSOLUTE.match(value):
            self.found.append(("metadata", value))

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self._text_of = None

    def handle_data(self, data):
        if self._text_of == "style":
            self.found.extend(("metadata", u or i) for u, i in CSS_URL.findall(data))
        elif self._text_of == "ld+json":
            try:
                text = json.dumps(json.loads(data), ensure_ascii=False)  # unescapes \/ and \uXXXX
            except ValueError:
                text = data.replace("\\/", "/")
            self.found.extend(("metadata", url) for url in JSON_URL.findall(text))


def reference_hosts(html: str, page_url: str) -> dict[str, set[str]]:
    """{group: hostnames} a page names, its own host left out."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    base = urljoin(page_url, reader.base) if reader.base else page_url
    if urlsplit(base).scheme not in ("http", "https"):
        base = page_url
    own = spelled(urlsplit(page_url).hostname or "")
    hosts: dict[str, set[str]] = {"links": set(), "resources": set(), "metadata": set()}
    for group, url in reader.found:
        try:
            parts = urlsplit(urljoin(base, url.strip()))
            host = parts.hostname if parts.scheme in ("http", "https") else None
        except ValueError:
            continue
        name = spelled(host) if host else None
        if name and name != own:
            hosts[group].add(name)
    return hosts
