"""The server and its plumbing: where it is (engine: DATABASE_URL or the embedded server,
tuned for the machine: machine, server_settings), what it is (cluster), its schema's
migrations (migrate), and what every writer and reader shares: typed SQL pieces
(sql_pieces), retries through outages and conflicts (retry), planner statistics after a
bulk write (statistics), cheap counts on a big database (estimates), and LISTEN for
entry changes (listener)."""
