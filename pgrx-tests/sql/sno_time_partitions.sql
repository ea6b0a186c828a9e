-- Time-partitioned tables keyed by sno (0.7.0): the casts sno <-> timestamptz and what they
-- change in how expressions resolve (before: the casts dropped in a transaction that is rolled
-- back, i.e. sno 0.6.0; after: 0.7.0), then sno_create_time_partitions,
-- sno_drop_old_time_partitions and the views, with fixed times, in two time zones. Rows are
-- made by sno_generate_at for fixed times and by sno_generate; every row's partition is checked
-- against sno_time(id) and answers against an unpartitioned copy. The bounds read from the
-- catalog (sno_time_partition_bound, 0.8.1) are those pg_get_expr prints (0.8.0's way); the
-- views under another session's locks and a pending detach: tests/client/time_partitions.sh.
CREATE EXTENSION IF NOT EXISTS sno;
SET timezone = 'UTC';

-- res(query): the query's single value as text, or SQLSTATE and message of its error.
CREATE FUNCTION pg_temp.res(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v text; st text; msg text;
BEGIN
    EXECUTE q INTO v;
    RETURN coalesce(v, 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    RETURN 'ERROR ' || st || ': ' || msg;
END $$;
-- err(query): runs a statement and shows SQLSTATE, message, DETAIL and HINT of its error.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RETURN st || ': ' || msg || coalesce(' | DETAIL: ' || nullif(det, ''), '') || coalesce(' | HINT: ' || nullif(hnt, ''), '');
END $$;

-- 1. The casts: explicit only, both ways.
SELECT format_type(castsource, NULL) AS source, format_type(casttarget, NULL) AS target,
       castfunc::regprocedure AS func, castcontext AS context
FROM pg_cast WHERE castsource = 'sno'::regtype AND casttarget = 'timestamptz'::regtype
   OR castsource = 'timestamptz'::regtype AND casttarget = 'sno'::regtype ORDER BY 1;

CREATE TEMP TABLE exprs (n int, e text);
INSERT INTO exprs VALUES
    (1, $$'brpk4q72xwf2m63l'::sno::timestamptz$$),
    (2, $$CAST(timestamptz '2024-01-01 00:00:00.005+00' AS sno)$$),
    (3, $$timestamptz('brpk4q72xwf2m63l'::sno)$$),
    (4, $$sno(timestamptz '2024-01-01 00:00:00+00')$$),
    (5, $$(timestamptz '2024-01-01 00:00:00.007+00')::sno = sno_min('2024-01-01 00:00:00.007+00')$$),
    (6, $$'brpk4q72xwf2m63l'::sno::timestamptz::sno$$),
    (7, $$'brpk4q72xwf2m63l'::sno::timestamptz::date$$),
    (8, $$ARRAY['brpk4q72xwf2m63l'::sno]::timestamptz[]$$),
    (9, $$'infinity'::timestamptz::sno$$),
    (10, $$'2009-12-31 23:59:59+00'::timestamptz::sno$$),
    (11, $$'brpk4q72xwf2m63l'::sno < now()$$),
    (12, $$'brpk4q72xwf2m63l'::sno = timestamptz '2024-01-01 00:00:00+00'$$),
    (13, $$date_trunc('day', 'brpk4q72xwf2m63l'::sno)$$),
    (14, $$extract(epoch FROM 'brpk4q72xwf2m63l'::sno)$$),
    (15, $$'brpk4q72xwf2m63l'::sno::date$$),
    (16, $$'brpk4q72xwf2m63l'::sno::timestamp$$),
    (17, $$date '2024-01-01'::sno$$),
    (18, $$coalesce('brpk4q72xwf2m63l'::sno, now())$$),
    (19, $$(SELECT 'brpk4q72xwf2m63l'::sno UNION ALL SELECT now() LIMIT 1)$$),
    (20, $$'brpk4q72xwf2m63l'::sno::text::timestamptz$$),
    (21, $$to_char('brpk4q72xwf2m63l'::sno, 'YYYY')$$),
    (22, $$'brpk4q72xwf2m63l'::sno = '2024-01-01 00:00:00+00'$$);
CREATE TEMP TABLE after AS SELECT n, pg_temp.res('SELECT ' || e) AS r FROM exprs;

-- Before (as in 0.6.0): the same expressions without the two casts.
BEGIN;
ALTER EXTENSION sno DROP CAST (sno AS timestamptz);
ALTER EXTENSION sno DROP CAST (timestamptz AS sno);
DROP CAST (sno AS timestamptz);
DROP CAST (timestamptz AS sno);
SELECT x.n, x.e AS expression, pg_temp.res('SELECT ' || x.e) AS before, a.r AS after
FROM exprs x JOIN after a USING (n) ORDER BY x.n;
ROLLBACK;

-- The cast is sno_time: the planner hook gives `id::timestamptz >= t` the bound on id too.
CREATE TABLE tc (id sno PRIMARY KEY, v int);
INSERT INTO tc SELECT sno_from_parts(timestamptz '2026-01-01 00:00:00+00' + g * interval '1 hour', 1, 7, g, 0), g
FROM generate_series(0, 99) g;
ANALYZE tc;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT v FROM tc WHERE id::timestamptz >= '2026-01-03 00:00:00+00';
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) AS rows_since, sum(v) FROM tc WHERE id::timestamptz >= '2026-01-03 00:00:00+00';
SELECT count(*) AS rows_since, sum(v) FROM tc WHERE sno_time(id) >= '2026-01-03 00:00:00+00';

-- 2. sno_create_time_partitions: daily partitions, bounds exactly sno_min of each day's start.
CREATE TABLE ev (id sno PRIMARY KEY DEFAULT sno_generate(1), v int NOT NULL DEFAULT 0 CHECK (v >= 0), note text)
    PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('ev', '1 day', '2026-03-05 00:00+00', '2026-03-01 10:00+00') AS created;
SELECT sno_create_time_partitions('ev', '1 day', '2026-03-05 00:00+00', '2026-03-01 10:00+00') AS created_again;
SELECT partition, partition_column, from_time, to_time, is_default,
       from_value = sno_min(from_time) AND to_value = sno_min(to_time) AS bounds_are_sno_min,
       from_value = from_time::sno AS cast_agrees
FROM sno_time_partitions WHERE parent_table = 'ev'::regclass ORDER BY from_value;
-- The partitions take the table's owner, defaults, NOT NULL and CHECK constraints, and its
-- primary key through the partitioned index.
SELECT c.relname, pg_get_userbyid(c.relowner) = pg_get_userbyid((SELECT relowner FROM pg_class WHERE oid = 'ev'::regclass)) AS owner_is_parents,
       (SELECT count(*) FROM pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'c') AS checks,
       (SELECT count(*) FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS pkeys
FROM pg_class c WHERE c.relname LIKE 'ev\_p%' AND c.relkind = 'r' ORDER BY 1;

-- Rows in every period (fixed times: sno_generate_at), each in the partition of its time.
INSERT INTO ev (id, v, note)
SELECT sno_generate_at(1, timestamptz '2026-03-01 00:00:00+00' + g * interval '17 minutes'), g, 'at'
FROM generate_series(0, 4 * 24 * 60 / 17 - 1) g;
SELECT count(*) AS rows, count(*) FILTER (WHERE NOT (sno_time(e.id) >= p.from_time AND sno_time(e.id) < p.to_time)) AS misplaced
FROM ev e JOIN sno_time_partitions p ON p.partition = e.tableoid;
-- An ID for a time no partition holds.
SELECT pg_temp.err($$INSERT INTO ev (id) VALUES (sno_from_parts('2026-03-07 00:00:00+00', 1, 7, 0, 0))$$);

-- Periods cut in the session's time zone, as Citus cuts them: monthly partitions in New York
-- begin at its midnight (05:00 UTC in winter, 04:00 in summer); daily ones across the change to
-- summer time are 23 hours long.
CREATE TABLE mo (id sno PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE dy (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SET timezone = 'America/New_York';
SELECT sno_create_time_partitions('mo', '1 month', '2026-05-01 00:00', '2026-02-15 12:00') AS created;
SELECT sno_create_time_partitions('dy', '1 day', '2026-03-10 00:00', '2026-03-07 12:00') AS created;
SET timezone = 'UTC';
SELECT partition, from_time, to_time, to_time - from_time AS length
FROM sno_time_partitions WHERE parent_table IN ('mo'::regclass, 'dy'::regclass) ORDER BY parent_table::text, from_value;
-- Quarterly and weekly names.
CREATE TABLE qw (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('qw', '3 months', '2027-01-01+00', '2026-05-20+00') AS created;
CREATE TABLE wk (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('wk', '1 week', '2026-06-20+00', '2026-06-03+00') AS created;
CREATE TABLE hr (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('hr', '6 hours', '2026-06-02+00', '2026-06-01 07:30+00') AS created;
SELECT parent_table, partition, from_time, to_time FROM sno_time_partitions
WHERE parent_table IN ('qw'::regclass, 'wk'::regclass, 'hr'::regclass) ORDER BY parent_table::text, from_value;

-- A misaligned call: weeks over days. Nothing is created; the HINT's interval works.
SELECT pg_temp.err($$SELECT sno_create_time_partitions('ev', '1 week', '2026-03-20+00', '2026-03-01+00')$$);
SELECT count(*) AS partitions FROM sno_time_partitions WHERE parent_table = 'ev'::regclass;
SELECT sno_create_time_partitions('ev', partition_interval => '1 day', end_at => '2026-03-07+00', start_from => '2026-03-01+00') AS created;
-- A start_from inside a period makes that period too, from the table's earliest partition.
CALL sno_drop_old_time_partitions('ev', '2026-03-03+00');
SELECT sno_create_time_partitions('ev', '1 day', '2026-03-04+00', '2026-03-02 15:00+00') AS created;
SELECT partition, from_time FROM sno_time_partitions WHERE parent_table = 'ev'::regclass ORDER BY from_value;

-- 3. A default partition holding rows of periods to make: nothing made, a clear error; its
-- HINT (the periods after them) followed; then the rows moved as the manual says, in one
-- transaction holding the table.
CREATE TABLE ev_default PARTITION OF ev DEFAULT;
INSERT INTO ev (id, v, note)
SELECT sno_generate_at(1, timestamptz '2026-03-07 00:00:00+00' + g * interval '1 hour'), g, 'in default'
FROM generate_series(0, 47) g;
SELECT tableoid::regclass AS partition, count(*) FROM ev WHERE note = 'in default' GROUP BY 1 ORDER BY 1;
SELECT pg_temp.err($$SELECT sno_create_time_partitions('ev', '1 day', '2026-03-10+00', '2026-03-02+00')$$);
SELECT count(*) AS partitions FROM sno_time_partitions WHERE parent_table = 'ev'::regclass AND NOT is_default;
SELECT sno_create_time_partitions('ev', '1 day', start_from => '2026-03-09 00:00:00+00', end_at => '2026-03-10 00:00:00+00') AS created_after;
BEGIN;
LOCK TABLE ev IN ACCESS EXCLUSIVE MODE;
CREATE TEMP TABLE moving ON COMMIT DROP AS SELECT * FROM ev_default WHERE sno_time(id) < '2026-03-09+00';
DELETE FROM ev_default WHERE sno_time(id) < '2026-03-09+00';
SELECT sno_create_time_partitions('ev', '1 day', '2026-03-09+00', '2026-03-02+00') AS created_for_them;
INSERT INTO ev SELECT * FROM moving;
COMMIT;
SELECT tableoid::regclass AS partition, count(*) FROM ev WHERE note = 'in default' GROUP BY 1 ORDER BY 1;
SELECT count(*) FILTER (WHERE NOT (sno_time(e.id) >= p.from_time AND sno_time(e.id) < p.to_time)) AS misplaced
FROM ev e JOIN sno_time_partitions p ON p.partition = e.tableoid WHERE NOT p.is_default;

-- Answers equal to an unpartitioned copy's (with IDs of now from sno_generate too).
INSERT INTO ev_default (v, note) SELECT g, 'now' FROM generate_series(1, 10) g;
CREATE TABLE ev_copy AS SELECT * FROM ev;
SELECT q, pg_temp.res(replace(q, 'FROM t', 'FROM ev')) = pg_temp.res(replace(q, 'FROM t', 'FROM ev_copy')) AS same
FROM unnest(ARRAY[
    $$SELECT count(*) || '/' || sum(v) FROM t WHERE sno_time(id) >= '2026-03-02 00:00+00'$$,
    $$SELECT count(*) || '/' || sum(v) FROM t WHERE sno_time(id) BETWEEN '2026-03-02 05:00+00' AND '2026-03-03 07:00+00'$$,
    $$SELECT count(*) || '/' || sum(v) FROM t WHERE id >= sno_min('2026-03-04 00:00+00') AND id < '2026-03-08 00:00+00'::timestamptz::sno$$,
    $$SELECT count(*) || '/' || sum(v) FROM t WHERE id::timestamptz < '2026-03-08 12:00+00'$$,
    $$SELECT string_agg(id::text, ',' ORDER BY id) FROM t WHERE sno_time(id) > now() - interval '1 hour'$$,
    $$SELECT md5(string_agg(id::text || v, ',' ORDER BY id)) FROM t$$]) q;

-- 4. sno_drop_old_time_partitions: every partition whose rows are all older; never the default.
CALL sno_drop_old_time_partitions('ev', '2026-03-05 12:00+00');
SELECT partition, from_time, to_time, is_default FROM sno_time_partitions WHERE parent_table = 'ev'::regclass ORDER BY from_value NULLS LAST;
SELECT count(*) AS rows_left, min(sno_time(id)) >= '2026-03-05 00:00+00' AS none_older FROM ev WHERE note <> 'now';
CALL sno_drop_old_time_partitions('ev', '2026-03-05 12:00+00');

-- 5. Bad calls: a clear error each, nothing done.
CREATE TABLE plain (id sno PRIMARY KEY);
CREATE TABLE byhash (id sno PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE bytime (t timestamptz) PARTITION BY RANGE (t);
CREATE TABLE bytwo (id sno, t timestamptz) PARTITION BY RANGE (id, t);
SELECT c, pg_temp.err(c) FROM unnest(ARRAY[
    $$SELECT sno_create_time_partitions('plain', '1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('byhash', '1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('bytime', '1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('bytwo', '1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions(NULL, '1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions(123456789, '1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('mo', NULL, '2026-03-09+00')$$,
    $$SELECT sno_create_time_partitions('mo', '1 day', '2026-03-02+00', '2026-03-09+00')$$,
    $$SELECT sno_create_time_partitions('mo', '0 days', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('mo', '-1 day', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('mo', '10 ms', '2026-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('mo', '1 month', 'infinity', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('plain', '1 minute', '2027-03-09+00', '2026-03-02+00')$$,
    $$SELECT sno_create_time_partitions('bytwo', '1 year', '2081-01-01+00', '2078-01-01+00')$$,
    $$CALL sno_drop_old_time_partitions('plain', '2026-03-09+00')$$,
    $$CALL sno_drop_old_time_partitions('mo', NULL)$$]) c;
-- sno_time_partition_bound reads the bound of a RANGE partition on one sno column only: any
-- other node tree is an error; sno_time_partition_bounds (and so the views) lists no partition
-- of a table partitioned otherwise, without reading their bounds.
CREATE TABLE bylist (id sno) PARTITION BY LIST (id);
CREATE TABLE bylist_1 PARTITION OF bylist FOR VALUES IN ('brpk4q72xwf2m63l');
CREATE TABLE byhash_1 PARTITION OF byhash FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE bytime_1 PARTITION OF bytime FOR VALUES FROM ('2026-03-01+00') TO ('2026-03-02+00');
CREATE TABLE bytwo_1 PARTITION OF bytwo FOR VALUES FROM (MINVALUE, MINVALUE) TO ('brpk4q72xwf2m63l', '2026-03-02+00');
SELECT t, pg_temp.err(format('SELECT sno_time_partition_bound(relpartbound) FROM pg_class WHERE oid = %L::regclass', t)) AS bound,
       (SELECT count(*) FROM sno_time_partition_bounds(t::regclass)) AS bounds,
       (SELECT count(*) FROM sno_time_partitions WHERE partition = t::regclass) AS listed
FROM unnest(ARRAY['bylist_1', 'byhash_1', 'bytime_1', 'bytwo_1']) t;
SELECT pg_temp.err($$SELECT sno_time_partition_bound(d.adbin) FROM pg_attrdef d JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum
                     WHERE d.adrelid = 'ev'::regclass AND a.attname = 'v'$$) AS default_expression;
SELECT sno_time_partition_bound(NULL) IS NULL AS strict;
DROP TABLE bylist, byhash_1, bytime_1, bytwo_1;
-- Misaligned partitions: made in another time zone (Berlin's midnight, across its change to
-- summer time), a MINVALUE and a MAXVALUE partition, each HINT followed; an interval of mixed
-- signs; a type with the name of a partition to come.
CREATE TABLE tz (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SET timezone = 'Europe/Berlin';
SELECT sno_create_time_partitions('tz', '1 day', '2026-03-31', '2026-03-27') AS created_in_berlin;
SET timezone = 'UTC';
SELECT pg_temp.err($$SELECT sno_create_time_partitions('tz', '1 day', '2026-04-02+00', '2026-03-27+00')$$);
SET timezone = 'Europe/Berlin';
SELECT sno_create_time_partitions('tz', '1 day', '2026-04-02', '2026-03-27') AS created_in_berlin_again;
SET timezone = 'UTC';
CREATE TABLE mv (id sno PRIMARY KEY) PARTITION BY RANGE (id);
CREATE TABLE mv_old PARTITION OF mv FOR VALUES FROM (MINVALUE) TO (sno_min('2026-03-02 12:00+00'));
SELECT pg_temp.err($$SELECT sno_create_time_partitions('mv', '1 day', '2026-03-05+00', '2026-03-01+00')$$);
SELECT sno_create_time_partitions('mv', '1 day', '2026-03-05+00', start_from => '2026-03-03 00:00:00+00') AS created_after_minvalue;
CREATE TABLE mv_new PARTITION OF mv FOR VALUES FROM (sno_min('2026-03-07 12:00+00')) TO (MAXVALUE);
SELECT pg_temp.err($$SELECT sno_create_time_partitions('mv', '1 day', '2026-03-10+00', '2026-03-03+00')$$);
SELECT sno_create_time_partitions('mv', '1 day', end_at => '2026-03-07 00:00:00+00', start_from => '2026-03-03+00') AS created_before_maxvalue;
SELECT partition, from_time, to_time FROM sno_time_partitions WHERE parent_table = 'mv'::regclass ORDER BY from_value NULLS FIRST;
-- The bounds sno_time_partition_bound reads from the catalog are those pg_get_expr prints
-- (how 0.7.0 and 0.8.0 read them), for every partition of every table partitioned by RANGE on
-- one sno column here: values, MINVALUE (mv_old), MAXVALUE (mv_new), DEFAULT (ev_default).
SELECT count(*) AS partitions,
       count(*) FILTER (WHERE b.is_default) AS defaults,
       count(*) FILTER (WHERE b.from_value IS NULL AND NOT b.is_default) AS from_minvalue,
       count(*) FILTER (WHERE b.to_value IS NULL AND NOT b.is_default) AS to_maxvalue,
       count(*) FILTER (WHERE (b.from_value, b.to_value, b.is_default)
                              IS DISTINCT FROM (m[1]::sno, m[2]::sno, e = 'DEFAULT')) AS differing
FROM pg_partitioned_table p
JOIN pg_attribute a ON a.attrelid = p.partrelid AND a.attnum = p.partattrs[0]
JOIN pg_inherits i ON i.inhparent = p.partrelid
JOIN pg_class c ON c.oid = i.inhrelid
CROSS JOIN LATERAL pg_get_expr(c.relpartbound, c.oid) e
CROSS JOIN LATERAL regexp_match(e, '^FOR VALUES FROM \((?:MINVALUE|''([^'']*)'')\) TO \((?:MAXVALUE|''([^'']*)'')\)$') m
CROSS JOIN LATERAL sno_time_partition_bound(c.relpartbound) b
WHERE p.partstrat = 'r' AND p.partnatts = 1 AND a.atttypid = 'sno'::regtype;
CREATE TABLE ms (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT pg_temp.err($$SELECT sno_create_time_partitions('ms', '1 mon -29 days', '2026-03-05+00', '2026-01-20+00')$$);
CREATE DOMAIN ms_p2026_03_02 AS int;
SELECT sno_create_time_partitions('ms', '1 day', '2026-03-03+00', '2026-03-01+00') AS created_beside_a_type;
SELECT partition FROM sno_time_partitions WHERE parent_table = 'ms'::regclass ORDER BY from_value;
DROP TABLE ms;
DROP DOMAIN ms_p2026_03_02;
-- A table another one refers to: the drop detaches first (PostgreSQL checks the references).
CREATE TABLE fkp (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('fkp', '1 day', '2026-03-03+00', '2026-03-01+00') AS created;
CREATE TABLE fkc (x sno REFERENCES fkp);
INSERT INTO fkp VALUES (sno_from_parts('2026-03-02 06:00+00', 1, 7, 0, 0));
INSERT INTO fkc VALUES (sno_from_parts('2026-03-02 06:00+00', 1, 7, 0, 0));
CALL sno_drop_old_time_partitions('fkp', '2026-03-02+00');
SELECT regexp_replace(pg_temp.err($$CALL sno_drop_old_time_partitions('fkp', '2026-03-03+00')$$),
                      'constraint "[^"]*"', 'constraint "(its name differs by major)"') AS err;
SELECT count(*) AS fkp_partitions FROM sno_time_partitions WHERE parent_table = 'fkp'::regclass;
DELETE FROM fkc;
CALL sno_drop_old_time_partitions('fkp', '2026-03-03+00');
SELECT count(*) AS fkp_partitions FROM sno_time_partitions WHERE parent_table = 'fkp'::regclass;
DROP TABLE tz, mv, fkc, fkp;

CREATE TABLE far (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT pg_temp.err($$SELECT sno_create_time_partitions('far', '1 year', '2081-01-01+00', '2078-01-01+00')$$);
SELECT pg_temp.err($$SELECT sno_create_time_partitions('far', '1 minute', '2027-03-09+00', '2026-03-02+00')$$);
SELECT count(*) AS partitions_of_far FROM sno_time_partitions WHERE parent_table = 'far'::regclass;

-- Another role: refused on a table it does not own; the HINT's role can.
CREATE ROLE sno_tp_owner;
CREATE ROLE sno_tp_other;
CREATE TABLE own (id sno PRIMARY KEY) PARTITION BY RANGE (id);
ALTER TABLE own OWNER TO sno_tp_owner;
GRANT CREATE ON SCHEMA public TO sno_tp_owner;
SET ROLE sno_tp_other;
SELECT pg_temp.err($$SELECT sno_create_time_partitions('own', '1 day', '2026-03-03+00', '2026-03-01+00')$$);
SELECT pg_temp.err($$CALL sno_drop_old_time_partitions('own', '2026-03-03+00')$$);
RESET ROLE;
SET ROLE sno_tp_owner;
SELECT sno_create_time_partitions('own', '1 day', '2026-03-03+00', '2026-03-01+00') AS created_by_owner;
RESET ROLE;
-- A superuser's call makes the table owner's partitions, which the owner can drop.
SELECT sno_create_time_partitions('own', '1 day', '2026-03-05+00', '2026-03-01+00') AS created_by_superuser;
SELECT count(*) AS partitions, bool_and(c.relowner = 'sno_tp_owner'::regrole) AS owned_by_owner
FROM sno_time_partitions p JOIN pg_class c ON c.oid = p.partition WHERE parent_table = 'own'::regclass;
SET ROLE sno_tp_owner;
CALL sno_drop_old_time_partitions('own', '2026-03-05+00');
RESET ROLE;
SELECT count(*) AS partitions_left FROM sno_time_partitions WHERE parent_table = 'own'::regclass;

-- Another role's objects where a call that followed search_path would find them: a table
-- with the name of a partition to come, and in public a date_trunc, a to_regclass and an
-- operator = on regclass (exact matches, which would win over pg_catalog's). The call works
-- (the partition gets the next free name) and none of them runs.
CREATE ROLE sno_tp_hostile;
GRANT CREATE ON SCHEMA public TO sno_tp_hostile;
SET ROLE sno_tp_hostile;
CREATE TABLE sq_p2026_03_02 (x int);
CREATE TABLE hostile_calls (f text);
GRANT INSERT ON hostile_calls TO PUBLIC;
CREATE FUNCTION public.date_trunc(text, timestamptz) RETURNS timestamptz LANGUAGE sql
    AS $$ INSERT INTO public.hostile_calls VALUES ('date_trunc') RETURNING '2000-01-01+00'::timestamptz $$;
CREATE FUNCTION public.to_regclass(text) RETURNS regclass LANGUAGE sql
    AS $$ INSERT INTO public.hostile_calls VALUES ('to_regclass') RETURNING NULL::regclass $$;
CREATE FUNCTION public.hostile_eq(regclass, regclass) RETURNS bool LANGUAGE sql
    AS $$ INSERT INTO public.hostile_calls VALUES ('=') RETURNING true $$;
CREATE OPERATOR public.= (LEFTARG = regclass, RIGHTARG = regclass, FUNCTION = public.hostile_eq);
RESET ROLE;
CREATE TABLE sq (id sno PRIMARY KEY) PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('sq', '1 day', '2026-03-04+00', '2026-03-01+00') AS created;
CALL sno_drop_old_time_partitions('sq', '2026-03-02+00');
SELECT count(*) AS hostile_calls FROM hostile_calls;
DROP OPERATOR public.= (regclass, regclass);
DROP FUNCTION public.hostile_eq(regclass, regclass), public.date_trunc(text, timestamptz), public.to_regclass(text);
SELECT partition, from_time FROM sno_time_partitions WHERE parent_table = 'sq'::regclass ORDER BY from_value;
DROP TABLE sq, sq_p2026_03_02, hostile_calls;
REVOKE CREATE ON SCHEMA public FROM sno_tp_hostile;
DROP ROLE sno_tp_hostile;

-- 6. sno_time_partitioned_tables: the coverage ahead of now (what the alert reads).
CREATE TABLE live (id sno PRIMARY KEY DEFAULT sno_generate(2)) PARTITION BY RANGE (id);
SELECT parent_table, partitions, covered_until FROM sno_time_partitioned_tables WHERE parent_table = 'live'::regclass;
SELECT sno_create_time_partitions('live', '1 day', now() + interval '2 days') AS created;
SELECT partitions, has_default, newest_interval, covered_until = date_trunc('day', now()) + interval '3 days' AS three_days
FROM sno_time_partitioned_tables WHERE parent_table = 'live'::regclass;
INSERT INTO live SELECT FROM generate_series(1, 100);
SELECT count(*) AS rows FROM live;
CREATE TABLE live_max PARTITION OF live FOR VALUES FROM (sno_min(date_trunc('day', now()) + interval '3 days')) TO (MAXVALUE);
SELECT covered_until FROM sno_time_partitioned_tables WHERE parent_table = 'live'::regclass;
-- Neither a temporary table nor a partition partitioned in its turn is listed (a session's
-- own work table, a month cut into days: not tables whose partitions a job keeps).
CREATE TEMP TABLE live_tmp (id sno) PARTITION BY RANGE (id);
CREATE TABLE sub (id sno) PARTITION BY RANGE (id);
CREATE TABLE sub_2026_10 PARTITION OF sub FOR VALUES FROM (sno_min('2026-10-01+00')) TO (sno_min('2026-11-01+00')) PARTITION BY RANGE (id);
SELECT parent_table FROM sno_time_partitioned_tables WHERE parent_table::text IN ('live_tmp', 'sub', 'sub_2026_10') ORDER BY 1;
DROP TABLE live_tmp, sub;

DROP TABLE ev, ev_copy, mo, dy, qw, wk, hr, tc, plain, byhash, bytime, bytwo, far, own, live;
REVOKE CREATE ON SCHEMA public FROM sno_tp_owner;
DROP ROLE sno_tp_owner;
DROP ROLE sno_tp_other;
