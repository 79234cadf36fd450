"""Every page needs a login unless listed here; every response gets the security headers."""

from __future__ import annotations

from urllib.parse import urlsplit

from flask import Flask, Response, abort, redirect, request, url_for
from flask_login import current_user

from webpanel.extensions import login_manager

# Endpoints an anonymous visitor may reach; the API (and /metrics) authenticate by token.
PUBLIC_ENDPOINTS = frozenset(
    {"auth.login", "health.healthz", "static", "favicon", "metrics.metrics"}
)
# Methods that change nothing; every other one needs an admin.
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# POSTs any operator may make: about their own session only.
ANY_ROLE_POSTS = frozenset({"auth.login", "auth.logout"})
VIEWER_REFUSED = "this account may look but not change anything (role viewer): ask an admin"

CSP = "; ".join(
    [
        "default-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "object-src 'none'",
    ]
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


def init_app(app: Flask) -> None:
    """Register the login requirement (before CSRF, so strangers go to the login page)."""
    app.before_request(require_login)
    app.before_request(require_admin_to_change)
    app.after_request(security_headers)
    login_manager.unauthorized_handler(to_login)


def require_login():
    """Refuse every endpoint but the public ones to an anonymous visitor."""
    if request.endpoint is None or request.endpoint in PUBLIC_ENDPOINTS:
        return None
    if request.blueprint == "api" or current_user.is_authenticated:
        return None
    return login_manager.unauthorized()


def require_admin_to_change():
    """Every request that may change something (any method but GET, HEAD, OPTIONS) needs
    an admin; the API checks its token's role the same way (webpanel.api)."""
    if request.method in READ_METHODS or request.endpoint in ANY_ROLE_POSTS:
        return None
    if request.blueprint == "api" or not current_user.is_authenticated:
        return None  # the API checks its token; strangers were sent to the login page
    if not current_user.is_admin:
        abort(403, description=VIEWER_REFUSED)
    return None


def to_login() -> Response:
    """Off to the login page, coming back here afterwards (GET pages only)."""
    target = request.full_path.rstrip("?") if request.method == "GET" else None
    return redirect(url_for("auth.login", next=target))


def security_headers(response: Response) -> Response:
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    if request.endpoint != "static":
        response.headers.setdefault("Cache-Control", "no-store")
    if request.is_secure:
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    return response


def safe_next(target: str | None) -> str:
    """`next=` only ever leads to a path on this site; anything else goes home."""
    home = url_for("hosts.index")
    if not target or not target.startswith("/") or target.startswith("//"):
        return home
    if "\\" in target or any(ord(c) < 32 or ord(c) == 127 for c in target):
        return home
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return home
    return target
