"""Every page needs a login unless listed here; every response gets the security headers;
a session ends PANEL_SESSION_MAX_HOURS after its login, however often it is used."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit

from flask import Flask, Response, abort, current_app, redirect, request, session, url_for
from flask.sessions import SecureCookieSessionInterface
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
LOGGED_IN_AT = "hostcrawl_logged_in_at"  # the session key: when its login was (Unix time)

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
    app.before_request(end_old_session)
    app.before_request(require_login)
    app.before_request(require_admin_to_change)
    app.after_request(security_headers)
    login_manager.unauthorized_handler(to_login)
    app.session_interface = SchemeSessionInterface()


class SchemeSessionInterface(SecureCookieSessionInterface):
    """The session cookie is Secure when the browser came over https, and only then.

    A browser drops a Secure cookie set over plain http, and with it the CSRF token the
    session holds: `make run BIND=0.0.0.0:8081` opened from another machine could never
    log in ("400 The CSRF session token is missing"). Over plain http the password
    crosses the network in clear anyway; a cookie set over https stays Secure, so it is
    never sent back over http. SESSION_COOKIE_SECURE=0 makes it never Secure.
    """

    def get_cookie_secure(self, app: Flask) -> bool:
        return bool(app.config["SESSION_COOKIE_SECURE"]) and browser_on_https()


def browser_on_https() -> bool:
    """https itself, or a proxy's X-Forwarded-Proto: https. The header is taken even
    from an untrusted proxy (PANEL_TRUSTED_PROXIES=0): it can only make the cookie
    stricter, and it keeps a TLS proxy that was not declared from getting a plain one."""
    forwarded = request.headers.get("X-Forwarded-Proto", "").lower().split(",")
    return request.is_secure or "https" in (p.strip() for p in forwarded)


def start_session() -> None:
    """Mark the session just logged in: its absolute lifetime counts from now."""
    session[LOGGED_IN_AT] = int(time.time())


def end_old_session() -> None:
    """A session whose login is older than PANEL_SESSION_MAX_HOURS (or unknown) is
    emptied before Flask-Login reads it: the visitor is anonymous again."""
    if "_user_id" not in session:
        return
    logged_in_at = session.get(LOGGED_IN_AT)
    max_age = current_app.config["PANEL_SESSION_MAX_HOURS"] * 3600
    if not isinstance(logged_in_at, int) or time.time() - logged_in_at > max_age:
        session.clear()


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
        # Whatever the view set (send_file says no-cache): nothing of the panel is kept.
        response.headers["Cache-Control"] = "no-store"
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


def server_refusal(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP response for gunicorn's own refusals of a malformed request (400,
    414, 431: gunicorn.conf.py): JSON like the API's errors, with the security headers."""
    body = json.dumps({"error": f"{reason}: {message}" if message else reason}).encode()
    headers = {
        **HEADERS,
        "Cache-Control": "no-store",
        "Connection": "close",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
    }
    head = f"HTTP/1.1 {status} {reason}\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return head.encode("latin-1") + b"\r\n" + body
