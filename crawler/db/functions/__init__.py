"""The schema's SQL functions, each stated once: `<name>.sql` beside this module, its
comments, a `-- version: N` line, and the one CREATE OR REPLACE statement of its newest
body. Migrations install a function from its file and name the version they were written
for (`install_function(op, "claim_in_shard", version=4)`); nothing is copied into them.

Alembic's cookbook ("Replaceable Objects") keeps each version of a view or a function in
the migration that makes it, whole, so that a downgrade can put the previous one back:
the claim's 150 lines stood in four migrations. Here the package holds one body, the
newest, and the history of its versions is git's:

- A change of a function edits its file, raises its version, and comes with a migration
  that installs that version (tests/unit/test_functions.py checks that the newest
  version is named by a migration, and that the body changes only with its version).
- An older migration names an older version: it installs the file's body, which
  supersedes it. A plpgsql body is checked against the tables only when it runs, and no
  migration calls these functions, so the full upgrade from an empty database ends where
  it did; each later migration that names the function installs the same body again.
- A migration naming a version newer than the file's is refused: the file was not
  changed with it.
- A downgrade puts no older body back (there is none to put): the function stays at its
  newest, and the migration that created it drops it (`drop_function`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from alembic.operations import Operations

VERSION = re.compile(r"^-- version: (\d+)$", re.M)
STATEMENT = re.compile(r"^CREATE OR REPLACE FUNCTION (\w+)\(", re.M)


class FunctionFileError(ValueError):
    """A function's file is missing or malformed, or a migration names a version it lacks."""


@dataclass(frozen=True)
class SqlFunction:
    """A function as its file states it."""

    name: str
    version: int
    statement: str  # CREATE OR REPLACE FUNCTION …, the body within


@cache
def sql_function(name: str) -> SqlFunction:
    """The function `name` from `<name>.sql`: FunctionFileError if there is none, or its
    file has no single `-- version: N` line or no CREATE OR REPLACE of that name."""
    source = files(__package__) / f"{name}.sql"
    if not re.fullmatch(r"\w+", name) or not source.is_file():
        raise FunctionFileError(f"{name!r}: no such function file in {__package__}")
    text = source.read_text(encoding="utf-8")
    versions = VERSION.findall(text)
    if len(versions) != 1:
        raise FunctionFileError(f"{name}.sql: {len(versions)} '-- version: N' lines, not 1")
    found = STATEMENT.search(text)
    if found is None or found[1] != name:
        raise FunctionFileError(f"{name}.sql: no CREATE OR REPLACE FUNCTION {name}(")
    return SqlFunction(name, int(versions[0]), text[found.start() :].strip() + "\n")


def function_names() -> list[str]:
    """Every function stated here, by name."""
    return sorted(
        f.name.removesuffix(".sql") for f in files(__package__).iterdir() if f.name.endswith(".sql")
    )


def install_function(op: Operations, name: str, version: int) -> None:
    """Install `name` from its file, for a migration written for its `version`: the
    file's body, which is that version or supersedes it."""
    found = sql_function(name)
    if version > found.version:
        raise FunctionFileError(
            f"{name}: a migration installs version {version}, {name}.sql is version"
            f" {found.version}: raise the file's version with its change"
        )
    op.execute(found.statement)


def drop_function(op: Operations, name: str) -> None:
    """Drop the function of that name, whatever its arguments (a database may hold an
    older signature than the file's; there is one at a time: each migration that changed
    a signature dropped the old one)."""
    sql_function(name)  # a function stated here
    op.execute(f"DROP FUNCTION IF EXISTS {name}")
