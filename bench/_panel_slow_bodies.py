"""The slow-body storm: one address (127.0.0.220) holds SLOW_CONNECTIONS connections,
each a `POST /login` with `Content-Length: 10000` whose body trickles a byte every
TRICKLE_EVERY seconds; closed ones are reopened at each trickle. Meanwhile /healthz is
timed back to back from another address and the operator logs in (127.0.0.252) every
second. Baseline, same server and session: /healthz with no storm, just before."""

from __future__ import annotations

import multiprocessing as mp
import socket
import threading
import time
from collections import Counter

from _common import verdict
from _panel_http import device_cookie, p95, request
from _panel_logins import operator_logins

SLOW_CONNECTIONS = 2000
SLOW_SOURCE = "127.0.0.220"
OPERATOR = "127.0.0.252"
TRICKLE_EVERY = 5.0
STORM_SECONDS = 20.0
QUIET_REQUESTS = 200
TARGET_MS = 100.0
HEAD = (
    b"POST /login HTTP/1.1\r\nHost: panel\r\nContent-Length: 10000\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\n\r\nu"
)


def hold(port: int, seconds: float, started, answers) -> None:
    """The storm, in a process of its own; puts {outcome: count} on `answers`."""
    outcomes: Counter = Counter()
    held: list = []

    def opened():
        try:
            sock = socket.create_connection(
                ("127.0.0.1", port), timeout=5, source_address=(SLOW_SOURCE, 0)
            )
            sock.sendall(HEAD)
            sock.setblocking(False)
            return sock
        except OSError:
            outcomes["connect failed"] += 1
            return None

    deadline = time.monotonic() + seconds
    started.set()
    while time.monotonic() < deadline:
        held = [s for s in held if s is not None]
        alive = []
        for sock in held:
            try:
                answer = sock.recv(64)
            except BlockingIOError:
                answer = None
            except OSError:
                answer = b""
            if answer is None:
                try:
                    sock.send(b"x")
                    alive.append(sock)
                    continue
                except OSError:
                    answer = b""
            outcomes[answer[:12].decode(errors="replace") or "closed"] += 1
            sock.close()
        held = alive + [opened() for _ in range(SLOW_CONNECTIONS - len(alive))]
        outcomes["max held"] = max(outcomes["max held"], sum(s is not None for s in held))
        time.sleep(min(TRICKLE_EVERY, max(0.0, deadline - time.monotonic())))
    for sock in held:
        if sock is not None:
            sock.close()
    answers.put(dict(outcomes))


def time_healthz(port: int, times: list, count: int = 0, until=None) -> None:
    while (until is not None and not until.is_set()) or len(times) < count:
        start = time.perf_counter()
        status, _, _ = request(port, "GET", "/healthz")
        times.append(time.perf_counter() - start)
        assert status == 200, f"/healthz: {status}"


def measure(port: int) -> list[str]:
    device = device_cookie(port, OPERATOR)  # the operator's browser has logged in before
    quiet: list = []
    time_healthz(port, quiet, QUIET_REQUESTS)
    ctx = mp.get_context("spawn")
    started, answers = ctx.Event(), ctx.Queue()
    storm = ctx.Process(target=hold, args=(port, STORM_SECONDS, started, answers))
    storm.start()
    started.wait(timeout=60)
    time.sleep(TRICKLE_EVERY)  # the first 2,000 connections are opened before timing starts
    over = threading.Event()
    logins: list = []
    operator = threading.Thread(target=operator_logins, args=(port, OPERATOR, over, logins, device))
    operator.start()
    loud: list = []
    timer = threading.Timer(STORM_SECONDS - TRICKLE_EVERY, over.set)
    timer.start()
    time_healthz(port, loud, until=over)
    outcomes = answers.get(timeout=300)
    storm.join(timeout=60)
    operator.join(timeout=120)
    good = sum(status == 302 for status, _ in logins)
    loud_p95, quiet_p95 = p95(loud) * 1000, p95(quiet) * 1000
    label = f"{SLOW_CONNECTIONS:,} slow bodies from one address"
    p95_word = verdict(
        loud_p95 < TARGET_MS, f"/healthz p95 ({label})", f"{loud_p95:.1f} ms", "< 100 ms"
    )
    logins_word = verdict(
        good == len(logins) > 0, f"logins ({label})", f"{good}/{len(logins)}", "all"
    )
    return [
        f"# slow-body storm, {label}, a byte every {TRICKLE_EVERY:.0f} s, {STORM_SECONDS:.0f} s:"
        f" the attacker's connections ended {dict(sorted(outcomes.items()))}",
        f"/healthz during the slow-body storm: p95 {loud_p95:.1f} ms over {len(loud)} requests"
        f" (target < {TARGET_MS:.0f} ms) {p95_word}; baseline /healthz with no storm: p95"
        f" {quiet_p95:.1f} ms; ratio {loud_p95 / quiet_p95:.1f}",
        f"operator's logins during the slow-body storm: {good} of {len(logins)} succeeded,"
        f" slowest {max((s for _, s in logins), default=0.0):.1f} s (target: all) {logins_word}",
    ]
