"""The claim's statement in claim_in_shard's form (crawler.db.claims_cluster.in_shard): the
one text both deployments run, its relations and parameters renamed for the function."""

from __future__ import annotations

import re

import pytest

from crawler.db import claims, claims_cluster


def test_every_parameter_of_the_claim_becomes_its_place_in_the_functions_order():
    translated = claims_cluster.in_shard(claims.CLAIM_FROM_ROOTS.text)
    assert not re.search(r"(?<![:\w]):\w", translated)  # no named parameter left
    places = {int(p) for p in re.findall(r"\$(\d+)", translated)}
    assert places == set(range(1, len(claims_cluster.CLAIM_PARAMETERS) + 1))


def test_every_table_the_claim_reads_or_writes_is_named_for_the_shard():
    translated = claims_cluster.in_shard(claims.CLAIM_FROM_ROOTS.text)
    for table in ("queue", "roots", "root_claims"):
        assert f"{{{table}}}" in translated
    bare = r"\b(FROM|UPDATE|INTO|JOIN)\s+(queue|roots|root_claims)\b"
    assert not re.search(bare, translated)


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (
            "SELECT root FROM queue q WHERE q.root = ANY(:locked) LIMIT :n",
            "SELECT root FROM {queue} q WHERE q.root = ANY($1) LIMIT $4",
        ),
        (
            "UPDATE roots t SET x = now() + :lease WHERE t.root = ANY(:locked)",
            "UPDATE {roots} t SET x = now() + $5 WHERE t.root = ANY($1)",
        ),
        (  # a cast and an array slice are not parameters; a column named like a table stays
            "INSERT INTO root_claims AS c SELECT (a::text)[2:], queue_id FROM x",
            "INSERT INTO {root_claims} AS c SELECT (a::text)[2:], queue_id FROM x",
        ),
    ],
    ids=["select", "update", "insert"],
)
def test_a_statement_in_the_functions_form(statement, expected):
    assert claims_cluster.in_shard(statement) == expected


def test_a_parameter_the_function_does_not_pass_is_refused():
    with pytest.raises(ValueError):
        claims_cluster.in_shard("SELECT 1 FROM queue WHERE root = :nobody")
