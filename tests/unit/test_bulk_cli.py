"""Bulk lists through the CLI as an operator runs it: real files, the command in this
process (tests/cli.py) but where it is killed, which takes a real one.

The seeding counts are proven here at 100,000 lines; bench/bulk.py seeds 1M.
"""

from __future__ import annotations

import csv
import gzip
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from crawler.db.operators import bulk
from crawler.db.rules import deny_entries
from crawler.rules.live_deny_list import LiveDenyList
from tests.cli import Ran, hostcrawl
from tests.waiting import wait_until

DENY_ENTRIES = [f"deny{j}.test" for j in range(50)]


def count(db, sql: str) -> int:
    with db.connect() as conn:
        return conn.execute(text(sql)).scalar_one()


def seed_list() -> tuple[list[str], dict[str, int]]:
    """100,000 lines: new names (plain and rank,domain), repeats in another case, names
    under deny entries, bad names and comments, shuffled; and the counts they must give."""
    lines = [f"h{i}.s{i % 1000}.test" for i in range(70_000)]
    lines += [f"{i},r{i}.test" for i in range(5_000)]
    lines += [f"H{i}.S{i % 1000}.TEST" for i in range(10_000)]
    lines += [f"x{i}.deny{i % 50}.test" for i in range(5_000)]
    lines += [f"bad..{i}" for i in range(5_000)]
    lines += ["# a comment"] * 5_000
    random.Random(14).shuffle(lines)
    return lines, {"queued": 75_000, "already": 10_000, "refused": 10_000, "skipped": 5_000}


def test_seeding_100k_lines_gives_the_right_counts_summary_and_report(db, tmp_path):
    deny_entries.add_no_follow(db, DENY_ENTRIES)
    lines, expected = seed_list()
    path = tmp_path / "top.csv.gz"
    with gzip.open(path, "wt") as out:  # gzip, recognised by its magic bytes
        out.write("\n".join(lines) + "\n")
    report = tmp_path / "report.csv"

    run = hostcrawl("seed", "-f", str(path), "--report", str(report))

    assert run.returncode == 1, run.stderr  # something was refused
    assert "Traceback" not in run.stderr
    assert "done: 75,000 queued, 10,000 already there, 10,000 refused" in run.stdout
    assert "5,000 lines skipped (5,000 comment)" in run.stdout
    assert "refused 5,000: under a no_follow entry (e.g. 'x" in run.stderr
    assert "refused 5,000: empty label (e.g. 'bad.." in run.stderr
    assert count(db, "SELECT count(*) FROM queue WHERE status_reason IS NULL") == 75_000
    assert count(db, "SELECT count(*) FROM queue WHERE next_claim_at IS NOT NULL") == 75_000
    with report.open() as f:
        results = list(csv.DictReader(f))
    assert len(results) == len(lines) - expected["skipped"]
    refused = [r for r in results if r["status"] == "refused"]
    assert len(refused) == expected["refused"]
    for row in refused:  # every refused line, by its line number, with its reason
        assert lines[int(row["line"]) - 1].strip() == row["input"]
        assert row["reason"]
    assert sum(r["status"] == "queued" for r in results) == expected["queued"]


def test_only_refusals_make_the_exit_status_1(db, tmp_path):
    path = tmp_path / "fine.txt"
    path.write_text("a.test\nb.test\n# note\n")
    run = hostcrawl("seed", "-f", str(path))
    assert run.returncode == 0, run.stderr
    assert "done: 2 queued" in run.stdout
    again = hostcrawl("seed", "-f", "-")  # stdin, nothing to read
    assert again.returncode == 0, again.stderr


def test_a_kill_leaves_whole_batches_and_a_rerun_finishes(db, tmp_path):
    names = [f"k{i:06d}.test" for i in range(6 * bulk.BATCH)]
    path = tmp_path / "big.txt"
    path.write_text("\n".join(names) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "seed", "-f", str(path)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def first_batch_in() -> bool:
        assert proc.poll() is None, "the seeding ended before it could be killed"
        return count(db, "SELECT count(*) FROM hosts") > 0

    wait_until(first_batch_in, 120, "the first batch")
    workers = children(proc.pid)  # the processes checking names (crawler.db.operators.bulk_pool)
    assert workers
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    wait_until(lambda: not any(alive(pid) for pid in workers), 60, "the workers to end")

    stored = count(db, "SELECT count(*) FROM hosts")
    assert stored % bulk.BATCH == 0 and 0 < stored < len(names), stored
    with db.connect() as conn:
        first = {h for (h,) in conn.execute(text("SELECT hostname FROM hosts"))}
    # Whole batches: two writers, so the second may commit before the first.
    whole = [set(names[i : i + bulk.BATCH]) for i in range(0, len(names), bulk.BATCH)]
    assert first == set().union(*(batch for batch in whole if batch <= first))

    rerun = hostcrawl("seed", "-f", str(path))
    assert rerun.returncode == 0, rerun.stderr
    done = dict(
        (status, int(n.replace(",", "")))
        for n, status in (
            p.split(" ", 1) for p in rerun.stdout.split("done: ")[1].splitlines()[0].split(", ")
        )
    )
    assert done == {"already there": stored, "queued": len(names) - stored}


def children(pid: int) -> list[int]:
    """The processes `pid` started (from /proc: their parent's pid, the 4th field)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    """Running: neither gone nor a zombie waiting for its parent."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def block_list(kind: str, n: int) -> tuple[str, list[str]]:
    """A hosts file or an Adblock list of n name lines, plus lines that are no entry."""
    names = [f"ad{i}.{kind}.test" for i in range(n)]
    if kind == "hosts":
        head = ["# hosts", "127.0.0.1 localhost", "::1 ip6-localhost"]
        body = [f"0.0.0.0 {name}" for name in names]
    else:
        head = ["[Adblock Plus 2.0]", "! title", "@@||ok.example^", "example.org##.ad", "/ads/"]
        body = [f"||{name}^" for name in names]
    return "\n".join(head + body) + "\n", names


def test_a_hosts_file_and_an_adblock_list_of_100k_lines_reach_a_running_worker(db, tmp_path):
    worker = LiveDenyList(db)
    worker.load()
    try:
        assert worker.listener.ready.wait(10)
        for kind, skipped in (("hosts", "3 lines skipped"), ("adblock", "5 lines skipped")):
            data, names = block_list(kind, 100_000 - 5)
            path = tmp_path / f"{kind}.txt"
            path.write_text(data)
            run = hostcrawl("no-follow", "add", "-f", str(path), "--note", kind)
            assert run.returncode == 0, run.stderr
            # Its speed is bench/bulk.py's verdict; here the change log's one row per
            # batch (checked below) shows the names went in batches, not one by one.
            assert f"done: {len(names):,} added" in run.stdout
            assert skipped in run.stdout
            probe = f"www.{names[-1]}"
            # the worker reloaded after the batches
            wait_until(lambda p=probe: worker.denial(p), what=f"{kind}: the worker to hear")
        total = count(db, "SELECT count(*) FROM queue WHERE status_reason = 'no_follow'")
        assert total == 2 * (100_000 - 5)
        assert count(db, "SELECT count(*) FROM change_log") == 2 * -(-(100_000 - 5) // bulk.BATCH)
    finally:
        worker.stop()


def test_unblock_and_remove_from_files(db, tmp_path):
    for name in ("t1.test", "t2.test"):
        deny_entries.upsert_blocked(db, name, "a trap")
    deny_entries.add_no_follow(db, ["n1.test"])
    blocked = tmp_path / "blocked.txt"
    blocked.write_text("t1.test\n# not this one\nt3.test\n")
    run = hostcrawl("blocked", "unblock", "-f", str(blocked), "--note", "false positives")
    assert run.returncode == 0, run.stderr
    assert "done: 1 unblocked, 1 not there" in run.stdout
    assert "1 line skipped (1 comment)" in run.stdout
    listed = tmp_path / "nf.txt"
    listed.write_text("||n1.test^\n")
    run = hostcrawl("no-follow", "remove", "-f", str(listed))
    assert run.returncode == 0 and "done: 1 removed" in run.stdout, run
    rules = count(db, "SELECT string_agg(hostname, ',') FROM queue WHERE status_reason IS NOT NULL")
    assert rules == "t2.test"
    both = hostcrawl("no-follow", "add", "x.test", "-f", str(listed))
    assert both.returncode == 2 and both.stderr.startswith("error: give names or -f FILE")


FILE_COMMANDS = [
    ("seed", "-f"),
    ("no-follow", "add", "-f"),
    ("no-follow", "remove", "-f"),
    ("blocked", "unblock", "-f"),
]


def one_line_error(run: Ran, status: int = 1) -> str:
    """The one `error: ...` line of a failed command (no traceback)."""
    assert run.returncode == status, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    return lines[0]


def test_a_missing_unreadable_or_binary_file_is_one_line(db, tmp_path):
    missing, folder = tmp_path / "nowhere.txt", tmp_path / "folder"
    folder.mkdir()
    binary = tmp_path / "program"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 64 + b"strings.example\n" * 10)
    packed = tmp_path / "program.gz"
    packed.write_bytes(gzip.compress(binary.read_bytes()))
    for command in FILE_COMMANDS:
        error = one_line_error(hostcrawl(*command, str(missing)))
        assert error == f"error: {missing}: no such file or directory"
        folder_error = one_line_error(hostcrawl(*command, str(folder)), status=2)  # usage
        assert f"'{folder}' is a directory" in folder_error
        for path in (binary, packed):
            error = one_line_error(hostcrawl(*command, str(path)))
            assert error == f"error: {path}: not a text list (binary data)"
    assert count(db, "SELECT count(*) FROM hosts") == 0  # nothing read from the binary


def test_an_unwritable_report_is_one_line(db, tmp_path):
    names = tmp_path / "names.txt"
    names.write_text("a.test\n")
    report = tmp_path / "no-such-folder" / "report.csv"
    error = one_line_error(hostcrawl("seed", "-f", str(names), "--report", str(report)))
    assert error == f"error: report {report}: no such file or directory"


def test_a_refused_huge_line_is_echoed_cut_short(db, tmp_path):
    path = tmp_path / "huge.txt"
    path.write_text("ok.test\n" + "x" * 10_000_000 + "\n")
    run = hostcrawl("seed", "-f", str(path))
    assert run.returncode == 1
    refused = [line for line in run.stderr.splitlines() if line.startswith("refused")]
    assert len(refused) == 1 and "10,000,000 characters" in refused[0], run.stderr
    assert len(run.stderr) < 1000 and len(run.stdout) < 1000
    one = one_line_error(hostcrawl("seed", "y" * 300 + ".test"))
    assert len(one) < 200 and "305 characters" in one


def test_a_line_of_several_names_is_refused_whole(db, tmp_path):
    path = tmp_path / "one-line.txt"
    path.write_text(" ".join(f"n{i}.test" for i in range(20_000)) + "\n")
    run = hostcrawl("seed", "-f", str(path))
    assert run.returncode == 1, run.stderr
    assert "done: 1 refused" in run.stdout
    refused = [line for line in run.stderr.splitlines() if line.startswith("refused")]
    assert len(refused) == 1 and "whitespace inside a name" in refused[0], run.stderr
    assert "on line 1" in refused[0] and len(refused[0]) < 200  # the line quoted cut short
    assert count(db, "SELECT count(*) FROM hosts") == 0
