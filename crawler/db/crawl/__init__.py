"""The crawl's own writes and reads: new hosts in and results out (queue), claiming due
hosts (claims), poison pills (unfinished), the counters beside the rows (rollups), links
dropped over a cap (dropped_links), each worker's row (heartbeats), what the database
forgets (retention), and the crawl's counts every view shares (counts)."""
