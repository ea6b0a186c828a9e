-- sno 0.6.0 -> 0.7.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.7.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.7.0 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's operators and
-- functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh). Nothing is dropped or changed; new (sql/sno_time_partitions.sql,
-- doc/time-partitions.md):
-- * the explicit casts sno -> timestamptz (sno_time) and timestamptz -> sno (sno_min), which
--   Citus's create_time_partitions, drop_old_time_partitions and time_partitions need;
-- * the views sno_time_partitions and sno_time_partitioned_tables, SELECT granted to PUBLIC;
-- * sno_create_time_partitions(table, interval, end_at, start_from) and the procedure
--   sno_drop_old_time_partitions(table, older_than), with their helpers
--   sno_time_partition_parent, sno_time_partition_lock_timeout and sno_time_partition_lock_holders.
-- No C symbol is new or changed: a database still at 0.6.0 works with this library.
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema; every object of sno's is
-- named through @extschema@, and everything else is pg_catalog's.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- Casts -----------------------------------------------------------------------------------------
-- Explicit only: `id::timestamptz` is sno_time(id) (the start of the ID's 4 ms unit) and
-- `t::sno` is sno_min(t) (the smallest ID of the unit holding t), so a partition bound written
-- `t::sno` holds exactly the IDs made from t on. Neither is implicit nor assignment: `id < now()`
-- stays an error (compare sno_time(id), or id with sno_min(t)), as uuid and timestamptz never
-- meet silently. Citus's time-partition functions require a cast both ways in pg_cast.
CREATE CAST (@extschema@.sno AS timestamptz) WITH FUNCTION @extschema@.sno_time(@extschema@.sno);
CREATE CAST (timestamptz AS @extschema@.sno) WITH FUNCTION @extschema@.sno_min(timestamptz);

-- The partitions of every table partitioned by RANGE on one sno column --------------------------
-- Bounds read from pg_get_expr(relpartbound): a sno constant prints as its 16 characters in
-- quotes, MINVALUE/MAXVALUE as such (NULL here), the default partition as DEFAULT.
CREATE VIEW @extschema@.sno_time_partitions AS
SELECT p.partrelid::pg_catalog.regclass AS parent_table,
       a.attname AS partition_column,
       c.oid::pg_catalog.regclass AS partition,
       b.m[1]::@extschema@.sno AS from_value,
       b.m[2]::@extschema@.sno AS to_value,
       @extschema@.sno_time(b.m[1]::@extschema@.sno) AS from_time,
       @extschema@.sno_time(b.m[2]::@extschema@.sno) AS to_time,
       b.m IS NULL AS is_default
FROM pg_catalog.pg_partitioned_table p
JOIN pg_catalog.pg_attribute a
    ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid
   AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]
JOIN pg_catalog.pg_inherits i ON i.inhparent OPERATOR(pg_catalog.=) p.partrelid
JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) i.inhrelid
CROSS JOIN LATERAL (
    SELECT pg_catalog.regexp_match(pg_catalog.pg_get_expr(c.relpartbound, c.oid),
        '^FOR VALUES FROM \((?:MINVALUE|''([^'']*)'')\) TO \((?:MAXVALUE|''([^'']*)'')\)$') AS m
) b
WHERE p.partstrat OPERATOR(pg_catalog.=) 'r'
  AND p.partnatts OPERATOR(pg_catalog.=) 1
  AND a.atttypid OPERATOR(pg_catalog.=) '@extschema@.sno'::pg_catalog.regtype
  AND c.relpartbound IS NOT NULL;
COMMENT ON VIEW @extschema@.sno_time_partitions IS 'the partitions of tables partitioned by RANGE on a sno column: bounds as IDs and as times (NULL: MINVALUE, MAXVALUE or the default partition)';
GRANT SELECT ON @extschema@.sno_time_partitions TO PUBLIC;

-- One row per such table: how far ahead of now its partitions reach without a gap (what the
-- alert SnoTimePartitionMissing reads, doc/monitoring.md).
CREATE VIEW @extschema@.sno_time_partitioned_tables AS
WITH RECURSIVE parts AS (
    SELECT parent_table, from_time, to_time, from_value, to_value FROM @extschema@.sno_time_partitions
    WHERE NOT is_default
), run AS (
    -- the partition holding now, then each one starting where the previous one ends
    SELECT parent_table, to_time, to_value, 1 AS depth FROM parts
    WHERE (from_value IS NULL OR from_value OPERATOR(@extschema@.<=) @extschema@.sno_lower_bound(pg_catalog.now()))
      AND (to_value IS NULL OR to_value OPERATOR(@extschema@.>) @extschema@.sno_lower_bound(pg_catalog.now()))
    UNION ALL
    SELECT p.parent_table, p.to_time, p.to_value, r.depth OPERATOR(pg_catalog.+) 1 FROM run r
    JOIN parts p ON p.parent_table OPERATOR(pg_catalog.=) r.parent_table
                AND p.from_value OPERATOR(@extschema@.=) r.to_value
    WHERE r.to_value IS NOT NULL AND r.depth OPERATOR(pg_catalog.<) 100000
), newest AS (
    SELECT DISTINCT ON (parent_table) parent_table, from_time, to_time FROM parts
    WHERE from_time IS NOT NULL AND to_time IS NOT NULL
    ORDER BY parent_table, from_value DESC
)
SELECT t.parent_table,
       t.partitions,
       t.has_default,
       n.from_time AS newest_from,
       n.to_time AS newest_to,
       pg_catalog.age(n.to_time, n.from_time) AS newest_interval,
       c.covered_until
FROM (SELECT p.partrelid::pg_catalog.regclass AS parent_table,
             (SELECT pg_catalog.count(*) FROM @extschema@.sno_time_partitions s
              WHERE s.parent_table OPERATOR(pg_catalog.=) p.partrelid AND NOT s.is_default) AS partitions,
             EXISTS (SELECT FROM @extschema@.sno_time_partitions s
                     WHERE s.parent_table OPERATOR(pg_catalog.=) p.partrelid AND s.is_default) AS has_default
      FROM pg_catalog.pg_partitioned_table p
      JOIN pg_catalog.pg_attribute a
          ON a.attrelid OPERATOR(pg_catalog.=) p.partrelid
         AND a.attnum OPERATOR(pg_catalog.=) p.partattrs[0]
      WHERE p.partstrat OPERATOR(pg_catalog.=) 'r'
        AND p.partnatts OPERATOR(pg_catalog.=) 1
        AND a.atttypid OPERATOR(pg_catalog.=) '@extschema@.sno'::pg_catalog.regtype) t
LEFT JOIN newest n ON n.parent_table OPERATOR(pg_catalog.=) t.parent_table
LEFT JOIN LATERAL (
    -- NULL: no partition holds now; 'infinity': a MAXVALUE partition is reached
    SELECT CASE WHEN pg_catalog.bool_or(r.to_value IS NULL) THEN 'infinity'::pg_catalog.timestamptz
                ELSE pg_catalog.max(r.to_time) END AS covered_until
    FROM run r WHERE r.parent_table OPERATOR(pg_catalog.=) t.parent_table
) c ON true;
COMMENT ON VIEW @extschema@.sno_time_partitioned_tables IS 'tables partitioned by RANGE on a sno column: partitions, default partition, the newest partition and until when partitions follow each other from now on without a gap (covered_until, NULL when none holds now)';
GRANT SELECT ON @extschema@.sno_time_partitioned_tables TO PUBLIC;

-- Shared checks ---------------------------------------------------------------------------------
-- sno_time_partition_parent(table, caller): the table's schema, name and owner, after checking
-- that it is partitioned by RANGE on one sno column and that the caller may change it. Raises
-- otherwise. EXECUTE stays PUBLIC's: the two functions below call it as their caller, and it
-- reveals only what pg_class does.
CREATE FUNCTION @extschema@.sno_time_partition_parent(table_name regclass, caller text,
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
                  HINT = format('Call it as %s, or as a member of that role.', owner);
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
CREATE FUNCTION @extschema@.sno_time_partition_lock_timeout() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
RETURN CASE WHEN pg_catalog.current_setting('lock_timeout')::pg_catalog.interval OPERATOR(pg_catalog.>) '0'::pg_catalog.interval
             AND pg_catalog.current_setting('lock_timeout')::pg_catalog.interval OPERATOR(pg_catalog.<) '1 s'::pg_catalog.interval
       THEN pg_catalog.current_setting('lock_timeout') ELSE '1s' END;

-- sno_time_partition_lock_holders(relations): the sessions holding a lock on any of them whose
-- transactions began before this call (or whose start this role may not see): not the inserts
-- that came and went behind its waits. For the DETAIL of a call that gave up.
CREATE FUNCTION @extschema@.sno_time_partition_lock_holders(relations regclass[]) RETURNS int[]
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
    SELECT array_agg(DISTINCT l.pid ORDER BY l.pid)
    FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.granted AND l.pid <> pg_backend_pid() AND l.locktype = 'relation'
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.relation = ANY (relations::oid[]) AND coalesce(a.xact_start < now(), true)
$fn$;

-- sno_create_time_partitions ---------------------------------------------------------------------
-- Citus's create_time_partitions for plain PostgreSQL and sno keys: the partitions of each
-- partition_interval from the period holding start_from to the one holding end_at (exclusive
-- of a period starting at end_at), periods cut in the session's time zone, starting from the
-- table's earliest partition when it has one, else from start_from truncated (minute, hour,
-- day, week, quarter, month or year by the interval, as Citus does). Bounds: sno_min of each
-- period's start. Names: table_pYYYY_MM_DD... as Citus and pg_partman name them. Returns true
-- when it created at least one.
CREATE FUNCTION @extschema@.sno_create_time_partitions(
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
    pivot timestamptz;
    cur timestamptz;
    nxt timestamptz;
    lo @extschema@.sno;
    hi @extschema@.sno;
    steps int := 0;
    clash record;
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
    cols text;
    moved bigint;
    attempt int := 0;
    holders int[];
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
    -- UPDATE EXCLUSIVE does not conflict with INSERT, UPDATE, DELETE or SELECT.
    PERFORM set_config('lock_timeout', @extschema@.sno_time_partition_lock_timeout(), true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %I.%I IN SHARE UPDATE EXCLUSIVE MODE', parent.schema_name, parent.relname);
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempt := attempt + 1;
            IF attempt >= 5 THEN
                PERFORM set_config('lock_timeout', saved_timeout, true);
                RAISE EXCEPTION '%: could not lock table % after % tries of lock_timeout %', fn, table_name, attempt,
                    @extschema@.sno_time_partition_lock_timeout()
                    USING ERRCODE = '55P03',
                          DETAIL = 'Another sno_create_time_partitions or a schema change of the table is running.',
                          HINT = 'Call it again when that call has ended.';
            END IF;
            PERFORM pg_sleep(0.1 * 2 ^ attempt);
        END;
    END LOOP;

    SELECT partition_column INTO col FROM @extschema@.sno_time_partitions WHERE parent_table = table_name LIMIT 1;
    IF col IS NULL THEN
        SELECT a.attname INTO col FROM pg_partitioned_table p
        JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
        WHERE p.partrelid = table_name;
    END IF;
    SELECT partition INTO default_part FROM @extschema@.sno_time_partitions
    WHERE parent_table = table_name AND is_default;

    -- The first period: from the earliest partition with both bounds, stepping by the interval
    -- towards start_from; else start_from truncated by the interval's size.
    SELECT from_time INTO pivot FROM @extschema@.sno_time_partitions
    WHERE parent_table = table_name AND from_value IS NOT NULL AND to_value IS NOT NULL
    ORDER BY from_value LIMIT 1;
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
            cur := cur + partition_interval;
            steps := steps + 1;
            IF steps > 1000000 THEN
                RAISE EXCEPTION '%: start_from % is more than 1,000,000 intervals of % from the table''s earliest partition (from %)',
                    fn, start_from, partition_interval, pivot USING ERRCODE = '54000';
            END IF;
        END LOOP;
        WHILE cur > start_from LOOP
            cur := cur - partition_interval;
            steps := steps + 1;
            IF steps > 1000000 THEN
                RAISE EXCEPTION '%: start_from % is more than 1,000,000 intervals of % from the table''s earliest partition (from %)',
                    fn, start_from, partition_interval, pivot USING ERRCODE = '54000';
            END IF;
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

    -- The plan: every period up to end_at that no partition has exactly; a partition that
    -- overlaps a period without being it is an error (nothing is created).
    WHILE cur < end_at LOOP
        nxt := cur + partition_interval;
        lo := @extschema@.sno_min(cur);
        hi := @extschema@.sno_min(nxt);
        IF NOT EXISTS (SELECT FROM @extschema@.sno_time_partitions
                       WHERE parent_table = table_name AND from_value OPERATOR(@extschema@.=) lo
                         AND to_value OPERATOR(@extschema@.=) hi) THEN
            SELECT partition, from_time, to_time, from_value, to_value INTO clash
            FROM @extschema@.sno_time_partitions
            WHERE parent_table = table_name AND NOT is_default
              AND (from_value IS NULL OR from_value OPERATOR(@extschema@.<) hi)
              AND (to_value IS NULL OR to_value OPERATOR(@extschema@.>) lo)
            ORDER BY from_value NULLS FIRST LIMIT 1;
            IF FOUND THEN
                RAISE EXCEPTION '%: partition % (from % to %) overlaps the period from % to % without being it',
                    fn, clash.partition, coalesce(clash.from_time::text, 'MINVALUE'), coalesce(clash.to_time::text, 'MAXVALUE'), cur, nxt
                    USING ERRCODE = '42P17',
                          DETAIL = format('Periods of %s are counted from %s, in time zone %s.', partition_interval,
                              coalesce('the table''s earliest partition (from ' || pivot || ')', 'start_from truncated'),
                              current_setting('TimeZone')),
                          HINT = CASE WHEN clash.from_time IS NOT NULL AND clash.to_time IS NOT NULL
                              THEN format('Give the interval the table''s partitions were made with: partition_interval => %L.',
                                          age(clash.to_time, clash.from_time))
                              ELSE format('Detach or drop partition %s first, or end the periods before it.', clash.partition) END;
            END IF;
            -- table_pSUFFIX, the table's name shortened to fit max_identifier_length bytes; a
            -- name another relation already has (another role's table in a schema it may create
            -- in) gets _1, _2, ... rather than failing the call.
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
                      AND NOT part_name = ANY (plan_name);
                taken := taken + 1;
            END LOOP;
            plan_from := plan_from || cur;
            plan_to := plan_to || nxt;
            plan_name := plan_name || part_name;
        END IF;
        cur := nxt;
        steps := steps + 1;
        IF cardinality(plan_name) > 10000 THEN
            RAISE EXCEPTION '%: more than 10,000 partitions of % up to %', fn, partition_interval, end_at
                USING ERRCODE = '54000',
                      HINT = 'Give a larger partition_interval or an earlier end_at.';
        END IF;
    END LOOP;
    IF cardinality(plan_name) = 0 THEN
        PERFORM set_config('lock_timeout', saved_timeout, true);
        RETURN false;
    END IF;

    SELECT CASE WHEN c.reltablespace <> 0 THEN format(' TABLESPACE %I', t.spcname) ELSE '' END
    INTO tablespace_clause
    FROM pg_class c LEFT JOIN pg_tablespace t ON t.oid = c.reltablespace WHERE c.oid = table_name;
    SELECT string_agg(format('%I', attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = table_name AND attnum > 0 AND NOT attisdropped AND attgenerated = '';

    -- All of it in one attempt (a subtransaction): each new table created on its own, then
    -- attached (ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on the table, where CREATE TABLE
    -- ... PARTITION OF takes ACCESS EXCLUSIVE); with a default partition, that one is locked
    -- (ACCESS EXCLUSIVE) and its rows of each new period moved into the new partition first. A
    -- lock not had within lock_timeout undoes the attempt and releases everything before the
    -- next one.
    attempt := 0;
    LOOP
        BEGIN
            IF default_part IS NOT NULL THEN
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', default_part);
            END IF;
            FOR k IN 1 .. cardinality(plan_name) LOOP
                lo := @extschema@.sno_min(plan_from[k]);
                hi := @extschema@.sno_min(plan_to[k]);
                EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING GENERATED INCLUDING STORAGE INCLUDING COMPRESSION INCLUDING COMMENTS)%s',
                    parent.schema_name, plan_name[k], parent.schema_name, parent.relname, tablespace_clause);
                IF parent.owner::oid <> (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN
                    EXECUTE format('ALTER TABLE %I.%I OWNER TO %s', parent.schema_name, plan_name[k], parent.owner);
                END IF;
                IF default_part IS NOT NULL THEN
                    EXECUTE format('WITH moved AS (DELETE FROM %s WHERE %I OPERATOR(@extschema@.>=) $1 AND %I OPERATOR(@extschema@.<) $2 RETURNING %s) '
                                   'INSERT INTO %I.%I (%s) SELECT %s FROM moved',
                        default_part, col, col, cols, parent.schema_name, plan_name[k], cols, cols)
                        USING lo, hi;
                    GET DIAGNOSTICS moved = ROW_COUNT;
                    IF moved > 0 THEN
                        RAISE NOTICE '%: moved % rows of % from the default partition % into %',
                            fn, moved, to_char(plan_from[k], name_format), default_part, plan_name[k];
                    END IF;
                END IF;
                EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                    parent.schema_name, parent.relname, parent.schema_name, plan_name[k], lo::text, hi::text);
            END LOOP;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempt := attempt + 1;
            IF attempt >= 5 THEN
                holders := @extschema@.sno_time_partition_lock_holders(ARRAY[default_part]);
                PERFORM set_config('lock_timeout', saved_timeout, true);
                RAISE EXCEPTION '%: could not lock the default partition % after % tries of lock_timeout %', fn, default_part, attempt,
                    @extschema@.sno_time_partition_lock_timeout()
                    USING ERRCODE = '55P03',
                          DETAIL = format('Sessions holding locks on it: %s.', coalesce(array_to_string(holders, ', '), 'none left')),
                          HINT = 'Call it again when those sessions have ended their transactions.';
            END IF;
            PERFORM pg_sleep(0.1 * 2 ^ attempt);
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', saved_timeout, true);
    RETURN true;
END
$fn$;
COMMENT ON FUNCTION @extschema@.sno_create_time_partitions(regclass, interval, timestamptz, timestamptz) IS 'create the missing partitions of a table partitioned by RANGE on a sno column, one per partition_interval up to end_at (Citus''s create_time_partitions for sno keys)';

-- sno_drop_old_time_partitions --------------------------------------------------------------------
-- Drops every partition whose rows are all older than older_than (upper bound at or below
-- sno_min(older_than)), the default partition never. Dropping a partition takes ACCESS
-- EXCLUSIVE on the table (DETACH ... CONCURRENTLY cannot run in a procedure): one attempt locks
-- the table, then the partitions, each within lock_timeout, and drops them; a lock not had
-- undoes the attempt, releases everything, waits and tries again (5 tries).
CREATE PROCEDURE @extschema@.sno_drop_old_time_partitions(table_name regclass, older_than timestamptz)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    fn constant text := 'sno_drop_old_time_partitions';
    parent record;
    r record;
    olds regclass[];
    attempt int := 0;
    holders int[];
    saved_timeout text := current_setting('lock_timeout');
BEGIN
    IF older_than IS NULL THEN
        RAISE EXCEPTION '%: older_than must not be NULL', fn USING ERRCODE = '22004';
    END IF;
    parent := @extschema@.sno_time_partition_parent(table_name, fn);
    PERFORM set_config('lock_timeout', @extschema@.sno_time_partition_lock_timeout(), true);
    LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %I.%I IN ACCESS EXCLUSIVE MODE', parent.schema_name, parent.relname);
            olds := '{}';
            FOR r IN SELECT partition, from_time, to_time FROM @extschema@.sno_time_partitions
                     WHERE parent_table = table_name AND NOT is_default AND to_value IS NOT NULL
                       AND to_value OPERATOR(@extschema@.<=) @extschema@.sno_lower_bound(older_than)
                     ORDER BY to_value
            LOOP
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', r.partition);
                olds := olds || r.partition;
                RAISE NOTICE '%: dropping % (from % to %)', fn, r.partition,
                    coalesce(r.from_time::text, 'MINVALUE'), r.to_time;
            END LOOP;
            FOR k IN 1 .. cardinality(olds) LOOP
                EXECUTE format('DROP TABLE %s', olds[k]);
            END LOOP;
            EXIT;
        EXCEPTION WHEN lock_not_available THEN
            attempt := attempt + 1;
            IF attempt >= 5 THEN
                holders := @extschema@.sno_time_partition_lock_holders(table_name || ARRAY(
                    SELECT partition FROM @extschema@.sno_time_partitions WHERE parent_table = table_name));
                PERFORM set_config('lock_timeout', saved_timeout, true);
                RAISE EXCEPTION '%: could not lock table % and its old partitions after % tries of lock_timeout %', fn, table_name,
                    attempt, @extschema@.sno_time_partition_lock_timeout()
                    USING ERRCODE = '55P03',
                          DETAIL = format('Sessions holding locks on them: %s.', coalesce(array_to_string(holders, ', '), 'none left')),
                          HINT = 'Call it again when those sessions have ended their transactions.';
            END IF;
            PERFORM pg_sleep(0.1 * 2 ^ attempt);
        END;
    END LOOP;
    PERFORM set_config('lock_timeout', saved_timeout, true);
END
$fn$;
COMMENT ON PROCEDURE @extschema@.sno_drop_old_time_partitions(regclass, timestamptz) IS 'drop the partitions of a table partitioned by RANGE on a sno column whose rows are all older than older_than (Citus''s drop_old_time_partitions for sno keys)';
