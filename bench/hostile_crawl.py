"""Issue 45's table, rerun: each hostile host crawled beside ordinary hosts, and its bounds;
issue 51's: the ordinary hosts' time with and without it beside them.

Each case (tests/fakeweb/hostile.py) is one crawl: `scrapy crawl hosts` with the
production settings (MAX_NAMES_PER_PAGE 6,000, MAX_NAMES_PER_ROOT_PER_PAGE 1,000,
DOWNLOAD_MAXSIZE 2 MiB, MAX_HEADER_BYTES 256 KiB, MAX_EXTRACT_SECONDS 1) on a fakeweb of
ORDINARY ordinary hosts (a root each) and the hostile host, all seeded at once, on a
throwaway embedded Postgres. The crawl runs until every seeded host has settled (the
names the hostile host got saved are left in the queue: they are what the caps bound,
not what is measured), then is stopped. Per case:

- names saved: the hosts rows the hostile host's one fetch added (`discovered_from`);
- peak RSS: the crawler process's VmHWM (/proc) when every seeded host had settled, and
  its children's (the reader process of heavy responses; "reader" says how much);
- the hostile host's time: its first request (fakeweb's log) to its row's last_crawled_at;
- the ordinary hosts: all OK, and the time from the crawl's first request (fakeweb's log:
  the worker's start-up, seconds on a busy machine, is left out) until they were;
- the reactor's lateness: the latest any timer of the worker fired
  (`hostcrawl/reactor_late_ms/max`, from the stats it dumps as it stops).

Baseline, side by side: the same crawl without the hostile host, run before the first
case, between each two and after the last; each case is compared with the better of the
two run beside it (its peak RSS and its ordinary hosts' time).

PASS per case: names saved <= MAX_NAMES_PER_PAGE, every ordinary host OK, the hostile
host settled, peak RSS within RSS_BOUND_MB of the baseline's (docs/crawl.md, "Memory
for one response"), the ordinary hosts' time within ORDINARY_RATIO of the baseline's and
the reactor never LATE_BOUND_MS late (issue 51: "Floods paced").

    python bench/hostile_crawl.py [--keep] [CASE ...]   # CASE: a word of a case's name
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from _common import machine_line, start_database, verdict, work_dir
from _crawl_runs import PROJECT_ROOT, empty_tables, scrapy_args

sys.path.insert(0, str(PROJECT_ROOT))

from sqlalchemy import create_engine, text  # noqa: E402

from crawler.core.config import setting  # noqa: E402
from crawler.db.crawl import queue  # noqa: E402
from tests.fakeweb import FakeWeb, World  # noqa: E402
from tests.fakeweb.hostile import HOSTILE, Case  # noqa: E402

ORDINARY = [f"plain{i}.test" for i in range(40)]  # as issue 51's table had
HOST, TAG = "hostile.test", "hx"
SETTLE_BOUND = 240  # seconds: a bound on one crawl, not a figure (the crawls froze)
POLL = 0.2  # seconds between looks at the database
# What one hostile response may add to a worker's peak RSS (docs/crawl.md).
RSS_BOUND_MB = 150
NAMES_CAP = setting("MAX_NAMES_PER_PAGE").default
ORDINARY_RATIO = 1.5  # the ordinary hosts' time beside a hostile host, over without it
LATE_BOUND_MS = 1000  # the latest a timer of the worker may fire
LATE_STAT = re.compile(r"'hostcrawl/reactor_late_ms/max': (\d+)")


def world_of(case: Case | None) -> World:
    world = World()
    for name in ORDINARY:
        world.site(name)
    if case is not None:
        case.build(world, HOST, TAG)
    return world


def vm_peak_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def children_peak_mb(pid: int) -> float:
    """The peak resident memory (VmHWM) of the process's children, in MB, summed: its
    reader process of heavy responses (crawler/network/reader.py) and multiprocessing's
    resource tracker."""
    total = 0.0
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        for child in task.read_text().split():
            with contextlib.suppress(OSError):  # gone meanwhile
                total += vm_peak_mb(int(child))
    return total


def settled(engine, names: list[str]) -> dict[str, tuple[str, float]]:
    """{hostname: (outcome, last_crawled_at as Unix time)} of the names that settled."""
    sql = (
        "SELECT hostname, outcome, extract(epoch FROM last_crawled_at) AS at FROM hosts"
        " WHERE hostname = ANY(:names) AND outcome IS NOT NULL"
    )
    with engine.connect() as conn:
        return {
            r.hostname: (r.outcome, float(r.at)) for r in conn.execute(text(sql), {"names": names})
        }


def crawl(engine, work, label: str, case: Case | None, scheme: str = "http") -> dict:
    """One crawl of the case's world (None: the ordinary hosts alone, by `scheme`) until
    every seeded host settled; its figures."""
    scheme = case.scheme if case else scheme
    seeds = ORDINARY + ([HOST] if case else [])
    with FakeWeb(world_of(case), workdir=work / f"web-{label}") as web:
        empty_tables(engine)
        queue.seed(engine, seeds)
        args = scrapy_args(
            ["crawl", "hosts"], web.scrapy_settings(scheme), CLOSE_WHEN_DRAINED=0, LOG_LEVEL="INFO"
        )
        with open(work / f"crawl-{label}.log", "w") as log:
            started = time.time()
            proc = subprocess.Popen(args, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)
            try:
                done, peak, reader = wait_settled(engine, seeds, proc)
            finally:
                stop(proc)
        requests = web.requests()
        first = [r["t"] for r in requests if r["host"] == HOST]
        began = min((r["t"] for r in requests), default=started)
    with engine.connect() as conn:
        saved = conn.execute(
            text("SELECT count(*) FROM hosts WHERE discovered_from = :h"), {"h": HOST}
        ).scalar()
    ordinary = [done[name] for name in ORDINARY if name in done]
    hostile = done.get(HOST)
    return {
        "ordinary_ok": sum(outcome == "OK" for outcome, _ in ordinary),
        "ordinary_s": max((at for _, at in ordinary), default=float("nan")) - began,
        "outcome": hostile[0] if hostile else "unsettled",
        "took": hostile[1] - min(first) if hostile and first else float("nan"),
        "saved": saved,
        "rss": peak + reader,
        "reader": reader,
        "scheme": scheme,
        "late_ms": latest_timer_ms(work / f"crawl-{label}.log"),
    }


def latest_timer_ms(log) -> float:
    """How late the worker's latest timer fired, in ms, from the stats in its log."""
    found = LATE_STAT.findall(log.read_text(errors="replace"))
    return float(found[-1]) if found else float("nan")


def wait_settled(engine, seeds: list[str], proc) -> tuple[dict, float, float]:
    """Poll until every seed settled (or SETTLE_BOUND, or the crawler died); (what settled,
    the crawler's peak RSS in MB then, its children's)."""
    deadline = time.monotonic() + SETTLE_BOUND
    done: dict = {}
    while time.monotonic() < deadline and proc.poll() is None:
        done = settled(engine, seeds)
        if len(done) == len(seeds):
            break
        time.sleep(POLL)
    alive = proc.poll() is None
    peak = vm_peak_mb(proc.pid) if alive else float("nan")
    reader = children_peak_mb(proc.pid) if alive else float("nan")
    return done, peak, reader


def stop(proc) -> None:
    """One SIGINT (a graceful stop), then a kill if it does not end."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def chosen_cases() -> dict[str, Case]:
    words = [a.lower() for a in sys.argv[1:] if not a.startswith("--")]
    return {n: c for n, c in HOSTILE.items() if not words or any(w in n.lower() for w in words)}


def report(name: str, r: dict, base: dict) -> bool:
    all_ok = r["ordinary_ok"] == len(ORDINARY)
    ok = r["saved"] <= NAMES_CAP and all_ok and r["outcome"] != "unsettled"
    ok = ok and r["rss"] - base["rss"] <= RSS_BOUND_MB
    ratio = r["ordinary_s"] / base["ordinary_s"]
    ok = ok and ratio <= ORDINARY_RATIO and r["late_ms"] < LATE_BOUND_MS
    value = (
        f"{r['saved']:,} names, peak RSS {r['rss']:.0f} MB, {r['outcome']} in {r['took']:.1f} s,"
        f" ordinary {r['ordinary_ok']}/{len(ORDINARY)} in {r['ordinary_s']:.2f} s"
        f" ({ratio:.2f}x of {base['ordinary_s']:.2f} s), reactor late {r['late_ms']:.0f} ms"
    )
    target = (
        f"names <= {NAMES_CAP:,}, RSS <= baseline + {RSS_BOUND_MB} MB, ordinary all OK"
        f" within {ORDINARY_RATIO}x, reactor late < {LATE_BOUND_MS} ms"
    )
    word = verdict(ok, name, value, target)
    print(
        f"{name:<38} names {r['saved']:>6,}  peak RSS {r['rss']:4.0f} MB"
        f" ({r['rss'] - base['rss']:+4.0f}; reader {r['reader']:3.0f})"
        f"  {r['outcome']:<14} in {r['took']:5.1f} s"
        f"  ordinary {r['ordinary_ok']}/{len(ORDINARY)} OK in {r['ordinary_s']:5.2f} s"
        f" vs {base['ordinary_s']:5.2f} s without ({ratio:.2f}x)"
        f"  reactor late {r['late_ms']:5.0f} ms  {word}"
    )
    return ok


def main() -> int:
    print(machine_line())
    cases = chosen_cases()
    work = work_dir("hostile-crawl")
    engine = create_engine(start_database(), pool_size=2)
    print(
        f"# {len(ORDINARY)} ordinary hosts + one hostile host per crawl, production limits;"
        f" baseline: the same {len(ORDINARY)} hosts alone, run before and after each case"
    )
    # Interleaved: a baseline before each case (by its scheme: TLS costs the ordinary
    # hosts too) and after the last, each case measured against the better of the two
    # beside it of its scheme (the machine's load changes meanwhile).
    named = list(cases.items())
    schemes = [case.scheme for _, case in named] + [named[-1][1].scheme if named else "http"]
    bases, results = [], {}
    for i, scheme in enumerate(schemes):
        bases.append(crawl(engine, work, f"baseline{i}", None, scheme))
        if i < len(named):
            results[named[i][0]] = crawl(engine, work, f"case{i}", named[i][1])
    besides = {
        name: best_of([b for b in bases[i : i + 2] if b["scheme"] == case.scheme])
        for i, (name, case) in enumerate(named)
    }
    for i, base in enumerate(bases):
        label = f"baseline {i} ({base['scheme']}, ordinary alone)"
        print(
            f"{label:<38} peak RSS {base['rss']:4.0f} MB (reader {base['reader']:3.0f}),"
            f" ordinary {base['ordinary_ok']}/{len(ORDINARY)} OK in {base['ordinary_s']:5.2f} s,"
            f" reactor late {base['late_ms']:5.0f} ms"
        )
    failed = sum(not report(name, r, besides[name]) for name, r in results.items())
    return 1 if failed else 0


def best_of(runs: list[dict]) -> dict:
    return {key: min(run[key] for run in runs) for key in ("rss", "ordinary_s")}


if __name__ == "__main__":
    sys.exit(main())
