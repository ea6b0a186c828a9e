-- Time-partitioned tables keyed by sno (since 0.7.0): the casts between sno and timestamptz
-- (which Citus's create_time_partitions / drop_old_time_partitions / time_partitions need),
-- the views sno_time_partitions and sno_time_partitioned_tables (which wait for no lock: they
-- read each partition's bound from the catalog without opening it, since 0.8.1), and for plain
-- PostgreSQL sno_create_time_partitions and the procedure sno_drop_old_time_partitions, run on
-- a schedule (pg_cron). Manual: doc/time-partitions.md. Tests:
-- pgrx-tests/sql/sno_time_partitions.sql (golden), tests/client/time_partitions.sh (two
-- sessions, locks, a pending detach, pg_cron), tests/client/citus_states.sh.
--
-- pgrx generates nothing of this file. One function is C, declared here by hand:
-- sno_time_partition_bound (src/pg/time_partitions.rs), which reads a bound from the catalog's
-- node tree; SQL has only pg_get_expr for it, which opens the partition. Why PL/pgSQL and not
-- Rust for the rest: what these functions decide is calendar arithmetic in the session's time
-- zone (timestamptz + interval, date_trunc), which is PostgreSQL's own, and DDL with locks,
-- lock_timeout and retries in subtransactions, which PL/pgSQL says plainly; the sno values they
-- need (sno_min, sno_time, sno_lower_bound) are the type's C functions. Every function pins
-- search_path to pg_catalog and pg_temp and names sno's objects through @extschema@ (operators
-- as OPERATOR(@extschema@.<)), so that no object another role creates changes what they do.

-- Casts -----------------------------------------------------------------------------------------
-- Explicit only: `id::timestamptz` is sno_time(id) (the start of the ID's 4 ms unit) and
-- `t::sno` is sno_min(t) (the smallest ID of the unit holding t), so a partition bound written
-- `t::sno` holds exactly the IDs made from t on. Neither is implicit nor assignment: `id < now()`
-- stays an error (compare sno_time(id), or id with sno_min(t)), as uuid and timestamptz never
-- meet silently. Citus's time-partition functions require a cast both ways in pg_cast.
CREATE CAST (sno AS timestamptz) WITH FUNCTION sno_time(sno);
CREATE CAST (timestamptz AS sno) WITH FUNCTION sno_min(timestamptz);

-- The partitions of one table ---------------------------------------------------------------------
-- sno_time_partition_bound(bound): a partition's bounds read from its pg_class.relpartbound
-- (from_value and to_value, NULL: MINVALUE and MAXVALUE; is_default), in C
-- (src/pg/time_partitions.rs): the catalog's node tree parsed, no relation opened. Since 0.8.1;
-- before, pg_get_expr(relpartbound, partition) printed each bound, and it opens the partition
-- (ACCESS SHARE), so the views below waited for any session holding ACCESS EXCLUSIVE on any
-- partition of any such table: another role's, locked in an open transaction, or another
-- session's temporary one.
CREATE FUNCTION sno_time_partition_bound(bound pg_node_tree,
    OUT from_value sno, OUT to_value sno, OUT is_default boolean)
    AS 'MODULE_PATHNAME', 'sno_time_partition_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_time_partition_bound(pg_node_tree) IS 'the bounds of a partition of a table partitioned by RANGE on a sno column, from its pg_class.relpartbound (NULL: MINVALUE or MAXVALUE), read without opening it';

-- sno_time_partition_bounds(table): its partitions with their bounds, through pg_inherits' index
-- on the parent: the cost is that of this table's partitions, whatever other tables have. It
-- reads catalog rows only and locks no table. A table not partitioned by RANGE on one sno
-- column has none: that check does not depend on the rows, so it runs first, once (a one-time
-- filter), and no other table's bound is ever read (sno_time_partition_bound would refuse it).
CREATE FUNCTION sno_time_partition_bounds(table_name regclass)
RETURNS TABLE (partition regclass, from_value sno, to_value sno, is_default boolean, detach_pending boolean)
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
COMMENT ON FUNCTION sno_time_partition_bounds(regclass) IS 'the partitions of a table partitioned by RANGE on a sno column, with their bounds (NULL: MINVALUE or MAXVALUE)';

-- The partitions of every table partitioned by RANGE on one sno column --------------------------
CREATE VIEW sno_time_partitions AS
SELECT p.partrelid::pg_catalog.regclass AS parent_table,
       a.attname AS partition_column,
       b.partition,
       b.from_value,
       b.to_value,
       @extschema@.sno_time(b.from_value) AS from_time,
       @extschema@.sno_time(b.to_value) AS to_time,
       b.is_default,
       b.detach_pending
FROM pg_catalog.pg_partitioned_table p
JOIN pg_catalog.pg_attribute a
    ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid
   AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]
CROSS JOIN LATERAL @extschema@.sno_time_partition_bounds(p.partrelid::pg_catalog.regclass) b
WHERE p.partstrat OPERATOR(pg_catalog.=) 'r'
  AND p.partnatts OPERATOR(pg_catalog.=) 1
  AND a.atttypid OPERATOR(pg_catalog.=) '@extschema@.sno'::pg_catalog.regtype;
COMMENT ON VIEW sno_time_partitions IS 'the partitions of tables partitioned by RANGE on a sno column: bounds as IDs and as times (NULL: MINVALUE, MAXVALUE or the default partition)';
GRANT SELECT ON sno_time_partitions TO PUBLIC;

-- One row per such table (not temporary, not itself a partition): how far ahead of now its
-- partitions reach without a gap (what the alert SnoTimePartitionMissing reads,
-- doc/monitoring.md). A partition being detached (DETACH ... CONCURRENTLY not finished) counts
-- as none.
CREATE VIEW sno_time_partitioned_tables AS
WITH tables AS (
    SELECT p.partrelid
    FROM pg_catalog.pg_partitioned_table p
    JOIN pg_catalog.pg_class t ON t.oid OPERATOR(pg_catalog.=) p.partrelid
    JOIN pg_catalog.pg_attribute a
        ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid
       AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]
    WHERE p.partstrat OPERATOR(pg_catalog.=) 'r'
      AND p.partnatts OPERATOR(pg_catalog.=) 1
      AND a.atttypid OPERATOR(pg_catalog.=) '@extschema@.sno'::pg_catalog.regtype
      AND t.relpersistence OPERATOR(pg_catalog.<>) 't'
      AND NOT t.relispartition
), parts AS (
    -- each partition, and the run of partitions following each other it belongs to (a run
    -- begins at the first partition and after each gap)
    SELECT t.partrelid, b.from_value, b.to_value, b.is_default, b.detach_pending,
           pg_catalog.sum(CASE WHEN b.from_value OPERATOR(@extschema@.=) b.prev_to THEN 0 ELSE 1 END)
               OVER (PARTITION BY t.partrelid ORDER BY b.from_value NULLS FIRST) AS run
    FROM tables t
    CROSS JOIN LATERAL (
        SELECT s.from_value, s.to_value, s.is_default, s.detach_pending,
               pg_catalog.lag(s.to_value) OVER (ORDER BY s.from_value NULLS FIRST) AS prev_to
        FROM @extschema@.sno_time_partition_bounds(t.partrelid::pg_catalog.regclass) s
        WHERE NOT s.is_default AND NOT s.detach_pending
    ) b
)
SELECT t.partrelid::pg_catalog.regclass AS parent_table,
       (SELECT pg_catalog.count(*) FROM @extschema@.sno_time_partition_bounds(t.partrelid::pg_catalog.regclass) s
        WHERE NOT s.is_default) AS partitions,
       EXISTS (SELECT FROM @extschema@.sno_time_partition_bounds(t.partrelid::pg_catalog.regclass) s
               WHERE s.is_default) AS has_default,
       @extschema@.sno_time(n.from_value) AS newest_from,
       @extschema@.sno_time(n.to_value) AS newest_to,
       pg_catalog.age(@extschema@.sno_time(n.to_value), @extschema@.sno_time(n.from_value)) AS newest_interval,
       c.covered_until
FROM tables t
LEFT JOIN LATERAL (
    SELECT r.from_value, r.to_value FROM parts r
    WHERE r.partrelid OPERATOR(pg_catalog.=) t.partrelid AND r.from_value IS NOT NULL AND r.to_value IS NOT NULL
    ORDER BY r.from_value DESC LIMIT 1
) n ON true
LEFT JOIN LATERAL (
    -- NULL: no partition holds now; 'infinity': a MAXVALUE partition is reached
    SELECT CASE WHEN pg_catalog.bool_or(r.to_value IS NULL) THEN 'infinity'::pg_catalog.timestamptz
                ELSE @extschema@.sno_time(@extschema@.max(r.to_value)) END AS covered_until
    FROM parts r
    WHERE r.partrelid OPERATOR(pg_catalog.=) t.partrelid
      AND r.run OPERATOR(pg_catalog.=) (
          SELECT h.run FROM parts h
          WHERE h.partrelid OPERATOR(pg_catalog.=) t.partrelid
            AND (h.from_value IS NULL OR h.from_value OPERATOR(@extschema@.<=) @extschema@.sno_lower_bound(pg_catalog.now()))
            AND (h.to_value IS NULL OR h.to_value OPERATOR(@extschema@.>) @extschema@.sno_lower_bound(pg_catalog.now())))
) c ON true;
COMMENT ON VIEW sno_time_partitioned_tables IS 'tables partitioned by RANGE on a sno column: partitions, default partition, the newest partition and until when partitions follow each other from now on without a gap (covered_until, NULL when none holds now)';
GRANT SELECT ON sno_time_partitioned_tables TO PUBLIC;

-- Shared checks ---------------------------------------------------------------------------------
-- sno_time_partition_parent(table, caller): the table's schema, name and owner, after checking
-- that it is partitioned by RANGE on one sno column and that the caller may change it. Raises
-- otherwise. EXECUTE stays PUBLIC's: the two functions below call it as their caller, and it
-- reveals only what pg_class does.
CREATE FUNCTION sno_time_partition_parent(table_name regclass, caller text,
    OUT schema_name name, OUT relname name, OUT owner regrole)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    strat "char";
    natts int2;
    coltype regtype;
    colname name;
BEGIN
    IF table_name IS NULL THEN
        RAISE EXCEPTION '%: table_name must not be NULL', caller USING ERRCODE = '22004';
    END IF;
    SELECT n.nspname, c.relname, c.relowner::regrole INTO schema_name, relname, owner
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = table_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: table with OID % does not exist', caller, table_name::oid USING ERRCODE = '42P01';
    END IF;
    SELECT p.partstrat, p.partnatts, a.atttypid::regtype, a.attname INTO strat, natts, coltype, colname
    FROM pg_partitioned_table p
    LEFT JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
    WHERE p.partrelid = table_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: table % is not partitioned', caller, table_name
            USING ERRCODE = '42809',
                  HINT = 'Make it a table partitioned by its sno key: CREATE TABLE ... PARTITION BY RANGE (id).';
    ELSIF strat <> 'r' OR natts <> 1 OR coltype IS NULL OR coltype <> '@extschema@.sno'::regtype THEN
        RAISE EXCEPTION '%: table % is not partitioned by RANGE on one sno column', caller, table_name
            USING ERRCODE = '42809',
                  DETAIL = format('It is partitioned by %s on %s.',
                      CASE strat WHEN 'r' THEN 'RANGE' WHEN 'l' THEN 'LIST' WHEN 'h' THEN 'HASH' ELSE strat::text END,
                      CASE WHEN natts = 1 AND colname IS NOT NULL THEN format('%I (%s)', colname, coltype)
                           ELSE natts || ' columns or expressions' END),
                  HINT = 'These functions keep tables partitioned by RANGE on one sno column; for a date or timestamp column use Citus''s create_time_partitions or a partition manager.';
    END IF;
    IF NOT pg_has_role(owner, 'USAGE') THEN
        RAISE EXCEPTION '%: must be the owner of table % (owned by %)', caller, table_name, owner
            USING ERRCODE = '42501',
                  HINT = format('Call it as %s: run SET ROLE %s; first (as a member of that role), then call it again.', owner, owner);
    END IF;
    IF to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL THEN
        IF EXISTS (SELECT FROM pg_catalog.pg_dist_partition d WHERE d.logicalrelid = table_name) THEN
            RAISE EXCEPTION '%: table % is a Citus table', caller, table_name
                USING ERRCODE = '0A000',
                      HINT = CASE WHEN caller = 'sno_create_time_partitions'
                          THEN 'Use Citus''s create_time_partitions with the same arguments: it takes sno columns through sno''s casts.'
                          ELSE 'Use Citus''s drop_old_time_partitions with the same arguments: it takes sno columns through sno''s casts.' END;
        END IF;
    END IF;
END
$fn$;

-- sno_time_partition_lock_timeout(): the lock_timeout of one attempt: the session's if it is
-- set and shorter, else 1 s. Inserts queue behind a DDL statement waiting for its lock, so the
-- wait is kept short and retried instead.
CREATE FUNCTION sno_time_partition_lock_timeout() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE WHEN pg_catalog.current_setting('lock_timeout')::pg_catalog.interval OPERATOR(pg_catalog.>) '0'::pg_catalog.interval
             AND pg_catalog.current_setting('lock_timeout')::pg_catalog.interval OPERATOR(pg_catalog.<) '1 s'::pg_catalog.interval
       THEN pg_catalog.current_setting('lock_timeout') ELSE '1s' END;

-- sno_time_partition_lock_holders(relations, modes): the sessions holding a lock on any of them
-- (in one of the modes, NULL: any) whose transactions began before this statement (or whose
-- start this role may not see: no state shown): not the inserts that came and went behind its
-- waits. pg_stat_activity and pg_locks are read one after the other, so a session seen idle
-- (no transaction) in the first and holding a lock in the second began that transaction since:
-- not one (0.8.1; 0.8.0 counted it, and named a busy inserting session now and then).
-- For the DETAIL of a call that gave up.
CREATE FUNCTION sno_time_partition_lock_holders(relations regclass[], modes text[] DEFAULT NULL) RETURNS int[]
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

-- sno_create_time_partitions ---------------------------------------------------------------------
-- Citus's create_time_partitions for plain PostgreSQL and sno keys: the partitions of each
-- partition_interval from the period holding start_from to the one holding end_at (exclusive
-- of a period starting at end_at), periods cut in the session's time zone, starting from the
-- table's earliest partition when it has one, else from start_from truncated (minute, hour,
-- day, week, quarter, month or year by the interval, as Citus does). Bounds: sno_min of each
-- period's start. Names: table_pYYYY_MM_DD... as Citus and pg_partman name them. Returns true
-- when it created at least one.
CREATE FUNCTION sno_create_time_partitions(
    table_name regclass,
    partition_interval interval,
    end_at timestamptz,
    start_from timestamptz DEFAULT pg_catalog.now())
RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    fn constant text := 'sno_create_time_partitions';
    parent record;
    col name;
    default_part regclass;
    -- the table's partitions (the default one aside), in the order of their bounds
    p_part regclass[];
    p_from @extschema@.sno[];
    p_to @extschema@.sno[];
    p_pending boolean[];
    n int;
    j int := 1;
    pivot timestamptz;
    cur timestamptz;
    nxt timestamptz;
    lo @extschema@.sno;
    hi @extschema@.sno;
    steps int := 0;
    usual interval;
    hint text;
    plan_from timestamptz[] := '{}';
    plan_to timestamptz[] := '{}';
    plan_name text[] := '{}';
    name_format text;
    max_len int := current_setting('max_identifier_length')::int;
    suffix text;
    part_name text;
    tag text;
    taken int;
    tablespace_clause text := '';
    in_default bigint;
    last_row @extschema@.sno;
    resume timestamptz;
    attempt int := 0;
    saved_timeout text := current_setting('lock_timeout');
BEGIN
    IF partition_interval IS NULL OR end_at IS NULL OR start_from IS NULL THEN
        RAISE EXCEPTION '%: partition_interval, end_at and start_from must not be NULL', fn USING ERRCODE = '22004';
    END IF;
    IF NOT isfinite(partition_interval) OR NOT isfinite(end_at) OR NOT isfinite(start_from) THEN
        RAISE EXCEPTION '%: partition_interval, end_at and start_from must be finite', fn USING ERRCODE = '22023';
    END IF;
    IF start_from >= end_at THEN
        RAISE EXCEPTION '%: start_from (%) must be earlier than end_at (%)', fn, start_from, end_at USING ERRCODE = '22023';
    END IF;
    IF start_from + partition_interval <= start_from THEN
        RAISE EXCEPTION '%: partition_interval must be positive, not %', fn, partition_interval USING ERRCODE = '22023';
    END IF;
    IF date_part('microseconds', partition_interval)::bigint % 4000 <> 0 THEN
        RAISE EXCEPTION '%: partition_interval % is not a whole number of 4 ms units', fn, partition_interval
            USING ERRCODE = '22023',
                  DETAIL = 'A sno ID''s time is counted in 4 ms units: a period boundary inside a unit cannot be a partition bound.';
    END IF;
    parent := @extschema@.sno_time_partition_parent(table_name, fn);

    -- One caller at a time per table (a second waits, then sees the first's partitions). SHARE
    -- UPDATE EXCLUSIVE does not conflict with INSERT, UPDATE, DELETE or SELECT; ONLY: not on
    -- the partitions, which a VACUUM or ANALYZE may hold.
    PERFORM set_config('lock_timeout', @extschema@.sno_time_partition_lock_timeout(), true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE ONLY %I.%I IN SHARE UPDATE EXCLUSIVE MODE', parent.schema_name, parent.relname);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempt := attempt + 1;
            IF attempt >= 5 THEN
                PERFORM set_config('lock_timeout', saved_timeout, true);
                RAISE EXCEPTION '%: could not lock table % after % tries of lock_timeout %', fn, table_name, attempt,
                    @extschema@.sno_time_partition_lock_timeout()
                    USING ERRCODE = '55P03',
                          DETAIL = format('Sessions holding locks on it: %s.', coalesce(array_to_string(
                              @extschema@.sno_time_partition_lock_holders(ARRAY[table_name], ARRAY['ShareUpdateExclusiveLock',
                                  'ShareLock', 'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock']), ', '), 'none left')),
                          HINT = 'Call it again when those sessions have ended their transactions.';
            END IF;
            PERFORM pg_sleep(0.1 * 2 ^ attempt);
        END;
    END LOOP;

    SELECT a.attname INTO col FROM pg_partitioned_table p
    JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
    WHERE p.partrelid = table_name;
    SELECT array_agg(b.partition ORDER BY b.from_value NULLS FIRST), array_agg(b.from_value ORDER BY b.from_value NULLS FIRST),
           array_agg(b.to_value ORDER BY b.from_value NULLS FIRST), array_agg(b.detach_pending ORDER BY b.from_value NULLS FIRST)
    INTO p_part, p_from, p_to, p_pending
    FROM @extschema@.sno_time_partition_bounds(table_name) b WHERE NOT b.is_default;
    n := coalesce(cardinality(p_part), 0);
    SELECT b.partition INTO default_part FROM @extschema@.sno_time_partition_bounds(table_name) b WHERE b.is_default;

    -- The first period: from the earliest partition with both bounds, stepping by the interval
    -- towards start_from; else start_from truncated by the interval's size.
    FOR k IN 1 .. n LOOP
        IF p_from[k] IS NOT NULL AND p_to[k] IS NOT NULL THEN
            pivot := @extschema@.sno_time(p_from[k]);
            EXIT;
        END IF;
    END LOOP;
    IF pivot IS NULL THEN
        cur := date_trunc(CASE
            WHEN partition_interval < interval '1 hour' THEN 'minute'
            WHEN partition_interval < interval '1 day' THEN 'hour'
            WHEN partition_interval < interval '1 week' THEN 'day'
            WHEN partition_interval < interval '1 month' THEN 'week'
            WHEN partition_interval = interval '3 months' THEN 'quarter'
            WHEN partition_interval < interval '1 year' THEN 'month'
            ELSE 'year' END, start_from);
    ELSE
        cur := pivot;
        -- Citus goes forward to the first period starting at or after start_from; this covers
        -- the period holding start_from (one step back when start_from is inside one).
        WHILE cur + partition_interval <= start_from LOOP
            IF cur + partition_interval <= cur OR steps >= 1000000 THEN
                RAISE EXCEPTION '%: cannot step from % to % by %', fn, pivot, start_from, partition_interval
                    USING ERRCODE = '22023',
                          DETAIL = 'The interval does not move time forward here (mixed signs), or start_from is more than 1,000,000 intervals from the table''s earliest partition.';
            END IF;
            cur := cur + partition_interval;
            steps := steps + 1;
        END LOOP;
        WHILE cur > start_from LOOP
            IF cur - partition_interval >= cur OR steps >= 1000000 THEN
                RAISE EXCEPTION '%: cannot step from % to % by %', fn, pivot, start_from, partition_interval
                    USING ERRCODE = '22023',
                          DETAIL = 'The interval does not move time forward here (mixed signs), or start_from is more than 1,000,000 intervals from the table''s earliest partition.';
            END IF;
            cur := cur - partition_interval;
            steps := steps + 1;
        END LOOP;
    END IF;

    name_format := CASE
        WHEN partition_interval = interval '3 months' THEN 'YYYY"q"Q'
        WHEN partition_interval = interval '1 week' THEN 'IYYY"w"IW'
        ELSE 'YYYY'
            || CASE WHEN partition_interval < interval '1 year' THEN '_MM' ELSE '' END
            || CASE WHEN partition_interval < interval '1 month' THEN '_DD' ELSE '' END
            || CASE WHEN partition_interval < interval '1 day' THEN '_HH24MI' ELSE '' END
            || CASE WHEN partition_interval < interval '1 minute' THEN 'SS' ELSE '' END END;

    -- The plan: every period up to end_at that no partition has exactly, the periods and the
    -- partitions walked together in order; a partition that overlaps a period without being
    -- it is an error (nothing is created).
    WHILE cur < end_at LOOP
        nxt := cur + partition_interval;
        IF nxt <= cur THEN
            RAISE EXCEPTION '%: partition_interval % does not move time forward from %', fn, partition_interval, cur
                USING ERRCODE = '22023', HINT = 'Give an interval whose fields are not of mixed signs.';
        END IF;
        lo := @extschema@.sno_min(cur);
        hi := @extschema@.sno_min(nxt);
        WHILE j <= n AND p_to[j] IS NOT NULL AND p_to[j] OPERATOR(@extschema@.<=) lo LOOP
            j := j + 1;
        END LOOP;
        IF j <= n AND (p_from[j] IS NULL OR p_from[j] OPERATOR(@extschema@.<) hi) THEN
            IF p_from[j] OPERATOR(@extschema@.=) lo AND p_to[j] OPERATOR(@extschema@.=) hi AND NOT p_pending[j] THEN
                cur := nxt;
                CONTINUE;
            END IF;
            IF p_pending[j] THEN
                hint := format('Finish its detach first: ALTER TABLE %I.%I DETACH PARTITION %s FINALIZE;',
                               parent.schema_name, parent.relname, p_part[j]);
            ELSIF p_from[j] IS NULL THEN
                -- the first period of these that starts at or after its end
                resume := cur;
                WHILE resume < @extschema@.sno_time(p_to[j]) AND steps < 1000000 LOOP
                    resume := resume + partition_interval;
                    steps := steps + 1;
                END LOOP;
                hint := format('Start the periods after it: start_from => %L.', resume);
            ELSIF p_to[j] IS NULL THEN
                hint := format('End the periods before it: end_at => %L.', cur);
            ELSE
                SELECT mode() WITHIN GROUP (ORDER BY age(@extschema@.sno_time(t), @extschema@.sno_time(f))) INTO usual
                FROM unnest(p_from, p_to) AS u(f, t) WHERE f IS NOT NULL AND t IS NOT NULL;
                IF usual IS DISTINCT FROM partition_interval THEN
                    hint := format('Give the interval the table''s partitions were made with: partition_interval => %L.', usual);
                ELSE
                    hint := format('Call it in the time zone the table''s partitions were made in; or, if partition %s is one of its own, detach it: ALTER TABLE %I.%I DETACH PARTITION %s;',
                                   p_part[j], parent.schema_name, parent.relname, p_part[j]);
                END IF;
            END IF;
            RAISE EXCEPTION '%: partition % (from % to %) overlaps the period from % to % without being it',
                fn, p_part[j], coalesce(@extschema@.sno_time(p_from[j])::text, 'MINVALUE'),
                coalesce(@extschema@.sno_time(p_to[j])::text, 'MAXVALUE'), cur, nxt
                USING ERRCODE = '42P17',
                      DETAIL = format('Periods of %s are counted from %s, in time zone %s.', partition_interval,
                          coalesce('the table''s earliest partition (from ' || pivot || ')', 'start_from truncated'),
                          current_setting('TimeZone')),
                      HINT = hint;
        END IF;
        -- table_pSUFFIX, the table's name shortened to fit max_identifier_length bytes; a name
        -- another relation or type already has (another role's, in a schema it may create in)
        -- gets _1, _2, ... rather than failing the call.
        suffix := to_char(cur, name_format);
        taken := 0;
        LOOP
            tag := '_p' || suffix || CASE WHEN taken > 0 THEN '_' || taken ELSE '' END;
            part_name := parent.relname;
            WHILE octet_length(part_name || tag) > max_len LOOP
                part_name := left(part_name, -1);
            END LOOP;
            part_name := part_name || tag;
            EXIT WHEN to_regclass(format('%I.%I', parent.schema_name, part_name)) IS NULL
                  AND to_regtype(format('%I.%I', parent.schema_name, part_name)) IS NULL
                  AND NOT part_name = ANY (plan_name);
            taken := taken + 1;
        END LOOP;
        plan_from := plan_from || cur;
        plan_to := plan_to || nxt;
        plan_name := plan_name || part_name;
        IF cardinality(plan_name) > 10000 THEN
            RAISE EXCEPTION '%: more than 10,000 partitions of % up to %', fn, partition_interval, end_at
                USING ERRCODE = '54000',
                      HINT = 'Give a larger partition_interval or an earlier end_at.';
        END IF;
        cur := nxt;
    END LOOP;
    IF cardinality(plan_name) = 0 THEN
        PERFORM set_config('lock_timeout', saved_timeout, true);
        RETURN false;
    END IF;

    SELECT CASE WHEN c.reltablespace <> 0 THEN format(' TABLESPACE %I', t.spcname) ELSE '' END
    INTO tablespace_clause
    FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.oid = table_name;

    -- All of it in one attempt (a subtransaction): each new table created on its own, then
    -- attached (ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on the table, where CREATE TABLE
    -- ... PARTITION OF takes ACCESS EXCLUSIVE). With a default partition, the table is locked
    -- ACCESS EXCLUSIVE first, so that no insert is routed by the partitions of before, and a
    -- default partition holding rows of a new period is an error (moving rows would fire the
    -- table's foreign-key actions and triggers, and a logical subscriber would see them
    -- deleted). A lock not had within lock_timeout undoes the attempt and releases everything
    -- before the next one.
    attempt := 0;
    LOOP
        BEGIN
            IF default_part IS NOT NULL THEN
                EXECUTE format('LOCK TABLE ONLY %I.%I IN ACCESS EXCLUSIVE MODE', parent.schema_name, parent.relname);
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', default_part);
                EXECUTE format('SELECT count(*), @extschema@.max(%1$I) FROM %2$s WHERE %1$I OPERATOR(@extschema@.>=) $1 AND %1$I OPERATOR(@extschema@.<) $2',
                               col, default_part)
                    INTO in_default, last_row USING @extschema@.sno_min(plan_from[1]), @extschema@.sno_min(plan_to[cardinality(plan_to)]);
                IF in_default > 0 THEN
                    resume := plan_to[1];
                    FOR k IN 1 .. cardinality(plan_to) LOOP
                        IF @extschema@.sno_min(plan_from[k]) OPERATOR(@extschema@.<=) last_row THEN
                            resume := plan_to[k];
                        END IF;
                    END LOOP;
                    RAISE EXCEPTION '%: the default partition % holds % rows of the periods to make, the last in the period ending %',
                        fn, default_part, in_default, resume
                        USING ERRCODE = '55000',
                              DETAIL = 'Attaching a partition for them would need them moved out of the default partition, which this function does not do: a move deletes rows from the table (firing its foreign-key actions and triggers, and sent as deletions to logical subscribers).',
                              HINT = format('Make the partitions of the periods after them: call it with start_from => %L, end_at => %L. To give those rows partitions of their own, move them as "A default partition" in doc/time-partitions.md says.',
                                            resume, greatest(end_at, resume + partition_interval));
                END IF;
            END IF;
            FOR k IN 1 .. cardinality(plan_name) LOOP
                lo := @extschema@.sno_min(plan_from[k]);
                hi := @extschema@.sno_min(plan_to[k]);
                EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS)%s',
                    parent.schema_name, plan_name[k], parent.schema_name, parent.relname, tablespace_clause);
                IF parent.owner::oid <> (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN
                    EXECUTE format('ALTER TABLE %I.%I OWNER TO %s', parent.schema_name, plan_name[k], parent.owner);
                END IF;
                EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                    parent.schema_name, parent.relname, parent.schema_name, plan_name[k], lo::text, hi::text);
            END LOOP;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempt := attempt + 1;
            IF attempt >= 5 THEN
                PERFORM set_config('lock_timeout', saved_timeout, true);
                RAISE EXCEPTION '%: could not lock table % and its default partition % after % tries of lock_timeout %',
                    fn, table_name, default_part, attempt, @extschema@.sno_time_partition_lock_timeout()
                    USING ERRCODE = '55P03',
                          DETAIL = format('Sessions holding locks on them: %s.', coalesce(array_to_string(
                              @extschema@.sno_time_partition_lock_holders(ARRAY[table_name, default_part]), ', '), 'none left')),
                          HINT = 'Call it again when those sessions have ended their transactions.';
            END IF;
            PERFORM pg_sleep(0.1 * 2 ^ attempt);
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', saved_timeout, true);
    RETURN true;
END
$fn$;
COMMENT ON FUNCTION sno_create_time_partitions(regclass, interval, timestamptz, timestamptz) IS 'create the missing partitions of a table partitioned by RANGE on a sno column, one per partition_interval up to end_at (Citus''s create_time_partitions for sno keys)';

-- sno_drop_old_time_partitions --------------------------------------------------------------------
-- Drops every partition whose rows are all older than older_than (upper bound at or below
-- sno_min(older_than)), the default partition never. Dropping a partition takes ACCESS
-- EXCLUSIVE on the table (DETACH ... CONCURRENTLY cannot run in a procedure): one attempt locks
-- the table (ONLY: not its partitions), then each old partition, each within lock_timeout,
-- detaches them (which checks that no row of another table refers to theirs) and drops them; a
-- lock not had undoes the attempt, releases everything, waits and tries again (5 tries).
--
-- An old partition whose DETACH ... CONCURRENTLY did not finish (pg_inherits.inhdetachpending:
-- cancelled, or its session ended) is skipped, with a WARNING whose HINT finishes that detach
-- (ALTER TABLE ... DETACH PARTITION ... FINALIZE); the others are dropped (since 0.8.1; before,
-- plain DETACH failed on it with 55000 and every run dropped nothing). Not finished here:
-- FINALIZE is allowed in a transaction, but it waits for every transaction of the database
-- older than its snapshot, and inserts into the table queue behind this procedure's ACCESS
-- EXCLUSIVE lock with snapshots of their own: each run would wait for transactions waiting for
-- it, until lock_timeout (or a deadlock), and fail. Not dropped either: someone chose to detach
-- that partition, so what becomes of its rows (kept as a table of its own, archived, dropped)
-- is theirs to decide, and the detached table is no partition that a later run would drop.
CREATE PROCEDURE sno_drop_old_time_partitions(table_name regclass, older_than timestamptz)
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
COMMENT ON PROCEDURE sno_drop_old_time_partitions(regclass, timestamptz) IS 'drop the partitions of a table partitioned by RANGE on a sno column whose rows are all older than older_than (Citus''s drop_old_time_partitions for sno keys)';
