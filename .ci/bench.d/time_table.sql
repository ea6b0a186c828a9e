-- .ci/bench, section time: the measurements and their table (psql -At -v rows=N -v runs=N,
-- after time.sql).
SELECT '| ' || :'rows' || ' rows over one day (PostgreSQL ' || current_setting('server_version') || ') | rows | bounds added µs | no bounds µs | no bounds / bounds |';
SELECT '|---|---:|---:|---:|---:|';
WITH q(label, w) AS (VALUES
    ('last hour: sno_time(id) >= t', $$sno_time(id) >= '2026-01-01 23:00+00'$$),
    ('one minute: BETWEEN', $$sno_time(id) BETWEEN '2026-01-01 12:00+00' AND '2026-01-01 12:01+00'$$),
    ('one 4 ms unit: =', $$sno_time(id) = '2026-01-01 12:00:00+00'$$))
SELECT format('| %s | %s | %s | %s | %s |', label, n, a, b, round(b / greatest(a, 1), 0))
FROM q, LATERAL (SELECT rows_of(w) AS n,
                        bench_us(format('SELECT count(*) FROM t_time WHERE %s', w), :runs) AS a,
                        bench_us(format('SELECT count(*) FROM t_time WHERE %s OR false', w), :runs) AS b) t;
