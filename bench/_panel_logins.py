"""Storms of wrong passwords at /login, as an outsider with no account makes them, and
what the operators get meanwhile: their own logins, /healthz, `/` and a 10,000-name API
bulk add, against the same requests with no storm, side by side.

Two storms of STORM_SECONDS each (the attack that was reported ran 20 s):
50 attackers on 50 addresses (127.0.0.10-59), then 50 attackers on one address
(127.0.0.200). Each attacker loops fresh-browser logins (GET /login, POST) with a
wrong password for a name of its own: unknown names cost one Argon2 check each,
like known ones, until the slow-down turns the address away. login_failures is
not emptied: the slow-down is part of what is measured. Meanwhile the real
operator logs in from an address that has not failed (127.0.0.250, .251) every
OPERATOR_EVERY seconds, each login counted (all must succeed); /healthz and `/`
are timed back to back; and one API bulk add of 10,000 new no_follow names runs.

Baseline, same server and session: the same requests with no storm running,
before each storm (the bulk add: a quiet one of other names).
"""

from __future__ import annotations

import json
import multiprocessing as mp
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from _common import verdict
from _panel_http import PASSWORD, login, p95, request

from crawler.db import accounts

STORM_SECONDS = 20.0
ATTACKERS = 50
STORMS = [
    (
        "50 attackers on 50 addresses",
        [f"127.0.0.{10 + n}" for n in range(ATTACKERS)],
        "127.0.0.250",
    ),
    ("50 attackers on one address", ["127.0.0.200"] * ATTACKERS, "127.0.0.251"),
]
OPERATOR_EVERY = 1.0  # seconds between the operator's logins during a storm
QUIET_REQUESTS = 100  # per URL, before each storm
CLIENT_THREADS = 2
TARGET_MS = 100.0
LOGIN_TARGET_S = 3.0  # each of the operator's logins during a storm
BULK_NAMES = 10_000
BULK_TARGET_S = 10.0  # the CLI's target for 100,000 entries (bench/bulk.py)
URLS = [("/healthz", False), ("/", True)]


def attack(port: int, sources: list[str], seconds: float, started, answers) -> None:
    """The storm, in a process of its own so its threads do not slow the timing client;
    puts {status: count} of the attackers' POSTs on `answers`."""
    outcomes: Counter = Counter()
    deadline = time.monotonic() + seconds

    def attacker(n: int, source: str) -> None:
        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            name = f"guess-{source}-{n}-{attempt}"
            outcomes[login(port, name, "wrong password, sorry", source)[0]] += 1

    started.set()
    threads = [threading.Thread(target=attacker, args=(n, s)) for n, s in enumerate(sources)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    answers.put(dict(outcomes))


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


def operator_logins(port: int, source: str, until, results: list) -> None:
    """The real operator's logins, every OPERATOR_EVERY seconds until `until` is set."""
    while not until.is_set():
        start = time.perf_counter()
        status, _ = login(port, "bench", PASSWORD, source)
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


def storm_round(port: int, cookie: str, token: str, label: str, sources, operator: str):
    """One storm and its quiet baseline; the report lines."""
    times: dict = {(half, path): [] for half in ("quiet", "storm") for path, _ in URLS}
    time_pages(port, cookie, times, "quiet")
    quiet_ok, quiet_bulk = bulk_add(port, token, f"quiet-{operator}")
    ctx = mp.get_context("spawn")
    started, answers = ctx.Event(), ctx.Queue()
    storm = ctx.Process(target=attack, args=(port, sources, STORM_SECONDS, started, answers))
    storm.start()
    started.wait(timeout=60)
    over = threading.Event()
    logins: list = []
    operator_thread = threading.Thread(target=operator_logins, args=(port, operator, over, logins))
    operator_thread.start()
    bulk: list = []
    bulk_thread = threading.Thread(
        target=lambda: bulk.append(bulk_add(port, token, f"storm-{operator}"))
    )
    bulk_thread.start()
    timer = threading.Timer(STORM_SECONDS, over.set)
    timer.start()
    time_pages(port, cookie, times, "storm", until=over)
    outcomes = answers.get(timeout=300)
    storm.join(timeout=60)
    operator_thread.join(timeout=120)
    bulk_thread.join(timeout=300)
    return report(label, times, outcomes, logins, bulk[0], (quiet_ok, quiet_bulk))


def report(label, times, outcomes, logins, bulk, quiet_bulk) -> list[str]:
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
        f" {dict(sorted(outcomes.items()))} (200: checked and refused, 429: slowed down or"
        f" too many waiting, not checked)",
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
    for label, sources, operator in STORMS:
        lines += storm_round(port, cookie, token, label, sources, operator)
    return lines
