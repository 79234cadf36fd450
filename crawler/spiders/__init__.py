"""Scrapy spiders of hostcrawl, and what a response reveals (discovery)."""
