"""A block and a finish take their locks in one order: queue rows first, the roots'
counters last. A block that counted its root first, while a finish held one of the
trap's rows and wanted that root next, deadlocked (seen on the cluster as the trap was
blocked mid-crawl); on both deployments."""

from __future__ import annotations

import logging
import threading

import pytest
from sqlalchemy import text

from crawler.db.crawl import queue
from crawler.db.rules import deny_entries
from tests.waiting import WAITS_ON_A_LOCK, wait_until, waits_on_a_lock


@pytest.mark.parametrize("deployment", sorted(WAITS_ON_A_LOCK))
def test_a_block_waits_for_a_finish_holding_a_trap_row_without_a_deadlock(
    deployment, request, caplog
):
    engine = request.getfixturevalue(deployment)
    queue.save_hosts(engine, ["n1.trap.test", "n2.trap.test"])
    caplog.set_level(logging.INFO, logger="crawler.db.server.retry")
    blocked: list = []

    with engine.connect() as finish:
        finishing = finish.begin()
        # The finish's first statement: the crawled host's queue row.
        finish.execute(
            text(
                "UPDATE hosts SET next_claim_at = now() + interval '1 day'"
                " WHERE root = 'trap.test' AND hostname = 'n1.trap.test'"
            )
        )
        block = threading.Thread(
            target=lambda: blocked.append(
                deny_entries.upsert_blocked(engine, "trap.test", "a trap", "test")
            )
        )
        block.start()
        wait_until(
            lambda: waits_on_a_lock(engine, deployment) or not block.is_alive(),
            60,
            "the block to wait (or end)",
        )
        # The finish's last statement: its roots' counters.
        finish.execute(text("UPDATE roots SET hosts = hosts WHERE root = 'trap.test'"))
        finishing.commit()
    block.join(60)

    assert blocked == [True]
    assert not [r for r in caplog.records if "deadlock" in r.getMessage()]
