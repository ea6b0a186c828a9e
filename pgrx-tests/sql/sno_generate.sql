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
ORDER BY 1::text;

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
       ids_issued >= 210002 AS counted, leases > 0 AS leased, high_water IS NOT NULL AS has_high_water
FROM sno_generator;
SELECT count(*) >= 1 AS this_backend_listed FROM sno_generator_backends WHERE pid = pg_backend_pid() AND ids_issued >= 210002;

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
