"""The one place a browser run by bench/_record_browser_truth.py can connect to: a TCP listener
on 127.0.0.1 that logs the name each connection was for, answers nothing and closes.

Chromium runs with `--host-resolver-rules=MAP * 127.0.0.1:<port>`: every name resolves
here, whatever port it was asked for. The name comes from what the client sends first:
a TLS ClientHello's server_name (SNI), a `CONNECT host:port` line or an HTTP `Host:`
header. A connection that sends nothing in time (a bare preconnect to an http origin)
is counted as unnamed. Standard library only.
"""

from __future__ import annotations

import asyncio
import contextlib

READ_SECONDS = 1.0


class Sink:
    """Names seen since the last `take()`, and connections that named nothing."""

    def __init__(self) -> None:
        self.names: set[str] = set()
        self.unnamed = 0
        self.port = 0
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def take(self) -> tuple[set[str], int]:
        names, unnamed = self.names, self.unnamed
        self.names, self.unnamed = set(), 0
        return names, unnamed

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            first = await asyncio.wait_for(reader.read(8192), READ_SECONDS)
        except (TimeoutError, ConnectionError):
            first = b""
        name = name_in(first)
        if name:
            self.names.add(name)
        else:
            self.unnamed += 1
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def name_in(data: bytes) -> str | None:
    """The host a connection's first bytes ask for: SNI, CONNECT or Host:, else None."""
    if data[:1] == b"\x16":
        return server_name(data)
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1", "replace").split("\r\n")
    if head and head[0].upper().startswith("CONNECT "):
        return _host_only(head[0].split()[1])
    for line in head[1:]:
        key, _, value = line.partition(":")
        if key.strip().lower() == "host":
            return _host_only(value.strip())
    return None


def _host_only(authority: str) -> str | None:
    if authority.startswith("["):
        return authority[1:].partition("]")[0] or None
    return authority.rpartition(":")[0] if ":" in authority else authority or None


def server_name(record: bytes) -> str | None:
    """The host_name of a TLS ClientHello's server_name extension (RFC 6066), or None."""
    try:
        hello = record[5:]
        if hello[0] != 1:  # handshake type client_hello
            return None
        at = 4 + 2 + 32  # handshake header, client_version, random
        at += 1 + hello[at]  # session_id
        at += 2 + int.from_bytes(hello[at : at + 2], "big")  # cipher_suites
        at += 1 + hello[at]  # compression_methods
        end = at + 2 + int.from_bytes(hello[at : at + 2], "big")
        at += 2
        while at + 4 <= end:
            kind = int.from_bytes(hello[at : at + 2], "big")
            size = int.from_bytes(hello[at + 2 : at + 4], "big")
            if kind == 0:  # server_name: list length, type 0 (host_name), length, name
                length = int.from_bytes(hello[at + 7 : at + 9], "big")
                return hello[at + 9 : at + 9 + length].decode("ascii")
            at += 4 + size
    except (IndexError, UnicodeDecodeError):
        return None
    return None
