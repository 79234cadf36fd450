"""Operator input for deny entries: lines and CSV in, a preview and a summary out.

Normalization and the public-suffix rule are crawler.core.hostnames'; the counts
come from webpanel.queries; saving is crawler.db.rules.deny_entries.add_no_follow().

Nothing is dropped silently: lines that hold no name (comments, @@ exceptions,
cosmetic rules, regexes) and names given twice are counted on screen, as the CLI
counts them, and a paste or file of more than MAX_NAMES names is refused whole.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crawler.core import words
from crawler.core.blocklists import COMMENT, Skipped, read_lines
from crawler.core.denylist import NO_FOLLOW
from crawler.core.hostnames import HostnameError, is_ip, normalize, normalize_entry, root
from crawler.core.inputs import note_problem
from crawler.db.operators.bulk import EntryChange
from webpanel.queries import deny_lists

# A spreadsheet runs a cell starting with one of these as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# One write of the one write path (crawler.db.operators.bulk.BATCH is larger): a paste, a CSV
# import or an API call is written whole or not at all. Bigger lists: the CLI's -f FILE.
MAX_NAMES = 10_000


@dataclass
class Candidate:
    """One input line as it would be stored, or why it would not be."""

    input: str
    hostname: str | None = None
    problem: str | None = None
    needs_force: bool = False
    current: str | None = None  # the name's rule today: None, 'no_follow' or 'blocked'
    exclusion: deny_lists.Exclusion | None = None
    note: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None

    def describe_problem(self) -> str:
        if self.needs_force:
            return f"{self.input!r}: a bare public suffix; tick the box below to store it anyway"
        return f"{self.input!r}: {self.problem}"


@dataclass
class Preview:
    candidates: list[Candidate]
    total: deny_lists.Exclusion

    @property
    def problems(self) -> list[Candidate]:
        return [c for c in self.candidates if not c.ok]

    @property
    def storable(self) -> list[Candidate]:
        return [c for c in self.candidates if c.ok]

    @property
    def new(self) -> list[Candidate]:
        """The storable lines that are not no_follow entries yet: what Save adds."""
        return [c for c in self.storable if c.current != NO_FOLLOW]

    def save_label(self) -> str:
        """The Save button's words: how many entries are new, and how many are there."""
        new, there = len(self.new), len(self.storable) - len(self.new)
        entries = "entry" if new == 1 else "entries"
        if not there:
            return f"Save {new} {entries}"
        return f"Save {new} new {entries} ({there} already there)"


# The GET /no_follow?add= text is cut at this many characters (webpanel.no_follow).
ADD_CHARS = 1000


@dataclass(frozen=True)
class Offer:
    """A line stored below its registered domain, which stays crawlable: the domain, and
    the pasted text with that line swapped for it (for the form again)."""

    input: str
    hostname: str
    domain: str
    text: str


def offers(preview: Preview, pasted: str) -> list[Offer]:
    """A registered domain for each pasted URL or www. name stored below it (the apex is
    then left crawlable), unless the paste has that domain already."""
    stored = {c.hostname for c in preview.storable}
    found = []
    for c in preview.storable:
        domain = registered_domain(c.input, c.hostname)
        if domain is not None and domain not in stored:
            text = swapped(pasted, c.input, domain)
            found.append(Offer(c.input, c.hostname, domain, text))
    return found


def registered_domain(value: str, hostname: str) -> str | None:
    """The registered domain of `hostname` (stored from `value`) when `value` was a URL
    (a scheme, port or path) or a www. name; else None (a subdomain given as such is
    meant: the operator named it)."""
    if is_ip(hostname):
        return None
    domain = root(hostname)
    if domain == hostname:
        return None
    looks_like_url = "/" in value or ":" in value
    return domain if looks_like_url or hostname.startswith("www.") else None


def swapped(pasted: str, line: str, domain: str) -> str:
    """The pasted text with every line that is `line` swapped for `domain`; just the
    domain when the result would not fit a link (ADD_CHARS)."""
    text = "\n".join(domain if x.strip() == line else x for x in pasted.splitlines())
    return text if len(text) <= ADD_CHARS else domain


@dataclass
class Read:
    """What a paste or a CSV file holds: its items (names, each once, in order; or a CSV's
    (name, note) rows), and the lines that held none."""

    items: list
    skipped: Skipped
    repeated: int = 0  # names given again, counted once

    def counted(self) -> str:
        """'3 lines skipped (2 comment, 1 @@ exception); 2 repeated names counted once', or ''."""
        said = [self.skipped.describe()]
        if self.repeated:
            said.append(f"{words.counted(self.repeated, 'repeated name')} counted once")
        return "; ".join(filter(None, said))

    def too_many(self) -> str | None:
        """Why the whole input is refused, or None: over MAX_NAMES names."""
        if len(self.items) <= MAX_NAMES:
            return None
        return (
            f"{len(self.items):,} names: at most {MAX_NAMES:,} at a time here, so nothing was"
            " saved; split the list, or give the file to `hostcrawl no-follow add -f FILE`"
            " (any size)"
        )


def lines(value: str) -> Read:
    """The names of pasted lines (plain, CSV, hosts file or Adblock rules), each once, in order;
    comments, exceptions, cosmetic rules and regexes are counted as skipped
    (crawler.core.blocklists), as are names given twice."""
    skipped = Skipped()
    given = [item.value for item in read_lines(value.splitlines(), skipped)]
    names = list(dict.fromkeys(given))
    return Read(names, skipped, len(given) - len(names))


def preview(conn, values: Sequence[str], force: bool, notes: Sequence[str | None] = ()) -> Preview:
    """What saving `values` as no_follow entries would do; stores nothing."""
    candidates = [_candidate(v, force) for v in values]
    for candidate, note in zip(candidates, notes, strict=False):
        candidate.note = note
    names = [c.hostname for c in candidates if c.ok]
    current = deny_lists.entry_rules(conn, names)
    each, total = deny_lists.exclusion_preview(conn, names)
    for c in candidates:
        if c.ok:
            c.current = current.get(c.hostname)
            c.exclusion = each[c.hostname]
    return Preview(candidates, total)


def _candidate(value: str, force: bool) -> Candidate:
    try:
        return Candidate(value, normalize_entry(value, force=force))
    except HostnameError as exc:
        try:  # a name after all: refused only as a bare public suffix
            name = normalize(value)
        except HostnameError:
            return Candidate(value, problem=exc.reason)
        return Candidate(value, name, problem=exc.reason, needs_force=True)


@dataclass
class Summary:
    """What a save did: added N, already present M, refused K (with each reason), and the
    lines that held no name."""

    changes: list[EntryChange]
    counted: str = ""  # Read.counted(): skipped lines, repeated names

    @property
    def counts(self) -> Counter:
        return Counter(c.status for c in self.changes)

    @property
    def refused(self) -> list[EntryChange]:
        return [c for c in self.changes if not c.ok]

    @property
    def stored(self) -> list[EntryChange]:
        return [c for c in self.changes if c.ok]

    def line(self) -> str:
        n = self.counts
        return f"added {n['added']}, already present {n['already']}, refused {n['refused']}"


# -- CSV -----------------------------------------------------------------------------------


def neutralise(cell: str | None) -> str:
    """A cell a spreadsheet will show as text, never run as a formula."""
    cell = cell or ""
    return "'" + cell if cell.startswith(FORMULA_START) else cell


def unneutralise(cell: str) -> str:
    return cell[1:] if cell.startswith("'") and cell[1:].startswith(FORMULA_START) else cell


def export_csv(rows: Iterable) -> bytes:
    """hostname,note rows (the format import_rows() reads back)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["hostname", "note"])
    for row in rows:
        writer.writerow([neutralise(row.hostname), neutralise(row.note)])
    return out.getvalue().encode("utf-8")


def import_rows(data: str) -> Read:
    """(hostname input, note) per CSV row; a 'hostname' header row is skipped, and
    comment rows ('#') are counted as skipped.

    A file the csv module cannot read (a cell over its field limit, a NUL) is a
    ValueError naming the line, never a 500.
    """
    rows, skipped = [], Skipped()
    reader = csv.reader(io.StringIO(data))
    try:
        records = list(reader)
    except csv.Error as exc:
        raise ValueError(f"line {reader.line_num}: not a hostname,note CSV row ({exc})") from None
    for i, record in enumerate(records):
        cells = [c.strip() for c in record]
        if not cells or not cells[0]:
            continue
        if cells[0].startswith("#"):
            skipped.counts[COMMENT] += 1
            continue
        if i == 0 and cells[0].lower() == "hostname":
            continue
        note = unneutralise(cells[1]) if len(cells) > 1 and cells[1] else None
        problem = note and note_problem(note)
        if problem:
            raise ValueError(f"row {i + 1}: the note: {problem}")
        rows.append((cells[0], note))
    return Read(rows, skipped)
