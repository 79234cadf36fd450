"""/healthz: no login; 200 when the database answers and is migrated, else 503."""

from __future__ import annotations

from flask import Blueprint, jsonify
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from webpanel.extensions import db

bp = Blueprint("health", __name__)


@bp.get("/healthz")
def healthz():
    """Ask the database for the schema revision: proves it is up and migrated."""
    try:
        revision = db.session.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except SQLAlchemyError as exc:
        db.session.rollback()
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return jsonify(status="unavailable", error=first[:200]), 503
    return jsonify(status="ok", schema=revision)
