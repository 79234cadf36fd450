"""HTTP(S) page server and the misbehaving TCP endpoints, as asyncio protocols."""

from __future__ import annotations

import asyncio
import base64
import html
import secrets
import socket
import struct
from collections import Counter
from http import HTTPStatus
from urllib.parse import urlsplit

from . import garbled
from .eventlog import EventLog
from .hostile import flood_lines
from .world import World, normalize_host

MAX_HEAD = 64 * 1024

# A TLS fatal alert record (handshake_failure). Sent in reply to a
# ClientHello it makes the client's handshake fail at once.
TLS_ALERT = bytes([0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x28])

DEFAULT_TITLE = "fakeweb default page"


def render_page(page: dict) -> str:
    """HTML for a page dict of a World (title and links)."""
    title = html.escape(page["title"])
    items = "".join(
        f'<li><a href="{html.escape(href)}">{html.escape(href)}</a></li>\n'
        for href in page["links"]
    )
    head = f"<title>{title}</title>" if title else ""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"{head}</head>\n<body><h1>{title}</h1>\n<ul>\n{items}</ul>\n</body></html>\n"
    )


def header_lines(headers: dict[str, str | list[str]]) -> str:
    """Header lines of a page's extra headers: a list of values is one line each."""
    return "".join(
        f"{name}: {value}\r\n"
        for name, values in headers.items()
        for value in ([values] if isinstance(values, str) else values)
    )


def build_response(
    status: int, body: str | bytes, content_type: str, extra: str = "", length: int | None = None
) -> tuple[int, bytes, bytes]:
    """(status, head bytes, body bytes) of a complete HTTP/1.1 response.

    With `length`, the head announces that many bytes and the body is left to stream.
    """
    data = body.encode("utf-8") if isinstance(body, str) else body
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    length = len(data) if length is None else length
    head = (
        f"HTTP/1.1 {status} {reason}\r\nServer: fakeweb\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n"
        f"{extra}\r\n"
    )
    return status, head.encode("latin-1"), data


class Responses:
    """Every response of a world, rendered once so serving is a dict lookup."""

    def __init__(self, world: World, ports: dict[str, int] | None = None):
        """Render all pages, redirects and robots.txt files of world."""
        self.ports = {f"{scheme}_port": port for scheme, port in (ports or {}).items()}
        self.delay = world.delay
        self.timing = world.timing
        self.farms = world.farms
        self.sizes = {
            (host, path): page["size"]
            for host, pages in world.pages.items()
            for path, page in pages.items()
            if "size" in page
        }
        self.by_key: dict[tuple[str, str], tuple[int, bytes, bytes]] = {}
        for host, pages in world.pages.items():
            for path, page in pages.items():
                self.by_key[host, path] = self._render(page)
        for host, text in world.robots.items():
            self.by_key[host, "/robots.txt"] = build_response(
                200, text, "text/plain; charset=utf-8"
            )
        self.known = set(world.pages) | set(world.robots)
        empty = {"title": DEFAULT_TITLE, "links": []}
        html_type = "text/html; charset=utf-8"
        self.default = build_response(200, render_page(empty), html_type)
        missing = {"title": "Not Found", "links": []}
        self.not_found = build_response(404, render_page(missing), html_type)

    def _render(self, page: dict) -> tuple[int, bytes, bytes]:
        """Response for one page dict (a redirect, raw bytes, a huge body or an HTML page)."""
        if "raw" in page:
            body = base64.b64decode(page["raw"])
            extra = header_lines(page.get("headers", {}))
            if "header_flood" in page:
                extra += flood_lines(page["header_flood"])
            return build_response(page["status"], body, page["type"], extra)
        if "size" in page:  # the body is streamed by the protocol: HUGE marks it
            return build_response(page["status"], b"", page["type"], length=page["size"])
        if "location" in page:
            location = page["location"].format_map(self.ports) if self.ports else page["location"]
            body = page.get("body", f'<a href="{html.escape(location)}">moved</a>\n')
            extra = f"Location: {location}\r\n"
            extra += header_lines(page.get("headers", {}))
            return build_response(page["status"], body, "text/html", extra)
        body = render_page(page)
        return build_response(page["status"], body, "text/html; charset=utf-8")

    def lookup(self, host: str, path: str) -> tuple[int, bytes, bytes]:
        """Response for a request; unknown hosts get the default page."""
        found = self.by_key.get((host, path))
        if found is not None:
            return found
        farm = farm_of(host, self.farms)
        if farm is not None and path == "/":
            links = [f"http://f{secrets.token_hex(5)}.{farm}/" for _ in range(self.farms[farm])]
            page = render_page({"title": host, "links": links})
            return build_response(200, page, "text/html; charset=utf-8")
        if host in self.known or path == "/robots.txt":
            return self.not_found
        return self.default


def parse_head(head: bytes) -> tuple[str, str, str, dict[str, str]]:
    """(method, target, version, lower-cased headers) of a request head."""
    lines = head.decode("latin-1").split("\r\n")
    method, target, version = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        key, _, value = line.partition(":")
        headers[key.strip().lower()] = value.strip()
    return method, target, version, headers


def split_host(value: str) -> str:
    """Host header value without port, normalised."""
    if value.startswith("["):  # IPv6 literal
        return value.split("]")[0] + "]"
    return normalize_host(value.rsplit(":", 1)[0] if ":" in value else value)


def farm_of(host: str, farms: dict[str, int]) -> str | None:
    """The wildcard farm `host` is in (or is), if any."""
    labels = host.split(".")
    for i in range(len(labels) - 1):
        if ".".join(labels[i:]) in farms:
            return ".".join(labels[i:])
    return None


def site_root(host: str) -> str:
    """The registered domain of a fakeweb name (its last two labels: every zone is x.test)."""
    return ".".join(host.split(".")[-2:])


class RootsInFlight:
    """Requests being answered per root right now, and the most ever seen at once."""

    def __init__(self) -> None:
        self.now: Counter[str] = Counter()

    def start(self, root: str) -> int:
        self.now[root] += 1
        return self.now[root]

    def end(self, root: str) -> None:
        self.now[root] -= 1


IN_FLIGHT = RootsInFlight()


FILLER = b"<p>" + b"hostcrawl " * 104_857 + b"</p>\n"  # about 1 MiB


class Network:
    """Our side's network, as the crawler sees it: down = every connection is reset."""

    down = False


NETWORK = Network()
# Requests of hosts that answer only when told (World.answer_when_told): (protocol, reply).
WAITING: list[tuple[HttpProtocol, tuple]] = []


def answer_waiting() -> int:
    """Answer every request waiting to be told; how many there were."""
    waiting, WAITING[:] = list(WAITING), []
    for protocol, reply in waiting:
        protocol._answered(reply)
    return len(waiting)


def reset(transport) -> None:
    """Abort with a TCP RST (linger 0) instead of an orderly FIN."""
    sock = transport.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


class HttpProtocol(asyncio.Protocol):
    """Minimal HTTP/1.1 server with keep-alive, answering from Responses."""

    def __init__(self, responses: Responses, scheme: str, log: EventLog):
        """Serve responses; log every request to log."""
        self.responses = responses
        self.scheme = scheme
        self.log = log
        self.buffer = bytearray()
        self.transport = None
        self.local = ("", 0)
        self.left, self.close_after, self.paused = 0, False, False
        self.pending: list[str] = []  # roots of the requests read and not yet answered

    def connection_made(self, transport) -> None:
        """Remember the transport and the address the client connected to."""
        self.transport = transport
        self.local = transport.get_extra_info("sockname")[:2]
        if NETWORK.down:
            reset(transport)

    def data_received(self, data: bytes) -> None:
        """Answer every complete request in the buffer (pipelining allowed)."""
        self.buffer += data
        while self.transport is not None and not self.transport.is_closing():
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD:
                    self.transport.close()
                return
            try:
                request = parse_head(bytes(self.buffer[:end]))
                length = int(request[3].get("content-length", "0"))
            except ValueError:
                self._bad_request()
                return
            if len(self.buffer) < end + 4 + length:
                return  # wait for the rest of the body
            del self.buffer[: end + 4 + length]
            self._answer(*request)

    def _answer(self, method: str, target: str, version: str, headers: dict) -> None:
        """Log one request, send its response and close if the client wants."""
        raw_host = headers.get("host", "")
        host = split_host(raw_host)
        parts = urlsplit(target)
        if parts.netloc:  # absolute-form target, as sent to proxies
            host = normalize_host(parts.hostname or "")
        path = parts.path or "/"
        status, head, body = self.responses.lookup(host, path)
        self.log.write(
            event="request",
            scheme=self.scheme,
            address=self.local[0],
            port=self.local[1],
            method=method,
            host=host,
            raw_host=raw_host,
            path=path,
            target=target,
            status=status,
            user_agent=headers.get("user-agent", ""),
            # Requests for this root being answered at once, this one included.
            root_in_flight=IN_FLIGHT.start(site_root(host)),
        )
        connection = headers.get("connection", "").lower()
        close = connection == "close" or (version == "HTTP/1.0" and connection != "keep-alive")
        size = 0 if method == "HEAD" else self.responses.sizes.get((host, path), 0)
        reply = (head if method == "HEAD" else head + body, size, close)
        self.pending.append(site_root(host))
        timing = self.responses.timing.get(host, {})
        if timing.get("hang") and timing.get("path", path) == path:
            return  # in flight until the client gives up
        if timing.get("told") and timing["path"] == path:
            WAITING.append((self, reply))
            return
        if timing.get("garbled"):
            garbled.send(self.transport, timing["garbled"])
            return
        delay = self.responses.delay + timing.get("delay", 0)
        trickle = timing.get("trickle") if method != "HEAD" else None
        if trickle:
            self._trickle(head, body, close, *trickle)
        elif delay:
            asyncio.get_running_loop().call_later(delay, self._answered, reply)
        else:
            self._answered(reply)

    def _answered(self, reply: tuple) -> None:
        """Send a response; the request no longer counts as in flight for its root."""
        try:
            self._send(*reply)
        finally:
            self._settled()

    def _settled(self) -> None:
        """The oldest request of this connection is answered (or its client left)."""
        if self.pending:
            IN_FLIGHT.end(self.pending.pop(0))

    def _trickle(self, head: bytes, body: bytes, close: bool, chunk: int, every: float) -> None:
        """The head at once, then the body `chunk` bytes every `every` seconds."""
        if self.transport is None:
            return
        if head:
            self.transport.write(head)
        if not body:
            self._settled()
            if close:
                self.transport.close()
            return
        self.transport.write(body[:chunk])
        asyncio.get_running_loop().call_later(
            every, self._trickle, b"", body[chunk:], close, chunk, every
        )

    def _send(self, data: bytes, stream: int, close: bool) -> None:
        """Write a response; a huge body streams under flow control."""
        if self.transport is None:
            return
        self.transport.write(data)
        self.left, self.close_after = stream, close
        self._stream()

    def _stream(self) -> None:
        while self.left > 0 and self.transport is not None and not self.paused:
            chunk = min(self.left, len(FILLER))
            self.transport.write(FILLER[:chunk])
            self.left -= chunk
        if self.left == 0 and self.close_after and self.transport is not None:
            self.transport.close()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        self._stream()

    def _bad_request(self) -> None:
        """Answer an unparsable request with 400 and close."""
        _, head, body = build_response(400, "bad request\n", "text/plain")
        self.transport.write(head + body)
        self.transport.close()

    def connection_lost(self, exc) -> None:
        """Drop the transport; requests left unanswered are no longer in flight."""
        self.transport = None
        while self.pending:
            self._settled()


class MisbehavingProtocol(asyncio.Protocol):
    """Base for the failure endpoints: logs each connection it accepts."""

    behaviour = ""

    def __init__(self, log: EventLog, scheme: str):
        """Log connections to log, tagged with scheme (which port it was)."""
        self.log = log
        self.scheme = scheme
        self.transport = None

    def connection_made(self, transport) -> None:
        """Log the connection, then react()."""
        self.transport = transport
        address, port = transport.get_extra_info("sockname")[:2]
        self.log.write(
            event="connection",
            behaviour=self.behaviour,
            scheme=self.scheme,
            address=address,
            port=port,
        )
        self.react()

    def react(self) -> None:
        """What to do once connected (nothing by default)."""


class ResetProtocol(MisbehavingProtocol):
    """Accepts, then aborts the connection with a TCP RST."""

    behaviour = "reset"

    def react(self) -> None:
        reset(self.transport)


class TlsBrokenProtocol(MisbehavingProtocol):
    """Answers the first bytes (a ClientHello) with a TLS fatal alert."""

    behaviour = "tls_broken"
    linger = 10.0  # seconds before closing if the client never does
    answered = False

    def data_received(self, data: bytes) -> None:
        """Reply once with the alert, then half-close; ignore the rest."""
        if self.answered:
            return
        self.answered = True
        self.transport.write(TLS_ALERT)
        # A FIN rather than close(): closing with unread client bytes in the
        # kernel buffer would send an RST that can overtake the alert.
        self.transport.write_eof()
        asyncio.get_running_loop().call_later(self.linger, self.transport.close)

    def eof_received(self) -> bool:
        """The client is done too: let asyncio close the connection."""
        return False


class BlackholeProtocol(MisbehavingProtocol):
    """Accepts and never answers; the client has to time out."""

    behaviour = "blackhole"

    def data_received(self, data: bytes) -> None:
        """Discard everything."""
