"""Pages per second of the whole crawl against a bare Scrapy spider, same fakeweb; peak RSS.

Targets: pages/s of `scrapy crawl hosts` >= 0.8 x the bare spider's; peak RSS of
the crawler process <= 300 MB; against the crawler before (below), pages/s no
lower and peak RSS no higher.

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
with the same settings module and the same -s settings. It is the ceiling of the
same crawl without a database: the add-on as deployed (`BareAddon`: the same
settings, resolver, retry and robots.txt middlewares, and the same derived
per-slot concurrency, ROOT_CONCURRENCY) minus its database-bound parts (the deny
list's middleware, the pipeline, the metrics, heartbeat and prune extensions) and
minus our own sizing (in-flight control, collector tuning); requests built as the
hosts spider builds them (HOST_URL_TEMPLATE, one download slot per root) and
all scheduled at once from a list of every host of the graph known up front, with
Scrapy's own limit sized as its broad-crawl advice says (BARE_CONCURRENCY); links
and title extracted with the same XPath; nothing filtered or written.

Second baseline, a third round each time ("before"): the same world crawled by
the hosts spider as it was before it sized itself to the web (BEFORE, a commit of
this repository, unpacked with `git archive`, on a database its own migrations
made, seeded with the same first host by its own CLI). `--no-before` skips it, and so
does `--quick`: on its 600-host world the crawler before never drains (2 of its hosts
stay in flight until the process is killed).

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
import os
import statistics
import sys
import time
from pathlib import Path

import scrapy
from _common import machine_line, start_database, verdict, work_dir
from _crawl_diagnostics import diagnose, instrumented_child
from _crawl_runs import (
    BEFORE,
    PROJECT_ROOT,
    crawler_before,
    empty_tables,
    run_child,
    scrapy_args,
    seed_before,
)

from crawler.addon import HostcrawlAddon
from crawler.core.hostnames import root
from crawler.downloadermiddlewares.deny import BlacklistMiddleware
from crawler.extensions.gc_tuning import CollectorTuning
from crawler.extensions.heartbeat import Heartbeat
from crawler.extensions.in_flight import InFlightControl
from crawler.extensions.metrics import PrometheusMetrics
from crawler.extensions.pruning import ScheduledPrune
from crawler.pipelines import HostWritePipeline

SEED = 20261130
HOSTS = 2_000
# Many roots, as on the web: per-root politeness (ROOT_CONCURRENCY) holds each root to a
# couple of hosts at a time, so a world of 5 roots would measure the limit, not the crawl.
ROOTS = [f"site{i:03}.test" for i in range(400)]
LINKS = 8  # links per page
MESSY = 0.1  # share of links in odd but equivalent forms (upper case, port, //host ...)
ROUNDS = 2  # of each, alternating
QUICK = "--quick" in sys.argv  # trying the script out: 600 hosts, one round each, no verdict
if QUICK:
    HOSTS, ROUNDS = 600, 1
TARGET_RATIO = 0.8
TARGET_RSS_MB = 300
BEFORE_TARGET = 1.0  # ours vs the crawler before: pages/s no lower, peak RSS no higher
# The bare spider's requests at once: Scrapy's broad-crawl advice ("a good starting point
# is 100", raised while the CPU has room), a hundred per core of the machine.
BARE_CONCURRENCY = 100 * (os.cpu_count() or 1)


# -- the baseline spider (loaded by `scrapy runspider bench/crawl.py`) -----------------


class BareAddon(HostcrawlAddon):
    """The add-on as deployed, minus the parts that need our database (the deny list's
    middleware, the pipeline, the metrics, the heartbeat, the prune) and minus our own
    sizing of the crawl (the in-flight control, the collector's tuning): the bare spider
    is sized as a plain Scrapy broad crawl is (BareSpider)."""

    def update_settings(self, settings) -> None:
        super().update_settings(settings)
        for name, component in (
            ("DOWNLOADER_MIDDLEWARES", BlacklistMiddleware),
            ("ITEM_PIPELINES", HostWritePipeline),
            ("EXTENSIONS", PrometheusMetrics),
            ("EXTENSIONS", Heartbeat),
            ("EXTENSIONS", ScheduledPrune),
            ("EXTENSIONS", InFlightControl),
            ("EXTENSIONS", CollectorTuning),
        ):
            settings.set_in_component_priority_dict(name, component, None)


class BareSpider(scrapy.Spider):
    """Fetch every host of a list once, as `hosts` requests them; keep nothing.

    Its control is what a plain Scrapy user writes for a broad crawl: every request
    scheduled at once, and Scrapy's own scheduler and downloader hold them to
    CONCURRENT_REQUESTS (BARE_CONCURRENCY: a hundred per core, as Scrapy's broad-crawl
    page advises), a download slot's to ROOT_CONCURRENCY, the busiest slots' requests
    waiting last (Scrapy's default DownloaderAwarePriorityQueue). It shares no code with
    the hosts spider's sizing, nor copies it. It is a fair ceiling: on a loopback web
    that answers in milliseconds, that many requests at once are more than the one core
    a Scrapy process uses can serve, so its limit is not what holds it back, and the
    ratio measures what our database, filter and claims cost against the crawl a
    Scrapy user would run.
    """

    name = "bare"
    handle_httpstatus_list = list(range(400, 600))
    custom_settings = {
        "ADDONS": {HostcrawlAddon: None, BareAddon: 0},
        "CONCURRENT_REQUESTS": BARE_CONCURRENCY,
    }

    def __init__(self, hosts: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.hosts = hosts

    async def start(self):
        """Every host of the list, as the hosts spider requests it (one slot per root),
        handed to the engine at once, as the hosts spider hands its claims: yielded,
        Scrapy takes one start request per turn of its loop, and a quick run held about
        16 requests in flight of the 200 allowed."""
        template = self.crawler.settings.get("HOST_URL_TEMPLATE")
        for hostname in Path(self.hosts).read_text().split():
            request = scrapy.Request(
                template.format(hostname=hostname),
                callback=self.parse,
                errback=self.failed,
                dont_filter=True,
                meta={"download_slot": root(hostname)},
            )
            self.crawler.engine.crawl(request)
        return
        yield  # an async generator that yields no request itself

    def parse(self, response):
        if isinstance(response, scrapy.http.TextResponse):
            hrefs = response.xpath("//a/@href | //area/@href").getall()
            response.xpath("normalize-space(//title)").get()
            self.crawler.stats.inc_value("bare/links", len(hrefs))
        self.crawler.stats.inc_value("bare/pages")

    def failed(self, failure) -> None:
        self.crawler.stats.inc_value("bare/failed")


def main() -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    from sqlalchemy import create_engine, text

    from crawler.db.crawl import queue
    from tests.fakeweb import FakeWeb, World

    print(machine_line())
    overall = time.perf_counter()
    work = work_dir("crawl")
    url = start_database()
    engine = create_engine(url, pool_size=2)

    world = World(seed=SEED)
    names = world.graph(HOSTS, roots=ROOTS, links_per_page=LINKS, messy=MESSY)
    assert world.reachable(names[0]) == set(names)
    web = FakeWeb(world, workdir=work / "fakeweb").start()
    atexit.register(web.stop)
    # https, as deployed: the TLS handshakes and the plain-HTTP fallback path are in it.
    settings = web.scrapy_settings("https")
    host_list = work / "hosts.txt"  # asked for by HOST_URL_TEMPLATE (https), as ours are
    host_list.write_text("".join(n + "\n" for n in names))
    print(
        f"# world: {HOSTS:,} hosts under {len(ROOTS)} roots, {LINKS} links per page"
        f" ({MESSY:.0%} in odd forms), fakeweb on loopback; the full system starts from"
        f" 1 seed and discovers the rest page by page, the bare spider knows all {HOSTS:,}"
        " URLs up front"
    )

    ours = scrapy_args(["crawl", "hosts"], settings, CLOSE_WHEN_DRAINED=1)
    commands = {
        "ours": (ours, {}),
        "bare": (
            scrapy_args(
                ["runspider", str(Path(__file__).resolve()), "-a", f"hosts={host_list}"], settings
            ),
            {},
        ),
    }
    engines = {"ours": engine}
    seeders = {"ours": lambda: queue.seed(engine, [names[0]])}
    if not QUICK and "--no-before" not in sys.argv:
        tree, env = crawler_before(work, url, [names[0]])
        commands["before"] = (ours, {"cwd": tree, "env": env})
        engines["before"] = create_engine(env["DATABASE_URL"], pool_size=1)
        seeders["before"] = lambda: seed_before(tree, env, [names[0]])
    runs: dict[str, list[dict]] = {mode: [] for mode in commands}

    def reset(mode: str = "ours") -> None:
        empty_tables(engines[mode])
        seeders[mode]()

    for i in range(ROUNDS):
        for mode, (command, where) in commands.items():
            if mode in engines:
                reset(mode)
            r = run_child(command, work / f"{mode}-{i}.log", **where)
            if mode in engines:
                with engines[mode].connect() as conn:
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
    peak = {mode: max(r["rss_mb"] for r in rs) for mode, rs in runs.items()}
    ratio = best["ours"] / best["bare"]
    print(f"# best of {ROUNDS} each")
    print(
        f"bare scrapy spider (URL list, no database): {best['bare']:,.0f} pages/s"
        f" [median {median['bare']:,.0f}] (baseline)"
    )
    word = verdict(
        None if QUICK else ratio >= TARGET_RATIO,
        "pages/s vs bare spider",
        f"x{ratio:.2f}",
        f">= x{TARGET_RATIO}",
    )
    print(
        f"hosts spider (claim -> fetch -> parse -> filter -> finish): {best['ours']:,.0f}"
        f" pages/s [median {median['ours']:,.0f}] (ratio vs bare: {ratio:.2f},"
        f" target >= {TARGET_RATIO}) {word}"
    )
    rss = peak["ours"]
    ok = None if QUICK else rss <= TARGET_RSS_MB
    word = verdict(ok, "peak RSS", f"{rss:.0f} MB", f"<= {TARGET_RSS_MB} MB")
    print(
        f"hosts spider peak RSS: {rss:.0f} MB (bare spider: {peak['bare']:.0f} MB,"
        f" target <= {TARGET_RSS_MB} MB) {word}"
    )
    if "before" in runs:
        compare_before(best, median, peak)
    if (ratio < TARGET_RATIO and not QUICK) or "--profile" in sys.argv:
        bare_cpu = min(r["cpu"] / max(r["pages"], 1) for r in runs["bare"])
        diagnose(reset, ours[3:], work, bare_cpu, "--profile" in sys.argv)
    print(f"# {time.perf_counter() - overall:.0f} s in all")
    for each in engines.values():
        each.dispose()


def compare_before(best: dict, median: dict, peak: dict) -> None:
    """The hosts spider against the crawler before: its ratio vs bare, and its RSS."""
    speed, size = best["ours"] / best["before"], peak["ours"] / peak["before"]
    fast = verdict(
        None if QUICK else speed >= BEFORE_TARGET,
        "pages/s vs the crawler before",
        f"x{speed:.2f}",
        f">= x{BEFORE_TARGET}",
    )
    print(
        f"hosts spider, the crawler before ({BEFORE}): {best['before']:,.0f} pages/s"
        f" [median {median['before']:,.0f}] (ratio vs bare: {best['before'] / best['bare']:.2f};"
        f" now vs before: {speed:.2f}, target >= {BEFORE_TARGET}) {fast}"
    )
    small = verdict(
        None if QUICK else size <= BEFORE_TARGET,
        "peak RSS vs the crawler before",
        f"x{size:.2f}",
        f"<= x{BEFORE_TARGET}",
    )
    print(
        f"the crawler before's peak RSS: {peak['before']:.0f} MB (now vs before: {size:.2f},"
        f" target <= {BEFORE_TARGET}) {small}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        instrumented_child(Path(sys.argv[2]), sys.argv[3].strip("-"), sys.argv[4:])
    else:
        main()
