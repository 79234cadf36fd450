"""/login and /logout: Flask-Login sessions for operators made with `hostcrawl user create`.

A session is a signed cookie that expires PANEL_SESSION_HOURS after its last
use and PANEL_SESSION_MAX_HOURS after its login (webpanel.security); the server
ends it early through the operator's session generation
(webpanel.accounts.Operator.get_id): logout, a new password or disabling the
account raise it, and every cookie made before stops working.
"""

from __future__ import annotations

from flask import (
    Blueprint,
    current_app,
    flash,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_login import current_user, login_user, logout_user
from sqlalchemy import text

from crawler.db.operators import accounts
from webpanel.accounts import PasswordChecks, authenticate, load_operator
from webpanel.devices import is_known_device, remember_device
from webpanel.extensions import db, login_manager
from webpanel.forms import EmptyForm, LoginForm
from webpanel.login_queue import HOLD_ANSWER, address_key
from webpanel.security import safe_next, start_session

bp = Blueprint("auth", __name__)


@login_manager.user_loader
def _load(session_id: str):
    return load_operator(db.session, session_id)


def login_policy() -> accounts.LoginPolicy:
    config = current_app.config
    return accounts.LoginPolicy(
        free_failures=config["LOGIN_FREE_FAILURES"],
        address_free_failures=config["LOGIN_ADDRESS_FREE_FAILURES"],
        account_free_failures=config["LOGIN_ACCOUNT_FREE_FAILURES"],
        delay=config["LOGIN_DELAY_SECONDS"],
        max_delay=config["LOGIN_DELAY_MAX_SECONDS"],
    )


def password_checks() -> PasswordChecks:
    """This process's queue of password checks, one per app, made at the first login
    (in the worker, after gevent has patched threading; setdefault is atomic: requests
    racing on the first login all get the same one)."""
    checks = current_app.extensions.get("hostcrawl.password_checks")
    if checks is None:
        fresh = PasswordChecks(current_app.config["LOGIN_HASH_SLOTS"])
        checks = current_app.extensions.setdefault("hostcrawl.password_checks", fresh)
    return checks


def client_address() -> str:
    """The TCP peer, or X-Forwarded-For's client when PANEL_TRUSTED_PROXIES says so
    (ProxyFix, in create_app, rewrites remote_addr only then); an IPv6 one's /64."""
    return address_key(request.remote_addr or "unknown")


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Log an operator in; failures slow the next attempt down (never lock the account)."""
    target = safe_next(request.args.get("next"))
    if current_user.is_authenticated:
        return redirect(target)
    if request.method == "GET":
        db.session.execute(text("SELECT 1"))  # no login form while the database is down (503)
    form = LoginForm()
    if form.validate_on_submit():
        result = authenticate(
            db.session,
            form.username.data,
            form.password.data,
            client_address(),
            login_policy(),
            password_checks(),
            is_known_device(form.username.data),
        )
        if result.operator is not None:
            session.clear()  # no session fixation: a fresh session for the operator
            session.permanent = True  # expires PANEL_SESSION_HOURS after its last use
            login_user(result.operator)
            start_session()  # and PANEL_SESSION_MAX_HOURS after now, however used
            return remember_device(redirect(target), result.operator.username)
        form.password.errors.append(result.message)
        if result.slowed_down:
            hold_answer(result.retry_after)
        if result.retry_after:
            page = render_template("auth/login.html", form=form, plain_http=plain_http_warning())
            return page, 429, {"Retry-After": str(result.retry_after)}
    return render_template("auth/login.html", form=form, plain_http=plain_http_warning())


def hold_answer(retry_after: int) -> None:
    """Have the gate hold a slowed-down login's answer for LOGIN_SLOWED_ANSWER_SECONDS, or
    its Retry-After if sooner: no login could pass before, so an operator loses nothing,
    and a storm of guesses from fresh addresses comes at that pace."""
    seconds = min(retry_after, current_app.config["LOGIN_SLOWED_ANSWER_SECONDS"])
    request.environ[HOLD_ANSWER] = seconds


def plain_http_warning() -> bool:
    """True when the login page came over plain HTTP from another machine: the login
    works (webpanel.security.SchemeSessionInterface), but the password crosses the
    network in clear, which the operator should know before typing it."""
    loopback = request.host.rsplit(":", 1)[0].strip("[]") in ("localhost", "127.0.0.1", "::1")
    return not request.is_secure and not loopback


@bp.post("/logout")
def logout():
    """End the session on the server, not only in this browser: a copy of the cookie
    stops working too (a POST with a CSRF token, so no page can log you out)."""
    if EmptyForm().validate_on_submit() and current_user.is_authenticated:
        accounts.end_sessions(db.session, current_user.id)
        db.session.commit()
        logout_user()
        session.clear()
        flash("Logged out.")
    return redirect(url_for("auth.login"))
