-- claim_in_shard_prepared: the name of a statement of claim_in_shard, prepared once per
-- session. Each statement is prepared once per session on the worker (Citus keeps its
-- connections to the workers open), named by a hash of its text with the shard's names in
-- it, and run with its generic plan from the first call (each group's statements are its
-- own, so the default's five custom plans would be five per group): EXECUTE of a dynamic
-- text plans it anew each time, and planning the claim took longer than running it. The
-- arguments go in as literals of the prepared statement's declared types.
-- A session setting (hostcrawl.<name>) remembers that a statement is prepared: reading
-- pg_prepared_statements builds a row, its text included, for every statement the session
-- has. A setting made in a transaction that then aborts is undone while PREPARE is not,
-- so a miss looks at the view before it prepares.
--
-- version: 1
--
-- Its versions, each named by the migration that installs it (crawler/db/functions):
--   1 (0020).
CREATE OR REPLACE FUNCTION claim_in_shard_prepared(statement text, types text)
RETURNS text LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    prepared text := 'claim_in_shard_' || md5(statement);
BEGIN
    IF coalesce(current_setting('hostcrawl.' || prepared, true), '') = '' THEN
        IF NOT EXISTS (SELECT 1 FROM pg_prepared_statements p WHERE p.name = prepared) THEN
            EXECUTE format('PREPARE %I(%s) AS %s', prepared, types, statement);
        END IF;
        PERFORM set_config('hostcrawl.' || prepared, 'prepared', false);
    END IF;
    RETURN prepared;
END
$fn$
