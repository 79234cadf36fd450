"""bench/growth.py's panel pages: p95 of each through a logged-in Flask test client."""

from __future__ import annotations

import re
import time

from _growth_timing import STATEMENTS, p95

PAGE_WARMUP, PAGE_REQUESTS, PAGE_ROUNDS = 3, 40, 4
PASSWORD = "growth bench password, long enough"


def panel_client(url: str):
    """A Flask test client of the panel, logged in through the form as an operator would."""
    from webpanel import create_app

    app = create_app(
        {
            "SQLALCHEMY_DATABASE_URI": url,
            "SECRET_KEY": "growth-bench-secret-" * 4,
            "SESSION_COOKIE_SECURE": False,
            "STATS_TTL": 3600,  # the strip as in production: computed once, then cached
        }
    )
    client = app.test_client()
    page = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    form = {"csrf_token": token, "username": "growth", "password": PASSWORD}
    assert client.post("/login", data=form).status_code == 302, "login failed"
    return app, client


def panel_pages(app) -> dict[str, str]:
    from webpanel.queries import paging

    pages = {
        "/ first page": "/",
        "/ deep keyset page": "/?after=" + paging.encode_cursor(["static.e"]),
        "/ domain search": "/?q=co.uk&match=domain",
        "/blocked": "/blocked",
        "/no_follow": "/no_follow",
    }
    if any(rule.rule == "/roots" for rule in app.url_map.iter_rules()):
        pages["/roots"] = "/roots"
    return pages


def measure_pages(url: str, engine) -> tuple[dict, dict]:
    from webpanel.queries import dashboard

    app, client = panel_client(url)
    figures, calls = {}, {}
    pages = panel_pages(app)
    for label, path in pages.items():

        def get(path=path) -> None:
            response = client.get(path)
            assert response.status_code == 200, f"{path}: {response.status_code}"

        calls[f"page {label} p95 ms"] = get
        for _ in range(PAGE_WARMUP):
            get()
    times: dict[str, list[float]] = {label: [] for label in pages}
    in_database: dict[str, list[float]] = {label: [] for label in pages}
    for _ in range(PAGE_ROUNDS):  # interleaved: a burst of load elsewhere hits every page
        for label in pages:
            for _ in range(PAGE_REQUESTS // PAGE_ROUNDS):
                began, db_before = time.perf_counter(), STATEMENTS.in_database
                calls[f"page {label} p95 ms"]()
                times[label].append(time.perf_counter() - began)
                in_database[label].append(STATEMENTS.in_database - db_before)
    for label in pages:
        figures[f"page {label} p95 ms"] = (p95(times[label]) * 1000, "page")
        # Diagnostic: the part spent waiting for Postgres (the rest is Python and the CPU
        # it gets on a busy machine).
        figures[f"page {label} p95 ms in the database"] = (p95(in_database[label]) * 1000, "info")
    for label, fn, rounds in (
        ("dashboard totals", dashboard.totals, 6),
        ("dashboard with its chart", dashboard.dashboard, 3),
    ):

        def compute(fn=fn) -> None:
            with engine.connect() as conn:
                fn(conn)

        times = []
        for _ in range(rounds):
            began = time.perf_counter()
            compute()
            times.append(time.perf_counter() - began)
        figures[f"{label} p95 ms"] = (max(times) * 1000, "page")
        calls[f"{label} p95 ms"] = compute
    return figures, calls
