"""bench/crawl.py's diagnostics: one more crawl, instrumented (below target or --profile)."""

from __future__ import annotations

import contextlib
import statistics
import sys
import time
from pathlib import Path

from _crawl_runs import PROJECT_ROOT, run_child

# -- diagnostics: one more crawl, instrumented (run below target or with --profile) ----------


def instrumented_child(out: Path, profile: str, scrapy_argv: list[str]) -> None:
    """`scrapy crawl hosts` in this process, timing every database call and sampling the slots.

    Per call that the crawler hands to a thread (asyncio.to_thread): the wait for a
    free thread, the call itself (wall and this thread's CPU), and the wait for the
    event loop to take the result back. Every 20 ms: hosts in flight (claimed, not
    settled) and requests in the downloader. profile "db" profiles each call in a
    thread, "all" the event-loop thread as well, with a CPU-time timer (so waiting
    does not count); "" profiles nothing.
    """
    import asyncio
    import cProfile
    import json
    import threading
    from collections import defaultdict

    from scrapy.cmdline import execute

    from crawler.spiders.hosts import HostsSpider

    calls: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    samples: list[tuple[int, int]] = []
    claims: list[tuple[float, int]] = []  # (seconds since the first claim, hosts claimed)
    spiders: list[HostsSpider] = []
    profilers: list[cProfile.Profile] = []
    local = threading.local()
    clock = time.perf_counter
    original_to_thread = asyncio.to_thread

    def thread_profiler() -> cProfile.Profile:
        if not hasattr(local, "profiler"):
            local.profiler = cProfile.Profile(time.thread_time)
            profilers.append(local.profiler)
        return local.profiler

    async def to_thread(func, /, *args, **kwargs):
        submitted = clock()
        times: list[float] = []

        def run():
            times.append(clock())
            cpu = time.thread_time()
            profiler = thread_profiler() if profile else None
            if profiler:
                profiler.enable()
            try:
                return func(*args, **kwargs)
            finally:
                if profiler:
                    profiler.disable()
                times.extend((clock(), time.thread_time() - cpu))

        try:
            result = await original_to_thread(run)
            if getattr(func, "__name__", "") == "claim_polite":
                claims.append((clock(), len(result.hosts)))
            return result
        finally:
            if len(times) == 3:
                name = getattr(func, "__name__", repr(func))
                wait, ran, cpu = times[0] - submitted, times[1] - times[0], times[2]
                calls[name].append((wait, ran, cpu, clock() - times[1]))

    asyncio.to_thread = to_thread
    original_setup = HostsSpider.setup

    # Without arguments, as the original: the spider_opened signal passes a receiver
    # only the arguments it names.
    def setup(self):
        original_setup(self)
        spiders.append(self)

    HostsSpider.setup = setup
    stop = threading.Event()

    def sample():
        while not stop.wait(0.02):
            with contextlib.suppress(RuntimeError, AttributeError, IndexError):  # not started
                spider = spiders[0]
                active = len(spider.crawler.engine.downloader.active)
                samples.append((len(spider.in_flight), active))

    threading.Thread(target=sample, daemon=True).start()
    main_profiler = cProfile.Profile(time.thread_time)
    if profile == "all":
        main_profiler.enable()
    with contextlib.suppress(SystemExit):  # Scrapy's command line always exits
        execute(["scrapy", *scrapy_argv])
    stop.set()
    if profile == "all":
        main_profiler.disable()
        main_profiler.dump_stats(out / "main.prof")
    if profile:
        for i, profiler in enumerate(profilers):
            profiler.dump_stats(out / f"thread-{i}.prof")
    data = {"calls": calls, "samples": samples, "claims": claims}
    (out / "timings.json").write_text(json.dumps(data))


def where(key: tuple[str, int, str]) -> str:
    """A pstats key as a short 'path:line(function)'."""
    path, line, func = key
    for marker in ("site-packages/", "lib/python3.11/", str(PROJECT_ROOT) + "/"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{path}:{line}({func})" if line else func


def top_functions(files: list[Path], n: int) -> list[str]:
    """The n functions with the most own time over the given profiles."""
    import pstats

    stats = pstats.Stats(*map(str, files))
    total = stats.total_tt
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:n]
    return [
        f"{tt:7.2f} s {tt / total:4.0%} {nc:>9,} calls  {where(key)}"
        for key, (_, nc, tt, _, _) in rows
    ]


# Functions whose inclusive CPU shows where a database call's time goes.
INCLUSIVE = (
    ("crawler/db/crawl/queue.py", "finish_many"),
    ("crawler/db/rules/trap_windows.py", "record_outcomes"),
    ("crawler/db/crawl/claims.py", "claim"),
    ("crawler/db/rules/trap_windows.py", "_update_windows"),
    ("crawler/db/crawl/queue.py", "write_results"),
    ("crawler/db/crawl/queue.py", "insert_hosts"),
    ("crawler/db/crawl/queue.py", "schedule"),
    ("crawler/core/links.py", "filter_links"),
    ("crawler/core/traps.py", "trap_reason"),
    ("sqlalchemy/sql/_elements_constructors.py", "text"),
    ("sqlalchemy/engine/base.py", "connect"),
    ("sqlalchemy/pool/base.py", "_checkout"),
    ("sqlalchemy/dialects/postgresql/_psycopg_common.py", "do_ping"),
    ("sqlalchemy/engine/base.py", "_commit_impl"),
    ("psycopg/cursor.py", "execute"),
    ("psycopg/cursor.py", "fetchall"),
)


def inclusive(files: list[Path], wanted) -> list[str]:
    """Inclusive CPU and calls of the wanted (path suffix, function) pairs."""
    import pstats

    stats = pstats.Stats(*map(str, files))
    total = stats.total_tt
    lines = []
    for suffix, name in wanted:
        for key, (_, nc, _, ct, _) in stats.stats.items():
            if key[2] == name and key[0].endswith(suffix):
                lines.append(f"{ct:7.2f} s {ct / total:4.0%} {nc:>9,} calls  {where(key)}")
    return lines


def diagnose(reset, ours_settings: list[str], work: Path, bare_cpu: float, full: bool) -> None:
    """Where the full system's time goes: an instrumented crawl, then a profiled one.

    bare_cpu: the bare spider's CPU seconds per page; full: profile the event loop too.
    """
    import json

    for profile in ("", "all" if full else "db"):
        out = work / f"diagnose-{profile or 'timers'}"
        out.mkdir()
        reset()
        crawl_script = str(Path(__file__).with_name("crawl.py").resolve())
        child = [sys.executable, crawl_script, "--child", str(out)]
        r = run_child([*child, f"-{profile}", *ours_settings], out / "crawl.log")
        pages = max(int(r["stats"].get("hostcrawl/hosts/outcome/OK", 0)), 1)
        if not profile:
            data = json.loads((out / "timings.json").read_text())
            elapsed = r["elapsed"]
            print(
                f"# diagnostics 1: `crawl hosts` once more, every asyncio.to_thread call timed and"
                f" the slots sampled every 20 ms: {pages:,} pages in {elapsed:.2f} s"
            )
            busy = in_calls = 0.0
            for name, rows in sorted(data["calls"].items(), key=lambda kv: -len(kv[1])):
                waits, runs, cpus, resumes = zip(*rows, strict=True)
                busy += sum(waits) + sum(runs) + sum(resumes)
                in_calls += sum(cpus)
                print(
                    f"#   {name}: {len(rows):,} calls ({len(rows) / pages:.2f} per page),"
                    f" mean ms: {1000 * statistics.mean(waits):.1f} waiting for a free thread +"
                    f" {1000 * statistics.mean(runs):.1f} running (of which"
                    f" {1000 * statistics.mean(cpus):.1f} CPU in this process) +"
                    f" {1000 * statistics.mean(resumes):.1f} until the event loop took the result"
                )
            samples = data["samples"]
            if samples:
                in_flight = statistics.mean(s[0] for s in samples)
                active = statistics.mean(s[1] for s in samples)
                print(
                    f"#   mean over the run: {in_flight:.1f} hosts in flight (claimed, not settled;"
                    f" up to the worker's own limit), of which {busy / elapsed:.1f} in a database"
                    " call"
                    f" (waiting included); {active:.1f} requests in the downloader (robots.txt"
                    " included; the worker allows two per host in flight)"
                )
            claims = data["claims"]
            if claims:
                batch = max(n for _, n in claims)
                full_batches = [t for t, n in claims if n == batch]
                ramp = full_batches[0] - claims[0][0] if full_batches else float("nan")
                print(
                    f"#   claims: {len(claims)}, {len(full_batches)} of them a full batch of"
                    f" {batch};"
                    f" the first full batch {ramp:.2f} s after the first claim (the frontier"
                    f" grows from one seed), {sum(n == 0 for _, n in claims)} empty"
                )
            print(
                f"#   crawler CPU per page: {1000 * r['cpu'] / pages:.1f} ms"
                f" (user {1000 * r['user'] / pages:.1f}, system {1000 * r['system'] / pages:.1f})"
                f" = {1000 * in_calls / pages:.1f} in database calls (threads) +"
                f" {1000 * (r['cpu'] - in_calls) / pages:.1f} the rest (event loop, thread"
                f" hand-offs, this instrumentation); the bare spider: {1000 * bare_cpu:.1f} ms."
                " One process holds one GIL, so these add up"
            )
        else:
            threads = sorted(out.glob("thread-*.prof"))
            print(
                f"# diagnostics 2: `crawl hosts` with every database call (and with --profile the"
                f" event loop) under cProfile, CPU timer (time.thread_time): {r['elapsed']:.2f} s"
            )
            if full:
                print("#  event-loop thread, own CPU:")
                for line in top_functions([out / "main.prof"], 12):
                    print("#    " + line)
            print(f"#  database calls in threads ({len(threads)} threads), own CPU:")
            for line in top_functions(threads, 12):
                print("#    " + line)
            print("#  database calls in threads, CPU including callees:")
            for line in inclusive(threads, INCLUSIVE):
                print("#    " + line)
