"""Known devices: the signed cookie a good login leaves in the operator's browser.

Guesses at one account from addresses that rotate (each one fresh, so never
slowed as an address) are slowed by the account's own count of failures
(crawler.db.operators.accounts.LoginPolicy). That count must not keep the operator out:
a browser that has logged in to the account before shows this cookie, and its
logins skip the account-wide wait and go first in the queue for a password
check (OWASP's "device cookies"). Its address's own failures still count.

The cookie is signed with the panel's SECRET_KEY, names the account, is sent
to /login only, and lasts DEVICE_DAYS from the last good login. A stolen one
gains an attacker only what any fresh address had before: the per-address
slow-downs still hold.
"""

from __future__ import annotations

from flask import Response, current_app, request
from itsdangerous import BadSignature, URLSafeTimedSerializer

DEVICE_COOKIE = "hostcrawl_device"
DEVICE_DAYS = 90
_SALT = "hostcrawl.known-device"


def _signer() -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(current_app.secret_key, salt=_SALT)


def is_known_device(username: str) -> bool:
    """True when this request carries a valid device cookie of `username`'s."""
    cookie = request.cookies.get(DEVICE_COOKIE)
    if not cookie:
        return False
    try:
        owner = _signer().loads(cookie, max_age=DEVICE_DAYS * 86400)
    except BadSignature:  # forged, from another SECRET_KEY, or expired
        return False
    return owner == username


def remember_device(response: Response, username: str) -> Response:
    """Mark this browser as one `username` logs in from (after a good login)."""
    response.set_cookie(
        DEVICE_COOKIE,
        _signer().dumps(username),
        max_age=DEVICE_DAYS * 86400,
        path="/login",
        secure=current_app.session_interface.get_cookie_secure(current_app),
        httponly=True,
        samesite="Lax",
    )
    return response
