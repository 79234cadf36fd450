"""Password checks: queued fairly per client address, run on low-priority threads.

An Argon2 check costs about 64 MiB and most of a core on purpose, so a process
runs only PANEL_LOGIN_HASH_SLOTS of them at once. The logins waiting for one
are served round-robin by client address: a flood from one address waits
behind itself, and a login from any other address waits for at most one check
per address ahead of it. An address may have only PER_ADDRESS logins waiting
or being checked in a process; more are refused at once, at no cost to anyone
else.

Logins go in three lanes, each served only when those before it are empty:
from a known device (a browser that has logged in to the account before,
webpanel.devices: the operator's), then from an address with no failed login,
then the rest. A storm of wrong passwords from fresh addresses thus delays the
operator's login by the checks already running, not by the storm's.

Before any of that, LoginGate lets one request for /login per client address
run at a time in a process (the rest of that address's wait behind it, a
bounded number): a flood from one address then costs the panel no more than one
visitor's requests do, whatever its rate.

The checks run on threads of their own at a lower CPU priority (nice), so the
pages and /healthz keep the processor while a storm of logins is checked. Under
gevent (gunicorn.conf.py) they run on gevent's pool of real threads: Argon2
releases the GIL, and the event loop keeps serving requests meanwhile.
"""

from __future__ import annotations

import io
import ipaddress
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass

from werkzeug.wsgi import get_input_stream

from webpanel.security import HEADERS

PER_ADDRESS = 2  # logins of one address waiting or being checked, per process
# /login requests of one address waiting at the gate, per process. Waiting, not refused:
# a refusal is cheap enough for a flood to loop on it, a wait holds the flood back.
GATE_WAITING = 100
LOGIN_BODY_MAX = 16 * 1024  # bytes: a login form is far smaller
TOO_MANY = "Too many requests for /login from your address at once: try again in a moment."
CAPACITY = 500  # logins waiting per process, all addresses together
MAX_WAIT = 30.0  # seconds a login waits for its check before it is told to come back
CHECK_NICENESS = 10  # how much lower than the pages' the checks' CPU priority is
# Set by the login view on a slowed-down login's environ: the seconds the gate holds its
# answer once it has let the next of the address's requests in (webpanel.auth).
HOLD_ANSWER = "hostcrawl.hold_answer"


GRANTED, FULL, TIMED_OUT = "granted", "full", "timed out"
KNOWN_DEVICE, CLEAN_ADDRESS, FAILED_ADDRESS = range(3)  # the lanes, first served first


@dataclass(eq=False)
class _Ticket:
    address: str
    lane: dict[str, deque[_Ticket]]
    granted: bool = False


class FairQueue:
    """At most `slots` holders at once; waiters are admitted round-robin by address
    within a lane, and a lane only when the lanes before it are empty."""

    def __init__(
        self, slots: int, per_address: int = PER_ADDRESS, capacity: int = CAPACITY
    ) -> None:
        self._cond = threading.Condition()
        self._free = slots
        self._per_address = per_address
        self._capacity = capacity
        # Per lane, in insertion order: whose turn is next.
        self._lanes: list[dict[str, deque[_Ticket]]] = [{}, {}, {}]
        self._count: dict[str, int] = {}  # per address: waiting + holding
        self._total_waiting = 0

    @contextmanager
    def turn(
        self, address: str, lane: int = FAILED_ADDRESS, timeout: float = MAX_WAIT
    ) -> Iterator[str]:
        """GRANTED inside once this address's turn has come (held until the block ends);
        FULL at once when the address has too many logins here already or the queue is
        full; TIMED_OUT after `timeout` seconds of waiting."""
        ticket = self._enter(address, self._lanes[lane])
        outcome = FULL if ticket is None else self._wait(ticket, timeout)
        try:
            yield outcome
        finally:
            if outcome == GRANTED:
                self._leave(address)

    def _enter(self, address: str, lane: dict[str, deque[_Ticket]]) -> _Ticket | None:
        with self._cond:
            if self._count.get(address, 0) >= self._per_address:
                return None
            if self._total_waiting >= self._capacity:
                return None
            ticket = _Ticket(address, lane)
            lane.setdefault(address, deque()).append(ticket)
            self._count[address] = self._count.get(address, 0) + 1
            self._total_waiting += 1
            self._grant()
            return ticket

    def _wait(self, ticket: _Ticket, timeout: float) -> str:
        with self._cond:
            if self._cond.wait_for(lambda: ticket.granted, timeout):
                return GRANTED
            queue = ticket.lane[ticket.address]  # still waiting: leave the queue
            queue.remove(ticket)
            if not queue:
                del ticket.lane[ticket.address]
            self._total_waiting -= 1
            self._release(ticket.address)
            return TIMED_OUT

    def _leave(self, address: str) -> None:
        with self._cond:
            self._free += 1
            self._release(address)
            self._grant()

    def _release(self, address: str) -> None:
        self._count[address] -= 1
        if not self._count[address]:
            del self._count[address]

    def _grant(self) -> None:
        """Hand free slots out, one address at a time, in turn (the lock is held)."""
        granted = False
        while self._free and any(self._lanes):
            lane = next(lane for lane in self._lanes if lane)
            address = next(iter(lane))
            queue = lane.pop(address)
            queue.popleft().granted = True
            if queue:
                lane[address] = queue  # back of the line
            self._free -= 1
            self._total_waiting -= 1
            granted = True
        if granted:
            self._cond.notify_all()


def address_key(address: str) -> str:
    """Whom the slow-down and the queue count as one client: an IPv4 address, or an IPv6
    address's /64 (whoever holds one address of a /64 usually holds all 2^64)."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address[:64]
    if ip.version == 6 and ip.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(getattr(ip, "ipv4_mapped", None) or ip)


_lowered: set[int] = set()  # the threads lower_priority() has lowered (by native id)


def lower_priority() -> None:
    """Lower this thread's CPU priority by CHECK_NICENESS, once (Linux: nice is per
    thread, inherited by the threads Argon2 starts); raising it back would need
    privileges, so only threads that do nothing else call this."""
    # Not Linux, or not allowed: the checks run at the normal priority.
    me = threading.get_native_id()
    if me in _lowered:
        return
    with suppress(AttributeError, OSError):
        lower = min(19, os.getpriority(os.PRIO_PROCESS, me) + CHECK_NICENESS)
        os.setpriority(os.PRIO_PROCESS, me, lower)
    _lowered.add(me)


class CheckRunner:
    """Runs password checks on `size` threads of their own, at a lower CPU priority."""

    def __init__(self, size: int) -> None:
        if under_gevent():
            from gevent.threadpool import ThreadPool

            pool = ThreadPool(size)
            self._run = lambda fn, args: pool.apply(_low, (fn, *args))
        else:
            executor = ThreadPoolExecutor(size, "password-check", initializer=lower_priority)
            self._run = lambda fn, args: executor.submit(fn, *args).result()

    def run(self, fn: Callable, *args):
        return self._run(fn, args)


def _low(fn: Callable, *args):
    lower_priority()
    return fn(*args)


def under_gevent() -> bool:
    """True in a gunicorn gevent worker (threading is then gevent's)."""
    monkey = sys.modules.get("gevent.monkey")
    return monkey is not None and monkey.is_module_patched("threading")


class LoginGate:
    """WSGI middleware: one /login request per client address at a time in this process.

    The body is read first, outside the gate, so a client sending it slowly keeps
    no one else waiting, not even from its own address. Up to `waiting` more of
    that address's requests wait their turn; any beyond them, or one that waited
    `timeout` seconds, gets 429 at once, before Flask sees it. Inside ProxyFix, so
    REMOTE_ADDR is the client's address the panel trusts.

    A slowed-down login's answer (the view sets HOLD_ANSWER) is held that long after
    the gate is left: a guesser that loops on 429s then loops at the pace of the holds,
    not of the panel's CPU, and it costs a greenlet meanwhile, under gevent.
    """

    def __init__(
        self,
        app,
        waiting: int = GATE_WAITING,
        timeout: float = MAX_WAIT,
        hold: Callable[[float], None] | None = None,
    ) -> None:
        self.app = app
        self._waiting = waiting
        self._timeout = timeout
        self._hold = hold or _sleep
        self._cond = threading.Condition()
        self._queued: dict[str, int] = {}  # per address: the one inside + those waiting
        self._inside: set[str] = set()

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") != "/login":
            return self.app(environ, start_response)
        if not read_body(environ):  # before the gate: a slow sender holds only itself
            return refuse(start_response, "413 Content Too Large", "A login is a small form.")
        address = address_key(environ.get("REMOTE_ADDR") or "unknown")
        if not self._enter(address):
            return refuse(start_response, "429 Too Many Requests", TOO_MANY)
        try:
            # The whole response inside the gate (a login page or a redirect: small).
            answer = self.app(environ, start_response)
            try:
                body = list(answer)
            finally:
                if hasattr(answer, "close"):
                    answer.close()
        finally:
            self._leave(address)
        if environ.get(HOLD_ANSWER):
            self._hold(environ[HOLD_ANSWER])
        return body

    def _enter(self, address: str) -> bool:
        with self._cond:
            queued = self._queued.get(address, 0)
            if queued > self._waiting:
                return False
            self._queued[address] = queued + 1
            if self._cond.wait_for(lambda: address not in self._inside, self._timeout):
                self._inside.add(address)
                return True
            self._forget(address)
            return False

    def _leave(self, address: str) -> None:
        with self._cond:
            self._inside.discard(address)
            self._forget(address)
            self._cond.notify_all()

    def _forget(self, address: str) -> None:
        self._queued[address] -= 1
        if not self._queued[address]:
            del self._queued[address]


def _sleep(seconds: float) -> None:
    time.sleep(seconds)  # looked up when called: gevent's once gevent has patched time


def read_body(environ) -> bool:
    """Read the request's body (up to LOGIN_BODY_MAX bytes) into memory; False if larger.

    Through werkzeug's input stream, bounded by Content-Length: a GET without one has
    an empty body, where reading the raw socket would wait for the client forever.
    """
    data = get_input_stream(environ).read(LOGIN_BODY_MAX + 1)
    if len(data) > LOGIN_BODY_MAX:
        return False
    environ["wsgi.input"] = io.BytesIO(data)
    environ["CONTENT_LENGTH"] = str(len(data))
    return True


def refuse(start_response, status: str, message: str) -> list[bytes]:
    """A plain-text refusal with the panel's security headers, made before Flask."""
    body = (message + "\n").encode()
    headers = [*HEADERS.items(), ("Cache-Control", "no-store"), ("Retry-After", "1")]
    headers += [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))]
    start_response(status, headers)
    return [body]
