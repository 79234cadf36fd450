-- host_parents: every name at and above a hostname, the claim's "under a deny entry" test.
-- plpgsql with a high COST, so the planner computes it once per candidate row and probes
-- the queue's primary key, instead of once per (row, entry) pair.
--
-- version: 1
--
-- Its versions, each named by the migration that installs it (crawler/db/functions):
--   1 (0001).
CREATE OR REPLACE FUNCTION host_parents(name text) RETURNS text[]
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE COST 10000 AS $$
DECLARE
    names text[] := ARRAY[name];
    rest text := name;
    dot int := strpos(rest, '.');
BEGIN
    WHILE dot > 0 LOOP
        rest := substr(rest, dot + 1);
        names := names || rest;
        dot := strpos(rest, '.');
    END LOOP;
    RETURN names;
END
$$
