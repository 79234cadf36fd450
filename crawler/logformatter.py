"""How Scrapy's own messages about hostcrawl's items are logged (LOG_FORMATTER).

The add-on installs it. A HostItem dropped in the pipeline (a host held back by
an outage) is logged at the level its DropItem asks for, as its reason alone: the
reason names the host, and Scrapy's full item repr on a second line made a
quiet outage four megabytes of log in a hundred seconds. Other items are logged
as Scrapy logs them.
"""

from __future__ import annotations

from scrapy.logformatter import LogFormatter

from crawler.items import HostItem


class HostcrawlLogFormatter(LogFormatter):
    """Scrapy's LogFormatter, without the repr of a dropped HostItem."""

    def dropped(self, item, exception, response, spider):
        entry = super().dropped(item, exception, response, spider)
        if isinstance(item, HostItem):
            entry = {**entry, "msg": "Dropped: %(exception)s", "args": {"exception": exception}}
        return entry
