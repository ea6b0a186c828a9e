-- sno 0.1.0 -> 0.2.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.2.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.2.0 (tested by
-- tests/upgrade/extension_update.sh). The type, its operators, operator classes, casts and
-- field functions are unchanged, so no column, index or partition bound is touched. Changes:
-- * sno_hash and sno_hash_extended are no longer LEAKPROOF (as core's uuid_hash);
-- * the monitoring functions and views changed columns (the generator hands out numbers from
--   one shared cursor instead of per-backend leases, and counts its state-file writes), and
--   sno_generator_initialize gained take_over: they are dropped and created again;
-- * new: sno_generator_lineage() and the sno_generator_lineage view.
-- The library keeps 0.1.0's C symbols for the functions whose shape changed (see
-- src/pg/generator/compat.rs), so a database still at 0.1.0 works until it is updated.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

-- Objects of a user's that depend on what is re-created here would make the DROPs fail with
-- a HINT (CASCADE) that cannot be followed inside ALTER EXTENSION: say what to do instead.
-- Privileges changed on what is re-created would be reset silently: say how to restore them.
DO $sno$
DECLARE
    recreated oid[] := ARRAY['sno_generator'::regclass, 'sno_generator_backends'::regclass,
        'sno_generator_info()'::regprocedure, 'sno_generator_backends()'::regprocedure,
        'sno_generator_initialize(bool)'::regprocedure]::oid[];
    rules oid[] := ARRAY(SELECT oid FROM pg_rewrite
        WHERE ev_class IN ('sno_generator'::regclass, 'sno_generator_backends'::regclass));
    drops text;
    objects text;
    restore text;
BEGIN
    SELECT string_agg(DISTINCT CASE
               WHEN d.classid = 'pg_rewrite'::regclass THEN format('DROP %sVIEW %s;',
                   CASE v.relkind WHEN 'm' THEN 'MATERIALIZED ' ELSE '' END, r.ev_class::regclass)
               WHEN d.classid = 'pg_proc'::regclass THEN format('DROP FUNCTION %s;', d.objid::regprocedure)
               ELSE format('drop %s;', pg_describe_object(d.classid, d.objid, d.objsubid)) END, ' '),
           string_agg(DISTINCT CASE
               WHEN d.classid = 'pg_rewrite'::regclass THEN format('view %s', r.ev_class::regclass)
               ELSE pg_describe_object(d.classid, d.objid, d.objsubid) END, ', ')
      INTO drops, objects
      FROM pg_depend d
      LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
      LEFT JOIN pg_class v ON v.oid = r.ev_class
     WHERE d.refobjid = ANY (recreated)
       AND d.refclassid IN ('pg_class'::regclass, 'pg_proc'::regclass)
       AND d.deptype IN ('n', 'a')
       AND NOT (d.classid = 'pg_rewrite'::regclass AND d.objid = ANY (rules))
       AND NOT (d.classid = 'pg_proc'::regclass AND d.objid = ANY (recreated));
    IF drops IS NOT NULL THEN
        RAISE EXCEPTION 'cannot update extension sno: objects use its monitoring views or functions, which this update re-creates with new columns: %', objects
            USING ERRCODE = 'dependent_objects_still_exist',
                  DETAIL = 'In 0.2.0 the column leases of sno_generator and sno_generator_backends is named units_opened; sno_generator gains state_writes and state_write_waits; sno_generator_backends loses lease_time, lease_tick, lease_start and lease_end; sno_generator_initialize gains the argument take_over.',
                  HINT = format('Save the definitions of those objects, run %s then run ALTER EXTENSION sno UPDATE; again, then create them again with the new column names.', drops);
    END IF;

    -- Privileges that differ from what CREATE EXTENSION sno 0.1.0 gave: the statements that
    -- give them back on the re-created objects (run after the update, so that pg_dump keeps
    -- them as the administrator's own, not as the extension's initial privileges).
    WITH obj AS (
        SELECT c.oid, 'pg_class'::regclass AS cls, 'TABLE ' || c.oid::regclass AS target,
               c.relacl AS acl, acldefault('r', c.relowner) AS dflt, c.relowner AS owner
          FROM pg_class c WHERE c.oid = ANY (recreated)
        UNION ALL
        SELECT p.oid, 'pg_proc'::regclass, 'FUNCTION ' || CASE
                   WHEN p.oid = 'sno_generator_initialize(bool)'::regprocedure
                   THEN 'sno_generator_initialize(bool, bool)' ELSE p.oid::regprocedure::text END,
               p.proacl, acldefault('f', p.proowner), p.proowner
          FROM pg_proc p WHERE p.oid = ANY (recreated)
    ), changed AS (
        SELECT obj.*, coalesce(i.initprivs, obj.dflt) AS initial
          FROM obj LEFT JOIN pg_init_privs i ON i.objoid = obj.oid AND i.classoid = obj.cls AND i.objsubid = 0
         WHERE coalesce(obj.acl, obj.dflt)::text[] IS DISTINCT FROM coalesce(i.initprivs, obj.dflt)::text[]
    )
    SELECT string_agg(s, ' ' ORDER BY target, n, s) INTO restore
      FROM (
        SELECT ch.target, 1 AS n,
               format('REVOKE ALL ON %s FROM %s;', ch.target,
                      string_agg(DISTINCT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, ', ')) AS s
          FROM changed ch, aclexplode(ch.initial) a
         WHERE a.grantee <> ch.owner
         GROUP BY ch.target
        UNION ALL
        SELECT ch.target, 2,
               format('GRANT %s ON %s TO %s%s;', a.privilege_type, ch.target,
                      CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END,
                      CASE WHEN a.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END)
          FROM changed ch, aclexplode(coalesce(ch.acl, ch.dflt)) a
         WHERE a.grantee <> ch.owner
      ) stmts;
    IF restore IS NOT NULL THEN
        RAISE WARNING 'extension sno: this update re-creates monitoring views and functions whose privileges were changed since CREATE EXTENSION; they get 0.2.0''s default privileges'
            USING HINT = format('After ALTER EXTENSION sno UPDATE completes, run: %s', restore);
    END IF;
END
$sno$;

-- Hash support functions: not LEAKPROOF, as core's uuid_hash (LEAKPROOF is for functions the
-- planner may run on rows a security barrier would hide, and a hash needs no such pushdown).
ALTER FUNCTION sno_hash(sno) NOT LEAKPROOF;
ALTER FUNCTION sno_hash_extended(sno, int8) NOT LEAKPROOF;

-- Monitoring: the views are SELECT * over their functions, whose columns changed.
DROP VIEW sno_generator;
DROP VIEW sno_generator_backends;
DROP FUNCTION sno_generator_info();
DROP FUNCTION sno_generator_backends();
DROP FUNCTION sno_generator_initialize(bool);

CREATE  FUNCTION "sno_generator_backends"() RETURNS TABLE (
	"pid" INT,  /* i32 */
	"ids_issued" bigint,  /* i64 */
	"units_opened" bigint,  /* i64 */
	"full_unit_stalls" bigint,  /* i64 */
	"clock_waits" bigint  /* i64 */
)
STRICT VOLATILE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'generator_backends_wrapper';

CREATE  FUNCTION "sno_generator_info"() RETURNS TABLE (
	"partition" INT,  /* i32 */
	"partition_source" TEXT,  /* String */
	"system_identifier" TEXT,  /* String */
	"high_water" timestamp with time zone,  /* Option < TimestampWithTimeZone > */
	"safe_mark" timestamp with time zone,  /* Option < TimestampWithTimeZone > */
	"tick" INT,  /* i32 */
	"regressions" bigint,  /* i64 */
	"ids_issued" bigint,  /* i64 */
	"units_opened" bigint,  /* i64 */
	"full_unit_stalls" bigint,  /* i64 */
	"clock_waits" bigint,  /* i64 */
	"clock_wait_failures" bigint,  /* i64 */
	"active_backends" INT,  /* i32 */
	"state" TEXT,  /* String */
	"horizon" timestamp with time zone,  /* Option < TimestampWithTimeZone > */
	"state_writes" bigint,  /* i64 */
	"state_write_waits" bigint  /* i64 */
)
STRICT VOLATILE PARALLEL SAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'generator_info_wrapper';

CREATE  FUNCTION "sno_generator_initialize"(
	"force" bool DEFAULT false, /* bool */
	"take_over" bool DEFAULT false /* bool */
) RETURNS bool /* bool */
STRICT VOLATILE PARALLEL UNSAFE 
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'generator_initialize_wrapper';

CREATE  FUNCTION "sno_generator_lineage"() RETURNS TABLE (
	"partition" INT,  /* i32 */
	"used_here" bool,  /* bool */
	"ids_until" timestamp with time zone,  /* Option < TimestampWithTimeZone > */
	"tick" INT,  /* i32 */
	"other_tick_until" timestamp with time zone  /* Option < TimestampWithTimeZone > */
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c /* Rust */
AS 'MODULE_PATHNAME', 'sno_generator_lineage_wrapper';

-- As sql/sno_monitoring.sql, without its first sno_generator_initialize() (a database at
-- 0.1.0 has its state file).
CREATE VIEW sno_generator AS SELECT * FROM sno_generator_info();
COMMENT ON VIEW sno_generator IS 'the server''s sno generator: partition, timeline, counters';
GRANT SELECT ON sno_generator TO PUBLIC;

REVOKE ALL ON FUNCTION sno_generator_backends() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sno_generator_backends() TO pg_monitor;
CREATE VIEW sno_generator_backends AS SELECT * FROM sno_generator_backends();
COMMENT ON VIEW sno_generator_backends IS 'sno generator usage per backend (superusers and pg_monitor)';
GRANT SELECT ON sno_generator_backends TO pg_monitor;

CREATE VIEW sno_generator_lineage AS SELECT * FROM sno_generator_lineage();
COMMENT ON VIEW sno_generator_lineage IS 'partitions used in this data directory''s lineage, and up to when';
GRANT SELECT ON sno_generator_lineage TO PUBLIC;

REVOKE ALL ON FUNCTION sno_generator_initialize(bool, bool) FROM PUBLIC;
