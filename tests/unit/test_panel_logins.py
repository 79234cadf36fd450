"""Logins no outsider can crowd out: the slow-down before any check, checks queued fairly
per client address, and guesses at one account from many addresses."""

from __future__ import annotations

import io
import os
import threading

import pytest
from sqlalchemy import text

from crawler.db.operators import accounts
from tests.unit.test_panel_support import (
    CSRF,
    PASSWORD,
    attempt,
    fail_many,
    message,
    set_cookie,
)
from tests.waiting import wait_until
from webpanel import accounts as panel_accounts
from webpanel.devices import DEVICE_COOKIE
from webpanel.login_queue import (
    CHECK_NICENESS,
    CLEAN_ADDRESS,
    FAILED_ADDRESS,
    FULL,
    GRANTED,
    HOLD_ANSWER,
    KNOWN_DEVICE,
    TIMED_OUT,
    CheckRunner,
    FairQueue,
    LoginGate,
    address_key,
)

pytest_plugins = ["tests.unit.test_panel_support"]

BOUND = 10.0  # seconds any wait in these tests may take at most
LANES = {"device": KNOWN_DEVICE, "clean": CLEAN_ADDRESS}  # by a waiter's prefix


def queue_behind(
    queue: FairQueue, addresses: list[str]
) -> tuple[list[str], list[threading.Thread]]:
    """A waiter per address, entering the queue in this order; the order of their turns."""
    served: list[str] = []
    threads = []
    for address in addresses:

        def wait_for_turn(address=address):
            lane = LANES.get(address.split("-")[0], FAILED_ADDRESS)
            with queue.turn(address, lane, timeout=BOUND) as turn:
                assert turn == GRANTED
                served.append(address)

        waiting = queue._total_waiting
        thread = threading.Thread(target=wait_for_turn)
        thread.start()
        threads.append(thread)
        wait_until(lambda waiting=waiting: queue._total_waiting == waiting + 1, what="in the queue")
    return served, threads


def test_turns_go_round_the_addresses_so_a_flood_waits_behind_itself():
    queue = FairQueue(slots=1, per_address=3)
    with queue.turn("operator") as turn:  # a check is running: everyone else queues
        assert turn == GRANTED
        served, threads = queue_behind(queue, ["flood", "flood", "flood", "b", "c"])
    for thread in threads:
        thread.join(BOUND)
    assert served == ["flood", "b", "c", "flood", "flood"]


def test_known_devices_go_first_then_addresses_that_have_not_failed():
    queue = FairQueue(slots=1, per_address=3)
    with queue.turn("operator") as turn:
        assert turn == GRANTED
        waiters = ["flood", "flood", "clean-1", "b", "clean-2", "device-1"]
        served, threads = queue_behind(queue, waiters)
    for thread in threads:
        thread.join(BOUND)
    assert served == ["device-1", "clean-1", "clean-2", "flood", "b", "flood"]


def test_an_address_with_too_many_logins_waiting_is_refused_at_once():
    queue = FairQueue(slots=1, per_address=2)
    with queue.turn("flood") as first:
        _, threads = queue_behind(queue, ["flood"])
        with queue.turn("flood", timeout=BOUND) as third:
            assert first == GRANTED and third == FULL  # refused without waiting the bound
        with queue.turn("elsewhere", timeout=0.01) as other:
            assert other == TIMED_OUT  # only the slot's holder was ahead
    for thread in threads:
        thread.join(BOUND)
    with queue.turn("flood") as again:
        assert again == GRANTED  # every place was given back


def test_a_throttled_login_costs_no_check_and_does_not_queue(app, db, operators, hash_checks):
    from webpanel.auth import password_checks

    fail_many(db, "alice", "198.51.100.7", 20)
    with app.app_context():
        checks = password_checks()
    with checks.queue.turn("192.0.2.99") as turn:  # the only slot is busy
        assert turn == GRANTED
        response, _ = attempt(app, "alice", PASSWORD, "198.51.100.7")
    assert response.status_code == 429 and "Too many failed logins" in message(response)
    assert hash_checks == []


def test_a_login_waits_for_its_turn_instead_of_being_turned_away(app, db, operators):
    from webpanel.auth import password_checks

    with app.app_context():
        checks = password_checks()
    answers = []
    with checks.queue.turn("192.0.2.99"):  # another address's check is running
        login = threading.Thread(target=lambda: answers.append(attempt(app, "alice", PASSWORD)))
        login.start()
        wait_until(lambda: checks.queue._total_waiting == 1, what="the login queues")
    login.join(BOUND)
    assert answers[0][0].status_code == 302


def failures(engine, username: str, address: str) -> int:
    with engine.connect() as conn:
        found = conn.execute(
            text("SELECT failures FROM login_failures WHERE username = :u AND address = :a"),
            {"u": username, "a": address},
        ).scalar()
    return found or 0


def known_browser(app, username: str, address: str):
    """A browser `username` has logged in from (it keeps the device cookie), logged out."""
    response, browser = attempt(app, username, PASSWORD, address)
    assert response.status_code == 302 and browser.get_cookie(DEVICE_COOKIE, path="/login")
    browser.delete_cookie("hostcrawl_session")
    return browser


def test_guesses_from_fresh_addresses_slow_the_account_but_not_its_operators_browser(
    app, db, operators, hash_checks, monkeypatch
):
    # The first wait outlasts the loop however slow the machine: a 2 s one once ran out
    # between two guesses on a loaded machine, and a 21st guess was answered.
    monkeypatch.setitem(app.config, "LOGIN_DELAY_SECONDS", 600.0)
    alices = known_browser(app, "alice", "192.0.2.10")
    answered = refused = 0
    for n in range(150):  # each guess from an address never seen before, as in the attack
        response, _ = attempt(app, "alice", f"guess {n}!", f"198.51.{100 + n // 250}.{n % 250}")
        answered += response.status_code == 200
        refused += response.status_code == 429
    # The account's free failures are checked; after them each fresh address waits.
    assert answered == 20 and refused == 130
    assert len(hash_checks) == 1 + 20  # alice's first login, then the free guesses
    assert failures(db, "alice", accounts.ANY_ADDRESS) == 20
    response, _ = attempt(app, "alice", PASSWORD, "192.0.2.10", browser=alices)
    assert response.status_code == 302  # her own browser is let in at once
    response, _ = attempt(app, "alice", PASSWORD, "192.0.2.11")  # a browser she never used
    assert response.status_code == 429
    assert message(response) == panel_accounts.ACCOUNT_SLOW_DOWN.format(
        response.headers["Retry-After"]
    )


def test_a_device_cookie_counts_only_for_its_own_account_and_only_when_signed(app, db, operators):
    bobs = known_browser(app, "bob", "192.0.2.20")
    fail_many(db, "alice", accounts.ANY_ADDRESS, 25)
    response, _ = attempt(app, "alice", PASSWORD, "192.0.2.20", browser=bobs)
    assert response.status_code == 429  # bob's browser is no device of alice's
    forged = app.test_client()
    forged.set_cookie(DEVICE_COOKIE, "alice.forged.signature", path="/login")
    response, _ = attempt(app, "alice", PASSWORD, "192.0.2.21", browser=forged)
    assert response.status_code == 429
    response, _ = attempt(app, "bob", PASSWORD, "192.0.2.20", browser=bobs)
    assert response.status_code == 302


@pytest.mark.parametrize(
    ("base_url", "secure"),
    [("http://192.0.2.10", False), ("https://192.0.2.10", True)],
    ids=["plain-http", "https"],
)
def test_the_device_cookie_is_for_the_login_page_only_and_secure_over_https(
    app, operators, base_url, secure
):
    client = app.test_client()
    page = client.get("/login", base_url=base_url).get_data(as_text=True)
    data = {"username": "alice", "password": PASSWORD, "csrf_token": CSRF.search(page).group(1)}
    headers = {"Referer": f"{base_url}/login"}
    response = client.post("/login", data=data, base_url=base_url, headers=headers)
    cookie = set_cookie(response, DEVICE_COOKIE)
    assert "Path=/login" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert ("Secure" in cookie) == secure


def test_the_account_wide_count_starts_slowing_after_its_free_failures(app, db, operators):
    fail_many(db, "alice", accounts.ANY_ADDRESS, 19)
    fail_many(db, "alice", "198.51.100.1", 1)
    assert attempt(app, "alice", "wrong password!", "198.51.100.1")[0].status_code == 200
    slowed, _ = attempt(app, "alice", PASSWORD, "198.51.100.1")  # the account's 20th failure
    assert slowed.status_code == 429 and slowed.headers["Retry-After"] == "2"
    assert message(slowed) == panel_accounts.ACCOUNT_SLOW_DOWN.format(2)
    assert accounts.unlock(db, "alice") == 2  # its count here and its account-wide one
    assert attempt(app, "alice", PASSWORD, "198.51.100.1")[0].status_code == 302


class SlowLogin:
    """A WSGI app whose /login answers only when told to."""

    def __init__(self) -> None:
        self.inside: list[str] = []
        self.go = threading.Event()

    def __call__(self, environ, start_response):
        self.inside.append(environ["REMOTE_ADDR"])
        self.go.wait(BOUND)
        start_response("200 OK", [])
        return [b"page"]


def call(gate, address: str, path: str = "/login") -> tuple[str, bytes]:
    seen = []
    environ = {"PATH_INFO": path, "REMOTE_ADDR": address, "wsgi.input": io.BytesIO()}
    body = b"".join(gate(environ, lambda s, h: seen.append(s)))
    return seen[0], body


def test_the_gate_lets_one_login_request_per_address_in_at_a_time():
    app = SlowLogin()
    gate = LoginGate(app, waiting=1)
    answers = []
    threads = [
        threading.Thread(target=lambda a=a: answers.append((a, call(gate, a)[0])))
        for a in ("flood", "flood", "other")
    ]
    threads[0].start()
    wait_until(lambda: app.inside == ["flood"], what="the first is inside")
    threads[1].start()
    wait_until(lambda: gate._queued.get("flood") == 2, what="the second waits")
    refused = call(gate, "flood")  # beyond the one waiting
    assert refused[0].startswith("429") and b"Too many requests" in refused[1]
    threads[2].start()
    wait_until(lambda: "other" in app.inside, what="another address goes straight in")
    assert app.inside.count("flood") == 1
    app.go.set()
    for thread in threads:
        thread.join(BOUND)
    assert sorted(answers) == [("flood", "200 OK"), ("flood", "200 OK"), ("other", "200 OK")]
    assert gate._queued == {} and gate._inside == set()


def test_the_gate_lets_other_paths_by():
    app = SlowLogin()
    app.go.set()
    gate = LoginGate(app, waiting=0)
    gate._inside.add("flood")  # a /login of this address is running
    gate._queued["flood"] = 1
    assert call(gate, "flood", "/healthz")[0] == "200 OK"
    assert call(gate, "flood")[0].startswith("429")


def test_the_gate_holds_a_slowed_answer_after_letting_the_address_in_again():
    def slowed(environ, start_response):
        environ[HOLD_ANSWER] = 1.5
        start_response("429 Too Many Requests", [])
        return [b"slowed"]

    held = []
    gate = LoginGate(slowed, hold=lambda seconds: held.append((seconds, set(gate._inside))))
    assert call(gate, "guesser") == ("429 Too Many Requests", b"slowed")
    assert held == [(1.5, set())]  # held with no place at the gate: its next one goes in
    call(gate, "guesser", "/healthz")
    assert len(held) == 1  # only /login's answers are held


@pytest.mark.parametrize(
    ("cap", "failures", "password", "status", "held"),
    [
        (1.5, 20, PASSWORD, 429, [1.5]),  # slowed: Retry-After 2, held the cap
        (5.0, 20, PASSWORD, 429, [2]),  # slowed: held its Retry-After, no longer
        (1.5, 0, "wrong password!", 200, []),  # checked and refused: answered at once
        (1.5, 0, PASSWORD, 302, []),  # let in
    ],
)
def test_a_slowed_down_login_is_answered_after_a_hold(
    app, db, operators, monkeypatch, cap, failures, password, status, held
):
    monkeypatch.setitem(app.config, "LOGIN_SLOWED_ANSWER_SECONDS", cap)
    holds = []
    monkeypatch.setattr(app.wsgi_app, "_hold", holds.append)
    fail_many(db, "alice", accounts.ANY_ADDRESS, failures)
    response, _ = attempt(app, "alice", password, "198.51.100.3")
    assert response.status_code == status
    assert holds == held


def test_an_ipv6_client_counts_as_its_slash_64():
    assert address_key("2001:db8:1:2:aaaa::1") == address_key("2001:db8:1:2:bbbb::7")
    assert address_key("2001:db8:1:2::1") == "2001:db8:1:2::/64"
    assert address_key("2001:db8:1:3::1") != address_key("2001:db8:1:2::1")
    assert address_key("::ffff:192.0.2.1") == address_key("192.0.2.1") == "192.0.2.1"
    assert address_key("unknown") == "unknown"


def test_guesses_from_one_ipv6_network_are_slowed_together(app, db, operators):
    for n in range(5):
        attempt(app, "alice", "wrong password!", f"2001:db8:1:2::{n + 1:x}")
    slowed, _ = attempt(app, "alice", PASSWORD, "2001:db8:1:2::ffff")
    assert slowed.status_code == 429
    assert attempt(app, "alice", PASSWORD, "2001:db8:9:9::1")[0].status_code == 302


def test_checks_run_on_threads_of_their_own_at_a_lower_priority():
    def niceness() -> tuple[int, int]:
        me = threading.get_native_id()
        return me, os.getpriority(os.PRIO_PROCESS, me)

    runner = CheckRunner(1)
    runner.run(niceness)
    thread, nice = runner.run(niceness)  # lowered once, not again on each check
    assert thread != threading.get_native_id()
    main = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    assert nice == min(19, main + CHECK_NICENESS)
