"""Pages per second of the whole crawl against a bare Scrapy spider, same fakeweb; peak RSS.

Targets: pages/s of `scrapy crawl hosts` >= 0.8 x the bare spider's; peak RSS of
the crawler process <= 300 MB.

The full system is the `hosts` spider as deployed (claim -> fetch -> parse ->
filter -> HostItem -> pipeline: finish + trap window), run as
`python -m scrapy crawl hosts` with the production settings (crawler.settings,
the add-on) except HOST_URL_TEMPLATE (https on fakeweb's port, the plain-HTTP
fallback on) / DNS_NAMESERVERS (the test internet) and CLOSE_WHEN_DRAINED=1.
Its database is a throwaway embedded Postgres (deleted at exit), migrated with
upgrade_to_head(), emptied and seeded with the graph's first host before each
round: the crawler finds the other hosts by itself.

The world is World(SEED).graph(HOSTS, ROOTS, links_per_page=LINKS) on a fakeweb
(DNS + HTTP on loopback): every host is reachable from the first. A host's URL
is only known once a page linking to it has been parsed, so the full system
starts with a frontier of one; LINKS links per page make it wide quickly.

Baseline, same fakeweb, rounds alternating (ours, bare, ours, bare; best of
each): `BareSpider` below, run as `python -m scrapy runspider bench/crawl.py`
with the same settings module and the same -s settings, minus our database-bound
components (the add-on is off: no BlacklistMiddleware, no pipeline; our resolver,
retry and robots.txt middlewares and the production defaults stay). It requests
the same URLs (HOST_URL_TEMPLATE for every host of the graph) from a list known
up front and extracts links and title with the same XPath, but filters and
writes nothing.

Both are timed the same way: Scrapy's own `elapsed_time_seconds` (spider opened
-> spider closed), pages = front pages parsed. Peak RSS is the crawler process's
ru_maxrss from wait4() on that very child.

Below target (or with --profile) two more `crawl hosts` runs say where the time
goes: one with every asyncio.to_thread call timed (waiting for a thread, running,
CPU, waiting for the event loop) and the slots sampled; one with the database
calls (with --profile the event loop too) under cProfile with a CPU-time timer.
--keep keeps the logs and profiles (the path is printed).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import scrapy
from _common import machine_line, start_database, verdict

from crawler import settings as production
from crawler.addon import PRODUCTION_DEFAULTS

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SEED = 20261130
HOSTS = 2_000
# Many roots, as on the web: per-root politeness (ROOT_CONCURRENCY) holds each root to a
# couple of hosts at a time, so a world of 5 roots would measure the limit, not the crawl.
ROOTS = [f"site{i:03}.test" for i in range(400)]
LINKS = 8  # links per page
MESSY = 0.1  # share of links in odd but equivalent forms (upper case, port, //host ...)
ROUNDS = 2  # of each, alternating
TARGET_RATIO = 0.8
TARGET_RSS_MB = 300
CHILD_TIMEOUT = 300  # seconds: a bound, not a wait (a loaded machine is slow)
# The crawl's tables (all but the schema version and the operators), for one TRUNCATE.
EVERY_TABLE = (
    "SELECT string_agg(quote_ident(tablename), ', ') FROM pg_tables"
    " WHERE schemaname = current_schema() AND tablename NOT IN ('alembic_version', 'users')"
)
STAT = re.compile(r"'([\w/.]+)': (\d+(?:\.\d+)?)")


# -- the baseline spider (loaded by `scrapy runspider bench/crawl.py`) -----------------


# What the add-on installs, minus what needs our database (the deny list and the pipeline).
WITHOUT_DATABASE = {
    "ADDONS": {"crawler.addon.HostcrawlAddon": None},
    **PRODUCTION_DEFAULTS,
    "DOWNLOADER_MIDDLEWARES": {
        "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
        "crawler.middlewares.AnswerAwareRetryMiddleware": 550,
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "crawler.middlewares.FrontPageRobotsTxtMiddleware": 100,
    },
}


class BareSpider(scrapy.Spider):
    """Fetch every URL of a list once; extract links and title as `hosts` does; keep nothing."""

    name = "bare"
    handle_httpstatus_list = list(range(400, 600))
    custom_settings = WITHOUT_DATABASE

    def __init__(self, urls: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.urls = urls

    async def start(self):
        for url in Path(self.urls).read_text().split():
            yield scrapy.Request(url, callback=self.parse, errback=self.failed, dont_filter=True)

    def parse(self, response):
        if isinstance(response, scrapy.http.TextResponse):
            hrefs = response.xpath("//a/@href | //area/@href").getall()
            response.xpath("normalize-space(//title)").get()
            self.crawler.stats.inc_value("bare/links", len(hrefs))
        self.crawler.stats.inc_value("bare/pages")

    def failed(self, failure) -> None:
        self.crawler.stats.inc_value("bare/failed")


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
    import functools
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
            if getattr(func, "__name__", "") == "start_urls":
                claims.append((clock(), len(result)))
            return result
        finally:
            if len(times) == 3:
                name = getattr(func, "__name__", repr(func))
                wait, ran, cpu = times[0] - submitted, times[1] - times[0], times[2]
                calls[name].append((wait, ran, cpu, clock() - times[1]))

    asyncio.to_thread = to_thread
    original_setup = HostsSpider.setup

    @functools.wraps(original_setup)
    def setup(self, settings):
        original_setup(self, settings)
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


# -- running and measuring one crawler process -------------------------------------------


def run_child(args: list[str], log_path: Path) -> dict:
    """Run one crawler process to its end; its stats, wall time and peak RSS (wait4)."""
    started = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.Popen(args, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)
    deadline = started + CHILD_TIMEOUT
    status, usage = 0, None
    while usage is None:
        pid, status, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            usage = rusage
            break
        if time.perf_counter() > deadline:
            proc.send_signal(signal.SIGKILL)
        time.sleep(0.05)
    proc.returncode = os.waitstatus_to_exitcode(status)
    text = log_path.read_text(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"crawler exited {proc.returncode}; log {log_path}:\n{text[-3000:]}")
    stats = {k: float(v) for k, v in STAT.findall(text.rpartition("Dumping Scrapy stats")[2])}
    return {
        "wall": time.perf_counter() - started,
        "elapsed": stats.get("elapsed_time_seconds", float("nan")),
        "responses": int(stats.get("response_received_count", 0)),
        "rss_mb": usage.ru_maxrss / 1024,  # Linux: kB
        "cpu": usage.ru_utime + usage.ru_stime,
        "user": usage.ru_utime,
        "system": usage.ru_stime,
        "stats": stats,
        "log": text,
    }


def scrapy_args(command: list[str], web_settings: dict[str, str], **extra) -> list[str]:
    args = [sys.executable, "-m", "scrapy", *command]
    for name, value in {**web_settings, **extra}.items():
        args += ["-s", f"{name}={value}"]
    return args


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
    ("crawler/db/queue.py", "finish_many"),
    ("crawler/db/windows.py", "record_outcomes"),
    ("crawler/db/claims.py", "claim"),
    ("crawler/db/windows.py", "_update_windows"),
    ("crawler/db/queue.py", "write_results"),
    ("crawler/db/queue.py", "insert_hosts"),
    ("crawler/db/queue.py", "schedule"),
    ("crawler/links.py", "filter_links"),
    ("crawler/traps.py", "trap_reason"),
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
        child = [sys.executable, str(Path(__file__).resolve()), "--child", str(out)]
        r = run_child([*child, f"-{profile}", *ours_settings], out / "crawl.log")
        pages = max(int(r["stats"].get("hosts/outcome/OK", 0)), 1)
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
                    f" up to 2 x CLAIM_BATCH), of which {busy / elapsed:.1f} in a database call"
                    f" (waiting included); {active:.1f} requests in the downloader (robots.txt"
                    f" included; CONCURRENT_REQUESTS {production.CONCURRENT_REQUESTS})"
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


def main() -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    from sqlalchemy import create_engine, text

    from crawler.db import queue
    from tests.fakeweb import FakeWeb, World

    print(machine_line())
    overall = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="hostcrawl-bench-crawl-"))
    if "--keep" in sys.argv:
        print(f"# logs kept in {work}")
    else:
        atexit.register(shutil.rmtree, work, True)
    url = start_database()
    engine = create_engine(url, pool_size=2)

    world = World(seed=SEED)
    names = world.graph(HOSTS, roots=ROOTS, links_per_page=LINKS, messy=MESSY)
    assert world.reachable(names[0]) == set(names)
    web = FakeWeb(world, workdir=work / "fakeweb").start()
    atexit.register(web.stop)
    # https, as deployed: the TLS handshakes and the plain-HTTP fallback path are in it.
    settings = web.scrapy_settings("https")
    url_list = work / "urls.txt"
    url_list.write_text("".join(web.url_template().format(hostname=n) + "\n" for n in names))
    print(
        f"# world: {HOSTS:,} hosts under {len(ROOTS)} roots, {LINKS} links per page"
        f" ({MESSY:.0%} in odd forms), fakeweb on loopback; the full system starts from"
        f" 1 seed and discovers the rest page by page, the bare spider knows all {HOSTS:,}"
        " URLs up front"
    )

    commands = {
        "ours": scrapy_args(["crawl", "hosts"], settings, CLOSE_WHEN_DRAINED=1),
        "bare": scrapy_args(
            ["runspider", str(Path(__file__).resolve()), "-a", f"urls={url_list}"], settings
        ),
    }
    runs: dict[str, list[dict]] = {"ours": [], "bare": []}

    def reset() -> None:
        with engine.begin() as conn:
            tables = conn.execute(text(EVERY_TABLE)).scalar()
            conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        queue.seed(engine, [names[0]])

    for i in range(ROUNDS):
        for mode in ("ours", "bare"):
            if mode == "ours":
                reset()
            r = run_child(commands[mode], work / f"{mode}-{i}.log")
            if mode == "ours":
                with engine.connect() as conn:
                    r["pages"] = conn.execute(
                        text("SELECT count(*) FROM hosts WHERE outcome = 'OK'")
                    ).scalar()
                    r["known"] = conn.execute(text("SELECT count(*) FROM hosts")).scalar()
                extra = f", {r['known']:,} hosts known"
            else:
                r["pages"] = int(r["stats"].get("bare/pages", 0))
                extra = ""
            r["rate"] = r["pages"] / r["elapsed"]
            runs[mode].append(r)
            print(
                f"# round {mode}: {r['pages']:,} pages ({r['responses']:,} responses with"
                f" robots.txt) in {r['elapsed']:.2f} s spider open->close ({r['wall']:.2f} s"
                f" process, CPU {r['cpu']:.1f} s){extra}, peak RSS {r['rss_mb']:.0f} MB"
            )
            if r["pages"] != HOSTS:
                print(f"# WARNING: {mode} parsed {r['pages']} pages, expected {HOSTS}")

    best = {mode: max(r["rate"] for r in rs) for mode, rs in runs.items()}
    median = {mode: statistics.median(r["rate"] for r in rs) for mode, rs in runs.items()}
    ratio = best["ours"] / best["bare"]
    rss = max(r["rss_mb"] for r in runs["ours"])
    bare_rss = max(r["rss_mb"] for r in runs["bare"])
    print(f"# best of {ROUNDS} each")
    print(
        f"bare scrapy spider (URL list, no database): {best['bare']:,.0f} pages/s"
        f" [median {median['bare']:,.0f}] (baseline)"
    )
    print(
        f"hosts spider (claim -> fetch -> parse -> filter -> finish): {best['ours']:,.0f}"
        f" pages/s [median {median['ours']:,.0f}] (ratio vs bare: {ratio:.2f},"
        f" target >= {TARGET_RATIO}) {verdict(ratio >= TARGET_RATIO)}"
    )
    print(
        f"hosts spider peak RSS: {rss:.0f} MB (bare spider: {bare_rss:.0f} MB,"
        f" target <= {TARGET_RSS_MB} MB) {verdict(rss <= TARGET_RSS_MB)}"
    )
    if ratio < TARGET_RATIO or "--profile" in sys.argv:
        bare_cpu = min(r["cpu"] / max(r["pages"], 1) for r in runs["bare"])
        diagnose(reset, commands["ours"][3:], work, bare_cpu, "--profile" in sys.argv)
    print(f"# {time.perf_counter() - overall:.0f} s in all")
    engine.dispose()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        instrumented_child(Path(sys.argv[2]), sys.argv[3].strip("-"), sys.argv[4:])
    else:
        main()
