"""The banner on every page while blocks are deferred (docs/design.md, rule 5).

A crawler holds a block back when the world does not answer it (its resolver
or network is down) or the window's names answer again; operators see it
while it lasts, with the oldest reason.
"""

from __future__ import annotations

from flask import Flask
from flask_login import current_user

from crawler.db.windows import deferred_blocks
from webpanel.extensions import db


def banner() -> dict:
    """Template context: `deferred_blocks` (None when nothing is held back)."""
    if not current_user.is_authenticated:
        return {"deferred_blocks": None}
    return {"deferred_blocks": deferred_blocks(db.session.connection())}


def init_app(app: Flask) -> None:
    app.context_processor(banner)
