"""cluster.routed: a statement with the pins that route it on Citus, and without them on
one server, each form with its parameters typed."""

import pytest
from sqlalchemy import bindparam
from sqlalchemy.dialects import postgresql
from sqlalchemy.types import Integer, String

from crawler.db import cluster, queue, rollups, windows
from crawler.db.hostsql import names_param

ROUTED_STATEMENTS = {
    "queue.WRITE_RESULTS": queue.WRITE_RESULTS,
    "queue.SCHEDULE": queue.SCHEDULE,
    "windows.TRIM_WINDOWS": windows.TRIM_WINDOWS,
    "rollups.LOWER_NEXT_DUE": rollups.LOWER_NEXT_DUE,
    "rollups.RECOUNT_WINDOWS": rollups.RECOUNT_WINDOWS,
}


def binds(statement) -> dict:
    """{parameter: the name of its type} of a statement, as Postgres gets it."""
    compiled = statement.compile(dialect=postgresql.dialect())
    return {name: type(bind.type).__name__ for name, bind in compiled.binds.items()}


def test_a_pin_goes_from_the_one_server_form_and_its_parameter_with_it():
    statement = cluster.routed(
        "SELECT * FROM t WHERE t.a = :a AND t.r = ANY(:roots) AND t.r = :r",
        (" AND t.r = ANY(:roots)",),
        bindparam("a", type_=Integer),
        bindparam("r", type_=String),
        *names_param("roots"),
    )
    assert statement.unpinned.text == "SELECT * FROM t WHERE t.a = :a AND t.r = :r"
    assert binds(statement.unpinned) == {"a": "Integer", "r": "String"}
    assert binds(statement.pinned) == {"a": "Integer", "r": "String", "roots": "ARRAY"}


def test_a_parameter_named_outside_the_pins_too_keeps_its_type():
    statement = cluster.routed(
        "DELETE FROM w USING (SELECT * FROM w WHERE root = ANY(:roots)) AS r"
        " WHERE w.root = ANY(:roots) AND w.root = r.root",
        ("w.root = ANY(:roots) AND ",),
        *names_param("roots"),
    )
    assert "w.root = ANY" not in statement.unpinned.text
    assert binds(statement.unpinned) == {"roots": "ARRAY"}


def test_a_longer_name_is_not_a_use_of_a_parameter():
    statement = cluster.routed(
        "SELECT :roots_of AS x WHERE r = ANY(:roots)",
        (" WHERE r = ANY(:roots)",),
        *names_param("roots", "roots_of"),
    )
    assert binds(statement.unpinned) == {"roots_of": "ARRAY"}


def test_a_pin_the_statement_lacks_is_refused():
    with pytest.raises(ValueError, match="no ' AND t.r = ANY"):
        cluster.routed(
            "SELECT * FROM t WHERE t.r = :roots[1]",
            (" AND t.r = ANY(:roots)",),
            *names_param("roots"),
        )


@pytest.mark.parametrize("name", ROUTED_STATEMENTS)
def test_the_crawls_routed_statements_lose_only_their_pins(name):
    statement = ROUTED_STATEMENTS[name]
    pinned, plain = statement.pinned.text, statement.unpinned.text
    assert len(plain) < len(pinned)
    assert set(plain.split()) <= set(pinned.split())
    one_server, on_cluster = binds(statement.unpinned), binds(statement.pinned)
    assert one_server.items() <= on_cluster.items()
    assert "roots" in on_cluster
