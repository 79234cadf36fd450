"""`hostcrawl user token NAME`: a fresh API token, only its hash stored, usable on /api."""

from __future__ import annotations

from sqlalchemy import text

from tests.unit.test_cli import assert_refused, hostcrawl

pytest_plugins = ["tests.unit.test_panel_support"]


def stored_hash(db, name: str) -> str | None:
    with db.connect() as conn:
        return conn.execute(
            text("SELECT api_token_hash FROM users WHERE username = :u"), {"u": name}
        ).scalar()


def test_user_token_prints_a_token_and_stores_only_its_hash(app, db, operators):
    run = hostcrawl("user", "token", "bob")
    assert run.returncode == 0, run.stderr
    token = run.stdout.strip()
    assert len(token) >= 40 and "\n" not in token
    stored = stored_hash(db, "bob")
    assert stored.startswith("sha256:") and token not in stored
    assert stored_hash(db, "alice") is None

    api = app.test_client()
    response = api.get("/api/check_host?name=a.test", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200 and response.json["denied"] is False

    again = hostcrawl("user", "token", "bob").stdout.strip()
    assert again != token
    old = api.get("/api/stats", headers={"Authorization": f"Bearer {token}"})
    assert old.status_code == 401  # a new token replaces the old one
    new = api.get("/api/stats", headers={"Authorization": f"Bearer {again}"})
    assert new.status_code == 200


def test_user_token_for_an_unknown_user_is_refused(db):
    assert_refused(hostcrawl("user", "token", "nobody"), "'nobody'", "no such user")
