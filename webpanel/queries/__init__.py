"""The panel's read model: the queries behind its pages, one module per page. Every
function takes a Connection (or the panel's Session) and only reads; writes go through
crawler.db's modules. Which hosts a filter picks is crawler.db.operators.host_filter's (the export
shares it)."""
