"""Pages per second on a slow web against the same world answering at once; peak in flight, RSS.

Targets, at default settings: the slow world keeps >= 0.7 x the fast world's
pages/s (>= 0.75 x at --big); the worker's peak RSS <= 500 MB (MEMORY_BUDGET_MB's
default); the fast world no slower than the crawler at SIZED's (below).

One world, World(SEED).graph(HOSTS, ROOTS, links_per_page=LINKS), served by
two fakewebs on loopback side by side:

- fast (the baseline): every host answers at once, as bench/crawl.py's world;
- slow (tests/fakeweb/slow.py): 90% of hosts answer after 0.3-1.2 s (robots.txt
  and page alike), 7% accept TCP and TLS and then hang past every timeout, 3%
  never get a DNS reply; every DNS reply waits 20-80 ms.

Each round, fast then slow (ROUNDS of each, alternating: the best of each
counts), empties the database, seeds every host of the world and runs
`python -m scrapy crawl hosts` with the production settings
(crawler.settings, the add-on) except HOST_URL_TEMPLATE (https on fakeweb's
port, the plain-HTTP fallback on), DNS_NAMESERVERS and CLOSE_WHEN_DRAINED=1:
no timeout, no concurrency and no claim size is tuned.

pages/s = 95% of the answering hosts / the time from the first request the
fakeweb saw to the moment the 95%-th answering host's front page was answered
(its request's time plus its answer delay, from fakeweb's event log). The
slow world's hanging hosts settle a download timeout later: they are in the
outcome counts, not in the rate. Peak in flight is the worker's own stat
(hostcrawl/in_flight/peak); peak RSS is the worker process's ru_maxrss (wait4).

The crawler as it was at SIZED (a commit of this repository, unpacked with `git
archive`, on a database its own migrations made and seeded by its own CLI: the
third baseline, before the in-flight limit started where the web needs it and
the tail got its room) crawls the fast world as many rounds as ours, alternating
with them: the fast world must be no slower now (best against best); then the
slow world once, its pages/s printed beside ours. At --big, one round of the fast
world (ours: the median of two against it) and not the slow one.

Two more rounds, "fast, before" (the second baseline) and "slow, before", crawl
both worlds once more with the crawler as it was before it sized itself (BEFORE,
likewise): the fast world must be no slower than it was; the slow world's gain
is printed. Not at --big (the crawler before would take half an hour over the
slow world, and SIZED's round is the stricter baseline of the fast one).

    python bench/slowweb.py            1,200 hosts over 300 roots
    python bench/slowweb.py --big      10,000 hosts over 2,000 roots
    python bench/slowweb.py --keep     keep the logs (the path is printed)
    python bench/slowweb.py --no-before   skip the rounds of the crawlers before
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from _common import machine_line, start_database, verdict, work_dir
from _crawl_runs import (
    BEFORE,
    PROJECT_ROOT,
    SIZED,
    crawler_before,
    empty_tables,
    run_child,
    scrapy_args,
    seed_before,
)
from _slowweb_bound import politeness_bound

SEED = 20261201
SIZES = {"default": (1_200, 300), "big": (10_000, 2_000)}  # hosts, roots
LINKS = 8
SHARE = 0.95  # of the answering hosts, fetched
TARGET_RATIO = 0.7
TARGET_RATIO_BIG = 0.75  # a bigger world: the start and the tail weigh less
ROUNDS = 2  # of each world by our worker, alternating; the best of each (a noisy machine)
TARGET_RSS_MB = 500
EXPECTED = {"answering": "OK", "hanging": "HTTP_TIMEOUT", "no_dns": "DNS_TIMEOUT"}
BEFORE_TARGET = 1.0  # the fast world: no slower than before


def fetch_rate(web, world, answering: list[str]) -> tuple[float, float]:
    """(pages/s, seconds) for SHARE of the answering hosts, from the first request."""
    requests = web.requests()
    first = min(r["t"] for r in requests)
    answered: dict[str, float] = {}
    for r in requests:
        if r["path"] == "/" and r["method"] == "GET" and r["host"] not in answered:
            answered[r["host"]] = r["t"] + world.timing.get(r["host"], {}).get("delay", 0)
    times = sorted(answered[h] for h in answering if h in answered)
    needed = int(SHARE * len(answering))
    if len(times) < needed:
        return 0.0, float("nan")
    seconds = times[needed - 1] - first
    return needed / seconds, seconds


def main() -> None:
    sys.path.insert(0, str(PROJECT_ROOT))
    from sqlalchemy import create_engine

    from crawler.settings import DOWNLOAD_TIMEOUT
    from tests.fakeweb import World
    from tests.fakeweb.slow import DNS, slow_web

    print(machine_line())
    overall = time.perf_counter()
    big = "--big" in sys.argv
    hosts, n_roots = SIZES["big" if big else "default"]
    work = work_dir("slowweb")
    url = start_database()
    engine = create_engine(url, pool_size=2)

    roots = [f"site{i:04}.test" for i in range(n_roots)]
    fast = World(seed=SEED)
    names = fast.graph(hosts, roots=roots, links_per_page=LINKS)
    slow = World(seed=SEED)
    slow.graph(hosts, roots=roots, links_per_page=LINKS)
    kinds = slow_web(slow, names, seed=SEED)
    worlds = {"fast": (fast, {"answering": names}), "slow": (slow, kinds)}
    print(
        f"# world: {hosts:,} hosts under {n_roots:,} roots, all seeded; slow:"
        f" {len(kinds['answering']):,} answer after 0.3-1.2 s, {len(kinds['hanging']):,} hang"
        f" after TLS, {len(kinds['no_dns']):,} get no DNS reply, DNS replies 20-80 ms"
    )
    bound_s = politeness_bound(
        names,
        {name: slow.timing[name]["delay"] for name in kinds["answering"]},
        kinds,
        share=SHARE,
        dns_seconds=min(DNS),
        download_timeout=DOWNLOAD_TIMEOUT,
    )
    bound = int(SHARE * len(kinds["answering"])) / bound_s
    print(
        f"# the slow world's politeness bound (ROOT_CONCURRENCY per root, claims and CPU"
        f" free): {SHARE:.0%} of its answering hosts in {bound_s:.2f} s = {bound:,.0f} pages/s"
    )
    runs: dict[str, list[dict]] = {mode: [] for mode in worlds}
    before = "--no-before" not in sys.argv
    sized = SizedRounds(work, url, names) if before else None
    for i in range(ROUNDS):
        for mode, (world, by_kind) in worlds.items():
            runs[mode].append(our_round(engine, work / f"{mode}-{i}", world, names, by_kind))
        if sized and (i == 0 or not big):
            sized.crawl("fast", *worlds["fast"], i)
    best = {mode: max(rs, key=lambda r: r["rate"]) for mode, rs in runs.items()}
    if sized:
        if not big:
            sized.crawl("slow", *worlds["slow"], 0)
        sized.close()
        report_sized(runs, sized.runs)
    if before and not big:
        # The crawler before takes 4 minutes over the slow world at the default size, and
        # would take half an hour at --big.
        best.update(before_rounds(work, url, worlds, names))
    target = TARGET_RATIO_BIG if big else TARGET_RATIO
    report(best, max(r["rss_mb"] for rs in runs.values() for r in rs), target, bound)
    print(f"# {time.perf_counter() - overall:.0f} s in all")
    engine.dispose()


def our_round(engine, work: Path, world, names: list[str], by_kind: dict) -> dict:
    """One crawl of `world` by our worker, every name seeded; its figures, printed."""
    from sqlalchemy import text

    from crawler.db.operators import bulk

    empty_tables(engine)
    bulk.collect(bulk.seed(engine, names))
    r = crawl_world(world, work, len(names), by_kind["answering"])
    with engine.connect() as conn:
        outcomes = dict(conn.execute(text("SELECT hostname, outcome FROM hosts")).all())
    settled = Counter(
        (kind, outcomes.get(h) == EXPECTED[kind]) for kind, hs in by_kind.items() for h in hs
    )
    wrong = {kind: n for (kind, right), n in settled.items() if not right}
    print(
        f"# {work.name}: {SHARE:.0%} of {len(by_kind['answering']):,} answering hosts in"
        f" {r['seconds']:.2f} s from the first request; process {r['wall']:.1f} s,"
        f" CPU {r['cpu']:.1f} s; peak in flight"
        f" {r['stats'].get('hostcrawl/in_flight/peak', 0):.0f} (limit up to"
        f" {r['stats'].get('hostcrawl/in_flight/limit_peak', 0):.0f}), peak RSS"
        f" {r['rss_mb']:.0f} MB; hosts not settled as expected: {wrong or 'none'}"
    )
    return r


def crawl_world(world, work: Path, hosts: int, answering: list[str], **where) -> dict:
    """`scrapy crawl hosts` (ours, or the tree and environment `where` names) over `world`
    on a fakeweb of its own; the run's figures with its pages/s. Logs beside `work`."""
    from tests.fakeweb import FakeWeb

    web = FakeWeb(world, workdir=work.with_name(f"fakeweb-{work.name}")).start()
    try:
        settings = web.scrapy_settings("https")
        command = scrapy_args(["crawl", "hosts"], settings, CLOSE_WHEN_DRAINED=1)
        r = run_child(command, work.with_suffix(".log"), hosts=hosts, **where)
        r["rate"], r["seconds"] = fetch_rate(web, world, answering)
    finally:
        web.stop()
    return r


class SizedRounds:
    """The crawler at SIZED, on its own database of the same server, crawling a world as
    our rounds crawl it; its figures by world ("fast": [...], "slow": [...])."""

    def __init__(self, work: Path, url: str, names: list[str]) -> None:
        from sqlalchemy import create_engine

        self.work, self.names = work, names
        self.tree, self.env = crawler_before(work, url, names, SIZED)
        self.engine = create_engine(self.env["DATABASE_URL"], pool_size=1)
        self.seeded = True  # crawler_before seeded the first round
        self.runs: dict[str, list[dict]] = {"fast": [], "slow": []}

    def crawl(self, mode: str, world, by_kind: dict, i: int) -> None:
        if not self.seeded:
            empty_tables(self.engine)
            seed_before(self.tree, self.env, self.names)
        self.seeded = False
        answering = by_kind["answering"]
        where = {"cwd": self.tree, "env": self.env}
        r = crawl_world(
            world, self.work / f"{mode}-{SIZED}-{i}", len(self.names), answering, **where
        )
        peak = r["stats"].get("hostcrawl/in_flight/peak", 0)
        print(
            f"# {mode}-{SIZED}-{i}: {SHARE:.0%} of {len(answering):,} answering hosts in"
            f" {r['seconds']:.2f} s from the first request; process {r['wall']:.1f} s, CPU"
            f" {r['cpu']:.1f} s; peak in flight {peak:.0f}, peak RSS {r['rss_mb']:.0f} MB"
        )
        self.runs[mode].append(r)

    def close(self) -> None:
        self.engine.dispose()


def report_sized(ours: dict[str, list[dict]], sized: dict[str, list[dict]]) -> None:
    """The fast world now against the crawler at SIZED (best against best when both had as
    many rounds, else our median against theirs), and the slow world's gain."""
    fast = [r["rate"] for r in ours["fast"]]
    then = [r["rate"] for r in sized["fast"]]
    now, how = (
        (max(fast), "best") if len(then) == len(fast) else (statistics.median(fast), "median")
    )
    ratio = now / max(then)
    word = verdict(
        ratio >= BEFORE_TARGET, f"fast world vs {SIZED}", f"x{ratio:.2f}", f">= x{BEFORE_TARGET}"
    )
    print(
        f"fast world, the crawler at {SIZED}: {max(then):,.0f} pages/s (third baseline, best of"
        f" {len(then)}; now ({how} of {len(fast)}) {now:,.0f} pages/s, now vs then:"
        f" {ratio:.2f}, target >= {BEFORE_TARGET}) {word}"
    )
    if sized["slow"]:
        slow_then = sized["slow"][0]["rate"]
        slow_now = max(r["rate"] for r in ours["slow"])
        print(
            f"slow world, the crawler at {SIZED}: {slow_then:,.0f} pages/s (ratio vs its fast"
            f" world: {slow_then / max(then):.2f}; now vs then: {slow_now / slow_then:.2f})"
        )


def before_rounds(work: Path, url: str, worlds: dict, names: list[str]) -> dict:
    """Each of `worlds` crawled once by the crawler at BEFORE, as our rounds crawl it;
    {"fast before": figures, ...}."""
    from sqlalchemy import create_engine

    tree, env = crawler_before(work, url, names)
    engine = create_engine(env["DATABASE_URL"], pool_size=1)
    results = {}
    for mode, (world, by_kind) in worlds.items():
        if results:  # crawler_before seeded the first round
            empty_tables(engine)
            seed_before(tree, env, names)
        answering = by_kind["answering"]
        r = crawl_world(world, work / f"{mode}-before", len(names), answering, cwd=tree, env=env)
        print(
            f"# {mode}, before ({BEFORE}): {SHARE:.0%} of {len(by_kind['answering']):,}"
            f" answering hosts in {r['seconds']:.2f} s from the first request; process"
            f" {r['wall']:.1f} s, CPU {r['cpu']:.1f} s, peak RSS {r['rss_mb']:.0f} MB"
        )
        results[f"{mode} before"] = r
    engine.dispose()
    return results


def report(best: dict, rss: float, target: float, bound: float) -> None:
    """The figures, the ratios and the verdicts (best round of each)."""
    fast, slow = best["fast"]["rate"], best["slow"]["rate"]
    print(f"# best of {ROUNDS} rounds each")
    print(f"fast world (answers at once): {fast:,.0f} pages/s (baseline)")
    if "fast before" in best:
        before = best["fast before"]["rate"]
        word = verdict(
            fast / before >= BEFORE_TARGET,
            "fast world vs before",
            f"x{fast / before:.2f}",
            f">= x{BEFORE_TARGET}",
        )
        print(
            f"fast world, the crawler before ({BEFORE}): {before:,.0f} pages/s (second"
            f" baseline; now vs before: {fast / before:.2f}, target >= {BEFORE_TARGET}) {word}"
        )
    ratio = slow / fast
    word = verdict(ratio >= target, "slow vs fast world", f"x{ratio:.2f}", f">= x{target}")
    print(
        f"slow world (0.3-1.2 s, 7% hang, 3% no DNS): {slow:,.0f} pages/s"
        f" (ratio vs fast: {ratio:.2f}, target >= {target}) {word}"
    )
    print(
        f"# the slow world against its politeness bound ({bound:,.0f} pages/s): {slow / bound:.2f};"
        f" the bound against the fast world: {bound / fast:.2f}"
    )
    if "slow before" in best:
        before = best["slow before"]["rate"]
        print(
            f"slow world, the crawler before ({BEFORE}): {before:,.1f} pages/s (now vs before:"
            f" {slow / before:.1f})"
        )
    in_flight = best["slow"]["stats"].get("hostcrawl/in_flight/peak", 0)
    print(f"slow world peak in flight: {in_flight:.0f} hosts")
    word = verdict(
        rss <= TARGET_RSS_MB, "worker peak RSS", f"{rss:.0f} MB", f"<= {TARGET_RSS_MB} MB"
    )
    print(f"worker peak RSS: {rss:.0f} MB (target <= {TARGET_RSS_MB} MB) {word}")


if __name__ == "__main__":
    main()
