"""LoopAwareRedirectMiddleware: a redirect loop is seen at its first repeat."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.exceptions import IgnoreRequest

from crawler.network.failures import RedirectLoop, TooManyRedirects


class LoopAwareRedirectMiddleware(RedirectMiddleware):
    """RedirectMiddleware that stops at a redirect to a URL the fetch was already at.

    Scrapy follows a loop until REDIRECT_MAX_TIMES: a host that redirects to itself got
    its front page asked 6 times, and two hosts that redirect to each other 6 times each.
    Each ending has an exception of its own, so the host's outcome names it
    (crawler.network.failures): HTTP_REDIRECT_LOOP, HTTP_TOO_MANY_REDIRECTS.
    """

    def _redirect(self, redirected: Request, request: Request, reason: Any) -> Request:
        visited = [*request.meta.get("redirect_urls", ()), request.url]
        if redirected.url in visited:
            raise RedirectLoop(f"redirect loop: {request.url} -> {redirected.url}")
        try:
            return super()._redirect(redirected, request, reason)
        except IgnoreRequest as exc:
            raise TooManyRedirects(f"{exc}: {len(visited)} URLs") from None
