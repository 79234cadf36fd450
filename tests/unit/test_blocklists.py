"""crawler.core.blocklists: the lines of the lists operators have, as names (pure, no database)."""

from __future__ import annotations

import pytest

from crawler.core.blocklists import (
    COMMENT,
    COSMETIC,
    EXCEPTION,
    HEADER,
    INNER_SPACE,
    NARROWED,
    REGEX,
    SYSTEM_NAME,
    ListItem,
    Skipped,
    read_lines,
)


def names(text: str) -> tuple[list[str], Skipped]:
    skipped = Skipped()
    return [item.value for item in read_lines(text.splitlines(), skipped)], skipped


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("example.com", ["example.com"]),
        ("  Example.COM  # a note", ["Example.COM"]),
        ("https://x.example/path", ["https://x.example/path"]),  # normalize() takes URLs
        ("1,example.com", ["example.com"]),  # rank,domain (top-site lists)
        ("example.com,a note", ["example.com"]),  # our own export: hostname,note
        ("0.0.0.0 ads.example.com", ["ads.example.com"]),
        ("127.0.0.1\ta.example b.example  # two", ["a.example", "b.example"]),
        ("::1 v6.example", ["v6.example"]),
        ("192.168.1.5 router.example", ["router.example"]),
        ("||example.com^", ["example.com"]),
        ("||example.com^$important", ["example.com"]),
        ("||example.com^|", ["example.com"]),
        ("||*.wild.example^", ["*.wild.example"]),  # normalize() drops '*.'
        ("a.example b.example\tc.example", ["a.example b.example c.example"]),  # one, refused
    ],
)
def test_each_format_gives_its_names(line, expected):
    assert names(line)[0] == expected


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("# comment", COMMENT),
        ("! Adblock comment", COMMENT),
        ("[Adblock Plus 2.0]", COMMENT),
        ("@@||good.example^", EXCEPTION),
        ("example.com##.ad-banner", COSMETIC),
        ("##.ad", COSMETIC),
        ("example.com#@#.ad", COSMETIC),
        ("/ads[0-9]+\\.example/", REGEX),
        ("||example.com/ads/", NARROWED),
        ("||example.com^$third-party", NARROWED),
        ("||ads*.example^", NARROWED),
        ("|https://example.com/", NARROWED),
        ("hostname,note", HEADER),
        ("rank,domain", HEADER),
        ("127.0.0.1 localhost", SYSTEM_NAME),
        ("255.255.255.255 broadcasthost", SYSTEM_NAME),
        ("::1 ip6-localhost", SYSTEM_NAME),
    ],
)
def test_lines_that_are_no_entry_are_counted_by_kind(line, kind):
    found, skipped = names(line)
    assert found == []
    assert skipped.counts == {kind: 1}


def test_blank_lines_are_neither_names_nor_counted():
    assert names("\n   \n\t\n") == ([], Skipped())


def test_a_mixed_list_keeps_order_line_numbers_and_notes():
    text = "# top\n1,a.example\n\n||b.example^\n0.0.0.0 c.example d.example\nc.example,why\n"
    items = list(read_lines(text.splitlines()))
    assert items == [
        ListItem(2, "a.example"),
        ListItem(4, "b.example"),
        ListItem(5, "c.example"),
        ListItem(5, "d.example"),
        ListItem(6, "c.example", "why"),
    ]


def test_the_skipped_count_reads_as_a_line():
    _, skipped = names("# a\n# b\n@@||x.example^\nx.example##.ad\n")
    assert skipped.total == 4
    assert skipped.describe() == "4 lines skipped (2 comment, 1 @@ exception, 1 cosmetic rule)"


def test_a_byte_order_mark_is_not_part_of_the_first_name():
    assert names("\ufeffexample.com\n")[0] == ["example.com"]


def test_a_quoted_csv_cell_is_read_as_csv():
    assert list(read_lines(['"a.example","note, with comma"'])) == [
        ListItem(1, "a.example", "note, with comma")
    ]


def test_a_plain_line_of_many_names_is_one_refused_item_with_its_line_number():
    many = " ".join(f"n{i}.example" for i in range(1000))
    items = list(read_lines(["first.example", many]))
    assert items == [ListItem(1, "first.example"), ListItem(2, many, problem=INNER_SPACE)]
