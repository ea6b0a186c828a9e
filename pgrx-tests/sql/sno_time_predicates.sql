-- Time predicates on the key: sno_time(id) compared with a constant, a parameter or a stable
-- expression gets the bounds it implies on id (id >= sno_lower_bound(t), id <= sno_upper_bound(t)),
-- so the planner scans the btree or BRIN index on id and prunes range partitions on id; the
-- predicate itself stays as a filter. Every answer is compared with a sequential scan's.
-- Needs sno loaded when the query is planned (shared_preload_libraries: the planner hook).
CREATE EXTENSION IF NOT EXISTS sno;
SET timezone = 'UTC';

-- The bounds, defined for every instant (sno_min/sno_max raise outside the format's range).
SELECT sno_lower_bound('2031-05-08 23:03:34.977+00') = sno_min('2031-05-08 23:03:34.977+00') AS lower_is_sno_min,
       sno_upper_bound('2031-05-08 23:03:34.977+00') = sno_max('2031-05-08 23:03:34.977+00') AS upper_is_sno_max;
SELECT t, sno_lower_bound(t), sno_upper_bound(t)
FROM unnest(ARRAY['-infinity', '1999-12-31 23:59:59.999999+00', '2010-01-01 00:00:00+00',
                  '2079-09-07 15:47:35.548+00', '2079-09-07 15:47:35.552+00', 'infinity']::timestamptz[]) t;
SELECT sno_lower_bound(NULL) IS NULL AS strict;

-- IDs in consecutive 4 ms units around 2026-01-01, with both tick-tock bits, every meta, and
-- the first and last unit of the format.
CREATE TABLE tp (id sno PRIMARY KEY, note text);
INSERT INTO tp
SELECT sno_from_parts(timestamptz '2026-01-01 00:00:00+00' + u * interval '4 ms', m, p, s, k), 'u' || u
FROM generate_series(-500, 500) u, (VALUES (0), (255)) mm(m), (VALUES (0), (65535)) pp(p),
     (VALUES (0), (65535)) ss(s), (VALUES (0), (1)) kk(k);
INSERT INTO tp VALUES (sno_from_parts('2010-01-01 00:00:00+00', 0, 0, 0, 0), 'first'),
                      ('xxxxxxxxxxxxxxxx', 'last'),
                      (sno_from_parts('2079-09-07 15:47:35.548+00', 0, 0, 0, 0), 'last unit');
CREATE TABLE tpb AS SELECT * FROM tp;
CREATE INDEX tpb_brin ON tpb USING brin (id);
ANALYZE tp, tpb;

-- EXPLAIN: the bounds as the index condition, the predicate as the filter.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE sno_time(id) >= '2026-01-01 00:00:01+00';
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE sno_time(id) BETWEEN '2026-01-01 00:00:00+00' AND '2026-01-01 00:00:00.010+00';
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE sno_time(id) = '2026-01-01 00:00:00.004+00';
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE '2026-01-01 00:00:01+00' > sno_time(id);
EXPLAIN (COSTS OFF) SELECT id FROM tp WHERE sno_time(id) > now() - interval '1 day';
EXPLAIN (COSTS OFF) SELECT id FROM tp WHERE sno_time(id) >= date '2026-01-01' AND sno_time(id) < timestamp '2026-01-01 00:00:01';
-- A query that already has the bound (as Citus's shard queries do: the coordinator plans, then
-- deparses the query with its bounds for each shard, and the worker plans it again) keeps one.
EXPLAIN (COSTS OFF) SELECT id FROM tp WHERE sno_time(id) >= '2026-01-01 00:00:01+00'
    AND id >= sno_lower_bound('2026-01-01 00:00:01+00'::timestamptz);
EXPLAIN (COSTS OFF) SELECT id FROM tp WHERE sno_time(id) >= '2026-01-01 00:00:01+00'
    AND id >= '9d5ve8hm22222222'::sno;
-- A prepared statement: the generic plan has the parameter in the index condition.
PREPARE since(timestamptz) AS SELECT count(*) FROM tp WHERE sno_time(id) >= $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE since('2026-01-01 00:00:01+00');
RESET plan_cache_mode;
-- In a subquery, a view and a JOIN ... ON clause too.
CREATE VIEW tp_recent AS SELECT * FROM tp WHERE sno_time(id) >= '2026-01-01 00:00:01+00';
EXPLAIN (COSTS OFF) SELECT count(*) FROM tp_recent;
EXPLAIN (COSTS OFF) SELECT * FROM (SELECT id FROM tp WHERE sno_time(id) < '2026-01-01+00' LIMIT 5) s;
EXPLAIN (COSTS OFF) SELECT * FROM (VALUES (1)) v(x) LEFT JOIN tp ON sno_time(tp.id) = '2026-01-01+00';
-- A BRIN index (here the only one) takes the same bounds, in a bitmap scan.
SET enable_bitmapscan = on;
EXPLAIN (COSTS OFF) SELECT * FROM tpb WHERE sno_time(id) < '2026-01-01 00:00:00+00';
RESET enable_seqscan;
RESET enable_bitmapscan;
-- Left alone: a volatile operand, <>, and a comparison that is not a conjunct.
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE sno_time(id) > clock_timestamp() - interval '1 day';
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE sno_time(id) <> '2026-01-01 00:00:00+00';
EXPLAIN (COSTS OFF) SELECT * FROM tp WHERE sno_time(id) > '2026-01-01 00:00:00+00' OR note = 'first';

-- Every comparison, at unit boundaries and inside units, before, at and after both ends of
-- the format's range: the rows equal a sequential scan's (the bounds are added only in WHERE,
-- so the query under test filters there, and the reference computes the predicate in a CTE
-- the planner cannot see through).
CREATE TEMP TABLE probes (t text, typ text);
INSERT INTO probes SELECT t, 'timestamptz' FROM unnest(ARRAY['2026-01-01 00:00:00+00', '2026-01-01 00:00:00.001+00',
    '2026-01-01 00:00:00.003999+00', '2026-01-01 00:00:00.004+00', '2025-12-31 23:59:59.996+00',
    '2025-12-31 23:59:58+00', '2026-01-01 00:00:02.000001+00', '2030-01-01+00',
    '-infinity', '1999-01-01+00', '2009-12-31 23:59:59.999999+00', '2010-01-01 00:00:00+00',
    '2010-01-01 00:00:00.004+00', '2079-09-07 15:47:35.548+00', '2079-09-07 15:47:35.551999+00',
    '2079-09-07 15:47:35.552+00', 'infinity']) t;
-- Dates and timestamps convert in the session's time zone, and past timestamptz's range (in
-- either direction) compare as an infinity: the bounds must agree.
INSERT INTO probes SELECT t, 'date' FROM unnest(ARRAY['2026-01-01', '2025-12-31', '2010-01-01', '2009-12-31',
    '2079-09-07', '2079-09-08', '300000-01-01', '4714-11-24 BC', 'infinity', '-infinity']) t;
INSERT INTO probes SELECT t, 'timestamp' FROM unnest(ARRAY['2026-01-01 00:00:00', '2026-01-01 00:00:00.002',
    '2025-12-31 23:59:59.999', '2079-09-07 15:47:35.55', '294276-12-31 23:59:59', '4714-11-24 00:00:00 BC',
    'infinity', '-infinity']) t;
-- mismatches(table, op, settings): the probes whose answer under the settings differs from
-- the reference's.
CREATE FUNCTION pg_temp.mismatches(tbl text, op text, forced text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE p record; n bigint := 0; a text; b text;
BEGIN
    FOR p IN SELECT t, typ FROM probes LOOP
        EXECUTE forced;
        EXECUTE format('SELECT md5(string_agg(id::text, %L ORDER BY id)) FROM %I WHERE sno_time(id) %s %L::%s', ',', tbl, op, p.t, p.typ) INTO a;
        RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_indexscan;
        EXECUTE format('WITH m AS MATERIALIZED (SELECT id, sno_time(id) %s %L::%s AS hit FROM %I) SELECT md5(string_agg(id::text, %L ORDER BY id)) FROM m WHERE hit', op, p.t, p.typ, tbl, ',') INTO b;
        IF a IS DISTINCT FROM b THEN
            RAISE NOTICE '%: sno_time(id) % %::%: index % seq %', tbl, op, p.t, p.typ, a, b;
            n := n + 1;
        END IF;
    END LOOP;
    RETURN n;
END $$;
-- tp through its btree index (index and bitmap scans), tpb through its BRIN index; in UTC and
-- in a time zone ahead of it.
SELECT op, pg_temp.mismatches('tp', op, 'SET enable_seqscan = off; SET enable_bitmapscan = off') AS btree_mismatches,
       pg_temp.mismatches('tp', op, 'SET enable_seqscan = off; SET enable_indexscan = off') AS bitmap_mismatches,
       pg_temp.mismatches('tpb', op, 'SET enable_seqscan = off') AS brin_mismatches
FROM unnest(ARRAY['<', '<=', '=', '>=', '>']) op;
SET timezone = 'Asia/Tokyo';
SELECT op, pg_temp.mismatches('tp', op, 'SET enable_seqscan = off; SET enable_bitmapscan = off') AS btree_mismatches
FROM unnest(ARRAY['<', '<=', '=', '>=', '>']) op;
SET timezone = 'UTC';
-- The dates past timestamptz's range plan and run (no conversion error).
SELECT count(*) FROM tp WHERE sno_time(id) < DATE '300000-01-01';
SELECT count(*) FROM tp WHERE sno_time(id) > DATE '4714-11-24 BC';
-- A FULL JOIN is planned as before (its ON gets no bound), and a column as the operand gets
-- no bound either (it could only be a join clause).
SELECT count(*) FROM tp FULL JOIN (VALUES (date '2026-01-01')) d(d) ON sno_time(tp.id) = d.d;
SELECT count(*) FROM tp FULL JOIN tpb ON tp.id = tpb.id AND sno_time(tp.id) >= '2026-01-01 00:00:01+00';
EXPLAIN (COSTS OFF) SELECT * FROM tp JOIN tpb ON sno_time(tp.id) = sno_time(tpb.id);
-- The window of one unit holds its IDs of both tick-tock bits.
SELECT count(*), count(DISTINCT sno_tick(id)) FROM tp WHERE sno_time(id) = '2026-01-01 00:00:00.004+00';
-- With a parameter (custom and generic plans), and the operand on the left.
SET plan_cache_mode = force_generic_plan;
EXECUTE since('2026-01-01 00:00:01+00');
EXECUTE since('infinity');
RESET plan_cache_mode;
EXECUTE since('2026-01-01 00:00:01+00');
SELECT count(*) FROM tp WHERE sno_time(id) >= '2026-01-01 00:00:01+00';
SELECT count(*) FROM tp WHERE '2026-01-01 00:00:01+00' <= sno_time(id);

-- Time partitioning: a table partitioned BY RANGE (id) with bounds from sno_min.
CREATE TABLE ev (id sno PRIMARY KEY DEFAULT sno_generate(), n int) PARTITION BY RANGE (id);
CREATE TABLE ev_2025 PARTITION OF ev FOR VALUES FROM (sno_min('2025-01-01+00')) TO (sno_min('2026-01-01+00'));
CREATE TABLE ev_2026 PARTITION OF ev FOR VALUES FROM (sno_min('2026-01-01+00')) TO (sno_min('2027-01-01+00'));
CREATE TABLE ev_later PARTITION OF ev FOR VALUES FROM (sno_min('2027-01-01+00')) TO (MAXVALUE);
INSERT INTO ev SELECT sno_from_parts(timestamptz '2025-12-31 23:59:59+00' + g * interval '1 ms', 0, 1, g), g FROM generate_series(0, 1999) g;
ANALYZE ev;
INSERT INTO ev (n) VALUES (-1);  -- DEFAULT sno_generate(): routed to the partition of now
SELECT tableoid::regclass AS partition, count(*) FROM ev WHERE n >= 0 GROUP BY 1 ORDER BY 1;
SELECT (SELECT tableoid::regclass FROM ev WHERE n = -1) =
       (CASE WHEN now() < '2026-01-01+00' THEN 'ev_2025' WHEN now() < '2027-01-01+00' THEN 'ev_2026' ELSE 'ev_later' END)::regclass AS generated_row_routed_by_time;
-- Plan-time pruning for constants, with BETWEEN on id and with sno_time.
EXPLAIN (COSTS OFF) SELECT count(*) FROM ev WHERE id BETWEEN sno_min('2025-06-01+00') AND sno_max('2025-07-01+00');
EXPLAIN (COSTS OFF) SELECT count(*) FROM ev WHERE sno_time(id) >= '2026-01-01+00' AND sno_time(id) < '2026-02-01+00';
-- Run-time pruning for parameters and now().
PREPARE ev_since(timestamptz) AS SELECT count(*) FROM ev WHERE sno_time(id) >= $1;
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) EXECUTE ev_since('2026-06-01+00');
EXECUTE ev_since('2026-06-01+00');
EXECUTE ev_since('2025-12-31 23:59:59.5+00');
RESET plan_cache_mode;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ev WHERE sno_time(id) >= now() + interval '100 years';
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) FROM ev WHERE sno_time(id) >= now() + interval '100 years';
-- Answers equal the sequential scan's across the partition boundary.
SELECT count(*) FROM ev WHERE sno_time(id) >= '2025-12-31 23:59:59.996+00' AND sno_time(id) <= '2026-01-01 00:00:00.004+00';
SELECT count(*) FROM (SELECT id, sno_time(id) AS t FROM ev OFFSET 0) s WHERE t >= '2025-12-31 23:59:59.996+00' AND t <= '2026-01-01 00:00:00.004+00';
DROP VIEW tp_recent;
DROP TABLE ev, tp, tpb;
