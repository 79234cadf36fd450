"""The HTTP(S) download handler: Scrapy's HTTP/1.1 one with a connect timeout of its own.

Scrapy gives connecting, the TLS handshake and the whole download one timeout
(DOWNLOAD_TIMEOUT). On the real web they fail apart: an address where nothing
answers should cost a few seconds, a server that is slow to send its page may
take longer. Here the TCP connect and the TLS handshake are each bounded by
CONNECT_TIMEOUT (a TCP_TIMEOUT or a TLS_TIMEOUT); DOWNLOAD_TIMEOUT still
bounds the whole download, a trickling body included (an HTTP_TIMEOUT).

An answer that is no HTTP (a malformed status line) fails at once with a ParseError
(HTTP_ERROR), and one whose status or header line runs past 16 KB (a header, or a
redirect's Location, of a megabyte) with HeadersTooLarge (HTTP_TOO_LARGE, as a head past
MAX_HEADER_BYTES); either way its connection is aborted. A status line or header that
never ends is bounded by DOWNLOAD_TIMEOUT like a trickling body.

An idle connection is closed after IDLE_CONNECTION_TIMEOUT, not Twisted's 240 s:
a host gets robots.txt and its front page, then nothing for days, and each idle
TLS connection kept a socket and about 60 kB (10,000 hosts crawled in two
minutes held 810 MB).
"""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _ScrapyAgent,
)
from scrapy.http import Request, Response
from scrapy.utils._download_handlers import wrap_twisted_exceptions
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.interfaces import IHandshakeListener, ISSLTransport
from twisted.protocols.basic import LineReceiver
from twisted.python.failure import Failure
from zope.interface import implementer

from crawler.network.headerbound import HeaderBoundProtocol, HeadersTooLarge


class TLSHandshakeTimeout(Exception):
    """The TLS handshake did not finish within CONNECT_TIMEOUT."""


@implementer(IHandshakeListener)
class HandshakeBoundProtocol(HeaderBoundProtocol):
    """Scrapy's HTTP/1.1 client protocol whose TLS handshake has a deadline.

    The TLS layer calls handshakeCompleted() once the handshake is done; until
    then, a timer runs from the moment TCP connected. When it fires, the
    connection is aborted and the request fails with TLSHandshakeTimeout.
    """

    handshake_timeout = 5.0

    def request(self, request):
        finished = super().request(request)
        if self._parser is not None:
            self._parser.lineLengthExceeded = _line_too_long
        return finished

    def _giveUp(self, reason: Failure) -> None:  # noqa: N802 (Twisted's name)
        # An answer we cannot read: drop the connection now. loseConnection() waits for
        # the server's TLS close_notify, which a hostile server never sends.
        self.transport.abortConnection()
        self._disconnectParser(reason)

    def connectionMade(self) -> None:  # noqa: N802 (Twisted API)
        super().connectionMade()
        self._handshake_timer = None
        self._handshake_timed_out = False
        if ISSLTransport.providedBy(self.transport):
            from twisted.internet import reactor

            self._handshake_timer = reactor.callLater(
                self.handshake_timeout, self._handshake_expired
            )

    def handshakeCompleted(self) -> None:  # noqa: N802 (Twisted API)
        self._stop_handshake_timer()

    def _handshake_expired(self) -> None:
        self._handshake_timer = None
        self._handshake_timed_out = True
        self.transport.abortConnection()

    def _stop_handshake_timer(self) -> None:
        timer, self._handshake_timer = self._handshake_timer, None
        if timer is not None and timer.active():
            timer.cancel()

    def connectionLost(self, reason: Failure | None = None) -> None:  # noqa: N802
        self._stop_handshake_timer()
        if self._handshake_timed_out:
            seconds = self.handshake_timeout
            reason = Failure(TLSHandshakeTimeout(f"TLS handshake took longer than {seconds} s"))
        super().connectionLost(reason)


def _line_too_long(line: bytes) -> None:
    """A status or header line past Twisted's limit (16 KB) is an answer too large, at
    once: Twisted's own way (loseConnection) waited out the whole download timeout over
    TLS, then said HTTP_TIMEOUT of a server that had answered."""
    raise HeadersTooLarge(f"a status or header line past {LineReceiver.MAX_LENGTH} bytes")


class HandshakeBoundFactory(_LenientHTTP11ClientFactory):
    """Builds HandshakeBoundProtocols (the connection pool's factory)."""

    handshake_timeout = 5.0
    max_header_bytes = HeaderBoundProtocol.max_header_bytes

    def buildProtocol(self, addr):  # noqa: N802 (Twisted API)
        protocol = HandshakeBoundProtocol(self._quiescentCallback)
        protocol.handshake_timeout = self.handshake_timeout
        protocol.max_header_bytes = self.max_header_bytes
        return protocol


class ConnectBoundAgent(_ScrapyAgent):
    """Scrapy's agent, connecting with CONNECT_TIMEOUT instead of the download timeout."""

    def __init__(self, *, connect_timeout: float, **kwargs) -> None:
        super().__init__(**kwargs)
        self.connect_timeout = connect_timeout

    def _get_agent(self, request: Request, timeout: float):
        return super()._get_agent(request, min(timeout, self.connect_timeout))


class HostcrawlDownloadHandler(HTTP11DownloadHandler):
    """DOWNLOAD_HANDLERS for http and https: CONNECT_TIMEOUT for TCP and for TLS."""

    def __init__(self, crawler) -> None:
        super().__init__(crawler)
        self.connect_timeout = crawler.settings.getfloat("CONNECT_TIMEOUT")
        factory = type(
            "HandshakeBoundFactory",
            (HandshakeBoundFactory,),
            {
                "handshake_timeout": self.connect_timeout,
                "max_header_bytes": crawler.settings.getint("MAX_HEADER_BYTES"),
            },
        )
        self._pool._factory = factory
        self._pool.cachedConnectionTimeout = crawler.settings.getfloat("IDLE_CONNECTION_TIMEOUT")

    async def download_request(self, request: Request) -> Response:
        agent = ConnectBoundAgent(
            connect_timeout=self.connect_timeout,
            contextFactory=self._contextFactory,
            bindAddress=self._bind_address,
            pool=self._pool,
            maxsize=self._default_maxsize,
            warnsize=self._default_warnsize,
            fail_on_dataloss=self._fail_on_dataloss,
            crawler=self._crawler,
            tls_verbose_logging=self._tls_verbose_logging,
        )
        with wrap_twisted_exceptions():
            return await maybe_deferred_to_future(agent.download_request(request))
