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

-- Finding 7 (review of 0.8.0): retention stops at a partition left pending detach -----------------
-- sno_drop_old_time_partitions failed with 55000 on an old partition whose DETACH PARTITION ...
-- CONCURRENTLY did not finish, and dropped none of the others, every run. Now it skips that
-- partition with a WARNING whose HINT finishes the detach (ALTER TABLE ... DETACH PARTITION
-- ... FINALIZE), and drops the others (why not finish it itself: the comment above the
-- procedure in sql/sno_time_partitions.sql).
CREATE OR REPLACE PROCEDURE @extschema@.sno_drop_old_time_partitions(table_name regclass, older_than timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    fn constant text := 'sno_drop_old_time_partitions';
    parent record;
    r record;
    olds regclass[];
    -- old partitions left pending detach, and their bounds (for the WARNINGs)
    pending regclass[];
    pending_from text[];
    pending_to text[];
    attempt int := 0;
    saved_timeout text := current_setting('lock_timeout');
BEGIN
    IF older_than IS NULL THEN
        RAISE EXCEPTION '%: older_than must not be NULL', fn USING ERRCODE = '22004';
    END IF;
    parent := @extschema@.sno_time_partition_parent(table_name, fn);
    PERFORM set_config('lock_timeout', @extschema@.sno_time_partition_lock_timeout(), true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE ONLY %I.%I IN ACCESS EXCLUSIVE MODE', parent.schema_name, parent.relname);
            olds := '{}';
            pending := '{}';
            pending_from := '{}';
            pending_to := '{}';
            FOR r IN SELECT b.partition, b.from_value, b.to_value, b.detach_pending
                     FROM @extschema@.sno_time_partition_bounds(table_name) b
                     WHERE NOT b.is_default AND b.to_value IS NOT NULL
                       AND b.to_value OPERATOR(@extschema@.<=) @extschema@.sno_lower_bound(older_than)
                     ORDER BY b.to_value
            LOOP
                IF r.detach_pending THEN
                    pending := pending || r.partition;
                    pending_from := pending_from || coalesce(@extschema@.sno_time(r.from_value)::text, 'MINVALUE');
                    pending_to := pending_to || @extschema@.sno_time(r.to_value)::text;
                    CONTINUE;
                END IF;
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', r.partition);
                olds := olds || r.partition;
                RAISE NOTICE '%: dropping % (from % to %)', fn, r.partition,
                    coalesce(@extschema@.sno_time(r.from_value)::text, 'MINVALUE'), @extschema@.sno_time(r.to_value);
            END LOOP;
            FOR k IN 1 .. cardinality(olds) LOOP
                EXECUTE format('ALTER TABLE %I.%I DETACH PARTITION %s', parent.schema_name, parent.relname, olds[k]);
                EXECUTE format('DROP TABLE %s', olds[k]);
            END LOOP;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempt := attempt + 1;
            IF attempt >= 5 THEN
                PERFORM set_config('lock_timeout', saved_timeout, true);
                RAISE EXCEPTION '%: could not lock table % and its old partitions after % tries of lock_timeout %', fn, table_name,
                    attempt, @extschema@.sno_time_partition_lock_timeout()
                    USING ERRCODE = '55P03',
                          DETAIL = format('Sessions holding locks on them: %s.', coalesce(array_to_string(
                              @extschema@.sno_time_partition_lock_holders(table_name || ARRAY(
                                  SELECT b.partition FROM @extschema@.sno_time_partition_bounds(table_name) b)), ', '), 'none left')),
                          HINT = 'Call it again when those sessions have ended their transactions.';
            END IF;
            PERFORM pg_sleep(0.1 * 2 ^ attempt);
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', saved_timeout, true);
    FOR k IN 1 .. cardinality(pending) LOOP
        RAISE WARNING '%: partition % (from % to %) is being detached: not dropped', fn, pending[k], pending_from[k], pending_to[k]
            USING DETAIL = 'A DETACH PARTITION ... CONCURRENTLY of it did not finish: queries no longer read it, and this procedure drops no partition someone is detaching. Once detached it is a table of its own, which it leaves alone.',
                  HINT = format('Finish its detach: ALTER TABLE %I.%I DETACH PARTITION %s FINALIZE;',
                                parent.schema_name, parent.relname, pending[k]);
    END LOOP;
END
$fn$;
COMMENT ON PROCEDURE @extschema@.sno_drop_old_time_partitions(regclass, timestamptz) IS 'drop the partitions of a table partitioned by RANGE on a sno column whose rows are all older than older_than (Citus''s drop_old_time_partitions for sno keys)';

-- The DETAIL of a call that gave up named a session seen idle -------------------------------------
-- sno_time_partition_lock_holders counted a session that pg_stat_activity showed idle (no
-- transaction) and pg_locks, read a moment later, holding a lock: a transaction begun since,
-- such as a busy insert's, not one that held up the call (tests/client/time_partitions.sh
-- failed on it now and then).
CREATE OR REPLACE FUNCTION @extschema@.sno_time_partition_lock_holders(relations regclass[], modes text[] DEFAULT NULL) RETURNS int[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT array_agg(DISTINCT l.pid ORDER BY l.pid)
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.granted AND l.pid <> pg_backend_pid() AND l.locktype = 'relation'
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.relation = ANY (relations::oid[]) AND (modes IS NULL OR l.mode = ANY (modes))
      AND coalesce(a.xact_start < statement_timestamp(), a.state IS NULL)
$fn$;
-- Leases (src/pg/generator/lease_registry.rs, sql/sno_leases.sql): the registry decides in a
-- worker's transaction of its own; its ledger and lease numbers are kept out of dumps, so that
-- a data-only restore of older rows cannot bring a pool back into use while leases granted
-- after the dump live on. The ledger starts from the rows as they are now, which are the
-- registry's own (0.8.0 wrote them in the callers' transactions, all committed here), at stamp
-- 1: rows of a dump taken before this update come back with stamp 0, behind the ledger.
ALTER TABLE sno_internal.lease_partitions ADD COLUMN stamp int8 NOT NULL DEFAULT 0;
UPDATE sno_internal.lease_partitions SET stamp = 1;
CREATE TABLE sno_internal.lease_ledger (
    partition int4 PRIMARY KEY,
    stamp int8 NOT NULL,
    leased_until timestamptz NOT NULL
);
COMMENT ON TABLE sno_internal.lease_ledger IS 'what the sno lease registry granted on each pool partition, kept out of dumps';
INSERT INTO sno_internal.lease_ledger (partition, stamp, leased_until)
    SELECT p.partition, 1,
           GREATEST(p.busy_until, (SELECT pg_catalog.max(l.expires_at) FROM sno_internal.leases l
                                   WHERE l.partition OPERATOR(pg_catalog.=) p.partition))
    FROM sno_internal.lease_partitions p;
CREATE SEQUENCE sno_internal.lease_ids AS int8;
COMMENT ON SEQUENCE sno_internal.lease_ids IS 'sno lease numbers, kept out of dumps';
SELECT pg_catalog.setval('sno_internal.lease_ids', pg_catalog.max(lease)) FROM sno_internal.leases HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0;

-- sno_lease_acquire and sno_lease_renew return SETOF sno_lease (one row): PostgreSQL evaluates
-- a function returning a composite once per column in SELECT (f(...)).*, which granted a lease
-- per column and showed a row of columns from different leases. The return type cannot change in
-- place: each is dropped and created again (new C symbols; 0.8.0's stay in the library for a
-- database not yet updated), with the privileges granted on it kept: the roles given EXECUTE
-- (its grant options too) are given it again. A view or a BEGIN ATOMIC function that calls one
-- of them stops the update (nothing of it ran): drop it, update, and create it again.
DO $update$
DECLARE
    f record;
    grantees oid[];
    grantable bool[];
BEGIN
    FOR f IN SELECT * FROM (VALUES
            (1, '@extschema@.sno_lease_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.int4)'),
            (2, '@extschema@.sno_lease_renew(pg_catalog.int8, pg_catalog.uuid, pg_catalog.interval)')) v (n, sig)
    LOOP
        SELECT pg_catalog.array_agg(a.grantee), pg_catalog.array_agg(a.is_grantable)
        INTO grantees, grantable
        FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
        WHERE p.oid OPERATOR(pg_catalog.=) f.sig::pg_catalog.regprocedure
          AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
          AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
          AND a.grantee OPERATOR(pg_catalog.<>) 0::pg_catalog.oid;
        EXECUTE pg_catalog.format('DROP FUNCTION %s', f.sig);
        IF f.n OPERATOR(pg_catalog.=) 1 THEN
            CREATE FUNCTION @extschema@."sno_lease_acquire"(
                "holder" TEXT,
                "ttl" interval,
                "sequences" INT DEFAULT 1024
            ) RETURNS SETOF @extschema@.sno_lease
            VOLATILE PARALLEL UNSAFE
            SET search_path TO pg_catalog, pg_temp
            LANGUAGE c
            AS 'MODULE_PATHNAME', 'lease_acquire_wrapper';
        ELSE
            CREATE FUNCTION @extschema@."sno_lease_renew"(
                "lease" bigint,
                "token" uuid,
                "ttl" interval
            ) RETURNS SETOF @extschema@.sno_lease
            VOLATILE PARALLEL UNSAFE
            SET search_path TO pg_catalog, pg_temp
            LANGUAGE c
            AS 'MODULE_PATHNAME', 'lease_renew_wrapper';
        END IF;
        EXECUTE pg_catalog.format('ALTER FUNCTION %s ROWS 1', f.sig);
        EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f.sig);
        FOR i IN 1 .. COALESCE(pg_catalog.cardinality(grantees), 0) LOOP
            EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s TO %I%s', f.sig,
                (SELECT r.rolname FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) grantees[i]),
                CASE WHEN grantable[i] THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
    END LOOP;
END
$update$;
COMMENT ON FUNCTION @extschema@.sno_lease_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.int4) IS 'a new sno partition lease: a reserved partition''s sequence slice and a window of time, for a generator outside the database';
COMMENT ON FUNCTION @extschema@.sno_lease_renew(pg_catalog.int8, pg_catalog.uuid, pg_catalog.interval) IS 'the same sno partition lease with a later end';
