"""Running a bulk change from the command line: input files, progress, summary, report.

Input: a path or `-` (stdin), gzip recognised by its magic bytes, read line by line
with crawler.core.blocklists (plain, CSV, hosts files, Adblock rules). Progress: a tqdm
bar with rate and ETA on a terminal (tqdm: maintained, shows rate and ETA as it
is, no dependencies), a line every few seconds elsewhere (a log stays readable).
At the end a summary; `--report FILE` has every item's result as CSV.
"""

from __future__ import annotations

import csv
import gzip
import io
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

import click

from crawler.core.blocklists import ListItem, Skipped, read_lines
from crawler.core.hostnames import shown
from crawler.core.words import counted
from crawler.db.rules.deny_entries import EntryChange

GZIP_MAGIC = b"\x1f\x8b"
# A NUL in the first bytes: an executable, an image, an archive; never a list of names.
TEXT_SNIFF = 8192
EXAMPLES = 3
STATUS_ORDER = {"already": 2, "absent": 3, "refused": 4}  # what was done comes first
# A status as the summary says it after its count: "3 added, 2 already there".
STATUS_WORDS = {"already": "already there", "absent": "not there"}
QUIET_PROGRESS_EVERY = 5.0  # seconds between progress lines when not on a terminal


def open_input(path: str) -> IO[bytes]:
    """The file's bytes (stdin for '-'), gunzipped when it starts with gzip's magic;
    a missing, unreadable or binary file is a one-line error naming it."""
    try:
        raw = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        buffered = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
        data = buffered
        if buffered.peek(2)[:2] == GZIP_MAGIC:
            data = io.BufferedReader(gzip.GzipFile(fileobj=buffered))  # type: ignore[arg-type]
        head = data.peek(TEXT_SNIFF)[:TEXT_SNIFF]
    except (OSError, EOFError) as exc:
        raise click.ClickException(f"{shown_path(path)}: {reason_of(exc)}") from None
    if b"\0" in head:
        data.close()
        raise click.ClickException(f"{shown_path(path)}: not a text list (binary data)")
    return data  # type: ignore[return-value]


def shown_path(path: str) -> str:
    return "standard input" if path == "-" else path


def reason_of(exc: BaseException) -> str:
    """Why a file could not be read, in the words of the system (no errno, no path)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def count_lines(path: str) -> int | None:
    """Lines in a file (for the ETA); None for stdin, which can be read only once."""
    if path == "-":
        return None
    with open_input(path) as data:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: data.read(1 << 20), b""))


def text_lines(data: IO[bytes]) -> IO[str]:
    """UTF-8 lines (a BOM dropped; an undecodable byte becomes U+FFFD and its line is refused)."""
    return io.TextIOWrapper(data, encoding="utf-8-sig", errors="replace", newline=None)


@dataclass
class Summary:
    """Counts by status, refusals by reason with a few examples each."""

    counts: Counter = field(default_factory=Counter)
    reasons: Counter = field(default_factory=Counter)
    # reason → {input: its first line}: distinct inputs, so a name refused on many lines
    # is one example, not the same one three times.
    examples: dict[str, dict[str, int | None]] = field(default_factory=dict)

    def add(self, change: EntryChange, line: int | None = None) -> None:
        self.counts[change.status] += 1
        if not change.ok:
            reason = reason_kind(change.message)
            self.reasons[reason] += 1
            shown = self.examples.setdefault(reason, {})
            if len(shown) < EXAMPLES and change.input not in shown:
                shown[change.input] = line

    @property
    def refused(self) -> int:
        return self.counts["refused"]

    def lines(self, skipped: Skipped) -> list[str]:
        order = sorted(self.counts, key=lambda s: (STATUS_ORDER.get(s, 1), s))
        done = ", ".join(f"{self.counts[s]:,} {STATUS_WORDS.get(s, s)}" for s in order)
        out = [f"done: {done or 'nothing to do'}"]
        if skipped.counts:
            out.append(skipped.describe())
        for reason, n in self.reasons.most_common():
            examples = ", ".join(
                shown(e) + (f" on line {line:,}" if line else "")
                for e, line in self.examples[reason].items()
            )
            out.append(f"refused {n:,}: {reason} (e.g. {examples})")
        return out


def reason_kind(message: str) -> str:
    """A refusal's reason without the particular entry, so the summary groups them."""
    if message.startswith("under ") and " entry " in message:
        return message.split(" entry ", 1)[0].replace("under ", "under a ", 1) + " entry"
    return message


class Progress:
    """A tqdm bar on a terminal; elsewhere a line on stderr every few seconds."""

    def __init__(self, total: int | None, what: str) -> None:
        self.what, self.total, self.done = what, total, 0
        self.started = self.said = time.monotonic()
        self.bar = None
        if sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=" lines", unit_scale=True, desc=what, file=sys.stderr)

    def update(self, line: int) -> None:
        step, self.done = line - self.done, max(self.done, line)
        if self.bar is not None:
            self.bar.update(max(step, 0))
        elif time.monotonic() - self.said >= QUIET_PROGRESS_EVERY:
            self.said = time.monotonic()
            rate = self.done / max(self.said - self.started, 1e-9)
            of = f"/{self.total:,}" if self.total else ""
            click.echo(f"{self.what}: {self.done:,}{of} lines ({rate:,.0f} lines/s)", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


ReportRow = tuple[int, EntryChange]


def write_report(path: str | None) -> tuple[Callable[[ReportRow], None], Callable[[], None]]:
    """(write one result, close): a CSV of line, input, hostname, status, reason."""
    if path is None:
        return (lambda _row: None), (lambda: None)
    try:
        out = open(path, "w", newline="", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise click.ClickException(f"report {shown_path(path)}: {reason_of(exc)}") from None
    writer = csv.writer(out)
    writer.writerow(["line", "input", "hostname", "status", "reason"])

    def write(row: ReportRow) -> None:
        line, change = row
        writer.writerow([line, change.input, change.hostname or "", change.status, change.message])

    return write, out.close


def run_file(
    path: str,
    what: str,
    change: Callable[[Iterable[tuple[str, str | None]]], Iterator[list[EntryChange]]],
    report_path: str | None,
) -> Summary:
    """Read `path`, apply `change` a batch at a time, show progress; the summary at the end."""
    started = time.monotonic()
    total = count_lines(path)
    skipped, summary = Skipped(), Summary()
    read = [0]  # lines read so far, skipped ones too
    # Every line read, in order: (line, None) for an item handed to `change`, whose result
    # comes back in order, or (line, its refusal) for a line the reader refused whole.
    lines: deque[tuple[int, EntryChange | None]] = deque()
    progress = Progress(total, what)
    write, close = write_report(report_path)

    def items(source: Iterator[ListItem]) -> Iterator[tuple[str, str | None]]:
        for item in source:
            if item.problem:
                lines.append((item.line, EntryChange(item.value, None, "refused", item.problem)))
                continue
            lines.append((item.line, None))
            yield item.value, item.note

    def tell(line: int, result: EntryChange) -> None:
        summary.add(result, line)
        write((line, result))

    def refused_before_next() -> None:
        while lines and lines[0][1] is not None:
            line, refusal = lines.popleft()
            tell(line, refusal)

    def counted(source: IO[str]) -> Iterator[str]:
        for text in source:
            read[0] += 1
            yield text

    try:
        with open_input(path) as data:
            for results in change(items(read_lines(counted(text_lines(data)), skipped))):
                for result in results:
                    refused_before_next()
                    line, _ = lines.popleft()
                    tell(line, result)
                progress.update(line if results else progress.done)
            refused_before_next()
    except (OSError, EOFError) as exc:  # a file cut short, a gzip stream broken midway
        applied = counted(progress.done, "line was", "lines were")
        done = f"; the first {applied} applied" if progress.done else ""
        raise click.ClickException(f"{shown_path(path)}: {reason_of(exc)}{done}") from None
    finally:
        progress.close()
        close()
    for text in summary.lines(skipped):
        click.echo(text, err=text.startswith("refused"))
    click.echo(rate_line(what, read[0], time.monotonic() - started))
    return summary


def rate_line(what: str, lines: int, seconds: float) -> str:
    """`seed: 1,000,000 lines in 9.8 s (102,041 lines/s)`: the whole run, file to
    committed rows (the line count for the ETA included)."""
    rate = lines / max(seconds, 1e-9)
    return f"{what}: {counted(lines, 'line')} in {seconds:.1f} s ({rate:,.0f} lines/s)"


def finish(summary: Summary) -> None:
    """Exit 1 only when something was refused."""
    sys.exit(1 if summary.refused else 0)
