"""gunicorn settings for the panel, read from the directory gunicorn starts in (the
repository root in `make run`, /app in the image).

Nothing here may import the panel: its modules import psycopg, which picks how it
waits on the network when it is first imported. Only in the worker, after gevent
has patched the standard library, does psycopg choose a wait that lets other
requests run meanwhile (the panel refuses to start otherwise: webpanel.create_app).
"""

import contextlib
import os
import time
from collections import Counter

import gevent
from gunicorn import util
from gunicorn.workers.ggevent import GeventWorker

# gunicorn 27 opens a management socket at $HOME/.gunicorn/gunicorn.ctl by default. The
# panel needs none, and every gunicorn on a machine would share that one path.
control_socket_disable = True


class PanelWorker(GeventWorker):
    """gevent: a connection is a greenlet, not a worker or a thread, so clients that
    send their request slowly hold nothing anyone else needs (up to worker_connections
    of them per process). gunicorn's own refusals of a malformed request (400, a
    request line too long 414, headers too large 431) are JSON with the panel's
    security headers, like the panel's errors under /api/."""

    def init_process(self):
        util.write_error = write_json_error  # gunicorn writes its own errors through this
        self.open_per_address = Counter()
        super().init_process()

    def patch(self):
        super().patch()
        # Read only now, after gevent's patching: crawler.core.config's imports bring in ssl.
        from crawler.core.config import from_environment

        self.connections_per_address = from_environment("PANEL_CONNECTIONS_PER_ADDRESS", os.environ)
        self.request_read_seconds = from_environment("PANEL_REQUEST_READ_SECONDS", os.environ)

    def handle(self, listener, client, addr):
        # One address may hold only a share of this process's worker_connections: the
        # excess is refused at once, before a byte of it is read, so that a single
        # client trickling bodies cannot use up the slots everyone else needs.
        source = addr[0] if isinstance(addr, tuple) else ""
        if self.open_per_address[source] >= self.connections_per_address:
            with contextlib.suppress(OSError):  # the client may be gone already
                util.write_error(client, 429, "Too Many Requests", "too many open connections")
            util.close(client)
            return
        self.open_per_address[source] += 1
        try:
            super().handle(listener, DeadlineSocket(client, self.request_read_seconds), addr)
        finally:
            self.open_per_address[source] -= 1
            if not self.open_per_address[source]:
                del self.open_per_address[source]

    def handle_error(self, req, client, addr, exc):
        if isinstance(exc, RequestReadTimeout):
            with contextlib.suppress(OSError):  # the client may be gone already
                util.write_error(client, 408, "Request Timeout", "request not received in time")
            return
        super().handle_error(req, client, addr, exc)


class RequestReadTimeout(BaseException):
    """A request's headers and body took longer than request_read_seconds to arrive.
    BaseException, so that neither Flask nor gunicorn's request handling turns it into a
    500: it reaches PanelWorker.handle_error, which answers 408."""


class DeadlineSocket:
    """The client's socket, whose reads share one deadline per request: the clock starts
    at the first read after a response (or the connection's start) and every recv waits
    only for what is left, so a body trickled a byte at a time is cut off, not waited on."""

    def __init__(self, sock, seconds):
        self._sock = sock
        self._seconds = seconds
        self._deadline = None

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def _before_deadline(self, read, *args):
        if self._deadline is None:
            self._deadline = time.monotonic() + self._seconds
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise RequestReadTimeout()
        with gevent.Timeout(left, RequestReadTimeout()):
            return read(*args)

    def recv(self, *args):
        return self._before_deadline(self._sock.recv, *args)

    def recv_into(self, *args):
        return self._before_deadline(self._sock.recv_into, *args)

    def sendall(self, *args):
        self._deadline = None  # the request is in; the next one gets its own time
        return self._sock.sendall(*args)

    def send(self, *args):
        self._deadline = None
        return self._sock.send(*args)


def write_json_error(sock, status_int, reason, mesg):
    from webpanel.security import server_refusal  # in the worker, after gevent's patching

    util.write_nonblock(sock, server_refusal(status_int, reason, mesg))


worker_class = PanelWorker
worker_connections = 1000  # open connections per worker process
# Per client address, PANEL_CONNECTIONS_PER_ADDRESS of them at most (crawler/core/config.py).
