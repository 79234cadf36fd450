"""The one schema and engine, and the database's rules, in rooms by concern.

models/ (the schema) and functions/ (its SQL functions, one file each); server/ (where
the database is and what it is, migrations, and the plumbing every module shares);
deployments/ (one server or a Citus cluster: each one's statements and claim); crawl/
(the crawl's writes: new hosts, results, claims, counters, heartbeats, retention, and
its counts now);
rules/ (deny entries, the rows they take out, trap windows, floods, the self-check, the
audit); operators/ (accounts, the change log, long lists, the host filter and the
export). The panel's own read queries are its own: webpanel/queries/.
"""
