"""The crawl's rules at work: deny list, traps, the world check, wildcards, the DNS audit."""
