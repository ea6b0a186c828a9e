-- .ci/bench, section partitions (PostgreSQL 18 and later): the tables and plan_exec (psql
-- -v rows=N -v days=N). The same instants for both: rows rows spread evenly over the last days
-- days, up to now.
SET timezone = 'UTC';
CREATE UNLOGGED TABLE tp_times AS
    SELECT now() - (g * (interval '1 day' * :days / :rows)) AS t, g AS v FROM generate_series(0, :rows - 1) g;
CREATE TABLE tp_sno (id sno PRIMARY KEY, v int) PARTITION BY RANGE (id);
SELECT sno_create_time_partitions('tp_sno', '1 day', now() + interval '1 day', now() - make_interval(days => :days));
INSERT INTO tp_sno SELECT sno_from_parts(t, 1, 42, v % 65536), v FROM tp_times;
CREATE TABLE tp_uuid (id uuid NOT NULL, created_at timestamptz NOT NULL, v int, PRIMARY KEY (id, created_at))
    PARTITION BY RANGE (created_at);
DO $$ DECLARE p record; BEGIN
    FOR p IN SELECT from_time, to_time FROM sno_time_partitions WHERE parent_table = 'tp_sno'::regclass LOOP
        EXECUTE format('CREATE TABLE tp_uuid_%s PARTITION OF tp_uuid FOR VALUES FROM (%L) TO (%L)',
                       to_char(p.from_time, 'YYYYMMDD'), p.from_time, p.to_time);
    END LOOP; END $$;
INSERT INTO tp_uuid SELECT uuidv7(t - now()), t, v FROM tp_times;
CREATE INDEX ON tp_uuid (created_at);
VACUUM ANALYZE tp_sno, tp_uuid;
-- plan_exec(query, n): medians of planning and execution time of EXPLAIN ANALYZE query, ms.
CREATE FUNCTION plan_exec(q text, n int, OUT planning numeric, OUT execution numeric) LANGUAGE plpgsql AS $$
DECLARE j json; pl numeric[] := '{}'; ex numeric[] := '{}';
BEGIN
    FOR i IN 1..n LOOP
        EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF) ' || q INTO j;
        pl := pl || (j->0->>'Planning Time')::numeric;
        ex := ex || (j->0->>'Execution Time')::numeric;
    END LOOP;
    planning := (SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY x), 3) FROM unnest(pl) x);
    execution := (SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY x), 3) FROM unnest(ex) x);
END $$;
