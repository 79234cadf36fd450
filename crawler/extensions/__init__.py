"""Scrapy extensions: a worker's upkeep (in flight, memory, GC, heartbeat, metrics, pruning)."""
