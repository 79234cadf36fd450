"""The panel as `make run` and compose serve it: gunicorn with gunicorn.conf.py (gevent
workers), one worker, on loopback. Slow clients, a query waiting on the database and a
storm of logins must not keep anyone else out; gunicorn's own refusals are JSON."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode

import pytest
from sqlalchemy import text

from tests.unit.test_panel_support import PASSWORD, SECRET
from tests.waiting import wait_until

pytest_plugins = ["tests.unit.test_panel_support"]

ROOT = Path(__file__).resolve().parents[2]
BOUND = 60.0  # seconds any wait in these tests may take at most
TOKEN = re.compile(rb'name="csrf_token" type="hidden" value="([^"]+)"')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port: int, method: str, path: str, body=None, headers=None, source="127.0.0.1"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND, source_address=(source, 0))
    try:
        conn.request(method, path, body=body, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def login(port: int, username: str, password: str, source: str) -> int:
    """A login as a fresh browser makes it, from `source`: the POST's status."""
    status, headers, page = request(port, "GET", "/login", source=source)
    if status != 200:  # 429: too many of this address's requests at once
        return status
    cookie = headers["Set-Cookie"].split(";", 1)[0]
    token = TOKEN.search(page).group(1).decode()
    form = urlencode({"csrf_token": token, "username": username, "password": password})
    kind = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie}
    return request(port, "POST", "/login", form, kind, source=source)[0]


@contextmanager
def serving_panel(database_url: str, **settings: str) -> Iterator[int]:
    """gunicorn serving the panel from the repository root (so with gunicorn.conf.py), one
    worker, with these settings in its environment: its port, until the block ends."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "SECRET_KEY": SECRET,
        "SESSION_COOKIE_SECURE": "0",
        "PYTHONPATH": str(ROOT),
        **settings,
    }
    command = [sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    command += ["--log-level", "warning", "webpanel:create_app()"]
    proc = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)

    def answers() -> bool:
        assert proc.poll() is None, f"gunicorn exited with {proc.returncode}"
        try:
            return request(port, "GET", "/healthz")[0] == 200
        except OSError:
            return False

    try:
        wait_until(answers, what="gunicorn answers /healthz")
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=BOUND)


@pytest.fixture(scope="module")
def port(database_url):
    with serving_panel(database_url) as port:
        yield port


def test_twenty_trickling_clients_do_not_stall_the_panel(port, db, operators):
    slow = []
    for n in range(20):
        sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND)
        if n % 2:  # the headers, a piece at a time
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: panel\r\nX-Slow: ")
        else:  # a login whose body comes a byte at a time
            head = "POST /login HTTP/1.1\r\nHost: panel\r\nContent-Length: 100000\r\n"
            sock.sendall(
                (head + "Content-Type: application/x-www-form-urlencoded\r\n\r\nu").encode()
            )
        slow.append(sock)
    try:
        for _ in range(3):
            for sock in slow:
                sock.sendall(b"x")
            status, _, body = request(port, "GET", "/healthz")
            assert status == 200 and json.loads(body) == {"status": "ok"}
        # Ten slow logins from this address hold none of its places: a login goes in.
        assert login(port, "alice", PASSWORD, "127.0.0.1") == 302
    finally:
        for sock in slow:
            sock.close()


def test_a_query_waiting_on_the_database_does_not_stall_the_worker(port, db, operators):
    """gevent and psycopg: a request blocked in Postgres yields to the others."""
    answers = []
    with db.connect() as conn:
        conn.execute(text("LOCK TABLE login_failures IN ACCESS EXCLUSIVE MODE"))
        waiting = threading.Thread(
            target=lambda: answers.append(login(port, "alice", PASSWORD, "127.0.0.2"))
        )
        waiting.start()

        def blocked() -> bool:
            with db.connect() as other:
                found = other.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity"
                        " WHERE wait_event_type = 'Lock' AND query LIKE '%login_failures%'"
                    )
                )
                return found.scalar() > 0

        wait_until(blocked, what="the login waits for the lock")
        assert request(port, "GET", "/healthz")[0] == 200  # the same worker, meanwhile
        assert waiting.is_alive()
        conn.rollback()
    waiting.join(BOUND)
    assert answers == [302]


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        pytest.param(b"GET /api/" + b"a" * 5000 + b" HTTP/1.1\r\n\r\n", 414, id="414"),
        pytest.param(
            b"GET /api/stats HTTP/1.1\r\n" + b"".join(b"X-%d: y\r\n" % n for n in range(120)),
            431,
            id="431",
        ),
        pytest.param(b"GET /api/stats HTTP/1.1\r\nBad Header\r\n\r\n", 400, id="400"),
    ],
)
def test_gunicorns_own_refusals_are_json_with_the_security_headers(port, raw, status):
    with socket.create_connection(("127.0.0.1", port), timeout=BOUND) as sock:
        sock.sendall(raw + b"\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v for k, _, v in (line.partition(": ") for line in lines[1:])}
    assert lines[0].startswith(f"HTTP/1.1 {status} ")
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["error"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["cache-control"] == "no-store"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]


def test_an_operator_gets_in_during_a_storm_of_logins(port, db, operators):
    """Ten attackers on ten addresses and ten on one loop wrong passwords; the real
    operator, from an address that has not failed, logs in three times meanwhile."""
    stop = threading.Event()
    answers: Counter = Counter()

    def attacker(source: str, n: int) -> None:
        for attempt in range(200):  # bounded even if the operator never finished
            if stop.is_set():
                return
            answers[(source, login(port, f"guess-{n}-{attempt}", "wrong password", source))] += 1

    sources = [f"127.0.0.{10 + n}" for n in range(10)] + ["127.0.0.30"] * 10
    threads = [threading.Thread(target=attacker, args=(s, n)) for n, s in enumerate(sources)]
    for thread in threads:
        thread.start()
    try:
        wait_until(lambda: sum(answers.values()) >= 20, what="the storm to be under way")
        operator = [login(port, "alice", PASSWORD, "127.0.0.99") for _ in range(3)]
    finally:
        stop.set()
        for thread in threads:
            thread.join(BOUND)
    assert operator == [302, 302, 302]
    refused = sum(n for (_source, status), n in answers.items() if status != 302)
    assert refused >= 20 and not any(status == 302 for _source, status in answers)
