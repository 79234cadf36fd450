"""Headers bounded in total bytes, as bodies are by DOWNLOAD_MAXSIZE.

Twisted reads a response's status line and headers with no bound on their total: one
response of 3,000,000 `Link` lines (117 MB) was read whole, and every line became a
name. The protocol here counts the bytes it reads while the response's head is still
being parsed; past MAX_HEADER_BYTES it drops the connection, and the request fails
with HeadersTooLarge (the outcome HTTP_TOO_LARGE, crawler.network.failures), having held at most
the bound plus one read (64 KiB) of head in memory.
"""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import _LenientHTTP11ClientProtocol
from twisted.python.failure import Failure
from twisted.web._newclient import HEADER, STATUS

_READING_HEAD = (STATUS, HEADER)


class HeadersTooLarge(Exception):
    """A response's status line and headers ran past MAX_HEADER_BYTES."""


class HeaderBoundProtocol(_LenientHTTP11ClientProtocol):
    """Scrapy's HTTP/1.1 client protocol that reads at most max_header_bytes of head."""

    max_header_bytes = 256 * 1024

    def request(self, request):
        self._head_bytes = 0
        self._head_too_large = False
        return super().request(request)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 (Twisted API)
        parser = self._parser
        reading_head = parser is not None and parser.state in _READING_HEAD
        super().dataReceived(data)
        if not reading_head:
            return
        # Only what is read while the head is still unfinished after it: a read that
        # ends the head and starts the body counts as head here, so the bound is loose
        # by at most one read.
        self._head_bytes += len(data)
        still_head = self._parser is parser and parser.state in _READING_HEAD
        if still_head and self._head_bytes > self.max_header_bytes:
            self._head_too_large = True
            self.transport.abortConnection()

    def connectionLost(self, reason: Failure | None = None) -> None:  # noqa: N802
        if getattr(self, "_head_too_large", False):
            reason = Failure(HeadersTooLarge(f"response head past {self.max_header_bytes} bytes"))
        super().connectionLost(reason)
