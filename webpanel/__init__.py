"""The operators' panel (docs/design.md, rule 8): `webpanel:create_app()`, one blueprint per area.

Served by gunicorn (`make run`, docker compose). It shares the crawler's
models, normalize() and DenyList, and makes every change through
crawler.db's modules, which tell running crawlers by pg_notify.
It never imports Scrapy or Twisted.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from flask import Flask, abort, jsonify, redirect, render_template, request, url_for
from flask_wtf.csrf import CSRFError
from sqlalchemy.exc import DataError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from werkzeug.exceptions import HTTPException
from werkzeug.middleware.proxy_fix import ProxyFix

from crawler.core.inputs import unstorable
from crawler.core.sources import describe_place
from webpanel import banners, security, settings
from webpanel.dashboard_cache import EXTENSION as DASHBOARD_CACHE
from webpanel.dashboard_cache import DashboardCache
from webpanel.extensions import csrf, db, login_manager
from webpanel.login_queue import LoginGate, under_gevent
from webpanel.view_helpers import page_url

log = logging.getLogger(__name__)


def create_app(test_config: dict | None = None) -> Flask:
    """Build the panel; `test_config` overrides settings (tests, benchmarks)."""
    require_cooperative_driver()
    app = Flask(__name__)
    app.config.from_mapping(settings.defaults())
    if test_config:
        app.config.update(test_config)
    from crawler.db.server.engine import checked_database_url, database_url

    url = app.config["SQLALCHEMY_DATABASE_URI"]
    app.config["SQLALCHEMY_DATABASE_URI"] = checked_database_url(url) if url else database_url()
    if not app.config["SECRET_KEY"]:
        from crawler.db.server.engine import var_dir

        app.config["SECRET_KEY"] = settings.secret_key(var_dir())

    app.wsgi_app = LoginGate(app.wsgi_app)  # one /login at a time per client address
    proxies = app.config["TRUSTED_PROXIES"]
    if proxies:
        # Only then is X-Forwarded-For the client's address (login throttling keys on it).
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies)
    db.init_app(app)
    login_manager.init_app(app)
    security.init_app(app)  # before CSRF: an anonymous POST goes to the login page
    csrf.init_app(app)
    app.extensions[DASHBOARD_CACHE] = DashboardCache(app.config["STATS_TTL"])
    register_blueprints(app)
    register_templates(app)
    banners.init_app(app)
    return app


def require_cooperative_driver() -> None:
    """Under gevent (gunicorn.conf.py), psycopg must wait for the database through the
    patched standard library, else one query stalls every request of the worker. psycopg
    picks its wait when first imported: that must happen after gevent's patching."""
    if not under_gevent():
        return
    from psycopg import waiting

    if waiting.wait is getattr(waiting, "wait_c", None):
        raise RuntimeError(
            "psycopg was imported before gevent patched the standard library: do not"
            " import the panel in gunicorn.conf.py nor preload it (preload_app)"
        )


def register_blueprints(app: Flask) -> None:
    from webpanel import api, auth, blocked, change_log, health, hosts, metrics, no_follow, roots

    for module in (auth, health, hosts, roots, no_follow, blocked, change_log, api, metrics):
        app.register_blueprint(module.bp)
    app.add_url_rule("/favicon.ico", "favicon", favicon)
    csrf.exempt(api.bp)


def favicon():
    """Browsers ask for /favicon.ico whatever the page says: the panel's icon."""
    return redirect(url_for("static", filename="favicon.svg"), 301)


def register_templates(app: Flask) -> None:
    from crawler.core.words import counted
    from webpanel.charts import health_chart, roots_chart, time_chart

    app.jinja_env.globals.update(
        page_url=page_url, time_chart=time_chart, roots_chart=roots_chart, health_chart=health_chart
    )
    app.jinja_env.filters.update(
        when=when, clock=clock, num=num, counted=counted, place=describe_place
    )

    @app.errorhandler(CSRFError)
    def csrf_error(exc: CSRFError):
        return render_template("errors/error.html", code=400, message=exc.description), 400

    app.register_error_handler(HTTPException, error_page)
    app.register_error_handler(500, error_page)
    app.register_error_handler(OperationalError, database_down)
    app.register_error_handler(PoolTimeout, database_down)
    app.register_error_handler(DataError, input_refused_by_database)
    app.register_error_handler(UnicodeEncodeError, input_refused_by_database)
    app.before_request(refuse_unstorable_input)


def refuse_unstorable_input() -> None:
    """A NUL or a lone surrogate in the URL or a form: 400 at the door, naming the field
    (JSON bodies: webpanel.api.json_body; page cursors: webpanel.queries.paging)."""
    fields = [*request.args.items(multi=True), *request.form.items(multi=True)]
    fields += (request.view_args or {}).items()
    for name, value in fields:
        problem = isinstance(value, str) and unstorable(value)
        if problem:
            abort(400, description=f"{name}: {problem}")


# What the database says about a value it refuses (SQLSTATE class 22), in our words.
REFUSALS = {
    "22001": "a value longer than its field allows",
    "22003": "a number out of range",
    "22007": "not a date and time",
    "22008": "a date and time out of range",
    "22021": "a character that cannot be stored",
    "22P02": "a value of the wrong kind",
    "22P05": "a character that cannot be stored",
}


def input_refused_by_database(exc: Exception):
    """A value the database (or its driver) cannot take: 400 with the reason in our
    words; the database's own text goes to the log only."""
    db.session.rollback()
    state = getattr(getattr(exc, "orig", None), "sqlstate", None)
    log.info("input refused by the database: %s", str(exc).strip().splitlines()[0])
    message = f"the input cannot be stored: {REFUSALS.get(state, 'a value the database refuses')}"
    if wants_json():
        return jsonify(error=message), 400
    return render_template("errors/error.html", code=400, message=message), 400


def wants_json() -> bool:
    """The API speaks JSON only, even for a URL no route matches (404, 405)."""
    return request.blueprint == "api" or request.path.startswith("/api/")


def error_page(exc):
    """Every HTTP error: JSON with a message under /api/, the error page elsewhere."""
    code = getattr(exc, "code", 500) or 500
    message = getattr(exc, "description", "internal error") if code != 500 else "internal error"
    headers = exc.get_headers() if isinstance(exc, HTTPException) else []
    headers = [(k, v) for k, v in headers if k.lower() != "content-type"]
    if wants_json():
        return jsonify(error=message), code, headers
    return render_template("errors/error.html", code=code, message=message), code, headers


def database_down(exc):
    """503 while the database is unreachable; the pool reconnects when it is back."""
    log.warning("database unavailable: %s", str(exc).strip().splitlines()[0])
    db.session.rollback()
    message = "The database is unavailable. The panel recovers by itself when it is back."
    if wants_json():
        return jsonify(error="the database is unavailable"), 503, {"Retry-After": "10"}
    page = render_template("errors/error.html", code=503, message=message)
    return page, 503, {"Retry-After": "10"}


def when(value: datetime | None) -> str:
    """A timestamp as UTC, to the second."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def clock(value: datetime) -> str:
    """A time of day as UTC, to the second (the day is said elsewhere)."""
    return value.astimezone(UTC).strftime("%H:%M:%S UTC")


def num(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"
