"""The worker's open-files limit, raised to what the machine allows, and the default
MAX_IN_FLIGHT it and the memory budget size (crawler/core/in_flight_sizing.py).

Each host in flight holds a socket (and a DNS query's while it resolves): at a few
thousand hosts in flight the usual soft limit of 1,024 open files ran out before the
memory did. The soft limit may be raised to the hard one by any process, so the worker
does it when the crawler starts (the add-on) and says so in its log.
"""

from __future__ import annotations

import logging
import resource

from crawler.core.in_flight_sizing import max_in_flight

log = logging.getLogger(__name__)

OPEN_FILES_STAT = "hostcrawl/open_files_limit"  # the in-flight control records it


UNLIMITED = 1 << 20  # the open files counted for a limit of RLIM_INFINITY


def open_files_limit() -> int:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return UNLIMITED if soft == resource.RLIM_INFINITY else soft


def raise_open_files_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit; the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == hard:
        log.info("hostcrawl: open files limit %s (the hard limit)", open_files_limit())
        return open_files_limit()
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ValueError, OSError) as exc:
        log.warning("hostcrawl: open files limit %d, not raised to %s: %s", soft, hard, exc)
        return open_files_limit()
    log.info(
        "hostcrawl: open files limit raised from %d to %d (the hard limit)",
        soft,
        open_files_limit(),
    )
    return open_files_limit()


def size_max_in_flight(settings) -> None:
    """MAX_IN_FLIGHT=0: as many hosts as MEMORY_BUDGET_MB and the open-files limit hold,
    at the priority the 0 came with. The limit is raised first."""
    open_files = raise_open_files_limit()
    if settings.getint("MAX_IN_FLIGHT"):
        return
    sized = max_in_flight(settings.getint("MEMORY_BUDGET_MB"), open_files)
    settings.set("MAX_IN_FLIGHT", sized, settings.getpriority("MAX_IN_FLIGHT") or "addon")
    log.info(
        "hostcrawl: MAX_IN_FLIGHT %d, sized by MEMORY_BUDGET_MB %d and %d open files",
        sized,
        settings.getint("MEMORY_BUDGET_MB"),
        open_files,
    )
