"""The banner on every page while blocks are held (docs/design.md, rule 5).

A crawler holds blocks (and its failing hosts) back while no canary answers
it: its resolver or network is down, or no host has ever answered in this
database. The banner names that cause first. A block is also deferred when
the window's names answer again; operators see it while it lasts, with the
oldest reason.
"""

from __future__ import annotations

from flask import Flask
from flask_login import current_user

from crawler.db.rules import world_silences
from crawler.db.rules.trap_windows import deferred_blocks
from webpanel.extensions import db


def banner() -> dict:
    """Template context: `world_silence` and `deferred_blocks` (None when nothing is
    held back)."""
    if not current_user.is_authenticated:
        return {"world_silence": None, "deferred_blocks": None}
    conn = db.session.connection()
    return {"world_silence": world_silences.current(conn), "deferred_blocks": deferred_blocks(conn)}


def init_app(app: Flask) -> None:
    app.context_processor(banner)
