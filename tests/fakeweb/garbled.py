"""Answers no HTTP client can read (World.garble): what a hostile server sends instead
of a status line. Each then stops reading and keeps the connection open, as such a
server would: over TLS it never answers the client's close_notify either.

    bad_status      a status line that is no status line, then a short body
    long_line       a status line, then one header line of 2 MB that never ends
    endless_status  a status line that never ends: one byte every 0.2 s, no newline
"""

from __future__ import annotations

import asyncio

LONG_LINE = 2 * 1024 * 1024
DRIP_EVERY = 0.2
KINDS = ("bad_status", "long_line", "endless_status")


def send(transport, kind: str) -> None:
    """Write the garbled answer `kind` on `transport`, leaving it open and unread."""
    transport.pause_reading()
    if kind == "bad_status":
        transport.write(b"HTTP/1.1 two hundred OK\r\nContent-Length: 5\r\n\r\nhello")
    elif kind == "long_line":
        transport.write(b"HTTP/1.1 200 OK\r\nX-Long: " + b"a" * LONG_LINE)
    elif kind == "endless_status":
        transport.write(b"HTTP/1.1 200 ")
        _drip(transport)
    else:
        raise ValueError(f"unknown garbled answer {kind!r}")


def _drip(transport) -> None:
    if transport.is_closing():
        return
    transport.write(b"x")
    asyncio.get_running_loop().call_later(DRIP_EVERY, _drip, transport)
