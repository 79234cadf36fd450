"""Response times of the panel's pages under gunicorn, against /healthz through the same stack.

Target: p95 < 100 ms for `/` (first page, a deep keyset page, a prefix search, a
domain search), /blocked and /no_follow, with 1,000,000 hosts and 100,000 deny
entries loaded.

A throwaway embedded Postgres (deleted at exit) is migrated, then bulk-loaded
with COPY (the non-key indexes dropped during the load and re-created from the
models): realistic registered domains with their subdomains; 30,000 no_follow
entries on domains of the corpus, 5,000 on subdomains and 60,000 on domains
with no host below them; 5,000 blocked trap roots with 20 junk subdomains each,
their trap windows and a blocked_reason from crawler.core.traps.describe(). Rows
under an entry carry denied_by, as crawler.db.rules.denied_rows would have set it.

The panel runs as `gunicorn --workers 2 webpanel:create_app()` in a subprocess
(with gunicorn.conf.py: gevent workers).
A separate client process (Python, http.client, CONCURRENCY threads) logs in
once, warms every URL up, then times REQUESTS requests per URL, in ROUNDS
rounds that take every URL in turn (so load from elsewhere on the machine
falls on all URLs alike). The dashboard strip on `/` is the panel's default:
recomputed in the background every PANEL_STATS_TTL (30) seconds per worker.

Then, on the same server, two storms of wrong passwords (bench/_panel_logins.py:
50 attackers on 50 addresses, 50 on one): the real operator's logins during
them (all must succeed), /healthz and `/` (p95 < 100 ms) and a 10,000-name API
bulk add, each against the same requests with no storm. `--logins-only` runs
that part alone on an empty database.

Baseline, same session and stack: /healthz (one SELECT, no login, no
template). Each line gives the median and p95, the target, and the ratio of
the page's p95 to the baseline's; a page over target also prints its EXPLAIN
ANALYZE (row estimates and actual rows). Pass --explain to print every plan.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import psycopg
from _common import machine_line, registered_domain, start_database, subdomain_of, verdict
from _panel_http import (
    CONCURRENCY,
    PASSWORD,
    WARMUP,
    WORKERS,
    client,
    free_port,
    p95,
    session_cookie,
    start_gunicorn,
    stop,
)
from _panel_logins import measure as login_storm
from _panel_slow_bodies import measure as slow_body_storm
from _root_counters import keep_root_counters
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from crawler.core.denylist import BLOCKED, NO_FOLLOW, DenyList
from crawler.core.traps import Observation, describe
from crawler.db.deployments import Deployment, deployment_of
from crawler.db.models import Host
from crawler.db.operators import accounts
from crawler.db.operators.host_filter import HostFilter
from webpanel.queries import deny_lists, host_rows, paging

HOSTS = 1_000_000
TRAPS = 5_000
JUNK_PER_TRAP = 20
NO_FOLLOW_IN_CORPUS = 30_000
NO_FOLLOW_SUBDOMAINS = 5_000
NO_FOLLOW_ELSEWHERE = 60_000
REQUESTS = 300
ROUNDS = 15
TARGET_MS = 100.0
OUTCOMES = [("OK", 60), (None, 22), ("DNS_NXDOMAIN", 8), ("TCP_TIMEOUT", 4)]
OUTCOMES += [("TLS_HANDSHAKE", 3), ("HTTP_TIMEOUT", 2), ("TCP_REFUSED", 1)]
JUNK_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"
JUNK_OUTCOMES = ["DNS_NXDOMAIN"] * 6 + ["DNS_SERVFAIL", "TCP_TIMEOUT"]


# -- the data ----------------------------------------------------------------------------


def junk_label(rng: random.Random) -> str:
    """What a subdomain generator hands out: random letters and digits."""
    return "".join(rng.choices(JUNK_CHARS, k=rng.randint(6, 12)))


def generate(rng: random.Random) -> tuple[dict[str, str], list[str], dict[str, list[str]]]:
    """{hostname: root} for every host, the no_follow entries, {trap root: its junk names}."""
    roots: dict[str, str] = {}
    traps: dict[str, list[str]] = {}
    while len(traps) < TRAPS:
        traps.setdefault(f"{registered_domain(rng).split('.')[0]}-trap.test", [])
    for trap, junk in traps.items():
        roots[trap] = trap
        junk += [f"{junk_label(rng)}.{trap}" for _ in range(JUNK_PER_TRAP)]
        roots.update(dict.fromkeys(junk, trap))
    elsewhere: set[str] = set()
    while len(elsewhere) < NO_FOLLOW_ELSEWHERE:
        elsewhere.add(registered_domain(rng))
    for name in elsewhere:
        roots[name] = name
    domains: list[str] = []
    corpus_size = HOSTS - len(roots)
    added = 0
    while added < corpus_size:
        domain = registered_domain(rng)
        if domain in roots:
            continue
        roots[domain] = domain
        domains.append(domain)
        added += 1
        for _ in range(min(int(rng.expovariate(1 / 2.6)), 40, corpus_size - added)):
            name = subdomain_of(domain, rng, rng.choice((1, 1, 1, 2)))
            if name not in roots:
                roots[name] = domain
                added += 1
    no_follow = rng.sample(domains, NO_FOLLOW_IN_CORPUS) + sorted(elsewhere)
    subdomains = [n for n in roots if roots[n] != n and roots[n] not in traps]
    no_follow += rng.sample(sorted(subdomains), NO_FOLLOW_SUBDOMAINS)
    return roots, sorted(set(no_follow)), traps


def drop_indexes(conn, tables) -> list:
    dropped = [ix for table in tables for ix in table.indexes]
    for ix in dropped:
        ix.drop(conn)
    return dropped


def load(url: str, rng: random.Random) -> dict:
    """Bulk-load hosts (their routing columns included), deny entries, trap windows and
    the change log; stats."""
    started = time.perf_counter()
    roots, no_follow, traps = generate(rng)
    entries = [(n, NO_FOLLOW) for n in no_follow] + [(t, BLOCKED) for t in traps]
    rules = dict(entries)
    denylist = DenyList(entries)
    generated = time.perf_counter() - started

    engine = create_engine(url)
    with engine.begin() as conn:
        dropped = drop_indexes(conn, [Host.__table__])
    conninfo = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    now = datetime.now(UTC)
    hidden = 0
    with psycopg.connect(conninfo) as pg, pg.cursor() as cur:
        cur.execute("SET synchronous_commit = off")
        host_rows = []
        batch_at = now
        for i, (name, root) in enumerate(sorted(roots.items(), key=lambda kv: rng.random())):
            if i % 40 == 0:  # a crawled page's links share one discovery time
                batch_at = now - timedelta(seconds=rng.uniform(0, 30 * 86400))
            rule = rules.get(name)
            denial = denylist.denial(name)
            denied_by = denial.entry if denial and rule is None else None
            hidden += denial is not None
            outcome = None if rule else pick(rng, OUTCOMES)
            crawled = now - timedelta(seconds=rng.uniform(0, 7 * 86400)) if outcome else None
            if rule:
                next_claim = None
            elif crawled:
                next_claim = crawled + timedelta(days=7)
            else:
                next_claim = batch_at
            host_rows.append(
                (
                    name,
                    root,
                    batch_at,
                    outcome,
                    rng.choice((200, 200, 200, 301, 404)) if outcome == "OK" else None,
                    f"{name.split('.')[0].title()} — home" if outcome == "OK" else None,
                    crawled,
                    next_claim,
                    rule,
                    denied_by,
                )
            )
        columns = (
            "hostname, root, discovered_at, outcome, http_status, title, last_crawled_at,"
            " next_claim_at, status_reason, denied_by"
        )
        with cur.copy(f"COPY hosts ({columns}) FROM STDIN") as copy:
            for row in host_rows:
                copy.write_row(row)
        window_rows, change_rows, reasons = [], [], []
        for trap, junk in traps.items():
            seen = now - timedelta(days=2)
            observations = []
            for name in junk:
                seen += timedelta(seconds=rng.uniform(1, 30))
                observations.append(Observation(name, rng.choice(JUNK_OUTCOMES), seen))
            observations.sort(key=lambda o: o.seen_at, reverse=True)
            window_rows += [(trap, o.hostname, o.outcome, o.seen_at) for o in observations]
            reason = describe(trap, observations)
            reasons.append((trap, reason, seen))
            change_rows.append((seen, "crawler-1", "block", trap, reason))
        with cur.copy("COPY trap_window (root, hostname, outcome, seen_at) FROM STDIN") as copy:
            for row in window_rows:
                copy.write_row(row)
        cur.execute("CREATE TEMP TABLE reasons (hostname text, reason text, at timestamptz)")
        with cur.copy("COPY reasons FROM STDIN") as copy:
            for row in reasons:
                copy.write_row(row)
        cur.execute(
            "UPDATE hosts h SET blocked_reason = r.reason, blocked_at = r.at"
            " FROM reasons r WHERE h.hostname = r.hostname"
        )
        for name in no_follow:
            at = now - timedelta(seconds=rng.uniform(0, 90 * 86400))
            change_rows.append(
                (at, rng.choice(("alice", "bob", "cli")), "no_follow.add", name, None)
            )
        with cur.copy("COPY change_log (at, actor, action, hostname, detail) FROM STDIN") as copy:
            for row in change_rows:
                copy.write_row(row)
        pg.commit()
    loaded = time.perf_counter() - started - generated
    with engine.begin() as conn:
        conn.execute(text("SET maintenance_work_mem = '256MB'"))
        for ix in dropped:
            ix.create(conn)
        keep_root_counters(
            conn,
            hosts=[(row[1], row[3]) for row in host_rows],
            dated=[(row[1], row[7]) for row in host_rows],
            windows=traps,
        )
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))
        # The load's gigabyte of writes is flushed now, not by a checkpoint spread over
        # the timed minutes that follow (a panel's database has been up a while).
        conn.execute(text("CHECKPOINT"))
    indexed = time.perf_counter() - started - generated - loaded
    engine.dispose()
    print(
        f"# loaded {len(roots):,} hosts ({hidden:,} at or under an entry), {len(no_follow):,}"
        f" no_follow + {len(traps):,} blocked entries, {len(window_rows):,} trap-window rows,"
        f" {len(change_rows):,} change-log rows: generated {generated:.0f} s, COPY {loaded:.0f} s,"
        f" indexes + VACUUM ANALYZE + CHECKPOINT {indexed:.0f} s"
    )
    return {"names": sorted(roots)}


def pick(rng: random.Random, weighted):
    total = sum(w for _, w in weighted)
    x = rng.uniform(0, total)
    for value, weight in weighted:
        x -= weight
        if x <= 0:
            return value
    return weighted[-1][0]


# -- the server and the client ----------------------------------------------------------------


# -- the report ---------------------------------------------------------------------------


def page_statements(deep: str, deployment: Deployment) -> dict[str, object]:
    """The SQL each page runs on `deployment`, for EXPLAIN."""

    def entries(rule: str):
        return paging.keyset(
            deny_lists.entry_statement(rule), deny_lists.ENTRY_ORDER, None, None, 50
        )[0]

    blocked, no_follow = entries(BLOCKED), entries(NO_FOLLOW)
    return {
        "/ first page": host_rows.host_statement(HostFilter(), deployment),
        "/ deep keyset page": host_rows.host_statement(HostFilter(), deployment, after=deep),
        "/ prefix search": host_rows.host_statement(HostFilter(q="shop"), deployment),
        "/ domain search": host_rows.host_statement(
            HostFilter(q="co.uk", match="domain"), deployment
        ),
        "/blocked": blocked,
        "/no_follow": no_follow,
    }


def explain(engine, stmt) -> list[str]:
    with engine.connect() as conn:
        paging.page_settings(conn)
        compiled = stmt.compile(dialect=conn.dialect)
        rows = conn.exec_driver_sql("EXPLAIN ANALYZE " + str(compiled), compiled.params)
        return [r[0] for r in rows]


def main() -> None:
    print(machine_line())
    started = time.perf_counter()
    rng = random.Random(20261130)
    url = start_database("hostcrawl-bench-panel-")
    if {"--logins-only", "--slow-bodies-only"} & set(sys.argv):  # the storms alone, no data
        return logins_only(url, started)
    data = load(url, rng)
    engine = create_engine(url)
    accounts.create_user(engine, "bench", PASSWORD)

    names = data["names"]
    deep = paging.encode_cursor([names[int(len(names) * 0.9)]])
    pages = [
        ("/healthz (baseline)", "/healthz", False),
        ("/ first page", "/", True),
        ("/ deep keyset page", "/?" + urlencode({"after": deep}), True),
        ("/ prefix search", "/?q=shop", True),
        ("/ domain search", "/?q=co.uk&match=domain", True),
        ("/blocked", "/blocked", True),
        ("/no_follow", "/no_follow", True),
    ]
    port = free_port()
    proc = start_gunicorn(url, port)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    load_tool = ctx.Process(target=client, args=(port, pages, results, REQUESTS, ROUNDS))
    load_tool.start()
    times = results.get(timeout=600)
    load_tool.join(timeout=30)
    # The slow bodies first: the login storms leave the operator's account slowed for
    # browsers new to it (webpanel.devices), as the slow-body storm's operator is.
    storm_lines = slow_body_storm(port) + login_storm(port, session_cookie(port), engine)
    stop(proc)

    print(
        f"# gunicorn {WORKERS} workers (gevent: gunicorn.conf.py);"
        f" a client process with {CONCURRENCY} threads,"
        f" {WARMUP} warm-up + {REQUESTS} timed requests per URL in {ROUNDS} interleaved"
        f" rounds, logged in; machine load average {os.getloadavg()[0]:.1f}"
    )
    base = times[pages[0][0]]
    base_p95 = p95(base)
    print(
        f"/healthz (baseline): median {statistics.median(base) * 1000:.1f} ms,"
        f" p95 {base_p95 * 1000:.1f} ms"
    )
    statements = page_statements(deep, deployment_of(engine))
    slow = []
    for label, _, _ in pages[1:]:
        values = times[label]
        page_p95 = p95(values) * 1000
        ok = page_p95 < TARGET_MS
        word = verdict(ok, f"{label} p95", f"{page_p95:.1f} ms", f"< {TARGET_MS:.0f} ms")
        print(
            f"{label}: median {statistics.median(values) * 1000:.1f} ms, p95 {page_p95:.1f} ms"
            f" (target p95 < {TARGET_MS:.0f} ms) {word};"
            f" ratio p95 vs /healthz p95: {page_p95 / (base_p95 * 1000):.1f}"
        )
        if not ok or "--explain" in sys.argv:
            slow.append(label)
    for label in slow:
        print(f"# EXPLAIN ANALYZE, {label}:")
        for line in explain(engine, statements[label]):
            print("#   " + line)
    print("\n".join(storm_lines))
    engine.dispose()
    print(f"# total run time {time.perf_counter() - started:.0f} s")


def logins_only(url: str, started: float) -> None:
    engine = create_engine(url)
    accounts.create_user(engine, "bench", PASSWORD)
    port = free_port()
    proc = start_gunicorn(url, port)
    print("\n".join(slow_body_storm(port)))  # first: see main()
    if "--slow-bodies-only" not in sys.argv:
        print("\n".join(login_storm(port, session_cookie(port), engine)))
    stop(proc)
    engine.dispose()
    print(f"# total run time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
