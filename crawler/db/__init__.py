"""The one schema and engine, and the database's rules in modules by concern.

engine (where the database is), models (the schema), hostsql (name ranges),
queue (new hosts, finished hosts), claims (claiming due hosts), entries
(no_follow and blocked, NOTIFY), routing (rows entries take out and put back),
windows (trap windows, wildcard probes), audits (the DNS/TLS audit's writes),
change_log, accounts (operators), listener (LISTEN for entry changes), retry
(riding out outages), host_filter (the hosts the panel's list and the export show)
and estimates (counts that stay cheap on a big database). The panel's own read
queries are its own: webpanel/queries/.
"""
