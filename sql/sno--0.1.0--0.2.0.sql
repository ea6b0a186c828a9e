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

-- Security (0.4.1): during ALTER EXTENSION UPDATE the search_path is sno's schema then pg_temp
-- (pg_catalog searched first), and any role with CREATE on that schema (public, on clusters
-- created before PostgreSQL 15) can put operators and functions there. An expression whose best
-- match in pg_catalog is polymorphic or needs a coercion (oid[] || oid[], unnest(oid[]),
-- format(text, ...)) would call such a role's exact match as the superuser running the update.
-- So the path is pinned to pg_catalog and pg_temp (where PostgreSQL never looks for functions
-- or operators) before anything is evaluated, the DO block names sno's objects through
-- @extschema@, and the path PostgreSQL set is given back before the DDL below, which looks up
-- every name by its exact signature (pg_catalog first) and evaluates nothing.
-- (Up to 0.4.0 the DO block evaluated its DECLARE section, views || funcs among it, before
-- pinning the path.)
SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- Objects of a user's that depend on what is re-created here would make the DROPs fail with
-- a HINT (CASCADE) that cannot be followed inside ALTER EXTENSION: say what to do instead.
-- Privileges changed on what is re-created would be reset silently: say how to restore them.
-- Every name in these messages is schema-qualified, to be run from any session.
DO $sno$
DECLARE
    views oid[];
    funcs oid[];
    recreated oid[];
    changes text;
    drops text;
    objects text;
    others text;
    restore text;
BEGIN
    views := ARRAY['@extschema@.sno_generator'::regclass, '@extschema@.sno_generator_backends'::regclass]::oid[];
    funcs := ARRAY['@extschema@.sno_generator_info()'::regprocedure, '@extschema@.sno_generator_backends()'::regprocedure,
        '@extschema@.sno_generator_initialize(bool)'::regprocedure]::oid[];
    recreated := views || funcs;
    changes := 'In 0.2.0 the column leases of sno_generator and sno_generator_backends is named units_opened; sno_generator gains state_writes and state_write_waits; sno_generator_backends loses lease_time, lease_tick, lease_start and lease_end; sno_generator_initialize gains the argument take_over.';
    -- Everything that uses the re-created views (as relations or row types) and functions, and
    -- what uses that, and so on; views and functions can be dropped (the deepest first), the
    -- rest is named.
    -- UNION, not UNION ALL: a view has a dependency per column it uses, and paths multiply.
    WITH RECURSIVE walk(kind, oid, sub, depth) AS (
        SELECT 'rel', v, 0, 0 FROM unnest(views) v
        UNION
        SELECT 'proc', f, 0, 0 FROM unnest(funcs) f
        UNION
        -- A view is reached through its _RETURN rule; another rule is a leaf of its own.
        SELECT CASE WHEN d.classid = 'pg_rewrite'::regclass AND r.rulename = '_RETURN' THEN 'rel'
                    WHEN d.classid = 'pg_rewrite'::regclass THEN 'rule'
                    WHEN d.classid = 'pg_proc'::regclass THEN 'proc' ELSE d.classid::text END,
               CASE WHEN d.classid = 'pg_rewrite'::regclass AND r.rulename = '_RETURN' THEN r.ev_class ELSE d.objid END,
               CASE WHEN d.classid IN ('pg_rewrite'::regclass, 'pg_proc'::regclass) THEN 0 ELSE d.objsubid END,
               w.depth + 1
          FROM walk w
          LEFT JOIN pg_class c ON w.kind = 'rel' AND c.oid = w.oid
          LEFT JOIN pg_type t ON t.oid = c.reltype
          JOIN pg_depend d ON d.deptype = 'n' AND (
                   (w.kind = 'rel' AND d.refclassid = 'pg_class'::regclass AND d.refobjid = w.oid)
                OR (w.kind = 'rel' AND d.refclassid = 'pg_type'::regclass AND d.refobjid IN (c.reltype, t.typarray))
                OR (w.kind = 'proc' AND d.refclassid = 'pg_proc'::regclass AND d.refobjid = w.oid))
          LEFT JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
         WHERE w.depth < 32
           -- Before PostgreSQL 16 a view's own rule depends on the view: not a dependent.
           AND NOT (w.kind = 'rel' AND r.ev_class IS NOT DISTINCT FROM w.oid)
    ), found AS (
        SELECT w.kind, w.oid, w.sub, max(w.depth) AS depth,
               CASE WHEN w.kind = 'rel' AND c.relkind IN ('v', 'm')
                        THEN format('DROP %sVIEW %s;', CASE c.relkind WHEN 'm' THEN 'MATERIALIZED ' ELSE '' END, w.oid::regclass)
                    WHEN w.kind = 'proc'
                        THEN format('DROP %s %s;', CASE p.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE' ELSE 'FUNCTION' END,
                                    w.oid::regprocedure)
                    WHEN w.kind = 'rule' THEN format('DROP RULE %I ON %s;', ru.rulename, ru.ev_class::regclass) END AS stmt,
               CASE WHEN w.kind = 'rel' THEN pg_describe_object('pg_class'::regclass, w.oid, 0)
                    WHEN w.kind = 'proc' THEN pg_describe_object('pg_proc'::regclass, w.oid, 0)
                    WHEN w.kind = 'rule' THEN pg_describe_object('pg_rewrite'::regclass, w.oid, 0)
                    ELSE pg_describe_object(w.kind::oid, w.oid, w.sub) END AS descr
          FROM walk w
          LEFT JOIN pg_class c ON w.kind = 'rel' AND c.oid = w.oid
          LEFT JOIN pg_proc p ON w.kind = 'proc' AND p.oid = w.oid
          LEFT JOIN pg_rewrite ru ON w.kind = 'rule' AND ru.oid = w.oid
         WHERE NOT (w.kind IN ('rel', 'proc') AND w.oid = ANY (recreated))
         GROUP BY w.kind, w.oid, w.sub, c.relkind, p.prokind, ru.rulename, ru.ev_class
    )
    SELECT string_agg(stmt, ' ' ORDER BY depth DESC, stmt),
           string_agg(descr, ', ' ORDER BY descr),
           string_agg(descr, ', ' ORDER BY descr) FILTER (WHERE stmt IS NULL)
      INTO drops, objects, others
      FROM found;
    IF objects IS NOT NULL THEN
        RAISE EXCEPTION 'cannot update extension sno: objects use its monitoring views or functions, which this update re-creates with new columns: %', objects
            USING ERRCODE = 'dependent_objects_still_exist',
                  DETAIL = changes,
                  HINT = concat_ws(' ',
                      CASE WHEN others IS NOT NULL THEN format('Change %s so that it no longer uses them.', others) END,
                      CASE WHEN drops IS NOT NULL THEN format('Save the definitions of those objects, run %s then run ALTER EXTENSION sno UPDATE; again, then create them again with the new column names.', drops)
                           ELSE 'Then run ALTER EXTENSION sno UPDATE; again.' END);
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
                   WHEN p.proname = 'sno_generator_initialize'
                   THEN regexp_replace(p.oid::regprocedure::text, '\(boolean\)$', '(boolean, boolean)')
                   ELSE p.oid::regprocedure::text END,
               p.proacl, acldefault('f', p.proowner), p.proowner
          FROM pg_proc p WHERE p.oid = ANY (recreated)
    ), changed AS (
        SELECT obj.*, coalesce(i.initprivs, obj.dflt) AS initial
          FROM obj LEFT JOIN pg_init_privs i ON i.objoid = obj.oid AND i.classoid = obj.cls AND i.objsubid = 0
         -- The owner's own privileges aside (they change with PostgreSQL majors, e.g. MAINTAIN).
         WHERE ARRAY(SELECT row(a.grantee, a.privilege_type, a.is_grantable)::text
                       FROM aclexplode(coalesce(obj.acl, obj.dflt)) a WHERE a.grantee <> obj.owner ORDER BY 1)
               IS DISTINCT FROM
               ARRAY(SELECT row(a.grantee, a.privilege_type, a.is_grantable)::text
                       FROM aclexplode(coalesce(i.initprivs, obj.dflt)) a WHERE a.grantee <> obj.owner ORDER BY 1)
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

    -- Function bodies are not tracked as dependencies: name those that mention the re-created
    -- views or functions, so that their owner can check them for the renamed columns.
    SELECT string_agg(p.oid::regprocedure::text, ', ' ORDER BY p.oid::regprocedure::text) INTO others
      FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
     WHERE l.lanname NOT IN ('c', 'internal')
       AND p.prosrc ~* '\msno_generator(_backends|_info|_initialize)?\M'
       AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                          AND d.deptype = 'e');
    IF others IS NOT NULL THEN
        RAISE WARNING 'extension sno: the bodies of % mention its monitoring views or functions, whose columns this update changes', others
            USING DETAIL = changes,
                  HINT = 'Where those bodies use leases or the lease_* columns, change them to the 0.2.0 columns.';
    END IF;
END
$sno$;

-- The path PostgreSQL set for the script (sno's schema, then pg_temp): the DDL below creates
-- sno's objects there.
SELECT pg_catalog.set_config('search_path', '@extschema@, pg_temp', true);

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
