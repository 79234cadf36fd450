"""The operators' change log gets a name of its own: audit_log → change_log.

"Audit" is the DNS/TLS audit (`scrapy audit`); the log of who changed which deny
entry is the change log. Tables, their column, indexes, constraints and the id
sequence are renamed; no row moves.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RENAMES = [
    "ALTER TABLE audit_log RENAME TO change_log",
    "ALTER SEQUENCE audit_log_id_seq RENAME TO change_log_id_seq",
    "ALTER INDEX ix_audit_log_at RENAME TO ix_change_log_at",
    "ALTER INDEX ix_audit_log_hostname RENAME TO ix_change_log_hostname",
    "ALTER TABLE change_log RENAME CONSTRAINT pk_audit_log TO pk_change_log",
    "ALTER TABLE audit_items RENAME TO change_log_items",
    "ALTER TABLE change_log_items RENAME COLUMN audit_id TO change_id",
    "ALTER TABLE change_log_items RENAME CONSTRAINT pk_audit_items TO pk_change_log_items",
    "ALTER TABLE change_log_items RENAME CONSTRAINT fk_audit_items_audit_id_audit_log"
    " TO fk_change_log_items_change_id_change_log",
]
REVERSE = [
    "ALTER TABLE change_log_items RENAME CONSTRAINT fk_change_log_items_change_id_change_log"
    " TO fk_audit_items_audit_id_audit_log",
    "ALTER TABLE change_log_items RENAME CONSTRAINT pk_change_log_items TO pk_audit_items",
    "ALTER TABLE change_log_items RENAME COLUMN change_id TO audit_id",
    "ALTER TABLE change_log_items RENAME TO audit_items",
    "ALTER TABLE change_log RENAME CONSTRAINT pk_change_log TO pk_audit_log",
    "ALTER INDEX ix_change_log_hostname RENAME TO ix_audit_log_hostname",
    "ALTER INDEX ix_change_log_at RENAME TO ix_audit_log_at",
    "ALTER SEQUENCE change_log_id_seq RENAME TO audit_log_id_seq",
    "ALTER TABLE change_log RENAME TO audit_log",
]


def upgrade() -> None:
    for statement in RENAMES:
        op.execute(statement)


def downgrade() -> None:
    for statement in REVERSE:
        op.execute(statement)
