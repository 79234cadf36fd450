"""`make demo`: crawl a small fake internet, show what to look at, serve the panel.

Run as ``python -m tests.fakeweb.demo``. Everything stays on loopback:

1. a database of its own: an embedded Postgres under var/demo/pg, never the
   default one (var/pg) nor DATABASE_URL's, so the demo's fake DNS never meets
   an operator's queue; migrated; the previous demo's crawl is forgotten
   first, its figures with it (its operators stay), so the panel's figures start
   from zero;
2. a fakeweb (DNS + HTTP on 127.0.0.1) serving a world of ~60 ordinary sites
   under three roots linking to each other; pages that also link to the giant
   platform ``social.test`` in odd forms (upper case, trailing dot, port,
   ``//host``, https); and a web ring page linking to 150 subdomains of
   ``trap.test``, whose zone answers NXDOMAIN (a subdomain generator);
   then an operator for its panel is offered: `make run`'s, copied, or one made
   (tests/fakeweb/demo_operator.py; no prompt without a terminal);
3. ``social.test`` goes on no_follow (with a note), the first site is seeded,
   and ``python -m scrapy crawl hosts`` runs until the queue is drained;
4. a summary: hosts discovered, the blocked entries with their
   ``blocked_reason``, the no_follow entries, the platform links filtered;
5. if the panel (``webpanel``) is installed: gunicorn serves it on
   127.0.0.1:8000 (``DEMO_BIND=HOST:PORT`` to move it; a taken address is refused
   before anything starts), its address and how to log in said once it answers,
   until Ctrl-C or SIGTERM; then the panel and the fakeweb are stopped, and said to
   be. ``DEMO_NO_SERVE=1`` skips this step.

``DEMO_SLOW=1`` crawls the same world in fakeweb's slow mode (tests/fakeweb/slow.py):
sites answer after 0.3-1.2 s, 7% hang after connecting, 3% get no DNS reply.

Logs: var/demo/crawl.log, var/demo/fakeweb/ (http.jsonl, dns.jsonl).
The crawler and the panel it starts get the demo database's URL as DATABASE_URL.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from sqlalchemy import text

from crawler.core import config
from crawler.core.words import counted
from crawler.db.crawl import queue, retention
from crawler.db.rules import deny_entries
from crawler.db.server.engine import (
    DatabaseUrlError,
    checked_database_url,
    leave_embedded_server,
    var_dir,
)

from .demo_operator import Login, offer_operator
from .demo_panel import bind_refused, serve_panel, serving, stop, wait_for_ctrl_c
from .handle import PROJECT_ROOT, FakeWeb
from .slow import slow_web
from .world import ALLOWED_NETWORKS, World, link_host

ROOTS = ["alpha.test", "beta.test", "gamma.test"]
SITES = 60
PLATFORM = "social.test"
PLATFORM_NOTE = "demo: a giant platform; its pages are not worth following"
PLATFORM_FORMS = [
    "http://SOCIAL.test:8080/share?u={n}",
    "http://social.test./",
    "https://www.social.test/u/{n}",
    "//api.Social.TEST/feed",
    "http://deep.www.social.test/profile/{n}",
    "HTTP://M.SOCIAL.TEST./?ref=share",
]
RING = "webring.test"
TRAP = "trap.test"
TRAP_LINKS = 150
BIND = os.environ.get("DEMO_BIND", "127.0.0.1:8000")
CRAWL_TIMEOUT = 120  # seconds: a bound, not a wait


def demo_dir() -> Path:
    """var/demo: the demo's database (pg/) and logs; never the operator's data."""
    from crawler.db.server.engine import var_dir

    path = var_dir() / "demo"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_database_url() -> str | None:
    """`make run`'s database, whose operators the demo offers: DATABASE_URL's, else the
    embedded one under var/pg if it was ever made (None: no such database)."""
    from crawler.db.server.engine import embedded_server_url

    url = config.from_environment("DATABASE_URL", os.environ)
    if url:
        try:
            return checked_database_url(url)
        except DatabaseUrlError as exc:
            print(f"  make run's database: {exc}; no operator copied")
            return None
    pgdata = var_dir() / "pg"
    return embedded_server_url(pgdata) if (pgdata / "PG_VERSION").exists() else None


def demo_database_url() -> str:
    """The demo's own embedded Postgres (var/demo/pg), started if need be: whatever
    DATABASE_URL says, the demo never crawls, seeds or blocks in the operator's data."""
    from crawler.db.server.engine import embedded_server_url

    return embedded_server_url(demo_dir() / "pg")


def build_world(seed: int = 7) -> tuple[World, list[str]]:
    """The demo world; returns it and the ordinary sites (names[0] is the seed)."""
    world = World(seed=seed)
    names = world.graph(SITES, roots=ROOTS, links_per_page=4, messy=0.2)
    rng = random.Random(seed)
    for i, name in enumerate(names):
        if i % 3 == 1:  # every third site links to the platform, in one or two odd forms
            forms = rng.sample(PLATFORM_FORMS, rng.randint(1, 2))
            world.pages[name]["/"]["links"] += [f.format(n=rng.randint(1, 999)) for f in forms]
    # The platform itself: would lead to hundreds of its own subdomains, if followed.
    members = [f"http://user{i}.{PLATFORM}/" for i in range(500)]
    for host in (PLATFORM, f"www.{PLATFORM}", f"m.{PLATFORM}", f"api.{PLATFORM}"):
        world.site(host, title="Social — the giant platform", links=members)
    world.zone(PLATFORM, "ok")  # every user page resolves, as on a real platform
    # A web ring page, linked from one ordinary site, into a subdomain generator.
    labels = [
        f"{rng.choice('bcdfgkmnprstvz')}{rng.randrange(16**6):06x}" for _ in range(TRAP_LINKS)
    ]
    world.site(RING, title="The web ring", links=[f"http://{lb}.{TRAP}/" for lb in labels])
    world.zone(TRAP, "nxdomain", apex=True)
    world.pages[names[SITES // 2]]["/"]["links"].append(f"http://{RING}/")
    return world, names


def under(hostname: str | None, entry: str) -> bool:
    return hostname is not None and (hostname == entry or hostname.endswith("." + entry))


def on_platform(hostname: str | None) -> bool:
    return under(hostname, PLATFORM)


def platform_links(world: World, pages: set[str]) -> int:
    """How many links on the given hosts' front pages point at or under the platform."""
    return sum(
        on_platform(link_host(href, host))
        for host in pages
        for href in world.pages.get(host, {}).get("/", {}).get("links", [])
    )


def forget_previous_demo(engine) -> int:
    """Forget a previous demo's crawl, figures and all (its operators stay): a new demo
    starts from zero. Returns how many hosts went."""
    return retention.forget_the_crawl(engine)


def crawl(web: FakeWeb, log_path: Path) -> tuple[int, str]:
    """Run one `scrapy crawl hosts` worker until drained (bounded); exit code and log."""
    settings = {
        **web.scrapy_settings("http"),
        "CLOSE_WHEN_DRAINED": 1,
        "CLAIM_POLL_INTERVAL": 0.2,
        "DNS_TIMEOUT": 1,
        "DOWNLOAD_TIMEOUT": 3,
        "LOG_LEVEL": "INFO",
    }
    args = [sys.executable, "-m", "scrapy", "crawl", "hosts"]
    for name, value in settings.items():
        args += ["-s", f"{name}={value}"]
    with open(log_path, "w") as log:
        # Own session: a Ctrl-C reaches only us, and we pass on exactly one SIGINT.
        proc = subprocess.Popen(
            args, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            code = proc.wait(timeout=CRAWL_TIMEOUT)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            stop(proc, signal.SIGINT)  # one SIGINT: Scrapy's graceful stop
            raise
    return code, log_path.read_text(errors="replace")


def summarize(db, engine, world: World, web: FakeWeb) -> None:
    TRAP_WINDOW = config.setting("TRAP_WINDOW").default

    with engine.connect() as conn:
        known = conn.execute(text("SELECT count(*) FROM hosts")).scalar()
        outcomes = Counter(
            dict(
                conn.execute(
                    text(
                        "SELECT outcome, count(*) FROM hosts WHERE outcome IS NOT NULL"
                        " GROUP BY outcome"
                    )
                ).all()
            )
        )
        crawled = set(
            conn.execute(text("SELECT hostname FROM hosts WHERE outcome IS NOT NULL")).scalars()
        )
        filtered = conn.execute(text("SELECT coalesce(sum(links_filtered), 0) FROM hosts")).scalar()
        # Per deny entry: (rows it took out of routing, of which never crawled).
        out_of_routing = {
            entry: (rows, never)
            for entry, rows, never in conn.execute(
                text(
                    "SELECT q.denied_by, count(*), count(*) FILTER (WHERE h.outcome IS NULL)"
                    " FROM queue q JOIN hosts h USING (hostname)"
                    " WHERE q.denied_by IS NOT NULL GROUP BY 1"
                )
            )
        }
    by_outcome = ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
    print(f"\nWhat the crawl found (in the demo's own database, {demo_dir() / 'pg'})")
    print(f"  hosts discovered: {known} ({len(crawled)} crawled: {by_outcome})")

    blocked = deny_entries.list_entries(db, "blocked")
    print(f"\n  blocked entries ({len(blocked)}): the trap rule's verdicts")
    for entry in blocked:
        print(f"    {entry['hostname']}  blocked_reason:")
        print(f"      {entry['blocked_reason']}")
        rows, never = out_of_routing.get(entry["hostname"], (0, 0))
        looked_up = {q["name"] for q in web.dns_queries() if under(q["name"], entry["hostname"])}
        print(
            f"      subdomains looked up: {len(looked_up)} (the window's {TRAP_WINDOW}, and those"
            f" already in flight); taken out of routing: {rows}, {never} of them never crawled"
        )
    if not blocked:
        print("    none (unexpected: the web ring's trap.test links should have made one)")

    no_follow = deny_entries.list_entries(db, "no_follow")
    print(f"\n  no_follow entries ({len(no_follow)}): excluded by an operator")
    for entry in no_follow:
        print(f"    {entry['hostname']}  note: {entry['note'] or '-'}")
    expected = platform_links(world, crawled)
    fetched = {r["host"] for r in web.requests() if on_platform(r["host"])}
    lookups = [q for q in web.dns_queries() if on_platform(q["name"])]
    print(
        f"    links to {PLATFORM} dropped by the link filter: {filtered}"
        f" (sum of hosts.links_filtered; the crawled pages hold {expected} such links)"
    )
    print(f"    {PLATFORM} hosts fetched: {len(fetched)}, DNS lookups under it: {len(lookups)}")


def interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main() -> int:
    # Ctrl-C (even when started where SIGINT is ignored) and SIGTERM stop everything cleanly.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    sys.stdout.reconfigure(line_buffering=True)
    # Before anything starts: a taken address would otherwise be found after the crawl.
    if serving() and (busy := bind_refused(BIND)):
        print(f"error: {busy}; nothing was started", file=sys.stderr)
        return 1

    from crawler.db.server.engine import get_engine
    from crawler.db.server.migrate import upgrade_to_head

    workdir = demo_dir()
    run_url = run_database_url()  # read before DATABASE_URL becomes the demo's
    os.environ["DATABASE_URL"] = url = demo_database_url()  # the crawler and the panel's
    os.environ["LOCAL_SUFFIXES"] = "test"  # fakeweb's names: seeds, crawl and panel take them
    os.environ["ALLOWED_PRIVATE_NETWORKS"] = ALLOWED_NETWORKS  # fakeweb's loopback addresses
    upgrade_to_head()
    engine = get_engine(url)
    print("hostcrawl demo")
    print(
        f"  database: the demo's own, embedded in {workdir / 'pg'}"
        " (not the default var/pg, nor DATABASE_URL's)"
    )
    forgotten = forget_previous_demo(engine)
    if forgotten:
        print(f"  forgot the previous demo's crawl ({counted(forgotten, 'host')}) and its figures")
    db = engine
    login = offer_operator(engine, run_url)
    leave_embedded_server(var_dir() / "pg")  # started only to read make run's operators

    shutil.rmtree(workdir / "fakeweb", ignore_errors=True)
    (workdir / "crawl.log").unlink(missing_ok=True)
    world, names = build_world()
    if os.environ.get("DEMO_SLOW") == "1":
        kinds = slow_web(world, names, keep=(names[0],), seed=7)
        print(
            f"  slow mode: {len(kinds['answering'])} sites answer after 0.3-1.2 s,"
            f" {len(kinds['hanging'])} hang after connecting, {len(kinds['no_dns'])}"
            " get no DNS reply"
        )
    web = FakeWeb(world, workdir=workdir / "fakeweb")
    panel = None
    try:
        web.start()
        print(
            f"  fakeweb: DNS {web.nameservers}, HTTP {web.url_template()}"
            f" (logs in {workdir / 'fakeweb'})"
        )
        print(
            f"  world: {SITES} sites under {', '.join(ROOTS)} linking to each other; every third"
            f" also links to {PLATFORM} (a giant platform) in odd forms; {RING} links to"
            f" {TRAP_LINKS} subdomains of {TRAP} (NXDOMAIN)"
        )
        for change in deny_entries.add_no_follow(db, [PLATFORM], note=PLATFORM_NOTE):
            print(f"  no_follow {change.describe()}")
        for change in queue.seed(db, [names[0]]):
            print(f"  seed {change.describe()}")

        log_path = workdir / "crawl.log"
        print(f"\ncrawling with one worker (log: {log_path}) …", flush=True)
        started = time.monotonic()
        code, log = crawl(web, log_path)
        print(f"crawl finished in {time.monotonic() - started:.1f} s, exit code {code}")
        if code != 0:
            print(log[-3000:])
            return 1
        summarize(db, engine, world, web)

        if os.environ.get("DEMO_NO_SERVE") == "1":
            print("\nDEMO_NO_SERVE=1: not serving the panel.")
            return 0
        if not serving():
            print("\n(the panel, webpanel, is not installed: nothing to serve)")
            return 0
        panel = serve_panel(BIND)
        if panel is None:
            return 1
        print(panel_hint(BIND, login), flush=True)
        wait_for_ctrl_c(panel)
        return 0
    except KeyboardInterrupt:
        print("\ninterrupted")
        return 130
    finally:
        if panel is not None:
            stop(panel)
        web.stop()
        print(f"stopped: {'the panel and ' if panel is not None else ''}the fake internet")


def panel_hint(bind: str, login: Login | None = None) -> str:
    """What to look at in the panel, once it answers. The search is a domain search:
    "name starts with" (the default) finds nothing for ".test". The operator is one the
    demo's database holds (copied from make run's, or made): never a command to run
    later, as the demo's database goes with the demo."""
    login = login or Login([])
    return (
        f"\nThe panel is ready: http://{bind}/\n"
        f"  1. {login.words()}\n"
        f"  2. the hosts of one site: http://{bind}/?q={ROOTS[0]}&match=domain\n"
        f"  3. http://{bind}/blocked: {TRAP} with its blocked_reason and its trap window\n"
        f"  4. http://{bind}/no_follow: {PLATFORM} with its note\n"
        "Ctrl-C stops the panel and the fake internet."
    )


if __name__ == "__main__":
    sys.exit(main())
