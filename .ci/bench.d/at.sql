-- .ci/bench, section at: sno_generate_at against sno_generate, in one session, and the table
-- (psql -At -v at_calls=N -v runs=N). The DO block reads runs from the setting bench.runs
-- (psql leaves dollar-quoted text alone).
SET bench.runs = :'runs';
ALTER ROLE postgres SET sno.reserved_limit = 4096;
SET sno.reserved_limit = 4096;
CREATE UNLOGGED TABLE at_times AS
    SELECT timestamptz '2015-01-01+00' + g * interval '6 s' AS sparse,
           timestamptz '2040-01-01+00' + g * interval '40 us' AS dense,
           timestamptz '2012-01-01+00' + random() * interval '365 days' AS random
    FROM generate_series(1, :at_calls) g;
VACUUM ANALYZE at_times;
CREATE TEMP TABLE shapes (n int, label text, base_q text, q text);
INSERT INTO shapes VALUES
    (1, 'sno_generate(1)', 'SELECT count(1) FROM at_times', 'SELECT count(sno_generate(1)) FROM at_times'),
    (2, 'sno_generate_at, in time order, one call per 6 s', 'SELECT count(sparse) FROM at_times',
        'SELECT count(sno_generate_at(%s, sparse)) FROM at_times'),
    (3, 'sno_generate_at, in time order, about 100 calls per 4 ms unit', 'SELECT count(dense) FROM at_times',
        'SELECT count(sno_generate_at(50 + %s, dense)) FROM at_times'),
    (4, 'sno_generate_at, random times in one year', 'SELECT count(random) FROM at_times',
        'SELECT count(sno_generate_at(100 + %s, random)) FROM at_times');
CREATE TEMP TABLE at_ms (n int, round int, base numeric, ms numeric);
CREATE TEMP TABLE grants0 AS SELECT count(*) AS n FROM sno_reserved_grants;
DO $$
DECLARE s record; t0 timestamptz; b numeric;
BEGIN
    -- warm-up: the session's first grant, the table's pages
    PERFORM count(sno_generate_at(0, sparse)) FROM at_times;
    PERFORM count(sno_generate(1)) FROM at_times;
    FOR i IN 1..current_setting('bench.runs')::int LOOP
        FOR s IN SELECT * FROM shapes ORDER BY n LOOP
            t0 := clock_timestamp();
            EXECUTE s.base_q;
            b := extract(epoch FROM clock_timestamp() - t0) * 1000;
            t0 := clock_timestamp();
            EXECUTE format(s.q, i);
            INSERT INTO at_ms VALUES (s.n, i, b, extract(epoch FROM clock_timestamp() - t0) * 1000);
        END LOOP;
    END LOOP;
END $$;
CREATE TEMP TABLE r AS
    SELECT n, label, round(percentile_disc(0.5) WITHIN GROUP (ORDER BY m.base), 1) AS base,
        round(percentile_disc(0.5) WITHIN GROUP (ORDER BY m.ms), 1) AS ms,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY m.ms - m.base)::numeric AS diff
    FROM shapes s JOIN at_ms m USING (n) GROUP BY n, label;
SELECT '';
SELECT '| ' || :'at_calls' || ' calls a round, ' || :'runs' || ' rounds (PostgreSQL ' || current_setting('server_version') || ') | ms | baseline ms | ns per ID above baseline | / sno_generate |';
SELECT '|---|---:|---:|---:|---:|';
SELECT format('| %s | %s | %s | %s | %s |', label, ms, base, round(diff * 1e6 / :at_calls, 1),
    round(diff / (SELECT diff FROM r WHERE n = 1), 2)) FROM r ORDER BY n;
SELECT '';
SELECT format('ms and baseline ms: medians; ns per ID: the median of the rounds'' differences (the shape less its '
    || 'baseline, count() of the same column; count(1) for sno_generate, run just before it). '
    || 'Target: sno_generate_at within 2x of sno_generate''s cost per ID: %s (worst shape %sx). '
    || 'Reserved partitions this session was granted: %s (random order: one per 65,536 calls).',
    CASE WHEN max(diff / (SELECT diff FROM r WHERE n = 1)) <= 2 THEN 'met' ELSE 'MISSED' END,
    round(max(diff / (SELECT diff FROM r WHERE n = 1)), 2),
    (SELECT count(*) FROM sno_reserved_grants) - (SELECT n FROM grants0))
FROM r WHERE n > 1;
SELECT format('Random order less time order (one call per 6 s): %s ns per ID, about %s ms per grant (%s calls a grant).',
    round((r4.diff - r2.diff) * 1e6 / :at_calls, 1),
    round((r4.diff - r2.diff) / nullif((SELECT count(*) FROM sno_reserved_grants) - (SELECT n FROM grants0), 0) * :runs, 2),
    round(:at_calls::numeric * :runs / nullif((SELECT count(*) FROM sno_reserved_grants) - (SELECT n FROM grants0), 0)))
FROM r r4, r r2 WHERE r4.n = 4 AND r2.n = 2;
SELECT '';
SELECT '    rounds (shape: baseline ms / ms, each round):';
SELECT format('    %s: %s', n, string_agg(base::numeric(10,1) || ' / ' || ms::numeric(10,1), ', ' ORDER BY round))
FROM at_ms GROUP BY n ORDER BY n;
DROP TABLE at_times;
