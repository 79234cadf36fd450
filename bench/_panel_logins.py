"""/healthz and `/` while 50 login attempts run at once (issue 13: Argon2 must not starve
the panel), against the same two URLs with no login running, side by side.

In each of ROUNDS rounds, first the quiet half: REQUESTS of /healthz and of `/`
(logged in, interleaved), then the storm half: 50 logins at once (WAVES such
waves, WAVE_EVERY apart), each from a fresh client with a wrong password for a
name of its own (unknown names cost one Argon2 check each, like known ones),
while the same two URLs are timed, back to back, until the last login has its
answer. The issue's repro was 48 logins, 6 at a time. login_failures is emptied
before each storm, so the per-address throttle does not turn the logins away:
the bound on Argon2 checks per process (PANEL_LOGIN_HASH_SLOTS) is measured.
"""

from __future__ import annotations

import multiprocessing as mp
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from _common import verdict
from _panel_http import login, p95, request
from sqlalchemy import text

STORM = 50
WAVES = 1  # per round
WAVE_EVERY = 1.0  # seconds between waves
ROUNDS = 20
REQUESTS = 10  # per URL and quiet half-round
CLIENT_THREADS = 2
TARGET_MS = 100.0
URLS = [("/healthz", False), ("/", True)]


def storm(port: int, round_no: int, started, answers) -> None:
    """WAVES waves, one a second: STORM logins at once, each from a fresh client with a
    wrong password for a name of its own. In a process of its own, so its threads do
    not slow the timing client; the answers' statuses go to `answers`."""
    outcomes: Counter = Counter()

    def attempt(name: str) -> None:
        outcomes[login(port, name, "wrong password, sorry")[0]] += 1

    started.set()
    begin = time.monotonic()
    for wave in range(WAVES):
        time.sleep(max(0.0, begin + wave * WAVE_EVERY - time.monotonic()))
        names = [f"storm-{round_no}-{wave}-{i}" for i in range(STORM)]
        threads = [threading.Thread(target=attempt, args=(name,)) for name in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    answers.put(dict(outcomes))


def timed(port: int, cookie: str, times: dict, half: str, until=None) -> None:
    """REQUESTS of each URL, interleaved; with `until`, as many as fit before it is set."""

    def one(path: str, logged_in: bool) -> None:
        headers = {"Cookie": cookie} if logged_in else {}
        start = time.perf_counter()
        status, _, _ = request(port, "GET", path, headers=headers)
        times[(half, path)].append(time.perf_counter() - start)
        assert status == 200, f"{path}: {status}"

    def worker(_) -> None:
        for _ in range(REQUESTS // CLIENT_THREADS):
            for path, logged_in in URLS:
                if until is not None and until.is_set():
                    return
                one(path, logged_in)

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(worker, range(CLIENT_THREADS)))
        while until is not None and not until.is_set():  # the storm goes on: keep timing
            list(pool.map(worker, range(CLIENT_THREADS)))


def wait_for(answers, outcomes: Counter, finished: threading.Event) -> None:
    """The storm's answers, when it has them all; then `finished` is set."""
    outcomes.update(answers.get(timeout=300))
    finished.set()


def measure(port: int, cookie: str, engine) -> list[str]:
    """The report lines: each URL's p95 during the storm, against its quiet p95."""
    times: dict = {(half, path): [] for half in ("quiet", "storm") for path, _ in URLS}
    outcomes: Counter = Counter()
    started = time.perf_counter()
    ctx = mp.get_context("spawn")
    for round_no in range(ROUNDS):
        timed(port, cookie, times, "quiet")
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM login_failures"))
        running, answers = ctx.Event(), ctx.Queue()
        logins = ctx.Process(target=storm, args=(port, round_no, running, answers))
        logins.start()
        running.wait(timeout=60)
        finished = threading.Event()
        collect = threading.Thread(target=wait_for, args=(answers, outcomes, finished))
        collect.start()
        timed(port, cookie, times, "storm", until=finished)
        collect.join(timeout=300)
        logins.join(timeout=30)
    lines = [
        f"# login storm: {ROUNDS} rounds of {WAVES} x {STORM} logins at once (fresh clients,"
        f" wrong passwords); answers {dict(sorted(outcomes.items()))} (200: checked and"
        f" refused, 429: no Argon2 slot free or throttled); {len(times[('storm', '/')])}"
        f" requests timed during them; {time.perf_counter() - started:.0f} s"
    ]
    for path, _ in URLS:
        quiet, loud = times[("quiet", path)], times[("storm", path)]
        loud_p95, quiet_p95 = p95(loud) * 1000, p95(quiet) * 1000
        ok = loud_p95 < TARGET_MS
        lines.append(
            f"{path} during {STORM} logins: median {statistics.median(loud) * 1000:.1f} ms,"
            f" p95 {loud_p95:.1f} ms (target p95 < {TARGET_MS:.0f} ms)"
            f" {verdict(ok)}; baseline {path} with no login running (same rounds):"
            f" p95 {quiet_p95:.1f} ms; ratio {loud_p95 / quiet_p95:.1f}"
        )
    return lines
