"""The one schema and engine, and the database's rules in modules by concern.

Where it is and its shape: engine (DATABASE_URL or the embedded server), models/ (the
schema), functions/ (its SQL functions, one file each), migrate (Alembic from code),
cluster (what the database is) and deployments/ (one server or a Citus cluster: each
one's statements and claim), sql_pieces (typed parameters, name ranges, filled
templates), retry (outages and conflicts), statistics (planner statistics after a bulk
write), estimates (counts that stay cheap on a big database).

The crawl: queue (new hosts in, results out), claims (claiming due hosts), unfinished
(poison pills), trap_windows (trap windows, deferred blocks, wildcard probes), floods
(name floods), canaries and world_silences (the self-check), dns_audits (the audit's
writes), heartbeats (each worker's row), rollups (counters beside the rows),
dropped_links, retention (what the database forgets).

The operators' changes and reads: deny_entries (no_follow and blocked), denied_rows (the
queue rows an entry takes out and puts back), bulk (long lists, staged), bulk_change_log
and change_log (who changed what), listener (LISTEN for entry changes), accounts
(operators), host_filter (the hosts a filter picks) and export (what the crawl found,
streamed out). The panel's own read queries are its own: webpanel/queries/.
"""
