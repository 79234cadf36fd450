"""A claim sets its roots' dates from its snapshot; rows another transaction makes due
while it runs (a lifted entry's, put back in routing) must not wait behind the later
date it computed without them. A crawl that drains on "nothing due" once stopped with
such rows queued (on the cluster, where a claim takes longer); on both deployments."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import text

from crawler.db.crawl import claims, queue, rollups
from tests.waiting import WAITS_ON_A_LOCK, wait_until, waits_on_a_lock

PUT_BACK = (
    "UPDATE hosts SET denied_by = NULL WHERE root = 'race.test' AND hostname = 'b.race.test'"
    " RETURNING root, next_claim_at"
)
DATES = text(
    "SELECT r.next_due_at, q.next_claim_at FROM roots r JOIN queue q USING (root)"
    " WHERE r.root = 'race.test' AND q.hostname = 'b.race.test'"
)


@pytest.mark.parametrize("deployment", sorted(WAITS_ON_A_LOCK))
def test_rows_made_due_while_a_claim_runs_keep_their_root_due(deployment, request):
    engine = request.getfixturevalue(deployment)
    queue.save_hosts(engine, ["a.race.test", "b.race.test"])
    with engine.begin() as conn:  # b is under an entry, a is due
        conn.execute(text(PUT_BACK.replace("= NULL", "= 'race.test'")))
    claimed: list = []

    with engine.connect() as writer:
        writing = writer.begin()
        dated = writer.execute(text(PUT_BACK)).all()
        rollups.lower_next_due(writer, dated)
        claim = threading.Thread(
            target=lambda: claimed.append(claims.claim_polite(engine, 1, "w1").hosts)
        )
        claim.start()
        wait_until(
            lambda: waits_on_a_lock(engine, deployment) or not claim.is_alive(),
            60,
            "the claim to wait (or end)",
        )
        writing.commit()
    claim.join(60)

    assert claimed == [["a.race.test"]]
    with engine.connect() as conn:
        root_due, row_due = conn.execute(DATES).one()
    assert root_due <= row_due  # b's root is due no later than b: a claim will find it
