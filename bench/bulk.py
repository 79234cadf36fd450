"""Bulk data in and out : seeding 1M names, a 100k block list, exporting 1M hosts.

Targets: seeding >= 100,000 lines/s from the file to committed rows on a fresh database,
and >= 0.7 of that rate into a database of 10M hosts (issue 50); a block list of
100,000 lines in <= 10 s; export in constant memory, its row count equal to the
panel's for the same filter.

A throwaway embedded Postgres (deleted at exit), one run:

1. A generated list of 1,000,000 lines (seeded RNG, so every run reads the same):
   94% new names (plain, some as `rank,domain`), 3% repeats in another case, 2%
   names under 200 no_follow entries, 1% bad names. Baselines, measured first on the
   same database: COPY of the same lines, as they are, into a scratch table with one
   text column and no index (the cost of moving the bytes into Postgres at all); and
   COPY of the valid names, normalized beforehand, with their roots and a date, into
   scratch copies of hosts and roots (the cost of storing the rows at all). Then the
   file is seeded by the command's own code, in this process (crawler.cli.bulkrun.run_file over
   crawler.db.operators.bulk.seed with a worker process per core, as `hostcrawl seed -f`: the line
   count, the reader, the progress, the summary), timed from opening the file to the
   last batch committed; its counts are checked against the generator's.
   `--into-hosts N` (10,000,000 for the issue's figure) then seeds a list made the same
   way into a second database first loaded with N hosts at COPY speed
   (bench/_growth_data.py, as growth.py builds its 10M) and prints its rate and its
   ratio to the fresh one.
2. A hosts file of 100,000 lines through crawler.db.rules.deny_entries.add_no_follow_batches().
3. `hostcrawl hosts export -o FILE` of every host (a real process, its peak RSS
   from /proc/PID/status VmHWM), and the same with --root (a few hundred rows): constant memory
   means the two peaks are about equal. Its row count is compared with the count of
   the panel's query for the same filter (HostFilter, the visible() deny rule).
4. First, on a database of its own: stale statistics (bench/_stale_statistics.py).
   300,000 queued hosts and a 100,000-line block list with autovacuum off and nothing
   analyzed after the list; the export and the main list then take at most 1.5x what
   they take once the tables are analyzed. Then the same on a Citus cluster (a
   coordinator and two workers, `make citus`): there the plans are the workers', made
   from their shards' statistics.

`--stale-only` runs step 4 alone (both deployments); `--hosts N --block-list M` size it
(to check it runs).
`--seed-only` runs step 1 alone; `--lines N` sizes it (the figure is at 1,000,000).
The machine's load changes these figures a lot: run it alone.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _stale_statistics
from _common import machine_line, registered_domain, start_database, subdomain_of, verdict
from sqlalchemy import Engine, create_engine, func, select, text

from crawler.cli.bulkrun import run_file
from crawler.core.blocklists import read_lines
from crawler.core.hostnames import HostnameError, is_public_suffix, normalize, root
from crawler.db.deployments import deployment_of
from crawler.db.operators import bulk
from crawler.db.operators.export import export_statement
from crawler.db.operators.host_filter import HostFilter
from crawler.db.rules import deny_entries

LINES = 1_000_000
BLOCK_LIST = 100_000
ENTRIES = 200
SEED_TARGET = 100_000  # lines/s, fresh database (issue 50, item 4)
BIG_RATIO = 0.7  # into a database of 10M hosts, at least this part of the fresh rate
BLOCK_LIST_SECONDS = 10.0


def generate(path: Path, rng: random.Random, size: int = LINES) -> dict[str, int]:
    """The seed list of `size` lines; returns the counts seeding it must give."""
    entries = [f"deny{j}.{registered_domain(rng)}" for j in range(ENTRIES)]
    seen: set[str] = set()
    accepted: list[str] = []
    lines, counts = [], {"queued": 0, "already": 0, "refused": 0}
    while len(lines) < size:
        kind = rng.random()
        if kind < 0.03 and accepted:
            lines.append(rng.choice(accepted).upper())
            counts["already"] += 1
        elif kind < 0.05:
            lines.append(subdomain_of(rng.choice(entries), rng, 1))
            counts["refused"] += 1
        elif kind < 0.06:
            lines.append(f"bad..{rng.randrange(10**9)}")
            counts["refused"] += 1
        else:
            name = subdomain_of(registered_domain(rng), rng, rng.randint(0, 2))
            if name in seen or is_public_suffix(name):  # `roma.it`: a suffix, refused
                continue
            seen.add(name)
            accepted.append(name)
            lines.append(f"{len(lines)},{name}" if kind > 0.9 else name)
            counts["queued"] += 1
    path.write_text("\n".join(lines) + "\n")
    counts["entries"] = entries  # type: ignore[assignment]
    return counts


def raw_copy(engine, path: Path) -> float:
    """Seconds to COPY the file's lines into a scratch table (one text column, no index)."""
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS scratch; CREATE TABLE scratch (line text)"))
    start = time.perf_counter()
    with engine.begin() as conn, path.open("rb") as data:
        cursor = conn.connection.driver_connection.cursor()
        with cursor.copy("COPY scratch (line) FROM STDIN") as copy:
            while chunk := data.read(1 << 20):
                copy.write(chunk)
    took = time.perf_counter() - start
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE scratch"))
    return took


def indexed_copy(engine, path: Path) -> float:
    """Seconds to COPY the file's valid names (normalized beforehand, not timed) with their
    roots, due now, into a scratch copy of hosts (one row a host, as seeding writes it,
    migration 0030), and their roots with their counts into one of roots: the same columns
    and indexes, but no conflict test and no check of any kind. What the rows cost to
    store."""
    rows = {}
    with path.open(encoding="utf-8") as lines:
        for item in read_lines(lines):
            try:
                name = normalize(item.value)
            except HostnameError:
                continue
            rows.setdefault(name, root(name))
    due = time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime())
    data = "".join(f"{h}\t{r}\t{due}\n" for h, r in sorted(rows.items())).encode()
    counts: dict[str, int] = {}
    for r in rows.values():
        counts[r] = counts.get(r, 0) + 1
    roots = "".join(f"{r}\t{n}\n" for r, n in sorted(counts.items())).encode()
    with engine.begin() as conn:
        for table in ("hosts", "roots"):
            conn.execute(text(f"CREATE TABLE scratch_{table} (LIKE {table} INCLUDING ALL)"))
    start = time.perf_counter()
    with engine.begin() as conn:
        cursor = conn.connection.driver_connection.cursor()
        for table, columns, payload in (
            ("scratch_hosts", "hostname, root, next_claim_at", data),
            ("scratch_roots", "root, hosts", roots),
        ):
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                copy.write(payload)
    took = time.perf_counter() - start
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE scratch_hosts, scratch_roots"))
    return took


def seed_file(engine, path: Path) -> tuple[float, dict[str, int]]:
    """Seconds to seed the file as `hostcrawl seed -f FILE` does (its run_file, in this
    process: no interpreter start), and the result counts; its summary is printed."""
    said = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        workers = os.cpu_count() or 1  # as `hostcrawl seed -f` checks names
        summary = run_file(
            str(path), "seed", lambda items: bulk.seed(engine, items, workers=workers), None
        )
    took = time.perf_counter() - start
    for line in said.getvalue().splitlines():
        print(f"# {line}")
    return took, dict(summary.counts)


def block_list(engine, rng: random.Random) -> float:
    """Seconds for a hosts file of BLOCK_LIST lines to become no_follow entries."""
    lines = [f"0.0.0.0 {subdomain_of(registered_domain(rng), rng, 1)}" for _ in range(BLOCK_LIST)]
    start = time.perf_counter()
    items = ((item.value, item.note) for item in read_lines(lines))
    batches = deny_entries.add_no_follow_batches(engine, items)
    added = sum(c.status == "added" for batch in batches for c in batch)
    took = time.perf_counter() - start
    print(f"# block list: {added:,} of {BLOCK_LIST:,} lines added")
    return took


def export_run(*args: str) -> tuple[float, int, int]:
    """(seconds, rows, peak RSS in KiB) of `hostcrawl hosts export` into a file.

    The peak is the child's own VmHWM, read from /proc while it runs: wait4's
    ru_maxrss would also count this (big) process, whose pages the child had
    between fork and exec.
    """
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "hosts", "export", "-o", out.name, *args]
        )
        peak = 0
        while proc.poll() is None:
            peak = max(peak, vm_hwm(proc.pid))
            time.sleep(0.05)
        took = time.perf_counter() - start
        assert proc.returncode == 0, "export failed"
        rows = sum(1 for _ in open(out.name, "rb")) - 1  # noqa: SIM115 (the header)
    return took, rows, peak


def vm_hwm(pid: int) -> int:
    """The process's peak resident set so far, in KiB (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def panel_count(engine, flt: HostFilter) -> int:
    with engine.connect() as conn:
        listed = export_statement(flt, deployment_of(conn)).subquery()
        counted = select(func.count()).select_from(listed)
        return conn.execute(counted).scalar_one()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stale-only", action="store_true", help="only the stale-statistics run")
    parser.add_argument("--hosts", type=int, default=300_000, help="hosts queued (stale run)")
    parser.add_argument("--block-list", type=int, default=100_000, help="lines (stale run)")
    parser.add_argument("--seed-only", action="store_true", help="only the seed of a list")
    parser.add_argument("--lines", type=int, default=LINES, help="lines of the seed list")
    parser.add_argument(
        "--into-hosts", type=int, default=0, help="then seed into a database of N hosts (10M)"
    )
    args = parser.parse_args()
    print(machine_line())
    stale_ok = True
    if not args.seed_only:
        stale_ok = _stale_statistics.run(start_database(), args.hosts, args.block_list)
        stale_ok &= stale_on_the_cluster(args.hosts, args.block_list)
    if args.stale_only:
        return 0 if stale_ok else 1
    seed_ok, engine, rng, fresh_rate = seed_run(args.lines)
    if args.into_hosts:
        seed_ok &= seed_into_hosts(args.lines, args.into_hosts, fresh_rate)
    if args.seed_only:
        return 0 if seed_ok else 1
    return 0 if rest_runs(engine, rng) and seed_ok and stale_ok else 1


def stale_on_the_cluster(hosts: int, block_list: int) -> bool:
    """Step 4 on a Citus cluster of a coordinator and two workers (bench/_citus_nodes.py;
    it starts them with tests/citus_cluster.py, so the tree's root goes on the path)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _citus_nodes import start_cluster

    return _stale_statistics.run(start_cluster().url, hosts, block_list, "cluster")


def seed_run(lines: int) -> tuple[bool, Engine, random.Random, float]:
    """Step 1: the seed of a generated list and its two baselines; (its verdict, the
    database it seeded, the generator where it stopped, its rate) for the steps after it."""
    url = start_database()
    engine = create_engine(url)
    rng = random.Random(14)
    workdir = Path(tempfile.mkdtemp(prefix="hostcrawl-bulk-"))
    path = workdir / "seeds.txt"
    expected = generate(path, rng, lines)
    entries = expected.pop("entries")
    deny_entries.add_no_follow(engine, entries)  # type: ignore[arg-type]

    copy_s = raw_copy(engine, path)
    indexed_s = indexed_copy(engine, path)
    seed_s, counts = seed_file(engine, path)
    seed_rate, copy_rate, indexed_rate = lines / seed_s, lines / copy_s, lines / indexed_s
    ok_counts = counts == expected
    ok = seed_rate >= SEED_TARGET and ok_counts
    counts_word = verdict(
        ok_counts, "seed counts", "as expected" if ok_counts else "differ", "as generated"
    )
    print(f"# seed counts {counts} expected {expected}: {counts_word}")
    print(
        f"# baseline, raw COPY of the lines into one unindexed column: {copy_rate:,.0f}"
        f" lines/s ({copy_s:.1f} s); seed/that {seed_rate / copy_rate:.3f}"
    )
    seed_word = verdict(
        ok,
        "seed rate",
        f"{seed_rate:,.0f}/s x{seed_rate / indexed_rate:.2f}",
        f">= {SEED_TARGET:,}/s",
    )
    print(
        f"seed: {seed_rate:,.0f} names/s ({lines:,} lines in {seed_s:.1f} s, file to committed"
        f" rows); baseline COPY of the normalized names into scratch hosts and roots"
        f" (same indexes, no conflict test): {indexed_rate:,.0f} lines/s"
        f" ({indexed_s:.1f} s); ratio {seed_rate / indexed_rate:.2f} (target >= {SEED_TARGET:,}"
        f" names/s): {seed_word}"
    )
    return ok, engine, rng, seed_rate


def seed_into_hosts(lines: int, hosts: int, fresh_rate: float) -> bool:
    """The same kind of list seeded into a database first loaded with `hosts` hosts (at
    COPY speed, bench/_growth_data.py: names of another shape, so every seed is new)."""
    from _growth_data import SUBS_PER_ROOT, load

    fresh_url = os.environ["DATABASE_URL"]
    engine = create_engine(start_database("hostcrawl-bench-seedbig-"))
    # start_database points DATABASE_URL here: the export of step 3 (a child process)
    # reads the fresh database step 1 seeded, as the panel's count does.
    os.environ["DATABASE_URL"] = fresh_url
    roots = hosts // (SUBS_PER_ROOT + 1)
    took = load(engine, (0, roots), (0, 0), entries=False)
    print(f"# a database of {roots * (SUBS_PER_ROOT + 1):,} hosts: {took}")
    path = Path(tempfile.mkdtemp(prefix="hostcrawl-bulk-")) / "seeds.txt"
    expected = generate(path, random.Random(15), lines)
    deny_entries.add_no_follow(engine, expected.pop("entries"))  # type: ignore[arg-type]
    seed_s, counts = seed_file(engine, path)
    rate = lines / seed_s
    ok = counts == expected and rate >= BIG_RATIO * fresh_rate
    word = verdict(ok, "seed rate into 10M hosts", f"x{rate / fresh_rate:.2f}", f">= x{BIG_RATIO}")
    print(
        f"seed into {hosts:,} hosts: {rate:,.0f} lines/s ({lines:,} lines in {seed_s:.1f} s);"
        f" {rate / fresh_rate:.2f} of the fresh rate {fresh_rate:,.0f}/s (target >= {BIG_RATIO},"
        f" counts {'as generated' if counts == expected else 'differ'}): {word}"
    )
    return ok


def rest_runs(engine: Engine, rng: random.Random) -> bool:
    """Steps 2 and 3, on the database step 1 seeded: the block list and the export."""
    nf_s = block_list(engine, rng)
    nf_ok = nf_s <= BLOCK_LIST_SECONDS
    no_follow_word = verdict(
        nf_ok, "no_follow block list", f"{nf_s:.1f} s", f"<= {BLOCK_LIST_SECONDS:.0f} s"
    )
    print(
        f"no_follow: {BLOCK_LIST / nf_s:,.0f} entries/s ({BLOCK_LIST:,} hosts-file lines in"
        f" {nf_s:.1f} s; target <= {BLOCK_LIST_SECONDS:.0f} s): {no_follow_word}"
    )

    with engine.begin() as conn:
        conn.execute(text("ANALYZE hosts"))
    all_s, all_rows, all_rss = export_run()
    with engine.connect() as conn:
        small_root = conn.execute(
            text("SELECT root FROM hosts GROUP BY root ORDER BY count(*) DESC LIMIT 1")
        ).scalar_one()
    _, small_rows, small_rss = export_run("--root", small_root)
    same = all_rows == panel_count(engine, HostFilter())
    same = same and small_rows == panel_count(engine, HostFilter(root=small_root))
    flat = all_rss <= 1.5 * small_rss
    same_word = verdict(flat, "export memory", f"x{all_rss / small_rss:.2f}", "<= x1.5")
    print(
        f"export: {all_rows / all_s:,.0f} rows/s ({all_rows:,} rows in {all_s:.1f} s);"
        f" peak RSS {all_rss / 1024:.0f} MiB vs {small_rss / 1024:.0f} MiB for {small_rows:,}"
        f" rows (constant memory: {same_word}); rows = the panel's count for the same"
        f" filter: {verdict(same, 'export rows = panel count', all_rows, 'equal')}"
    )
    return nf_ok and flat and same


if __name__ == "__main__":
    sys.exit(main())
