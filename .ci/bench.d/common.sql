-- .ci/bench's set-up of its server, before any section: the extension and bench().
CREATE EXTENSION sno;
-- bench(query, runs): median wall time of EXECUTE query, in milliseconds.
CREATE FUNCTION bench(q text, runs int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; ms numeric[] := '{}';
BEGIN
    FOR i IN 1..runs LOOP
        t0 := clock_timestamp();
        EXECUTE q;
        ms := ms || (extract(epoch FROM clock_timestamp() - t0) * 1000)::numeric;
    END LOOP;
    RETURN (SELECT round(percentile_disc(0.5) WITHIN GROUP (ORDER BY x), 1) FROM unnest(ms) x);
END $$;
