-- sno 0.8.0 -> 0.8.1: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.8.1').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.8.1 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's operators and
-- functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh).
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema; every object of sno's is
-- named through @extschema@, and everything else is pg_catalog's.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- Finding 3 (review of 0.8.0): the public time-partition views wait for any role's lock -----------
-- sno_time_partitions and sno_time_partitioned_tables read each partition's bound with
-- pg_get_expr(relpartbound, partition), which opens the partition: they (and the exporter's
-- query, and the alert SnoTimePartitionMissing) waited for any session holding ACCESS EXCLUSIVE
-- on a partition of any table partitioned by a sno column, another role's or another session's
-- temporary one. New: sno_time_partition_bound (C, src/pg/time_partitions.rs: the bound read
-- from the catalog's node tree, no relation opened), which sno_time_partition_bounds now reads;
-- the views are unchanged (they read sno_time_partition_bounds). A new C symbol: this library
-- still serves a database at 0.8.0, whose sno_time_partition_bounds does not call it.
CREATE FUNCTION @extschema@.sno_time_partition_bound(bound pg_node_tree,
    OUT from_value @extschema@.sno, OUT to_value @extschema@.sno, OUT is_default boolean)
    AS 'MODULE_PATHNAME', 'sno_time_partition_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.sno_time_partition_bound(pg_node_tree) IS 'the bounds of a partition of a table partitioned by RANGE on a sno column, from its pg_class.relpartbound (NULL: MINVALUE or MAXVALUE), read without opening it';

CREATE OR REPLACE FUNCTION @extschema@.sno_time_partition_bounds(table_name regclass)
RETURNS TABLE (partition regclass, from_value @extschema@.sno, to_value @extschema@.sno, is_default boolean, detach_pending boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT c.oid::regclass, b.from_value, b.to_value, b.is_default, i.inhdetachpending
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    CROSS JOIN LATERAL @extschema@.sno_time_partition_bound(c.relpartbound) b
    WHERE i.inhparent = table_name AND c.relpartbound IS NOT NULL
      AND EXISTS (SELECT FROM pg_partitioned_table p
                  JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
                  WHERE p.partrelid = table_name AND p.partstrat = 'r' AND p.partnatts = 1
                    AND a.atttypid = '@extschema@.sno'::regtype)
$fn$;
COMMENT ON FUNCTION @extschema@.sno_time_partition_bounds(regclass) IS 'the partitions of a table partitioned by RANGE on a sno column, with their bounds (NULL: MINVALUE or MAXVALUE)';

