"""The slow web against its politeness bound: three slow worlds, each judged against the
best any crawler could do there under the crawl's rules; the fast world, a figure of its own.

Targets, at default settings, on each slow world: the crawl >= 0.9 x its politeness
bound (pages/s, and so its time); the worker's peak RSS <= MEMORY_BUDGET_MB (500); its
memory per host in flight <= the figure MAX_IN_FLIGHT's default is sized by
(crawler/core/in_flight_sizing.py), so that the default keeps the budget.

The worlds (tests/fakeweb/slow.py on World(SEED).graph(hosts, roots, links_per_page=LINKS),
every host seeded; every DNS reply waits 20-80 ms):

    1   1,200 hosts over   300 roots, answers after 0.3-1.2 s, 7% hang after TLS, 3% no DNS
    2   2,400 hosts over 1,200 roots, answers after 1-3 s, 10% hang, 5% no DNS
    3  20,000 hosts over 10,000 roots, answers after 0.2-5 s, 20% dead: 7% NXDOMAIN,
       6% refuse every connection, 7% hang after TLS (a real seed list)

and the fast world: world 1's graph answering at once (bench/crawl.py's kind of world).

The bound (bench/_slowweb_bound.py, which imports nothing of the crawler): each root's
hosts ROOT_CONCURRENCY at a time in seed order, a host holding its slot for its DNS reply
and its answers (robots.txt and the page, when obeyed), a hanging host until
DOWNLOAD_TIMEOUT, a name without DNS two DNS_TIMEOUTs; no limit of hosts in flight, claims
and CPU free. Its time is when 95% of the answering hosts have their page.

Each world: empty the database, seed every host, `python -m scrapy crawl hosts` with the
production settings (crawler.settings, the add-on) but HOST_URL_TEMPLATE (https on
fakeweb's port, the plain-HTTP fallback on), DNS_NAMESERVERS and CLOSE_WHEN_DRAINED=1.

crawl time = from the first request fakeweb saw until the 95%-th answering host's page was
answered (its request's time plus its delay, from fakeweb's event log); pages/s = those
hosts / that time. Peak RSS is the worker's VmHWM (stat hostcrawl/rss_mb/peak); memory per
host in flight = (peak RSS - RSS when the spider opened) / the in-flight peak (stats). The
resolver's figures are the worker's stats (hostcrawl/dns/...).

    python bench/slowweb.py               the three slow worlds and the fast one
    python bench/slowweb.py --worlds 1,3  only those (fast: the fast world)
    python bench/slowweb.py --no-robots   ROBOTSTXT_OBEY=0 (the bound follows)
    python bench/slowweb.py --keep        keep the logs (the path is printed)
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from _common import machine_line, start_database, verdict, work_dir
from _crawl_runs import PROJECT_ROOT, empty_tables, run_child, scrapy_args
from _slowweb_bound import Rules, politeness_bound, root_by_suffix

SEED = 20261201
LINKS = 8
SHARE = 0.95  # of the answering hosts, fetched
TARGET_RATIO = 0.9  # of the politeness bound
WIDE = 1_500  # hosts in flight from which the memory per host is judged
# name: hosts, roots, answer delays, shares of the slow_web kinds
WORLDS = {
    "1": (1_200, 300, (0.3, 1.2), {"hang": 0.07, "no_dns": 0.03}),
    "2": (2_400, 1_200, (1.0, 3.0), {"hang": 0.10, "no_dns": 0.05}),
    "3": (
        20_000,
        10_000,
        (0.2, 5.0),
        {"hang": 0.07, "no_dns": 0.0, "nxdomain": 0.07, "refused": 0.06},
    ),
}
EXPECTED = {
    "answering": {"OK"},
    # A hanging host hangs on its robots.txt first (unreachable, RFC 9309), or on its page.
    "hanging": {"HTTP_ROBOTS_UNREACHABLE", "HTTP_TIMEOUT"},
    "no_dns": {"DNS_TIMEOUT"},
    "nxdomain": {"DNS_NXDOMAIN"},
    "refused": {"TCP_REFUSED"},
}
DNS_STATS = ("in_flight_peak", "lookups", "cache_hits", "wait_ms/p50", "wait_ms/p95", "wait_ms/max")


def fetch_time(web, world, answering: list[str]) -> float:
    """Seconds from the first request to SHARE of the answering hosts' pages."""
    requests = web.requests()
    first = min(r["t"] for r in requests)
    answered: dict[str, float] = {}
    for r in requests:
        if r["path"] == "/" and r["method"] == "GET" and r["host"] not in answered:
            answered[r["host"]] = r["t"] + world.timing.get(r["host"], {}).get("delay", 0)
    times = sorted(answered[h] for h in answering if h in answered)
    needed = int(SHARE * len(answering))
    return times[needed - 1] - first if len(times) >= needed else float("inf")


def build(name: str):
    """World `name` (or "fast"): the world, its names in seed order, its roots, its kinds."""
    from tests.fakeweb import World
    from tests.fakeweb.slow import slow_web

    hosts, n_roots, answer, shares = WORLDS["1" if name == "fast" else name]
    roots = [f"site{i:05}.test" for i in range(n_roots)]
    world = World(seed=SEED)
    names = world.graph(hosts, roots=roots, links_per_page=LINKS)
    if name == "fast":
        return world, names, roots, {"answering": names}
    return world, names, roots, slow_web(world, names, answer=answer, seed=SEED, **shares)


def rules(robots: bool) -> Rules:
    from crawler.core.config import setting
    from crawler.settings import DOWNLOAD_TIMEOUT
    from tests.fakeweb.slow import DNS

    return Rules(
        root_concurrency=setting("ROOT_CONCURRENCY").default,
        robots_obeyed=robots,
        download_timeout=DOWNLOAD_TIMEOUT,
        dns_timeout=setting("DNS_TIMEOUT").default,
        dns_seconds=min(DNS),
    )


def main() -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    from sqlalchemy import create_engine

    print(machine_line())
    overall = time.perf_counter()
    chosen = "fast,1,2,3"
    if "--worlds" in sys.argv:
        chosen = sys.argv[sys.argv.index("--worlds") + 1]
    robots = "--no-robots" not in sys.argv
    extra = {} if robots else {"ROBOTSTXT_OBEY": 0}
    work = work_dir("slowweb")
    engine = create_engine(start_database(), pool_size=2)
    for name in chosen.split(","):
        world, names, roots, kinds = build(name)
        described = ", ".join(f"{len(v):,} {k}" for k, v in kinds.items() if v)
        print(f"# world {name}: {len(names):,} hosts under {len(roots):,} roots: {described}")
        r = our_round(engine, work / f"world-{name}", world, names, kinds, extra)
        if name == "fast":
            report_fast(r, int(SHARE * len(names)))
            continue
        delays = {h: world.timing[h]["delay"] for h in kinds["answering"]}
        kind_of = {h: kind for kind, hs in kinds.items() for h in hs}
        bound_s = politeness_bound(
            names, root_by_suffix(names, roots), kind_of, delays, rules(robots), SHARE
        )
        report(name, r, bound_s, int(SHARE * len(kinds["answering"])))
    print(f"# {time.perf_counter() - overall:.0f} s in all")
    engine.dispose()


def our_round(engine, work: Path, world, names: list[str], kinds: dict, extra: dict) -> dict:
    """One crawl of `world` by our worker, every name seeded; its figures, printed."""
    from sqlalchemy import text

    from crawler.db.operators import bulk
    from tests.fakeweb import FakeWeb

    empty_tables(engine)
    bulk.collect(bulk.seed(engine, names))
    web = FakeWeb(world, workdir=work.with_name(f"fakeweb-{work.name}")).start()
    try:
        settings = web.scrapy_settings("https")
        command = scrapy_args(["crawl", "hosts"], settings, CLOSE_WHEN_DRAINED=1, **extra)
        r = run_child(command, work.with_suffix(".log"), hosts=len(names))
        r["seconds"] = fetch_time(web, world, kinds["answering"])
    finally:
        web.stop()
    with engine.connect() as conn:
        outcomes = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
    settled = Counter(
        (kind, outcomes.get(h) in EXPECTED[kind]) for kind, hs in kinds.items() for h in hs
    )
    wrong = {kind: n for (kind, right), n in settled.items() if not right}
    stats = r["stats"]
    peak = stats.get("hostcrawl/in_flight/peak", 0)
    rss_peak = stats.get("hostcrawl/rss_mb/peak", r["rss_mb"])
    rss_start = stats.get("hostcrawl/rss_mb/start", 0)
    r["rss_peak"] = rss_peak
    r["kb_per_host"] = (rss_peak - rss_start) * 1024 / peak if peak else float("nan")
    dns = ", ".join(f"{k} {stats.get('hostcrawl/dns/' + k, 0):.0f}" for k in DNS_STATS)
    print(
        f"# {work.name}: process {r['wall']:.1f} s, CPU {r['cpu']:.1f} s; in flight: peak"
        f" {peak:.0f}, limit up to {stats.get('hostcrawl/in_flight/limit_peak', 0):.0f} of"
        f" {stats.get('hostcrawl/in_flight/maximum', 0):.0f}; RSS {rss_start:.0f} MB at start,"
        f" {rss_peak:.0f} MB at peak; open files limit"
        f" {stats.get('hostcrawl/open_files_limit', 0):.0f}; hosts not settled as expected:"
        f" {wrong or 'none'}"
    )
    print(f"# {work.name}: DNS (the resolver's own counts): {dns}")
    r["cpu_ms_per_host"] = r["cpu"] * 1000 / len(names)
    r["names"] = names
    return r


def report_fast(r: dict, pages: int) -> None:
    seconds = r["seconds"]
    print(
        f"fast world (answers at once): {pages:,} hosts in {seconds:.2f} s ="
        f" {pages / seconds:,.0f} pages/s, peak RSS {r['rss_peak']:.0f} MB,"
        f" {r['kb_per_host']:.0f} KB per host in flight (a figure of its own: no target)"
    )


def report(name: str, r: dict, bound_s: float, pages: int) -> None:
    """One slow world's figures against its bound, each with its target and verdict."""
    from crawler.core.config import setting
    from crawler.core.in_flight_sizing import KB_PER_HOST_IN_FLIGHT

    seconds = r["seconds"]
    ratio = bound_s / seconds
    rate, bound_rate = pages / seconds, pages / bound_s
    budget = setting("MEMORY_BUDGET_MB").default
    lines = [
        ("politeness bound", f"{bound_s:.2f} s ({bound_rate:,.0f} pages/s)", "", None),
        ("crawl time", f"{seconds:.2f} s", f"<= {bound_s / TARGET_RATIO:.2f} s", ratio),
        ("crawl vs bound", f"x{ratio:.2f}", f">= x{TARGET_RATIO}", ratio),
        ("pages/s", f"{rate:,.0f}", f">= {TARGET_RATIO * bound_rate:,.0f}", ratio),
    ]
    for figure, value, target, judged in lines:
        ok = None if judged is None else judged >= TARGET_RATIO
        word = verdict(ok, f"world {name} {figure}", value, target) if target else "(the yardstick)"
        print(
            f"world {name} {figure}: {value}"
            + (f" (target {target})" if target else "")
            + f" {word}"
        )
    cpu_ms, hosts = r["cpu_ms_per_host"], len(r["names"])
    print(
        f"# world {name}: the worker's CPU, {cpu_ms:.1f} ms a host, allows one core"
        f" {1000 / cpu_ms:,.0f} hosts/s; the bound's pace ({hosts:,} hosts in"
        f" {bound_s:.1f} s) leaves {bound_s * 1000 / hosts:.1f} ms a host"
    )
    rss, kb = r["rss_peak"], r["kb_per_host"]
    word = verdict(rss <= budget, f"world {name} peak RSS", f"{rss:.0f} MB", f"<= {budget} MB")
    print(f"world {name} peak RSS: {rss:.0f} MB (target <= {budget} MB) {word}")
    # Judged at width only: under WIDE hosts in flight the crawl's own fixed growth (its
    # batches, caches and stats, ~50 MB) weighs more than the hosts.
    peak = r["stats"].get("hostcrawl/in_flight/peak", 0)
    target = f"<= {KB_PER_HOST_IN_FLIGHT} KB at {WIDE:,}+ in flight"
    word = verdict(
        kb <= KB_PER_HOST_IN_FLIGHT if peak >= WIDE else None,
        f"world {name} memory per host in flight",
        f"{kb:.0f} KB",
        target,
    )
    print(
        f"world {name} memory per host in flight: {kb:.0f} KB at {peak:,.0f} in flight"
        f" (target {target}) {word}"
    )


if __name__ == "__main__":
    main()
