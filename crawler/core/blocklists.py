"""Lines of the lists operators already have, read as hostnames. Pure: no I/O.

One reader for every format, line by line, so a file may even mix them:
- plain lists: one name per line, `#` comments; a line with whitespace inside
  (`exa mple.com`, `a.example b.example`) is refused whole, never split into names;
- CSV: `rank,domain` (public top-site lists) or `hostname,note` (our own export);
- hosts files: `0.0.0.0 ads.example.com`, `127.0.0.1 a.example b.example`;
- Adblock-style rules as Pi-hole and AdGuard Home take them: `||example.com^`.

Lines that cannot be a hostname entry are counted by kind and skipped: comments,
`@@` exceptions, cosmetic rules (`##`), regular expressions (`/.../`) and rules
narrowed by a path, options or wildcards (they block less than a whole name).
Whether a name is valid is not decided here: that is `crawler.core.hostnames`'.
"""

from __future__ import annotations

import csv
import ipaddress
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from crawler.core.words import counted

COMMENT = "comment"
EXCEPTION = "@@ exception"
COSMETIC = "cosmetic rule"
REGEX = "regular expression"
NARROWED = "rule narrower than a name"
HEADER = "header row"
SYSTEM_NAME = "hosts-file system name"

# The addresses a hosts file points a blocked name at (any IP literal starts a hosts line).
HOSTS_ADDRESSES = frozenset(
    {"0.0.0.0", "127.0.0.1", "::", "::1", "0:0:0:0:0:0:0:0", "0:0:0:0:0:0:0:1", "255.255.255.255"}
)
# Names every stock hosts file carries: the machine itself, never a list entry.
SYSTEM_NAMES = frozenset(
    {
        "localhost",
        "localhost.localdomain",
        "local",
        "broadcasthost",
        "ip6-localhost",
        "ip6-loopback",
        "ip6-localnet",
        "ip6-mcastprefix",
        "ip6-allnodes",
        "ip6-allrouters",
        "ip6-allhosts",
        "0.0.0.0",
    }
)
HEADER_CELLS = frozenset({"hostname", "domain", "host", "name", "rank", "site", "url"})
ADBLOCK_OPTIONS_KEPT = frozenset({"important", "all", "document", "doc"})
COSMETIC_MARKS = ("##", "#@#", "#?#", "#$#", "#%#", "$$")


# A line of letters, digits, '_', '-' and '.' only holds none of the marks read_line()
# looks for: it is one name (or a malformed one normalize() refuses), as the long way says.
_BARE_NAME = re.compile(r"[\w.-]+", re.ASCII)

# Whitespace splits a hosts-file line; in a plain list it is a typo or a pasted sentence.
# Taking each word as a name would queue a fragment (`mple.com`) nobody asked for.
INNER_SPACE = "whitespace inside a name: a plain list has one name a line"


@dataclass(frozen=True)
class ListItem:
    """One name read from a list: its 1-based line and the text as written; `problem` says
    why the line is refused whole, before any name is made of it."""

    line: int
    value: str
    note: str | None = None
    problem: str | None = None


@dataclass
class Skipped:
    """Lines that are no entry, counted by kind (blank lines are not counted)."""

    counts: Counter = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        """`12 skipped (8 comment, 4 @@ exception)`, or '' when none."""
        if not self.counts:
            return ""
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in self.counts.most_common())
        return f"{counted(self.total, 'line')} skipped ({kinds})"


def read_lines(lines: Iterable[str], skipped: Skipped | None = None) -> Iterator[ListItem]:
    """Every name in `lines` (any format above), in order; skipped lines counted in `skipped`."""
    skipped = skipped if skipped is not None else Skipped()
    for number, raw in enumerate(lines, 1):
        for item in read_line(number, raw):
            if isinstance(item, str):
                skipped.counts[item] += 1
            else:
                yield item


def read_line(number: int, raw: str) -> list[ListItem | str]:
    """The names on one line, or the kind of line it is when it holds none."""
    line = raw.strip().lstrip("\ufeff")
    if _BARE_NAME.fullmatch(line):  # most lines of a big list: no mark to look for
        return [ListItem(number, line)]
    return _read_marked(number, line)


def _read_marked(number: int, line: str) -> list[ListItem | str]:
    """read_line() of a stripped line in any format."""
    if not line:
        return []
    if line.startswith(COSMETIC_MARKS):  # `##.ad`: a rule for every page
        return [COSMETIC]
    if line.startswith(("#", "!", "[")):
        return [COMMENT]
    if line.startswith("@@"):
        return [EXCEPTION]
    if any(mark in line for mark in COSMETIC_MARKS):
        return [COSMETIC]
    if len(line) > 1 and line.startswith("/") and line.endswith("/"):
        return [REGEX]
    if line.startswith("|"):
        return [_adblock(number, line)]
    if "," in line:
        return [_csv(number, line)]
    return _plain_or_hosts(number, line)


def _adblock(number: int, line: str) -> ListItem | str:
    """`||example.com^` (optionally `$important`); anything narrower is skipped."""
    if not line.startswith("||"):
        return NARROWED  # `|https://…` anchors a URL, not a name
    body, _, options = line[2:].partition("$")
    if options and not set(options.split(",")) <= ADBLOCK_OPTIONS_KEPT:
        return NARROWED
    name = body[:-1] if body.endswith("^") else body
    if body.endswith("^|"):
        name = body[:-2]
    if not name or any(c in name.removeprefix("*.") for c in "/^*|?"):
        return NARROWED
    return ListItem(number, name)


def _csv(number: int, line: str) -> ListItem | str:
    """`rank,domain` or `hostname[,note]`; a header row is skipped."""
    try:
        cells = [c.strip() for c in next(csv.reader([line]), [])]
    except csv.Error:  # a bare carriage return inside: normalize() refuses it by name
        return ListItem(number, line)
    if not cells or not cells[0]:
        return COMMENT
    if cells[0].lower() in HEADER_CELLS:
        return HEADER
    if cells[0].isdigit() and len(cells) > 1:
        return ListItem(number, cells[1])
    note = cells[1] if len(cells) > 1 and cells[1] else None
    return ListItem(number, cells[0], note)


def _plain_or_hosts(number: int, line: str) -> list[ListItem | str]:
    """A bare name (with an optional `# comment`), or a hosts-file line (every name after
    its address). A plain line of several words is one refused item, the words joined by
    single spaces: a reader that ignores `problem` still hands normalize() a value it
    refuses (a tab inside would be dropped by the URL parser and two names made one)."""
    line = line.split(" #", 1)[0].split("\t#", 1)[0]
    words = line.split()
    if len(words) > 1 and _is_address(words[0]):
        return [SYSTEM_NAME if w in SYSTEM_NAMES else ListItem(number, w) for w in words[1:]]
    if len(words) > 1:
        return [ListItem(number, " ".join(words), problem=INNER_SPACE)]
    return [ListItem(number, words[0])] if words else [COMMENT]


def _is_address(word: str) -> bool:
    """True for the IP literal that starts a hosts-file line."""
    if word in HOSTS_ADDRESSES:
        return True
    try:
        ipaddress.ip_address(word)
    except ValueError:
        return False
    return True
