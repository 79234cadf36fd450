"""Asking a host directly whether it answers: DNS, then TCP, TLS and an HTTP status line.

The audit's TLS handshakes and the self-check before a block (canaries, the
window's sample names) go through here, so both judge a host the same way and
report the same outcome kinds as the crawl.
"""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlsplit

from scrapy.utils.defer import deferred_to_future

from crawler.core.outcomes import (
    DNS_ALIVE,
    OK,
    TCP_REFUSED,
    TCP_RESET,
    TCP_TIMEOUT,
    TLS_HANDSHAKE,
    TLS_TIMEOUT,
)

_NO_VERIFY = ssl.create_default_context()
_NO_VERIFY.check_hostname = False
_NO_VERIFY.verify_mode = ssl.CERT_NONE


async def handshake(
    address: str,
    port: int,
    hostname: str,
    timeout: float,
    *,
    tls: bool = True,
    http: bool = False,
    user_agent: str = "",
) -> str:
    """Connect (and shake hands with TLS); with `http`, also read a status line (a
    HEAD with our `user_agent`: the server sees who knocks).

    DNS_ALIVE when it connected (and TLS worked), OK when an HTTP status line
    came back, else the failure kind.
    """
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except ConnectionRefusedError:
        return TCP_REFUSED
    except TimeoutError:
        return TCP_TIMEOUT
    except OSError:
        return TCP_RESET
    try:
        if tls:
            try:
                await asyncio.wait_for(
                    writer.start_tls(_NO_VERIFY, server_hostname=hostname), timeout
                )
            except TimeoutError:
                return TLS_TIMEOUT
            except ssl.SSLError:
                return TLS_HANDSHAKE
        if not http:
            return DNS_ALIVE
        return await _status_line(reader, writer, hostname, timeout, user_agent)
    except (OSError, EOFError, TimeoutError):
        return TCP_RESET
    finally:
        writer.close()


async def _status_line(reader, writer, hostname: str, timeout: float, user_agent: str) -> str:
    agent = f"User-Agent: {user_agent}\r\n" if user_agent else ""
    head = f"HEAD / HTTP/1.0\r\nHost: {hostname}\r\n{agent}\r\n"
    writer.write(head.encode("ascii", "replace"))
    await writer.drain()
    first = await asyncio.wait_for(reader.read(5), timeout)
    return OK if first == b"HTTP/" else TCP_RESET


async def front_page(
    resolver, hostname: str, templates: list[str], timeout: float, user_agent: str = ""
) -> str:
    """What asking for the host's front page now comes to, through the templates in turn.

    A fresh lookup (never the cache), refused as the crawl refuses an address that is
    not public (ADDRESS_REFUSED), then each template's scheme and port until one
    answers; the last failure otherwise.
    """
    resolution = resolver.public(await deferred_to_future(resolver.resolve(hostname, fresh=True)))
    if resolution.outcome != DNS_ALIVE:
        return resolution.outcome
    outcome = TCP_REFUSED
    for template in templates:
        url = urlsplit(template.format(hostname=hostname))
        tls = url.scheme == "https"
        port = url.port or (443 if tls else 80)
        outcome = await handshake(
            resolution.address, port, hostname, timeout, tls=tls, http=True, user_agent=user_agent
        )
        if outcome == OK:
            return OK
    return outcome
