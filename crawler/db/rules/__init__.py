"""The state of the crawl's rules: deny entries, no_follow and blocked (deny_entries), the
queue rows an entry takes out of routing and puts back (denied_rows), trap windows,
deferred blocks and wildcard probes (trap_windows), name floods (floods), the self-check
(canaries, world_silences) and the DNS audit's writes (dns_audits)."""
