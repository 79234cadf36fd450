"""Refusals say the right thing: a single label is called one, a plain-list line with
whitespace inside is refused whole (its line and why), and a summary's examples differ."""

from __future__ import annotations

import csv

from sqlalchemy import text

from crawler.core.blocklists import INNER_SPACE, ListItem, read_lines
from crawler.db.rules import deny_entries
from tests.cli import Ran, hostcrawl


def hosts(db) -> set[str]:
    with db.connect() as conn:
        return set(conn.execute(text("SELECT hostname FROM hosts")).scalars())


def test_a_single_label_seed_is_called_a_single_label(db):
    run = hostcrawl("seed", "intranet")
    assert run.returncode == 1, run
    assert run.stderr.startswith("error: 'intranet': a single label"), run.stderr
    assert "public suffix" not in run.stderr
    run = hostcrawl("seed", "com")  # a suffix the list knows is still called one
    assert run.returncode == 1 and "'com': a bare public suffix" in run.stderr, run.stderr
    assert hosts(db) == set()


def test_the_reader_refuses_a_plain_line_with_whitespace_inside_whole():
    text_lines = ["exa mple.test", "a.test\tb.test  # two?", "0.0.0.0 c.test d.test", "e.test"]
    assert list(read_lines(text_lines)) == [
        ListItem(1, "exa mple.test", problem=INNER_SPACE),
        ListItem(2, "a.test b.test", problem=INNER_SPACE),
        ListItem(3, "c.test"),  # a hosts-file line: whitespace after the address
        ListItem(3, "d.test"),
        ListItem(4, "e.test"),
    ]


LIST = "ok.test\nexa mple.test\n0.0.0.0 hosts.test\na.test\tb.test\n"


def refusals_of(run: Ran, report) -> list[dict]:
    assert run.returncode == 1, run.stderr  # something was refused
    assert "Traceback" not in run.stderr
    summary = [line for line in run.stderr.splitlines() if line.startswith("refused")]
    assert summary == [
        f"refused 2: {INNER_SPACE} (e.g. 'exa mple.test' on line 2, 'a.test b.test' on line 4)"
    ]
    with report.open() as f:
        return [row for row in csv.DictReader(f) if row["status"] == "refused"]


def test_seed_file_refuses_a_line_with_whitespace_inside_whole(db, tmp_path):
    path, report = tmp_path / "seeds.txt", tmp_path / "report.csv"
    path.write_text(LIST)
    refused = refusals_of(hostcrawl("seed", "-f", str(path), "--report", str(report)), report)
    assert hosts(db) == {"ok.test", "hosts.test"}  # neither mple.test nor a.test queued
    assert [(r["line"], r["input"], r["reason"]) for r in refused] == [
        ("2", "exa mple.test", INNER_SPACE),
        ("4", "a.test b.test", INNER_SPACE),
    ]


def test_no_follow_file_refuses_a_line_with_whitespace_inside_whole(db, tmp_path):
    path, report = tmp_path / "list.txt", tmp_path / "report.csv"
    path.write_text(LIST)
    command = ("no-follow", "add", "-f", str(path), "--report", str(report))
    refused = refusals_of(hostcrawl(*command), report)
    assert sorted(name for name, _ in deny_entries.deny_entries(db)) == ["hosts.test", "ok.test"]
    assert [r["line"] for r in refused] == ["2", "4"]


def test_the_summary_shows_distinct_examples(db, tmp_path):
    path = tmp_path / "seeds.txt"
    path.write_text("bad..test\nbad..test\nbad..test\nworse..test\nok.test\n")
    run = hostcrawl("seed", "-f", str(path))
    assert run.returncode == 1, run.stderr
    summary = [line for line in run.stderr.splitlines() if line.startswith("refused")]
    assert len(summary) == 1, run.stderr
    assert summary[0].startswith("refused 4: empty label")
    assert summary[0].endswith("(e.g. 'bad..test' on line 1, 'worse..test' on line 4)")
