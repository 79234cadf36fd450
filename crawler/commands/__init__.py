"""Project Scrapy commands (`scrapy audit` arrives with the DNS/TLS audit)."""
