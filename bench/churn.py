"""Sustained churn on one Postgres: claim -> finish -> save new links, for 20+ minutes.

Two phases, each on a fresh throwaway embedded Postgres loaded with 1,000,000
hosts (bench/_growth_data.py; every routable row made due at a random past date,
so claims walk the whole table):

- **before**: migration 0007_churn's table settings reset to Postgres' defaults
  (autovacuum at 20% dead rows, fillfactor 100), BEFORE_MINUTES long;
- **after**: the settings as migrated, AFTER_MINUTES long (and on until
  MIN_ROW_UPDATES rows were updated, at most CAP_MINUTES).

In each, WORKERS processes loop as crawler workers do, paced to RATE hosts/s
in all (4 x the crawl figure of bench/crawl.py): `claims.claim_polite` 100 hosts
(the crawler's claim, per-root rules included);
`queue.finish_many` them (70% OK, 20% NXDOMAIN, 10% timeout; 8 links a page,
one in NEW_EVERY pages a new host); `trap_windows.record_outcomes` of the batch
(the trap windows, as BlacklistMiddleware writes them). Recrawl after
RECRAWL_AFTER, so rows come round again. Each worker also runs the scheduled prune
(retention.scheduled, under its advisory lock) every PRUNE_INTERVAL, and root_claims
starts with the retention's 65 minutes of rows at the churn's rate, so retention, not
the run's shortness, is what keeps it flat. Every minute the main process samples
`pg_stat_user_tables` (live/dead tuples, autovacuum runs, updates and HOT
updates), table and index sizes, and the claims' latency in that minute.

During the after phase a real crawler (`scrapy crawl hosts`, one process,
its own database) crawls a fakeweb graph that never drains (RECRAWL_AFTER=60 s)
and its RSS is sampled each minute with psutil: it shares the 2 cores with
the churn (so both go slower than alone).

Verdicts (bench/_churn_verdicts.py; after phase, from minute WARMUP on), given only
on the volume the benchmark is for, >= MIN_ROW_UPDATES row updates in >= MIN_MINUTES
(a shorter run prints its figures and no verdict; a full-length one that misses the
volume fails): dead tuples of hosts (the queue is its columns since migration 0030)
stay under 5% of its rows; bytes per
row (table + indexes) of every table that grows, and of root_claims (it starts full,
with the retention's 65 minutes), grow < 10% (rows may come, bloat may not); claim
latency median of the last 5 minutes <= 1.5 x that of minutes WARMUP..WARMUP+5; the
crawler and the churn workers run to the end (an exit fails the run); the crawler's
RSS at the end <= 1.1 x at WARMUP. `--minutes N` / `--before-minutes N` shorten it
(for trying it out: no verdict), `--no-crawl` skips the crawler.
"""

from __future__ import annotations

import atexit
import contextlib
import math
import multiprocessing as mp
import os
import queue as queue_module
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_ROOT))  # this tree's crawler, whichever is installed

from _churn_verdicts import MIN_MINUTES, MIN_ROW_UPDATES, verdicts  # noqa: E402
from _common import NO_VERDICT, machine_line, start_database  # noqa: E402
from _growth_data import SUBS_PER_ROOT, host_name, load, root_name  # noqa: E402
from sqlalchemy import create_engine, text  # noqa: E402

from crawler.core import config  # noqa: E402

ROOTS = 200_000
WORKERS = 4
BATCH = 100
RATE = 4 * 256  # hosts/s: 4 workers at bench/crawl.py's 256 pages/s
LINKS = 8
NEW_EVERY = 20
RECRAWL_AFTER = timedelta(minutes=10)
BEFORE_MINUTES = 6
AFTER_MINUTES = MIN_MINUTES
CAP_MINUTES = 26
TABLES = ("hosts", "trap_window", "roots", "root_claims")  # in each minute's line
TRAP_WINDOW = config.setting("TRAP_WINDOW").default  # the crawl's window, as deployed
# Deployed workers prune hourly, so root_claims swings between 65 and 125 minutes of
# rows; pruning each minute here lets a 20-minute run see whether retention holds it flat.
PRUNE_INTERVAL = 60
CLAIMS_KEPT = config.setting("ROOT_CLAIMS_RETENTION_MINUTES").default
# root_claims as the churn's own rate leaves it after CLAIMS_KEPT minutes: one row per
# root and minute, each of the hosts' roots claimed in a minute with this chance.
BACKFILL_SHARE = 1 - math.exp(-RATE * 60 / ROOTS)
OUTCOMES = ["OK"] * 7 + ["DNS_NXDOMAIN"] * 2 + ["TCP_TIMEOUT"]

STATS = """
    SELECT relname, n_live_tup, n_dead_tup, autovacuum_count, n_tup_upd, n_tup_hot_upd,
           n_tup_ins, n_tup_del, pg_table_size(relid) AS heap, pg_indexes_size(relid) AS ix
      FROM pg_stat_user_tables
"""


# -- the workers ------------------------------------------------------------------------------


def worker(url: str, number: int, stop, latencies) -> None:
    """One crawler worker's database work, paced to RATE / WORKERS hosts per second."""
    sys.path.insert(0, str(PROJECT_ROOT))
    from crawler.core.links import FilteredLinks
    from crawler.db.crawl import claims, queue, retention
    from crawler.db.rules import trap_windows

    engine = create_engine(url, pool_size=2)
    rng = random.Random(number)
    name = f"churn-{number}"
    pace = BATCH / (RATE / WORKERS)
    new = 0
    pending: list[tuple[float, float]] = []
    next_at = next_prune = time.monotonic()
    while not stop.is_set():
        # as each crawler worker does (crawler/extensions/pruning.py)
        if time.monotonic() >= next_prune:
            retention.scheduled(engine, retention.Rules())
            next_prune += PRUNE_INTERVAL
        started = time.perf_counter()
        hosts = claims.claim_polite(engine, BATCH, name).hosts
        pending.append((time.time(), time.perf_counter() - started))
        crawled = []
        for host in hosts:
            links = {host_name(rng.randrange(ROOTS), rng.randrange(SUBS_PER_ROOT + 1))}
            links |= {host_name(rng.randrange(ROOTS), 1) for _ in range(LINKS - 2)}
            if rng.randrange(NEW_EVERY) == 0:
                new += 1
                links.add(f"n{number}-{new}.{root_name(rng.randrange(ROOTS))}")
            outcome = rng.choice(OUTCOMES)
            result = queue.CrawlResult(outcome, 200 if outcome == "OK" else None)
            page = FilteredLinks.of(links, LINKS) if outcome == "OK" else None
            crawled.append(queue.Crawled(host, result, page or FilteredLinks(), RECRAWL_AFTER))
        if crawled:
            queue.finish_many(engine, crawled)
            outcomes = [(c.hostname, c.result.outcome) for c in crawled]
            trap_windows.record_outcomes(engine, outcomes, TRAP_WINDOW)
        if len(pending) >= 20:
            latencies.put(pending)
            pending = []
        next_at += pace
        time.sleep(max(0.0, next_at - time.monotonic()))
    latencies.put(pending)
    engine.dispose()


# -- the crawler whose RSS is watched ---------------------------------------------------------


def start_crawler(work: Path) -> tuple[subprocess.Popen, object, Path]:
    """A `scrapy crawl hosts` on a fakeweb graph that never drains; its process, engine, log."""
    sys.path.insert(0, str(PROJECT_ROOT))
    from crawler.db.crawl import queue
    from tests.fakeweb import FakeWeb, World

    # fakeweb's names (.test) can exist for the seed and the crawler: without it the
    # crawler refused every name it found and crawled nothing (2026-12-04).
    os.environ["LOCAL_SUFFIXES"] = "test"
    url = start_database("hostcrawl-bench-churn-crawl-")
    world = World(seed=20261201)
    # 50 roots: the per-root budget (ROOT_BUDGET, an hour's hosts a root) never stops it.
    roots = [f"churn-{i}.test" for i in range(50)]
    names = world.graph(5_000, roots=roots, links_per_page=6)
    web = FakeWeb(world, workdir=work / "fakeweb").start()
    atexit.register(web.stop)
    engine = create_engine(url, pool_size=1)
    queue.seed(engine, [names[0]])
    settings = {**web.scrapy_settings("http"), "RECRAWL_AFTER": 60, "LOG_LEVEL": "WARNING"}
    command = [sys.executable, "-m", "scrapy", "crawl", "hosts"]
    for key, value in settings.items():
        command += ["-s", f"{key}={value}"]
    log_path = work / "crawler.log"
    log = open(log_path, "w")  # noqa: SIM115 (open for the child's lifetime)
    proc = subprocess.Popen(
        command,
        cwd=PROJECT_ROOT,
        env={**os.environ, "DATABASE_URL": url},
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    atexit.register(stop_process, proc)
    return proc, engine, log_path


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def crawler_sample(proc, engine, log_path: Path) -> dict:
    """RSS in MB, pages crawled so far, and exit code (None: running) of the crawler."""
    import psutil

    exit_code = proc.poll()
    rss = psutil.Process(proc.pid).memory_info().rss / 2**20 if exit_code is None else 0.0
    with engine.connect() as conn:
        pages = conn.execute(text("SELECT coalesce(sum(crawl_count), 0) FROM hosts")).scalar()
    return {"rss": rss, "pages": int(pages), "crawler_exit": exit_code}


# -- one phase --------------------------------------------------------------------------------


def prepare(url: str, defaults: bool) -> None:
    """Load the hosts (settings reset first for the before phase); every routable row due
    at a random past date."""
    sys.path.insert(0, str(PROJECT_ROOT / "migrations" / "versions"))
    engine = create_engine(url)
    if defaults:
        churn = __import__("0007_churn")
        with engine.begin() as conn:
            for table, options in churn.SETTINGS.items():
                if table == "queue":  # a view of hosts since migration 0030: hosts' reset
                    continue
                conn.execute(text(f"ALTER TABLE {table} RESET ({', '.join(options)})"))
    print(
        f"# loaded {ROOTS * (SUBS_PER_ROOT + 1):,} hosts: {load(engine, (0, ROOTS), (0, 0), True)}"
    )
    with engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() - random() * interval '30 days'"
                " WHERE status_reason IS NULL AND denied_by IS NULL"
            )
        )
        conn.execute(text("UPDATE roots SET next_due_at = now() - interval '30 days'"))
        conn.execute(
            text(
                "INSERT INTO root_claims (root, minute, claimed)"
                " SELECT root, date_trunc('minute', now()) - make_interval(mins => m), 1"
                "   FROM (SELECT DISTINCT root FROM hosts) AS claimed,"
                "        generate_series(1, :kept) AS m"
                "  WHERE random() < :share"
            ),
            {"kept": CLAIMS_KEPT, "share": BACKFILL_SHARE},
        )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE hosts"))
        conn.execute(text("VACUUM ANALYZE root_claims"))
    engine.dispose()


def sample(engine) -> dict[str, dict]:
    """Every table's statistics and row count (so every table that grows is seen)."""
    with engine.connect() as conn:
        rows = conn.execute(text(STATS)).mappings().all()
        counts = {
            r["relname"]: conn.execute(text(f'SELECT count(*) FROM "{r["relname"]}"')).scalar()
            for r in rows
        }
    return {r["relname"]: {**r, "rows": counts[r["relname"]]} for r in rows}


def total(first: dict, now: dict, *columns: str) -> int:
    """Sum of the columns' growth since `first` over every table."""
    return sum(now[t][c] - first.get(t, {}).get(c, 0) for t in now for c in columns)


def run_phase(label: str, url: str, minutes: float, crawler=None) -> list[dict]:
    """Run the workers; one sample a minute (printed as it comes); the samples."""
    engine = create_engine(url, pool_size=1)
    ctx = mp.get_context("spawn")
    latencies = ctx.Queue()
    start = time.time()
    cap = max(CAP_MINUTES, minutes) if minutes >= MIN_MINUTES else minutes
    stop = ctx.Event()
    procs = [ctx.Process(target=worker, args=(url, i, stop, latencies)) for i in range(WORKERS)]
    for p in procs:
        p.start()
    first = sample(engine)
    samples, claimed, minute = [], [], 0
    while True:
        minute += 1
        deadline = start + minute * 60
        while time.time() < deadline:
            with contextlib.suppress(queue_module.Empty):
                claimed += latencies.get(timeout=max(0.1, deadline - time.time()))
        now = sample(engine)
        recent = [lat for at, lat in claimed if at > deadline - 60]
        s = summarize(minute, first, now, recent, crawler)
        s["workers_exited"] = [p.exitcode for p in procs if p.exitcode is not None]
        samples.append(s)
        print(f"{label} {line(s)}", flush=True)
        done = minute >= minutes and (minutes < MIN_MINUTES or s["updates"] >= MIN_ROW_UPDATES)
        if done or minute >= cap:
            break
    stop.set()
    for p in procs:
        while p.is_alive():  # drain, or a worker blocks putting its last latencies
            with contextlib.suppress(Exception):
                latencies.get(timeout=0.5)
        p.join()
    engine.dispose()
    return samples


def summarize(minute: int, first: dict, now: dict, recent: list[float], crawler) -> dict:
    h = now["hosts"]
    upd = h["n_tup_upd"] - first["hosts"]["n_tup_upd"]
    hot = h["n_tup_hot_upd"] - first["hosts"]["n_tup_hot_upd"]
    s = {
        "minute": minute,
        "writes": total(first, now, "n_tup_upd", "n_tup_ins", "n_tup_del"),
        "updates": total(first, now, "n_tup_upd"),  # every table's: the volume judged
        "host_updates": upd,  # of hosts: the rows the crawl itself rewrites
        "dead": {t: now[t]["n_dead_tup"] for t in TABLES},
        "rows": {t: now[t]["rows"] for t in now},
        "bytes": {t: now[t]["heap"] + now[t]["ix"] for t in now},
        "mb": {t: (now[t]["heap"] + now[t]["ix"]) / 2**20 for t in TABLES},
        "heap_mb": {t: now[t]["heap"] / 2**20 for t in TABLES},
        "autovacuum": {t: now[t]["autovacuum_count"] for t in TABLES},
        "bytes_per_row": (h["heap"] + h["ix"]) / max(1, h["rows"]),
        "claims": len(recent),
        "p50": statistics.median(recent) * 1000 if recent else float("nan"),
        "p95": p95(recent) * 1000 if len(recent) > 1 else float("nan"),
        "hot_all": hot / max(1, upd),
    }
    if crawler:
        s |= crawler_sample(*crawler)
    return s


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def line(s: dict) -> str:
    text_ = (
        f"min {s['minute']:2d}: {s['writes'] / 1e6:.2f}M row writes"
        f" ({s['updates'] / 1e6:.2f}M updates, hosts {s['host_updates'] / 1e6:.2f}M),"
        f" {s['claims'] * BATCH / 60:,.0f} hosts/s; claim p50 {s['p50']:.1f} ms"
        f" p95 {s['p95']:.1f} ms; "
    )
    for t in TABLES:
        text_ += (
            f"{t} {s['mb'][t]:.0f} MB (heap {s['heap_mb'][t]:.0f}), {s['rows'][t]:,} rows,"
            f" dead {s['dead'][t]:,}, autovac {s['autovacuum'][t]}; "
        )
    text_ += f"HOT hosts {s['hot_all']:.0%}; {s['bytes_per_row']:.0f} B/host"
    if "rss" in s:
        text_ += f"; crawler RSS {s['rss']:.0f} MB, {s['pages']:,} pages"
    return text_


def print_sizes(after: list[dict]) -> None:
    """Every table's size (table + indexes) and rows at the after phase's first and last
    minute."""
    first, last = after[0], after[-1]
    print(f"# every table, minute {first['minute']} -> minute {last['minute']}:")
    for t in sorted(last["bytes"], key=lambda t: -last["bytes"][t]):
        was, now = first["bytes"].get(t, 0) / 2**20, last["bytes"][t] / 2**20
        rows = f"{first['rows'].get(t, 0):,} -> {last['rows'][t]:,} rows"
        print(f"#   {t}: {was:,.1f} -> {now:,.1f} MB, {rows}")


def argument(name: str, default: float) -> float:
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main() -> None:
    print(machine_line())
    started = time.perf_counter()
    before_minutes = argument("--before-minutes", BEFORE_MINUTES)
    after_minutes = argument("--minutes", AFTER_MINUTES)
    before = []
    if before_minutes > 0:
        url = start_database("hostcrawl-bench-churn-before-")
        prepare(url, defaults=True)
        before = run_phase("before", url, before_minutes)
    url = start_database("hostcrawl-bench-churn-after-")
    prepare(url, defaults=False)
    crawler = None
    if "--no-crawl" not in sys.argv:
        work = Path(tempfile.mkdtemp(prefix="hostcrawl-bench-churn-"))
        atexit.register(shutil.rmtree, work, True)
        crawler = start_crawler(work)
    after = run_phase("after", url, after_minutes, crawler)
    s = after[-1]
    was = f"; before: HOT {before[-1]['hot_all']:.0%}" if before else ""
    print(
        f"# after: {s['writes']:,} row writes ({s['updates']:,} updates, of which hosts"
        f" {s['host_updates']:,}, the rest trap_window, roots and root_claims; HOT,"
        f" hosts: {s['hot_all']:.0%}) in {s['minute']} minutes{was}"
    )
    print_sizes(after)
    ok = verdicts(after, before, after_minutes)
    if crawler and crawler[0].poll() is not None:
        print(f"# the crawler exited {crawler[0].poll()}; its log ends:")
        print(crawler[2].read_text(errors="replace")[-3000:])
    print(f"# {time.perf_counter() - started:.0f} s in all")
    print(f"churn: {NO_VERDICT if ok is None else 'PASS' if ok else 'FAIL'}")


if __name__ == "__main__":
    main()
