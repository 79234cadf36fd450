"""The panel's read queries, one module per page; every function takes a Connection
and only reads. Writes go through the other crawler.db modules."""
