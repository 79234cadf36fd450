"""Scrapy spiders of hostcrawl."""
