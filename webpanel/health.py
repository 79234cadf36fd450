"""/healthz: no login; 200 {"status": "ok"} when the database answers and is migrated, else 503.

The answer says nothing more: the schema revision and the driver's error text
are for the log, not for whoever can reach the port.
"""

from __future__ import annotations

import logging

from flask import Blueprint, jsonify
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from webpanel.extensions import db

bp = Blueprint("health", __name__)
log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz():
    """Ask the database for the schema revision: proves it is up and migrated."""
    try:
        db.session.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    except SQLAlchemyError as exc:
        db.session.rollback()
        first = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        log.warning("healthz: database unavailable: %s", first)
        return jsonify(status="unavailable"), 503, {"Retry-After": "10"}
    finally:
        db.session.remove()  # give the connection back at once: this is polled often
    return jsonify(status="ok")
