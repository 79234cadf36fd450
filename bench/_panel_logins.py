"""Storms of wrong passwords at /login, as an outsider with no account makes them, and
what the operators get meanwhile: their own logins, /healthz, `/` and a 10,000-name API
bulk add, against the same requests with no storm, side by side.

Three storms of STORM_SECONDS each (the attack that was reported ran 20 s):
50 attackers on 50 addresses (127.0.0.10-59), then 50 attackers on one address
(127.0.0.200), each guessing a name of its own per login (unknown names cost one
Argon2 check each, like known ones, until the slow-down turns the address away);
then 50 attackers guessing the operator's own account, each login from an address
never used before (127.1.0.1, 127.1.0.2, ...), as a botnet rotates them. Each
login is a fresh browser's (GET /login, POST). login_failures is not emptied: the
slow-down is part of what is measured. Meanwhile the real operator logs in every
OPERATOR_EVERY seconds from a browser that has logged in before (it keeps its
device cookie, webpanel.devices) at an address that has not failed (127.0.0.250,
.251, .253), each login counted (all must succeed, each in < 3 s); /healthz and
`/` are timed back to back; and one API bulk add of 10,000 new no_follow names runs.

Baseline, same server and session: the same requests with no storm running,
before each storm (the bulk add: a quiet one of other names).
"""

from __future__ import annotations

import itertools
import json
import multiprocessing as mp
import os
import resource
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from _common import verdict
from _panel_http import PASSWORD, device_cookie, login, p95, request

from crawler.db.operators import accounts

STORM_SECONDS = 20.0
ATTACKERS = 50
ROTATING = None  # a storm's sources: each login from a fresh address
# (label, the attackers' addresses, the operator's address, the account guessed or None)
STORMS = [
    (
        "50 attackers on 50 addresses",
        [f"127.0.0.{10 + n}" for n in range(ATTACKERS)],
        "127.0.0.250",
        None,
    ),
    ("50 attackers on one address", ["127.0.0.200"] * ATTACKERS, "127.0.0.251", None),
    ("50 attackers on the operator's account, fresh addresses", ROTATING, "127.0.0.253", "bench"),
]
OPERATOR_EVERY = 1.0  # seconds between the operator's logins during a storm
QUIET_REQUESTS = 100  # per URL, before each storm
CLIENT_THREADS = 2
TARGET_MS = 100.0
LOGIN_TARGET_S = 3.0  # each of the operator's logins during a storm
BULK_NAMES = 10_000
BULK_TARGET_S = 10.0  # the CLI's target for 100,000 entries (bench/bulk.py)
URLS = [("/healthz", False), ("/", True)]


def fresh_address(n: int) -> str:
    """The n-th address of a rotating storm: 127.1.0.1 on, never .0 or .255."""
    return f"127.{1 + n // 64516}.{n // 254 % 254}.{n % 254 + 1}"


def attack(port: int, sources, account, seconds: float, started, answers) -> None:
    """The storm, in a process of its own so its threads do not slow the timing client;
    puts {status: count} of the attackers' POSTs, the addresses used and the CPU seconds
    the storm's process took on `answers`."""
    outcomes: Counter = Counter()
    deadline = time.monotonic() + seconds
    fresh = itertools.count()  # next() is atomic under the GIL: one address per login
    used = set()

    def attacker(n: int, source: str | None) -> None:
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            address = source or fresh_address(next(fresh))
            used.add(address)
            name = account or f"guess-{address}-{n}-{attempt}"
            outcomes[login(port, name, "wrong password, sorry", address)[0]] += 1

    started.set()
    sources = sources or [ROTATING] * ATTACKERS
    threads = [threading.Thread(target=attacker, args=(n, s)) for n, s in enumerate(sources)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    answers.put((dict(outcomes), len(used), usage.ru_utime + usage.ru_stime))


def timed(port: int, cookie: str, times: list, path: str, logged_in: bool) -> None:
    headers = {"Cookie": cookie} if logged_in else {}
    start = time.perf_counter()
    status, _, _ = request(port, "GET", path, headers=headers)
    times.append(time.perf_counter() - start)
    assert status == 200, f"{path}: {status}"


def time_pages(port: int, cookie: str, times: dict, half: str, until=None) -> None:
    """QUIET_REQUESTS of each URL, interleaved; with `until`, as many as fit before it."""

    def worker(_) -> None:
        for _ in range(QUIET_REQUESTS // CLIENT_THREADS):
            for path, logged_in in URLS:
                if until is not None and until.is_set():
                    return
                timed(port, cookie, times[(half, path)], path, logged_in)
        while until is not None and not until.is_set():
            for path, logged_in in URLS:
                timed(port, cookie, times[(half, path)], path, logged_in)

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(worker, range(CLIENT_THREADS)))


def operator_logins(port: int, source: str, until, results: list, device: str) -> None:
    """The real operator's logins, every OPERATOR_EVERY seconds until `until` is set, from
    a browser that keeps its device cookie."""
    while not until.is_set():
        start = time.perf_counter()
        status, _, _ = login(port, "bench", PASSWORD, source, device)
        results.append((status, time.perf_counter() - start))
        until.wait(OPERATOR_EVERY)


def bulk_add(port: int, token: str, tag: str) -> tuple[bool, float]:
    """One POST /api/no_follow/add of BULK_NAMES new names: (all stored, seconds)."""
    names = [f"bulk-{tag}-{i}.bench-panel.com" for i in range(BULK_NAMES)]  # .example is refused
    body = json.dumps({"names": names, "note": "bench"})
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    start = time.perf_counter()
    status, _, answer = request(port, "POST", "/api/no_follow/add", body, headers)
    elapsed = time.perf_counter() - start
    results = json.loads(answer)["results"] if status == 200 else []
    stored = sum(r["status"] == "added" for r in results)
    return status == 200 and stored == BULK_NAMES, elapsed


def storm_round(port: int, cookie: str, token: str, storm_spec):
    """One storm and its quiet baseline; the report lines."""
    label, sources, operator, account = storm_spec
    device = device_cookie(port, operator)  # the operator's browser has logged in before
    times: dict = {(half, path): [] for half in ("quiet", "storm") for path, _ in URLS}
    time_pages(port, cookie, times, "quiet")
    quiet_ok, quiet_bulk = bulk_add(port, token, f"quiet-{operator}")
    ctx = mp.get_context("spawn")
    started, answers = ctx.Event(), ctx.Queue()
    storm = ctx.Process(
        target=attack, args=(port, sources, account, STORM_SECONDS, started, answers)
    )
    storm.start()
    started.wait(timeout=60)
    over = threading.Event()
    logins: list = []
    operator_thread = threading.Thread(
        target=operator_logins, args=(port, operator, over, logins, device)
    )
    operator_thread.start()
    bulk: list = []
    bulk_thread = threading.Thread(
        target=lambda: bulk.append(bulk_add(port, token, f"storm-{operator}"))
    )
    bulk_thread.start()
    timer = threading.Timer(STORM_SECONDS, over.set)
    timer.start()
    time_pages(port, cookie, times, "storm", until=over)
    attackers = answers.get(timeout=300)
    storm.join(timeout=60)
    operator_thread.join(timeout=120)
    bulk_thread.join(timeout=300)
    return report(label, times, attackers, logins, bulk[0], (quiet_ok, quiet_bulk))


def report(label, times, attackers, logins, bulk, quiet_bulk) -> list[str]:
    outcomes, addresses, cpu = attackers
    good = sum(status == 302 for status, _ in logins)
    slowest = max((seconds for _, seconds in logins), default=0.0)
    login_p95 = p95([seconds for _, seconds in logins]) if logins else 0.0
    within = f"< {LOGIN_TARGET_S:.0f} s"
    max_word = verdict(
        slowest < LOGIN_TARGET_S, f"login max in a storm ({label})", f"{slowest:.2f} s", within
    )
    p95_login_word = verdict(
        login_p95 < LOGIN_TARGET_S, f"login p95 in a storm ({label})", f"{login_p95:.2f} s", within
    )
    logins_word = verdict(
        good == len(logins) > 0, f"logins in a storm ({label})", f"{good}/{len(logins)}", "all"
    )
    lines = [
        f"# login storm, {label}, {STORM_SECONDS:.0f} s: attackers' answers"
        f" {dict(sorted(outcomes.items()))} from {addresses:,} addresses (200: checked and"
        f" refused, 429: slowed down or too many waiting, not checked); the attackers' own"
        f" process took {cpu:.1f} of this machine's {os.cpu_count() * STORM_SECONDS:.0f}"
        f" CPU seconds",
        f"operator's logins during the storm ({label}): {good} of {len(logins)} succeeded,"
        f" slowest {slowest:.1f} s (target: all) {logins_word}",
        f"operator's login times during the storm ({label}): max {slowest:.2f} s {max_word},"
        f" p95 {login_p95:.2f} s {p95_login_word} (target each < {LOGIN_TARGET_S:.0f} s)",
    ]
    for path, _ in URLS:
        quiet, loud = times[("quiet", path)], times[("storm", path)]
        loud_p95, quiet_p95 = p95(loud) * 1000, p95(quiet) * 1000
        p95_word = verdict(
            loud_p95 < TARGET_MS,
            f"{path} p95 in a storm ({label})",
            f"{loud_p95:.1f} ms",
            f"< {TARGET_MS:.0f} ms",
        )
        lines.append(
            f"{path} during the storm ({label}): median {statistics.median(loud) * 1000:.1f} ms,"
            f" p95 {loud_p95:.1f} ms over {len(loud)} requests (target p95 < {TARGET_MS:.0f} ms)"
            f" {p95_word}; baseline {path} with no storm: p95"
            f" {quiet_p95:.1f} ms; ratio {loud_p95 / quiet_p95:.1f}"
        )
    (ok, seconds), (quiet_ok, quiet_seconds) = bulk, quiet_bulk
    bulk_word = verdict(
        ok and quiet_ok and seconds <= BULK_TARGET_S,
        f"bulk add in a storm ({label})",
        f"{seconds:.2f} s",
        f"all, <= {BULK_TARGET_S:.0f} s",
    )
    lines.append(
        f"{BULK_NAMES:,}-name API bulk add during the storm ({label}): {seconds:.2f} s,"
        f" all stored: {ok} (target: all, <= {BULK_TARGET_S:.0f} s)"
        f" {bulk_word}; baseline with no storm:"
        f" {quiet_seconds:.2f} s; ratio {seconds / quiet_seconds:.1f}"
    )
    return lines


def measure(port: int, cookie: str, engine) -> list[str]:
    """Both storms' report lines."""
    token = accounts.new_api_token(engine, "bench")
    lines = []
    for storm_spec in STORMS:
        lines += storm_round(port, cookie, token, storm_spec)
    return lines
