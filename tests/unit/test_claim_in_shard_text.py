"""The claim written out twice, once per deployment: one server's
(crawler.db.deployments.claims_one_server.CLAIM_FROM_ROOTS) and the cluster's, in
claim_in_shard (its one statement: crawler/db/functions/claim_in_shard.sql, what the
migrations install). The two texts must state the same rules: read back in one server's
names, the cluster's claim is one server's, word for word. And the one piece of SQL the
cluster's claim still builds, the anchor of its call, is refused when it is no anchor."""

from __future__ import annotations

import re

import pytest

from crawler.db.deployments import claims_cluster, claims_one_server
from crawler.db.functions import sql_function

# In the function: format()'s arguments for the group's shards, and the prepared
# statement's parameters in the order it passes them.
SHARDS = {"%1$s": "roots", "%2$s": "hosts", "%3$s": "root_claims"}
PARAMETERS = (":locked", ":concurrency", ":budget", ":n", ":lease", ":worker")


def function_statement(name: str) -> str:
    claim_in_shard = sql_function("claim_in_shard").statement
    found = re.search(rf"{name} := format\(\$sql\$(.*?)\$sql\$", claim_in_shard, re.S)
    assert found, f"no {name} in claim_in_shard"
    return found[1]


def in_one_servers_names(statement: str) -> str:
    for argument, table in SHARDS.items():
        statement = statement.replace(argument, table)
    return re.sub(r"\$(\d)", lambda m: PARAMETERS[int(m[1]) - 1], statement)


def words(sql: str) -> list[str]:
    return re.sub(r"([(),])", r" \1 ", sql).split()


def test_the_clusters_claim_is_one_servers_claim_on_the_groups_shards():
    cluster_claim = in_one_servers_names(function_statement("claim_sql"))
    assert words(cluster_claim) == words(claims_one_server.CLAIM_FROM_ROOTS.text)


def test_the_clusters_statements_name_only_the_groups_shards():
    for name in ("walk_sql", "lock_sql", "claim_sql"):
        statement = function_statement(name)
        bare = r"\b(FROM|UPDATE|INTO|JOIN)\s+(queue|roots|root_claims)\b"
        assert not re.search(bare, statement), name


@pytest.mark.parametrize("anchor", ["anchor-7", "anchor-123"])
def test_an_anchor_goes_into_the_call(anchor):
    assert f"claim_in_shard('{anchor}'," in claims_cluster.claim_in_shard(anchor).text


@pytest.mark.parametrize("anchor", ["site.test", "anchor-1'); DROP TABLE queue; --", ""])
def test_anything_but_an_anchor_is_refused(anchor):
    with pytest.raises(ValueError, match="is not an anchor"):
        claims_cluster.claim_in_shard(anchor)
