"""bench/citus.py names the multi-shard statements from the coordinator's log: each
"multi-task query" message is paired with the statement its backend logs next."""

from __future__ import annotations

import sys

from crawler.db.server.engine import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "bench"))

from _citus_nodes import multi_shard_statements  # noqa: E402

HINT = "HINT:  Queries are split to multiple tasks if they have to be split into several"
# Two backends interleaved; a statement over two lines; one statement planned in two
# multi-task parts; a LOG entry of another kind, with its statement, that is not counted.
LOG = f"""<<101>> LOG:  multi-task query about to be executed
<<101>> {HINT} queries on the workers.
<<202>> LOG:  multi-task query about to be executed
<<101>> STATEMENT:  UPDATE roots r SET next_due_at = d.due
\t  FROM (SELECT * FROM unnest($1)) d WHERE r.root = d.root
<<202>> LOG:  multi-task query about to be executed
<<202>> STATEMENT:  DELETE FROM trap_window w USING (SELECT 1) r
<<303>> LOG:  duration: 3.2 ms
<<303>> STATEMENT:  SELECT 1
<<101>> LOG:  multi-task query about to be executed
<<101>> STATEMENT:  UPDATE roots r SET next_due_at = d.due FROM (SELECT * FROM unnest($1)) d
\tWHERE r.root = d.root
"""


def test_each_multi_task_plan_is_counted_against_the_statement_its_backend_logs_next():
    found = multi_shard_statements(LOG)
    update = "UPDATE roots r SET next_due_at = d.due FROM (SELECT * FROM unnest($1)) d"
    assert found == {
        f"{update} WHERE r.root = d.root": 2,
        "DELETE FROM trap_window w USING (SELECT 1) r": 2,
    }


def test_a_statement_without_a_multi_task_message_is_not_counted():
    assert multi_shard_statements("<<7>> STATEMENT:  SELECT 1\n<<7>> LOG:  checkpoint\n") == {}
