"""The panel under gunicorn against one address holding many slow `POST /login` bodies:
the connections beyond its share are refused at once (429, unread), a body that does not
arrive in time is answered 408, and /healthz keeps answering others meanwhile."""

from __future__ import annotations

import socket

import pytest

from tests.unit.test_panel_server import BOUND, request, serving_panel

pytest_plugins = ["tests.unit.test_panel_support"]

SHARE = 20  # connections one address may hold in the one worker
SLOW_HEAD = (
    b"POST /login HTTP/1.1\r\nHost: panel\r\nContent-Length: 10000\r\n"
    b"Content-Type: application/x-www-form-urlencoded\r\n\r\nu"
)


@pytest.fixture(scope="module")
def port(database_url):
    settings = {"PANEL_CONNECTIONS_PER_ADDRESS": str(SHARE), "PANEL_REQUEST_READ_SECONDS": "3"}
    with serving_panel(database_url, **settings) as port:
        yield port


def slow_login(port: int, source: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND, source_address=(source, 0))
    sock.sendall(SLOW_HEAD)
    return sock


def answer(sock: socket.socket) -> bytes:
    """What the server sent before closing (b"" when it closed without a word, or reset
    the connection because the client's unread bytes were still in its buffer)."""
    chunks = []
    try:
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def test_excess_connections_from_one_address_are_refused_and_healthz_answers(port, db):
    held = [slow_login(port, "127.0.9.1") for _ in range(SHARE * 3)]
    try:
        # Each one beyond the share ends (429, or closed) while the body is still owed.
        ends = [answer(s) for s in held[SHARE:]]
        assert all(not end or end.startswith(b"HTTP/1.1 429") for end in ends)
        # The share itself is held open, not refused: each still takes a byte of body.
        for sock in held[:SHARE]:
            sock.sendall(b"x")
        assert request(port, "GET", "/healthz", source="127.0.9.2")[0] == 200
    finally:
        for sock in held:
            sock.close()


def test_a_body_that_does_not_arrive_in_time_gets_408(port, db):
    sock = slow_login(port, "127.0.9.3")
    try:
        assert answer(sock).startswith(b"HTTP/1.1 408")
    finally:
        sock.close()
