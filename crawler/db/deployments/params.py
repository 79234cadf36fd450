"""What the statements each deployment writes out its own way have in common: their typed
parameters and the rows a queue write returns (crawler.db.deployments.one_server,
crawler.db.deployments.cluster)."""

from __future__ import annotations

from sqlalchemy import bindparam
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.types import Boolean, DateTime, Interval

from crawler.db.server.sql_pieces import INTS, names_param

# What a queue write returns for crawler.db.crawl.rollups.lower_next_due: the row's root, and
# its date if it is routable.
DATED = """root, CASE WHEN status_reason IS NULL AND denied_by IS NULL
                   THEN next_claim_at END"""

# A crawled batch's results and next dates' delays, one array per column
# (crawler.db.crawl.queue.results_params).
RESULT_PARAMS = (
    *names_param("names", "roots", "outcomes", "urls", "titles", "schemes", "stopped"),
    *(
        bindparam(name, type_=INTS)
        for name in ("statuses", "found", "saved", "filtered", "over_cap")
    ),
    bindparam("failed", type_=ARRAY(Boolean)),
    bindparam("afters", type_=ARRAY(Interval)),
)
# Each name, its root and its delay to the next claim.
SCHEDULE_PARAMS = (*names_param("names", "host_roots"), bindparam("afters", type_=ARRAY(Interval)))
# Each root's earliest new date.
DUES = bindparam("dues", type_=ARRAY(DateTime(timezone=True)))
