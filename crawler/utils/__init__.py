"""Helpers of the Scrapy side that belong to no one part."""
