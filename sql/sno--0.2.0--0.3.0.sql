-- sno 0.2.0 -> 0.3.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.3.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.3.0 (tested by
-- tests/upgrade/update_paths.sh, and from 0.1.0 through both scripts by
-- tests/upgrade/extension_update.sh). Nothing is dropped: no user object, grant or column is
-- touched. Changes:
-- * new: sno_lower_bound and sno_upper_bound (of timestamptz, date and timestamp), the bounds
--   the planner adds next to sno_time(id) comparisons so that they scan the index on id (the
--   library adds them only once these functions exist, so a database at 0.2.0 plans as
--   before), with EXECUTE granted to PUBLIC;
-- * new: sno_generator_slice(), and its columns sequence_min, sequence_max and ids_per_unit at
--   the end of the sno_generator view (CREATE OR REPLACE VIEW keeps the views that use it and
--   its privileges).
-- Every C symbol of 0.2.0 keeps its shape: a database still at 0.2.0 works with this library.

-- Security (0.4.1): this script evaluates no expression. Every statement is DDL that looks up
-- the names it uses by their exact signatures, pg_catalog first (during the update the
-- search_path is sno's schema then pg_temp, with pg_catalog searched before them); an overload
-- another role put in sno's schema makes a CREATE fail or a view's function call "not unique",
-- never runs (tests/upgrade/update_paths.sh plants them).

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

-- sno_min/sno_max for every instant, never an error: the bounds the planner adds next to a
-- sno_time(id) comparison (src/pg/planner.rs), so that it scans the index on id. The date and
-- timestamp forms convert as the comparison does (session time zone; past timestamptz's range
-- as an infinity), hence STABLE. EXECUTE is granted to PUBLIC explicitly: queries that only
-- compare sno_time run them, whatever the default privileges of the role creating sno.
CREATE FUNCTION sno_lower_bound(timestamptz) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_lower_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_lower_bound(timestamptz) IS 'sno_min of the instant, or the smallest/largest ID outside the format''s range: sno_time(id) >= t implies id >= sno_lower_bound(t)';
CREATE FUNCTION sno_upper_bound(timestamptz) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_upper_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_upper_bound(timestamptz) IS 'sno_max of the instant, or the smallest/largest ID outside the format''s range: sno_time(id) <= t implies id <= sno_upper_bound(t)';
CREATE FUNCTION sno_lower_bound(date) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_lower_bound_date' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_lower_bound(date) IS 'sno_time(id) >= d implies id >= sno_lower_bound(d)';
CREATE FUNCTION sno_upper_bound(date) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_upper_bound_date' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_upper_bound(date) IS 'sno_time(id) <= d implies id <= sno_upper_bound(d)';
CREATE FUNCTION sno_lower_bound(timestamp) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_lower_bound_timestamp' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_lower_bound(timestamp) IS 'sno_time(id) >= t implies id >= sno_lower_bound(t)';
CREATE FUNCTION sno_upper_bound(timestamp) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_upper_bound_timestamp' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_upper_bound(timestamp) IS 'sno_time(id) <= t implies id <= sno_upper_bound(t)';
GRANT EXECUTE ON FUNCTION sno_lower_bound(timestamptz), sno_upper_bound(timestamptz),
    sno_lower_bound(date), sno_upper_bound(date), sno_lower_bound(timestamp), sno_upper_bound(timestamp)
    TO PUBLIC;

CREATE FUNCTION "sno_generator_slice"() RETURNS TABLE (
	"sequence_min" INT,  /* i32 */
	"sequence_max" INT,  /* i32 */
	"ids_per_unit" INT  /* i32 */
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'sno_generator_slice_wrapper';

GRANT EXECUTE ON FUNCTION sno_generator_slice() TO PUBLIC;

CREATE OR REPLACE VIEW sno_generator AS
    SELECT i.*, s.* FROM sno_generator_info() i CROSS JOIN sno_generator_slice() s;
