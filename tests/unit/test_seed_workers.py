"""Seeding a file with a process per core (crawler.db.operators.bulk_pool): the same results as
checking in this process, in input order, and a bounded number of lines in flight
whatever the file's length (a zone file of 100 million lines in constant memory).

The database is stubbed where only the Python side is at stake: every staged name is
settled "queued" as a batch is written.
"""

from __future__ import annotations

import random
from functools import partial

import pytest
from sqlalchemy import text

from crawler.cli import bulkrun
from crawler.core.seed_checks import check_seeds
from crawler.db.operators import bulk, bulk_pool

WORKERS = 2


def mixed_names(n: int, seed: int = 3) -> list[str]:
    """Good names, upper case, URLs, bad names, private addresses and bare suffixes."""
    rng = random.Random(seed)
    kinds = [
        lambda i: f"h{i}.r{i % 97}.example.com",
        lambda i: f"WWW.H{i}.Example.ORG.",
        lambda i: f"https://user@h{i}.example.net:8443/path",
        lambda i: f"bad..{i}",
        lambda i: f"10.0.{i % 256}.1",
        lambda i: "co.uk",
        lambda i: f"bücher{i}.de",
        lambda i: f"h{i % 50}.again.test",  # repeats, in one chunk and across chunks
    ]
    return [rng.choice(kinds)(i) for i in range(n)]


def chunks_of(values: list[str], size: int) -> list[list[str]]:
    return [values[i : i + size] for i in range(0, len(values), size)]


def test_the_workers_check_each_chunk_as_this_process_does_in_order():
    values = mixed_names(3_000)
    check = partial(check_seeds, local=frozenset())

    pooled = list(bulk_pool.in_order(chunks_of(values, 500), check, WORKERS))

    assert [chunk for chunk, _ in pooled] == chunks_of(values, 500)
    assert [c for _, checked in pooled for c in checked] == check(values)


def test_a_list_of_one_chunk_starts_no_process(monkeypatch):
    def no_pool(*args, **kwargs):
        raise AssertionError("a process pool for one chunk")

    monkeypatch.setattr(bulk_pool, "ProcessPoolExecutor", no_pool)
    check = partial(check_seeds, local=frozenset())
    assert list(bulk_pool.in_order([["a.example.com"]], check, 8)) == [
        (["a.example.com"], [("a.example.com", "example.com")])
    ]


def test_the_workers_take_a_chunk_only_as_the_oldest_comes_back():
    taken = 0

    def chunks():
        nonlocal taken
        for chunk in chunks_of(mixed_names(4_000), 100):
            taken += 1
            yield chunk

    given = 0
    for _ in bulk_pool.in_order(chunks(), partial(check_seeds, local=frozenset()), WORKERS):
        given += 1
        assert taken - given <= WORKERS  # out at once: at most WORKERS + 1
    assert given == taken == 40


@pytest.fixture
def queued_as_written(monkeypatch):
    """bulk.seed without a database: each staged name is settled queued."""

    def write(engine, batch):
        for hostname in batch.first:
            if batch.results[batch.first[hostname]] is None:
                batch.settle(hostname, "queued")

    monkeypatch.setattr(bulk, "_write_seeds", write)
    monkeypatch.setattr(bulk, "analyze_after_bulk_write", lambda engine, n: None)


@pytest.mark.parametrize("workers", [0, WORKERS])
def test_lines_in_flight_stay_bounded_whatever_the_file_length(
    tmp_path, monkeypatch, queued_as_written, workers
):
    """The lines read but not yet told (summary and report) stay under a few batches: a
    file ten times as long holds no more of itself in memory."""
    size, lines = 500, 30_000
    path = tmp_path / "zone.txt"
    path.write_text("\n".join(f"n{i}.z{i % 1000}.com" for i in range(lines)) + "\n")
    read = 0
    ahead: list[int] = []
    text_lines = bulkrun.text_lines

    def counted(data):
        nonlocal read
        for line in text_lines(data):
            read += 1
            yield line

    def report(path):
        return (lambda row: ahead.append(read - row[0])), (lambda: None)

    monkeypatch.setattr(bulkrun, "text_lines", counted)
    monkeypatch.setattr(bulkrun, "write_report", report)
    change = partial(bulk.seed, None, size=size, workers=workers)

    summary = bulkrun.run_file(str(path), "seed", change, None)

    assert summary.counts == {"queued": lines} and len(ahead) == lines
    # Chunks out to the workers, batches being written and the one being read.
    bound = (WORKERS + 1 + bulk.SEED_WRITERS + 1 + 1) * size
    assert max(ahead) <= bound < lines / 5


def test_the_cli_seeds_with_the_workers_and_gives_every_line_its_result(
    tmp_path, monkeypatch, queued_as_written, capsys
):
    values = mixed_names(2_500)
    path = tmp_path / "list.txt"
    path.write_text("\n".join(values) + "\n")
    here = partial(bulk.seed, None, size=400, workers=0)
    pooled = partial(bulk.seed, None, size=400, workers=WORKERS)
    report_here, report_pooled = tmp_path / "here.csv", tmp_path / "pooled.csv"

    bulkrun.run_file(str(path), "seed", here, str(report_here))
    bulkrun.run_file(str(path), "seed", pooled, str(report_pooled))

    assert report_pooled.read_text() == report_here.read_text()
    assert len(report_here.read_text().splitlines()) == len(values) + 1  # and the header
    said = capsys.readouterr().out
    assert said.count(f"seed: {len(values):,} lines in ") == 2  # the last line: the rate


def test_a_list_seeded_by_the_workers_is_written_whole_on_each_deployment(either):
    """Checked in worker processes, written by the writers' threads, on one server and on
    a Citus cluster alike: each line's result, and a rerun says already."""
    names = [f"w{i}.r{i % 40}.com" for i in range(1_200)] + ["bad..name", "W0.R0.COM"]

    first = bulk.collect(bulk.seed(either, names, size=300, workers=WORKERS))
    again = bulk.collect(bulk.seed(either, names, size=300, workers=WORKERS))

    assert [c.status for c in first] == ["queued"] * 1_200 + ["refused", "already"]
    assert [c.hostname for c in first[:-2]] == names[:-2] and first[-1].hostname == "w0.r0.com"
    assert {c.status for c in again[:-2]} == {"already"} and again[-2].status == "refused"
    with either.connect() as conn:
        hosts = conn.execute(text("SELECT sum(hosts) FROM roots WHERE root LIKE 'r%.com'"))
        assert hosts.scalar_one() == 1_200
