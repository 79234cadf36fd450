"""The schema's SQL functions, each stated once (crawler/db/functions): the migrations
install them from their files, so a database upgraded from empty holds each function as
its file states it, on one server and on a Citus cluster (its workers too); each file's
newest version is the one a migration names, and its body changes only with its version."""

from __future__ import annotations

import ast
import hashlib
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import create_engine, text

from crawler.db.functions import (
    FunctionFileError,
    drop_function,
    function_names,
    install_function,
    sql_function,
)
from crawler.db.server import migrate
from tests.unit.test_migrations import empty_database_url  # noqa: F401 (a fixture)

MIGRATIONS = Path(__file__).parents[2] / "migrations/versions"
# Each function's version and the sha256 of its statement. A change of a file without a
# new version fails here: raise the version, add a migration that installs it (a
# database already migrated never sees an edit alone), then write the new pair here.
STATED = {
    "claim_in_shard": (5, "64fc3a0b16657219ab644448439d6edf4a0f81a37085ac1668c5631b7d271ee1"),
    "claim_in_shard_prepared": (
        1,
        "7fc135c96f994322e280a1158fcfaece64db5529d16816170107f79516f0288f",
    ),
    "host_parents": (1, "ac067f3dcaf5fc7b3b84b464fe83ef6c5d46afba0f2e2d8e61e11ee9718968cd"),
}
# Our functions in the database (an extension's are the extension's).
OURS = text(
    "SELECT p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
    " WHERE p.pronamespace = current_schema()::regnamespace"
    " AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')"
    " ORDER BY p.proname, p.oid"
)
ON_WORKERS = (
    "SELECT result FROM run_command_on_workers($$SELECT md5(pg_get_functiondef(p.oid))"
    " FROM pg_proc p WHERE p.proname = '{name}'$$)"
)
CITUS = text("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")


def digest(statement: str) -> str:
    return hashlib.sha256(statement.encode()).hexdigest()


def md5(definition: str) -> str:
    return hashlib.md5(definition.encode()).hexdigest()


def test_the_database_holds_each_function_as_its_file_states_it(either):
    """Upgraded from empty, each function is what its file's statement makes: its file's
    statement, run again in a transaction that is then rolled back, changes nothing."""
    with either.connect() as conn:
        citus = conn.execute(CITUS).scalar_one()
        upgraded = conn.execute(OURS).all()
        assert [name for name, _ in upgraded] == function_names()  # one of each, no other
        if citus:  # on the coordinator alone: Citus would replace it on the workers too
            conn.execute(text("SET LOCAL citus.enable_ddl_propagation TO off"))
        for name in function_names():
            conn.execute(text(sql_function(name).statement))  # as op.execute runs it
        assert conn.execute(OURS).all() == upgraded
        conn.rollback()
        if citus:
            for name, definition in upgraded:
                on_workers = conn.execute(text(ON_WORKERS.format(name=name))).scalars().all()
                assert on_workers and set(on_workers) == {md5(definition)}, name


def installs() -> dict[str, list[tuple[str, int]]]:
    """{function: [(migration, version)…]} of every install_function call, by file."""
    found: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(MIGRATIONS.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "install_function":
                name = node.args[1].value
                version = next(k.value.value for k in node.keywords if k.arg == "version")
                found.setdefault(name, []).append((path.name[:4], version))
    return found


def test_each_functions_newest_version_is_installed_by_a_migration():
    named = installs()
    assert sorted(named) == function_names()
    for name, versions in named.items():
        numbers = [version for _, version in versions]
        assert numbers == sorted(numbers), f"{name}: {versions}"
        assert numbers[-1] == sql_function(name).version, f"{name}: {versions}"


@pytest.mark.parametrize("name", function_names())
def test_a_function_changes_only_with_its_version(name):
    found = sql_function(name)
    assert (found.version, digest(found.statement)) == STATED[name], (
        f"{name}.sql changed: raise its version, add a migration that installs it,"
        " and state the new version and digest here"
    )


class Recorded:
    """Alembic's `op`, as far as the installer uses it."""

    def __init__(self) -> None:
        self.executed: list[str] = []

    def execute(self, sqltext: str) -> None:
        self.executed.append(sqltext)


def test_an_older_version_installs_the_newest_body():
    op = Recorded()
    install_function(op, "claim_in_shard", version=1)
    assert op.executed == [sql_function("claim_in_shard").statement]


def test_a_version_the_file_does_not_have_is_refused():
    newest = sql_function("claim_in_shard").version
    with pytest.raises(FunctionFileError, match=f"installs version {newest + 1}"):
        install_function(Recorded(), "claim_in_shard", version=newest + 1)


@pytest.mark.parametrize("name", ["no_such_function", "../engine", "claim_in_shard; DROP"])
def test_a_function_with_no_file_is_refused(name):
    with pytest.raises(FunctionFileError, match="no such function file"):
        install_function(Recorded(), name, version=1)
    with pytest.raises(FunctionFileError, match="no such function file"):
        drop_function(Recorded(), name)


def test_a_downgrade_keeps_the_newest_body_until_the_migration_that_made_it(
    empty_database_url,  # noqa: F811
):
    """Down to 0020 the claim stays at its newest (no older body is kept); below it the
    claim is gone and 0019's walk is back; up again, all as the files state them."""
    config = migrate.alembic_config()
    migrate.upgrade_to_head()
    engine = create_engine(empty_database_url)
    try:
        with engine.connect() as conn:
            at_head = conn.execute(OURS).all()
        command.downgrade(config, "0020")
        with engine.connect() as conn:
            assert conn.execute(OURS).all() == at_head
        command.downgrade(config, "0019")
        with engine.connect() as conn:
            names = [name for name, _ in conn.execute(OURS).all()]
        assert names == ["due_roots_of_shard", "host_parents"]
        command.upgrade(config, "head")
        with engine.connect() as conn:
            assert conn.execute(OURS).all() == at_head
    finally:
        engine.dispose()
