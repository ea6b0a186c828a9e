-- sno 0.4.1 -> 0.5.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.5.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.5.0 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's operators and
-- functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh). Nothing is dropped: one new function, and the
-- sno_generator view with its columns at the end.
-- * the monitoring functions get row estimates (1 for the one-row ones, 10 for the others): the
--   view was planned at 10^9 rows and JIT-compiled at every read;
-- * new: sno_generator_status(), EXECUTE granted to PUBLIC, and its columns status,
--   status_message, citus_group, citus_generations_left, flips and state_write_failures at the
--   end of the sno_generator view (CREATE OR REPLACE VIEW keeps the views that use it and its
--   privileges).
-- Every C symbol of 0.4.1 keeps its shape: a database still at 0.4.1 works with this library
-- (its sno_generator view then shows the new meaning of partition and regressions, without the
-- new columns).
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema; every object of sno's is
-- named through @extschema@, and everything else is pg_catalog's.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE FUNCTION @extschema@.sno_generator_status() RETURNS TABLE (
	"status" TEXT,
	"status_message" TEXT,
	"citus_group" INT,
	"citus_generations_left" INT,
	"flips" bigint,
	"state_write_failures" bigint
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'sno_generator_status_wrapper';

GRANT EXECUTE ON FUNCTION @extschema@.sno_generator_status() TO PUBLIC;

-- Row estimates (as sql/sno_monitoring.sql): without them the view is planned at 10^9 rows and
-- JIT-compiled at every read.
ALTER FUNCTION @extschema@.sno_generator_info() ROWS 1;
ALTER FUNCTION @extschema@.sno_generator_slice() ROWS 1;
ALTER FUNCTION @extschema@.sno_generator_status() ROWS 1;
ALTER FUNCTION @extschema@.sno_generator_backends() ROWS 10;
ALTER FUNCTION @extschema@.sno_generator_lineage() ROWS 10;

CREATE OR REPLACE VIEW @extschema@.sno_generator AS
    SELECT i.*, s.*, t.* FROM @extschema@.sno_generator_info() i
        CROSS JOIN @extschema@.sno_generator_slice() s
        CROSS JOIN @extschema@.sno_generator_status() t;
