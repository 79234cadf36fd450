"""How many hosts a worker keeps in flight at most by default: what its memory budget and
its open-files limit hold. Pure: the budget and the limit are given.

MAX_IN_FLIGHT=0 (its default) is sized when the crawler starts (the add-on):

    hosts = (MEMORY_BUDGET_MB x BUDGET_HEADROOM - BASE_MB) / KB_PER_HOST_IN_FLIGHT,
            and no more than (open files - FILES_KEPT) / FILES_PER_HOST

BUDGET_HEADROOM is the share of the budget under which the in-flight control still raises
its limit (crawler/extensions/in_flight.py); above it the control cuts, so a maximum past
it would never be reached. The figures are measured by bench/slowweb.py, which prints each
world's memory per host in flight: (the worker's peak RSS - its RSS when the spider
opened) / its peak of hosts in flight (docs/scaling.md, "Hosts in flight").
"""

from __future__ import annotations

BUDGET_HEADROOM = 0.8  # of MEMORY_BUDGET_MB: the control raises its limit only below it
# A worker's RSS when its spider opens, before any host (Scrapy, Twisted, SQLAlchemy, the
# deny list of a fresh database): bench/slowweb.py's hostcrawl/rss_mb/start (113 MB).
BASE_MB = 115
# What a host in flight costs the worker, on average at a width of thousands: its
# requests and responses, a TLS connection, a DNS query, its deferreds, its share of the
# engine's queues and of the crawl's own growth. bench/slowweb.py, 2026-12-07 (beside
# other work): (peak RSS - RSS at open) / in-flight peak = 113 KB at 1,813 hosts (world
# 2), 126 KB at 2,208 (world 3); 171 KB at 576 (world 1, where the crawl's fixed ~50 MB
# weighs more). Rounded up.
KB_PER_HOST_IN_FLIGHT = 128
# Open files a worker keeps besides its hosts': the database's connections, the logs,
# the metrics' port, the reactor's own.
FILES_KEPT = 256
# Files one host in flight may hold at once: its connection and a DNS query's socket.
FILES_PER_HOST = 2
FEWEST = 64  # the in-flight control's floor (MIN_IN_FLIGHT): never sized below it


def max_in_flight(memory_budget_mb: int, open_files: int) -> int:
    """The default MAX_IN_FLIGHT for a worker with this budget and open-files limit."""
    by_memory = (memory_budget_mb * BUDGET_HEADROOM - BASE_MB) * 1024 // KB_PER_HOST_IN_FLIGHT
    by_files = (open_files - FILES_KEPT) // FILES_PER_HOST
    return max(FEWEST, int(min(by_memory, by_files)))
