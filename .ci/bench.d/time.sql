-- .ci/bench, section time: the table and the functions (psql -v rows=N). A day of IDs, rows of
-- them, in time order, with a primary key.
CREATE UNLOGGED TABLE t_time (id sno PRIMARY KEY, v int);
INSERT INTO t_time SELECT sno_from_parts(timestamptz '2026-01-01+00' + g * (interval '1 day' / :rows), 1, 42, g % 65536), g
    FROM generate_series(0, :rows - 1) g;
VACUUM ANALYZE t_time;
-- rows_of(predicate): the rows of t_time it selects, the same as written (bounds added) and
-- under OR false (no bounds), or an error.
CREATE FUNCTION rows_of(w text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE a bigint; b bigint;
BEGIN
    EXECUTE format('SELECT count(*) FROM t_time WHERE %s', w) INTO a;
    EXECUTE format('SELECT count(*) FROM t_time WHERE %s OR false', w) INTO b;
    IF a <> b THEN RAISE EXCEPTION 'rows differ for %: % with the bounds, % without', w, a, b; END IF;
    RETURN a;
END $$;
-- bench_us(query, runs): median wall time of EXECUTE query, in microseconds.
CREATE FUNCTION bench_us(q text, runs int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; us numeric[] := '{}';
BEGIN
    FOR i IN 1..runs LOOP
        t0 := clock_timestamp();
        EXECUTE q;
        us := us || (extract(epoch FROM clock_timestamp() - t0) * 1000000)::numeric;
    END LOOP;
    RETURN (SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY x), 0) FROM unnest(us) x);
END $$;
