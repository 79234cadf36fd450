"""The panel under gunicorn for bench/panel.py: start it, talk HTTP to it, log in."""

from __future__ import annotations

import atexit
import http.client
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 2
PASSWORD = "bench password, long enough"
SESSION_COOKIE, DEVICE_COOKIE = "hostcrawl_session", "hostcrawl_device"

# The load tool: threads and warm-up requests per URL (both benchmarks alike).
CONCURRENCY = 2
WARMUP = 10


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(url: str, port: int) -> subprocess.Popen:
    """`gunicorn --workers 2 webpanel:create_app()` from the repository root, so with
    gunicorn.conf.py (gevent workers) as `make run` and the image run it."""
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "SECRET_KEY": "bench-secret-" * 4,
        "SESSION_COOKIE_SECURE": "0",
    }
    command = [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}"]
    command += ["--workers", str(WORKERS), "--log-level", "warning", "webpanel:create_app()"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    atexit.register(stop, proc)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"gunicorn exited with {proc.returncode}")
        try:
            status, _, _ = request(port, "GET", "/healthz")
            if status == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("gunicorn did not answer /healthz within 60 s")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def request(port: int, method: str, path: str, body=None, headers=None, source="127.0.0.1"):
    """One request on a connection of its own, from `source` (any 127.0.0.0/8 address)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.getheaders(), response.read()
    finally:
        conn.close()


def login(
    port: int, username: str, password: str, source: str = "127.0.0.1", device: str = ""
) -> tuple[int, str | None, str | None]:
    """One login as a fresh browser makes it, or one that keeps `device` (a device cookie
    from an earlier login, webpanel.devices): (status of the POST, its session cookie,
    its device cookie)."""
    kept = {"Cookie": device} if device else {}
    status, headers, body = request(port, "GET", "/login", headers=kept, source=source)
    if status != 200:  # 429: too many of this address's requests at once
        return status, None, None
    cookie = "; ".join(filter(None, [cookie_of(headers), device]))
    token = re.search(rb'name="csrf_token" type="hidden" value="([^"]+)"', body).group(1)
    form = urlencode({"csrf_token": token.decode(), "username": username, "password": password})
    status, headers, _ = request(
        port,
        "POST",
        "/login",
        form,
        {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
        source,
    )
    if status != 302:
        return status, None, None
    return status, cookie_of(headers), cookie_of(headers, DEVICE_COOKIE)


def session_cookie(port: int) -> str:
    """Log in as the bench operator; the Cookie header for every later request."""
    status, cookie, _ = login(port, "bench", PASSWORD)
    assert status == 302 and cookie, f"login failed: {status}"
    return cookie


def device_cookie(port: int, source: str) -> str:
    """The bench operator's browser at `source` after a good login: its device cookie."""
    status, _, device = login(port, "bench", PASSWORD, source)
    assert status == 302 and device, f"login failed: {status}"
    return device


def cookie_of(headers, cookie: str = SESSION_COOKIE) -> str:
    """`name=value` of the cookie `cookie` among a response's Set-Cookie headers."""
    for name, value in headers:
        if name.lower() == "set-cookie" and value.startswith(f"{cookie}="):
            return value.split(";", 1)[0]
    raise AssertionError(f"no cookie {cookie}")


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def client(port: int, pages: list[tuple[str, str, bool]], results, requests: int, rounds: int):
    """The load tool (its own process, CONCURRENCY threads): every URL warmed up, then
    timed `requests` times in `rounds` interleaved rounds, so a burst of load elsewhere
    hits every URL alike. Puts {label: [seconds]} on `results`."""
    cookie = session_cookie(port)
    times: dict[str, list[float]] = {label: [] for label, _, _ in pages}

    def one(path: str, login: bool) -> float:
        start = time.perf_counter()
        status, _, body = request(port, "GET", path, headers={"Cookie": cookie} if login else {})
        elapsed = time.perf_counter() - start
        assert status == 200 and body, f"{path}: {status}"
        return elapsed

    per_round = requests // rounds
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        for _, path, login in pages:
            list(pool.map(one, [path] * WARMUP, [login] * WARMUP))
        for _ in range(rounds):
            for label, path, login in pages:
                times[label] += pool.map(one, [path] * per_round, [login] * per_round)
    results.put(times)
