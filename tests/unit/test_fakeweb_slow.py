"""fakeweb's slow mode: slow answers, hangs after TLS, trickling bodies, slow DNS."""

from __future__ import annotations

import socket
import ssl
import time

import pytest

from tests.fakeweb import FakeWeb, World
from tests.fakeweb.slow import slow_web
from tests.unit.test_fakeweb import SILENCE, addresses, ask, get

HEAD_END = b"\r\n\r\n"


def build_world() -> World:
    w = World(seed=3)
    w.site("quick.slow.test", title="quick")
    w.answer_after(w.site("late.slow.test"), 60)  # later than any test waits
    w.hang("hung.slow.test")
    w.trickle(w.site("drip.slow.test", title="x" * 200), chunk=16, every=0.05)
    w.slow_dns(0.01, 0.02)
    return w


@pytest.fixture(scope="module")
def web():
    with FakeWeb(build_world()) as running:
        yield running


def raw_get(web, host: str, *, tls: bool = False) -> socket.socket:
    """A connection (TLS handshake done, if asked) that has sent GET / for host."""
    port = web.https_port if tls else web.http_port
    sock = socket.create_connection(("127.0.0.1", port), timeout=SILENCE)
    if tls:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        sock = context.wrap_socket(sock)  # raises if the handshake does not complete
    sock.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
    return sock


def test_a_hanging_host_completes_tls_reads_the_request_and_never_answers(web):
    with raw_get(web, "hung.slow.test", tls=True) as sock, pytest.raises(TimeoutError):
        sock.recv(100)
    assert web.fetches("hung.slow.test", scheme="https")


def test_a_slow_host_answers_late_and_a_quick_one_at_once(web):
    with raw_get(web, "late.slow.test") as sock, pytest.raises(TimeoutError):
        sock.recv(100)
    assert get(web, "quick.slow.test")[0] == 200


def test_a_request_left_unanswered_stops_counting_when_its_client_leaves(web):
    """root_in_flight counts a root's requests being answered; a hung one the client
    gave up on no longer counts."""
    with raw_get(web, "hung.slow.test") as sock:
        with pytest.raises(TimeoutError):
            sock.recv(100)
        get(web, "quick.slow.test")
        assert web.fetches("quick.slow.test")[-1]["root_in_flight"] == 2
    deadline = time.monotonic() + 5  # the server reads the close on its own time
    while time.monotonic() < deadline:
        get(web, "quick.slow.test")
        if web.fetches("quick.slow.test")[-1]["root_in_flight"] == 1:
            return
    pytest.fail("the hung request still counted after its client left")


def test_a_trickling_body_arrives_in_pieces_and_whole(web):
    with raw_get(web, "drip.slow.test") as sock:
        sock.settimeout(5)
        first = b""
        while HEAD_END not in first:
            first += sock.recv(65536)
        head, _, body = first.partition(HEAD_END)
        length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
        assert len(body) < length  # not all at once
        while len(body) < length:
            body += sock.recv(65536)
    assert b"x" * 200 in body


def test_slow_dns_still_answers(web):
    assert addresses(ask(web, "quick.slow.test")) == ["127.0.0.1"]


def test_slow_web_splits_the_names_by_kind_and_keeps_the_seed():
    world = World(seed=5)
    names = world.graph(1000, roots=[f"r{i}.test" for i in range(50)])
    kinds = slow_web(world, names, keep=(names[0],), seed=5)
    assert sorted(sum(kinds.values(), [])) == sorted(names)
    assert names[0] in kinds["answering"]
    assert 40 <= len(kinds["hanging"]) <= 100 and 10 <= len(kinds["no_dns"]) <= 50
    assert all(world.match(n)[0]["kind"] == "silent" for n in kinds["no_dns"])
    assert all(0.3 <= world.timing[n]["delay"] <= 1.2 for n in kinds["answering"])
    again = World.from_json(world.to_json())
    assert (again.timing, again.dns_delay) == (world.timing, world.dns_delay)


def test_slow_web_kills_the_shares_of_names_asked_for():
    world = World(seed=6)
    names = world.graph(2000, roots=[f"r{i}.test" for i in range(500)])
    kinds = slow_web(world, names, answer=(0.2, 5.0), nxdomain=0.07, refused=0.06, seed=6)
    assert sorted(sum(kinds.values(), [])) == sorted(names)
    assert 100 <= len(kinds["nxdomain"]) <= 180 and 80 <= len(kinds["refused"]) <= 160
    assert all(world.match(n)[0]["kind"] == "nxdomain" for n in kinds["nxdomain"])
    assert all(world.address_of(n) == "127.0.0.2" for n in kinds["refused"])
    assert all(n not in world.timing for n in kinds["nxdomain"] + kinds["refused"])
    assert all(0.2 <= world.timing[n]["delay"] <= 5.0 for n in kinds["answering"])
