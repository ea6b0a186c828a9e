-- sno_generate on a server with shared_preload_libraries = 'sno'. Results are checked as
-- properties (distinct, ordered, fields), never as fixed IDs.
CREATE EXTENSION IF NOT EXISTS sno;
SET timezone = 'UTC';
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text; hnt text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RETURN st || ': ' || msg || coalesce(' | DETAIL: ' || nullif(det, ''), '') || coalesce(' | HINT: ' || nullif(hnt, ''), '');
END $$;

-- Labels: VOLATILE, PARALLEL SAFE; the one-argument form is STRICT.
SELECT p.oid::regprocedure, provolatile, proisstrict, proparallel
FROM pg_proc p WHERE proname IN ('sno_generate', 'sno_current_partition', 'sno_generator_info', 'sno_generator_backends')
ORDER BY p.oid::regprocedure::text COLLATE "C";

-- Fields of a new ID: meta as given, this server's partition, the current time.
SELECT sno_meta(id) AS meta, sno_partition(id) = sno_current_partition() AS own_partition,
       sno_time(id) BETWEEN now() - interval '1 minute' AND clock_timestamp() AS current_time
FROM (SELECT sno_generate(42) AS id) s;
SELECT sno_meta(sno_generate()) AS default_meta, sno_generate(NULL) IS NULL AS strict;

-- Meta out of range.
SELECT m, pg_temp.err(format('SELECT sno_generate(%s)', m)) FROM (VALUES (256), (-1), (2147483647)) AS t(m);

-- 200,000 IDs from one backend: all distinct, strictly increasing in the order they were made.
SELECT count(*) AS n, count(DISTINCT id) AS distinct_ids, bool_and(id > prev) AS increasing
FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev
      FROM (SELECT g, sno_generate(9) AS id FROM generate_series(1, 200000) g) s) t;

-- As a column default and primary key.
CREATE TEMP TABLE gen_t (id sno PRIMARY KEY DEFAULT sno_generate(1), v int);
INSERT INTO gen_t (v) SELECT g FROM generate_series(1, 10000) g;
SELECT count(*), count(DISTINCT id), min(sno_meta(id)), max(sno_meta(id)) FROM gen_t;

-- The generator view.
SELECT partition = sno_current_partition() AS same_partition, partition_source, tick, regressions,
       ids_issued >= 210002 AS counted, units_opened > 0 AS opened, high_water IS NOT NULL AS has_high_water
FROM sno_generator;
SELECT count(*) >= 1 AS this_backend_listed FROM sno_generator_backends WHERE pid = pg_backend_pid() AND ids_issued >= 210002;
-- Whether the next sno_generate makes an ID (0.5.0): no Citus, no flip, no failed write here.
SELECT status, status_message, citus_group, citus_generations_left, flips, state_write_failures
FROM sno_generator;

-- Per-backend detail is for superusers and pg_monitor members only.
CREATE ROLE sno_plain_user;
SET ROLE sno_plain_user;
SELECT partition_source FROM sno_generator;
SELECT pg_temp.err('SELECT * FROM sno_generator_backends');
SELECT pg_temp.err('SELECT * FROM sno_generator_backends()');
RESET ROLE;
GRANT pg_monitor TO sno_plain_user;
SET ROLE sno_plain_user;
SELECT count(*) >= 1 AS visible_to_pg_monitor FROM sno_generator_backends;
RESET ROLE;
DROP ROLE sno_plain_user;

-- Settings: the partition is server configuration only; values are range-checked.
SELECT pg_temp.err('SET sno.partition = 7');
SELECT pg_temp.err('SET sno.max_clock_wait = -1');
SELECT pg_temp.err('SET sno.max_clock_wait = ''2h''');
SET sno.max_clock_wait = '250ms';
SHOW sno.max_clock_wait;
RESET sno.max_clock_wait;
SHOW sno.max_clock_wait;
SELECT name, setting, unit, context, min_val, max_val FROM pg_settings WHERE name LIKE 'sno.%' ORDER BY name;
-- ALTER SYSTEM cannot run in a function, so these show psql's error output.
ALTER SYSTEM SET sno.partition = 65536;
ALTER SYSTEM SET sno.partition = -2;
-- The idle lease's length is server configuration too, from 0 (off) to an hour.
SELECT pg_temp.err('SET sno.idle_horizon = 0');
ALTER SYSTEM SET sno.idle_horizon = '2h';
ALTER SYSTEM SET sno.idle_horizon = -1;

-- The lineage travels in WAL: sno's resource manager is registered, and the records the
-- generator writes are in WAL, described by it.
SELECT rm_id, rm_name, rm_builtin FROM pg_get_wal_resource_managers() WHERE rm_name = 'sno';
CREATE EXTENSION IF NOT EXISTS pg_walinspect;
SELECT pg_current_wal_flush_lsn() AS before_lsn \gset
-- A reload of the same configuration writes nothing; initialize on a ready server neither.
SELECT sno_generator_initialize() AS initialized_again;
-- A new horizon is written before IDs past the one on disk are made. To need one now: no idle
-- lease, and the worker terminated, which gives a lease back as at a clean shutdown (the
-- horizon comes down to the last unit used); it is started again within a second. The next
-- ID in a new unit writes (or the restarted worker renews first).
ALTER SYSTEM SET sno.idle_horizon = 0;
SELECT pg_reload_conf();
SELECT pg_sleep(0.3);
SELECT pg_terminate_backend(pid) AS worker_terminated FROM pg_stat_activity
WHERE backend_type = 'sno lineage';
SELECT pg_sleep(0.3);
-- With a transaction ID, the commit flushes WAL up to its commit record.
SELECT count(*), txid_current() > 0 AS flushed FROM (SELECT sno_generate(1) FROM generate_series(1, 10)) s;
SELECT resource_manager, record_type,
       description ~ '^incarnation [0-9]+ timeline 1 partitions \[[0-9]+\] horizon [0-9]+ safe -1 drifts 0$' AS described
FROM pg_get_wal_records_info(:'before_lsn', pg_current_wal_flush_lsn())
WHERE resource_manager = 'sno' LIMIT 1;
DROP EXTENSION pg_walinspect;
ALTER SYSTEM RESET sno.idle_horizon;
SELECT pg_reload_conf();

-- Initialisation is for superusers only.
CREATE ROLE sno_plain_user;
SET ROLE sno_plain_user;
SELECT pg_temp.err('SELECT sno_generator_initialize()');
SELECT pg_temp.err('SELECT sno_generator_initialize(take_over => true)');
RESET ROLE;
DROP ROLE sno_plain_user;
SELECT p.oid::regprocedure, provolatile, proparallel, pg_get_function_arguments(p.oid)
FROM pg_proc p WHERE proname = 'sno_generator_initialize';

-- The lineage this server knows: here, only its own partition, used up to its horizon.
SELECT count(*) AS partitions, bool_and(used_here) AS all_here,
       bool_and(partition = sno_current_partition()) AS own_partition,
       bool_and(ids_until > now()) AS horizon_ahead
FROM sno_generator_lineage;

-- IDs for past times (sno_generate_at): labels, privileges, errors, and properties.
SELECT p.oid::regprocedure, provolatile, proisstrict, proparallel,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_may
FROM pg_proc p WHERE proname IN ('sno_generate_at', 'sno_reserved_grant', 'sno_reserved_space')
ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT a, pg_temp.err(format('SELECT sno_generate_at(%s, %L)', m, a)) FROM (VALUES
    (256, '2020-01-01+00'), (-1, '2020-01-01+00'), (0, '2009-12-31 23:59:59.999999+00'),
    (0, '2079-09-07 15:47:35.552+00'), (0, 'infinity'), (0, '-infinity')) AS t(m, a);
SELECT sno_generate_at(NULL, now()) IS NULL AS null_meta, sno_generate_at(0, NULL) IS NULL AS null_at;
-- The first and last instants of the format, and the time floored to 4 ms.
SELECT sno_time(sno_generate_at(0, '2010-01-01 00:00:00+00')) AS first_unit,
       sno_time(sno_generate_at(0, '2079-09-07 15:47:35.551999+00')) AS last_unit,
       sno_time(sno_generate_at(7, '2020-02-03 04:05:06.7899+00')) AS floored;
-- 50,000 IDs in time order, many in one unit, out of order and repeated in between: every one
-- distinct, from a reserved partition, with the time asked for (floored), meta as given; in
-- the order made, non-decreasing times give increasing IDs.
CREATE TEMP TABLE at_ids AS
SELECT n, t, sno_generate_at(3, t) AS id FROM (
    SELECT n, CASE WHEN n % 100 = 0 THEN timestamptz '2012-01-01+00' + (n % 7) * interval '1 s'
                   ELSE timestamptz '2020-01-01+00' + (n / 40) * interval '1 ms' END AS t
    FROM generate_series(1, 50000) n) s ORDER BY n;
SELECT count(*) AS n, count(DISTINCT id) AS distinct_ids,
       bool_and(sno_partition(id) >= 61440) AS reserved,
       bool_and(sno_time(id) = date_bin('4 ms', t, '2010-01-01+00')) AS time_floored,
       bool_and(sno_meta(id) = 3 AND sno_tick(id) = 0) AS meta_tick
FROM at_ids;
SELECT bool_and(id > prev) AS increasing_where_time_does_not_go_back
FROM (SELECT id, t, lag(id) OVER (ORDER BY n) AS prev, lag(t) OVER (ORDER BY n) AS prev_t FROM at_ids) s
WHERE prev IS NOT NULL AND t >= prev_t;
-- One session, one grant: recorded once, here and in the view.
SELECT count(DISTINCT sno_partition(id)) AS grants FROM at_ids;
SELECT count(*) AS rows, bool_and(grantee = current_user) AS mine FROM sno_reserved_grants;
SELECT total, granted >= 1 AS granted, remaining = total - granted - used_by_live AS consistent, may_grant
FROM sno_reserved;
