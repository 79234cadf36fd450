"""/login and /logout: Flask-Login sessions for operators made with `hostcrawl user create`."""

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

from webpanel.accounts import Throttle, authenticate, load_operator
from webpanel.extensions import db, login_manager
from webpanel.forms import EmptyForm, LoginForm
from webpanel.security import safe_next

bp = Blueprint("auth", __name__)


@login_manager.user_loader
def _load(user_id: str):
    return load_operator(db.session, user_id)


def throttle() -> Throttle:
    config = current_app.config
    return Throttle(
        config["LOGIN_MAX_FAILURES"], config["LOGIN_LOCK_SECONDS"], config["LOGIN_LOCK_MAX_SECONDS"]
    )


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Log an operator in; failures count per account, and too many lock it for a while."""
    target = safe_next(request.args.get("next"))
    if current_user.is_authenticated:
        return redirect(target)
    db.session.execute(text("SELECT 1"))  # no login form while the database is down (503)
    form = LoginForm()
    if form.validate_on_submit():
        result = authenticate(db.session, form.username.data, form.password.data, throttle())
        if result.operator is not None:
            session.clear()  # no session fixation: a fresh session for the operator
            session.permanent = True
            login_user(result.operator)
            return redirect(target)
        form.password.errors.append(result.message)
    return render_template("auth/login.html", form=form, cookie_warning=cookie_warning())


def cookie_warning() -> bool:
    """True when the browser will drop the Secure session cookie (plain HTTP, not loopback)."""
    loopback = request.host.rsplit(":", 1)[0].strip("[]") in ("localhost", "127.0.0.1", "::1")
    secure = current_app.config["SESSION_COOKIE_SECURE"]
    return secure and not request.is_secure and not loopback


@bp.post("/logout")
def logout():
    """End the session (a POST with a CSRF token, so no page can log you out)."""
    if EmptyForm().validate_on_submit():
        logout_user()
        session.clear()
        flash("Logged out.")
    return redirect(url_for("auth.login"))
