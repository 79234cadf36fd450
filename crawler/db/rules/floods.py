"""Name floods on the host row of the page that named them (crawler.core.floods).

The worker that sees a page's new registered domains all fail at DNS writes why on
the page's own row; its page in the panel shows it, beside the way to put its root
on no_follow. Kept until a later verdict replaces it.
"""

from __future__ import annotations

from sqlalchemy import Engine, text

from crawler.core.hostnames import root
from crawler.db.server.retry import commit_statement

MARK_FLOOD = text("UPDATE hosts SET name_flood = :why WHERE hostname = :page AND root = :root")


def mark_flood(engine: Engine, page: str, why: str) -> None:
    commit_statement(engine, MARK_FLOOD, {"page": page, "root": root(page), "why": why})
