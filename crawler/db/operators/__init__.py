"""What operators keep and move in bulk: their accounts (accounts), who changed what
(change_log, bulk_change_log), long lists staged a batch a transaction (bulk, and
bulk_pool: names checked on every core), the hosts a filter picks (host_filter) and the
export of what the crawl found (export)."""
