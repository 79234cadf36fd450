"""A spider of someone else's project: it knows nothing of hostcrawl but its add-on.

Run with `scrapy runspider` from a folder without scrapy.cfg, so no hostcrawl
setting applies except ADDONS. It fetches the URLs it is given and yields one
item per response or failure (`-o` collects them).
"""

from __future__ import annotations

import scrapy


class ListSpider(scrapy.Spider):
    name = "list"
    custom_settings = {"ADDONS": {"crawler.addon.HostcrawlAddon": 0}}

    def __init__(self, urls: str = "", **kwargs) -> None:
        super().__init__(**kwargs)
        self.urls = urls.split(",")

    async def start(self):
        for url in self.urls:
            yield scrapy.Request(url, errback=self.failed, dont_filter=True)

    def parse(self, response):
        yield {"url": response.url, "status": response.status}

    def failed(self, failure):
        yield {"url": failure.request.url, "error": type(failure.value).__name__}
