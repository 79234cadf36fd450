"""Hostile page and header text: what the extractors still read in it (bench/hostile.py
shows that they read it in linear time)."""

from __future__ import annotations

from crawler.core.pagelinks import document_urls, parse_document
from crawler.core.sources import header_urls

STYLE_URL = "style url()"


def style_urls(css: str) -> list[str]:
    root = parse_document(f"<style>{css}</style>")
    return [url for url, place in document_urls(root).urls if place == STYLE_URL]


def test_a_css_url_after_thousands_of_unclosed_ones_is_still_read():
    assert style_urls("url(" * 5000 + "url(https://x.test/a.png)") == ["https://x.test/a.png"]


def test_a_css_url_after_one_url_and_a_run_of_spaces_is_still_read():
    assert style_urls("url(" + " " * 5000 + "; url('//x.test/')") == ["//x.test/"]


def test_an_unquoted_css_url_with_a_parenthesis_is_no_url_as_in_css():
    assert style_urls("a { background: url(a(b) }") == []


def test_a_css_url_after_an_import_of_nothing_but_spaces_is_still_read():
    assert style_urls("@import" + " " * 5000 + "url(//x.test/)") == ["//x.test/"]


def test_a_link_target_after_a_run_of_angle_brackets_is_still_read():
    value = "<" * 5000 + "<https://x.test/s.css>; rel=preload"
    assert list(header_urls([("Link", value)])) == [("https://x.test/s.css", "header Link")]
