"""A quiet log in an outage: one line when it starts, a summary now and then, one when it ends.

A real `scrapy crawl hosts` with 100,000 hosts queued, against fakeweb whose resolver
stops answering: every host fails below HTTP and is held back (tried again after
OUTAGE_RETRY_AFTER), over and over, while the canary does not answer either. None of
that is news to the operator once the outage is told: the log at INFO says it once,
sums it up every LOGSTATS_INTERVAL, and says when the world answers again.

Scaled to test time: the outage lasts 30 s by the crawler's own account (its summary
says so), with a summary every 10 s and every host tried again after 1 s (15 s in
production), and the log may have 25 lines in it: 50 a minute, whatever is queued.
"""

from __future__ import annotations

import re

import pytest

from crawler.db.crawl import queue
from tests.e2e.conftest import OUTAGE_RETRIES, wait_until
from tests.fakeweb import World

HOSTS = 100_000
ROOTS = 1_000
SUMMARY_EVERY = 10  # LOGSTATS_INTERVAL, seconds
OUTAGE = 30  # seconds, by the crawler's own account
MOST_LINES = 25  # in the outage's log at INFO: 50 a minute

STARTED = "the world is not answering us"
LASTED = re.compile(r"the world has not answered us for (\d+) s")
ENDED = "the world answers again"
RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \[[^\]]+\] (\w+): ")


def outage_lasted(log: str) -> int:
    """Seconds the outage has lasted, by the crawler's latest summary (0 before one)."""
    said = LASTED.findall(log)
    return int(said[-1]) if said else 0


@pytest.mark.one_server(
    "the suite's time: the cluster's outages are told in a line each in test_workers_and_nodes.py"
)
@pytest.mark.refetches(OUTAGE_RETRIES)
def test_an_outage_with_100000_hosts_queued_writes_a_few_lines(db, fakeweb_factory, start_crawler):
    world = World()
    world.site("canary.test")
    web = fakeweb_factory(world)
    queue.seed(db, [f"h{i}.r{i % ROOTS}.test" for i in range(HOSTS)])
    web.set_dns_silent(True)
    worker = start_crawler(
        web,
        CANARY_HOSTS="canary.test",
        LOGSTATS_INTERVAL=SUMMARY_EVERY,
        CLOSE_WHEN_DRAINED=0,
    )

    wait_until(lambda: STARTED in worker.log(), 60, "the outage to be told")
    wait_until(lambda: outage_lasted(worker.log()) >= OUTAGE, 3 * OUTAGE, "the outage to last")
    web.set_dns_silent(False)
    wait_until(lambda: ENDED in worker.log(), 60, "the end of the outage to be told")
    worker.stop()

    log = worker.log()
    outage = log[log.index(STARTED) :]
    outage = outage[: outage.index("\n", outage.index(ENDED))].splitlines()
    assert len(outage) < MOST_LINES, "\n".join(outage[:40])
    levels = {RECORD.match(line)[1] for line in outage if RECORD.match(line)}
    assert levels <= {"INFO", "WARNING"}, levels  # the test runs at LOG_LEVEL=INFO
    assert log.count(STARTED) == 1 and log.count(ENDED) == 1
    assert len(LASTED.findall(log)) >= OUTAGE // SUMMARY_EVERY
