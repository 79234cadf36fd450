"""Scrapy commands of the project (COMMANDS_MODULE): `scrapy crawl`, `scrapy audit`.

The operator's own commands are crawler/cli.
"""
