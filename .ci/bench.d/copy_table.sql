-- .ci/bench, section copy: the measurements and their table (psql -At -v rows=N -v runs=N
-- -v uuid_file=PATH -v sno_file=PATH, after copy.sql).
SELECT '| operation (' || :rows || ' values, PostgreSQL ' || current_setting('server_version') || ') | uuid ms | sno ms | sno/uuid |';
SELECT '|---|---:|---:|---:|';
WITH r(op, u, s) AS (VALUES
    ('COPY ... TO (text output)',
        bench('COPY t_uuid TO ''/dev/null''', :runs),
        bench('COPY t_sno TO ''/dev/null''', :runs)),
    ('COPY ... FROM (text input)',
        bench(format('TRUNCATE t_uuid_in; COPY t_uuid_in FROM %L', :'uuid_file'), :runs),
        bench(format('TRUNCATE t_sno_in; COPY t_sno_in FROM %L', :'sno_file'), :runs)),
    ('ORDER BY, random values',
        bench('SELECT count(*) FROM (SELECT id FROM t_uuid ORDER BY id OFFSET 0) s', :runs),
        bench('SELECT count(*) FROM (SELECT id FROM t_sno_rand ORDER BY id OFFSET 0) s', :runs)),
    ('ORDER BY, uuid random vs sno time-ordered',
        bench('SELECT count(*) FROM (SELECT id FROM t_uuid ORDER BY id OFFSET 0) s', :runs),
        bench('SELECT count(*) FROM (SELECT id FROM t_sno ORDER BY id OFFSET 0) s', :runs)),
    ('CREATE INDEX, random values',
        bench('DROP INDEX IF EXISTS i_uuid; CREATE INDEX i_uuid ON t_uuid (id)', :runs),
        bench('DROP INDEX IF EXISTS i_sno; CREATE INDEX i_sno ON t_sno_rand (id)', :runs))
)
SELECT format('| %s | %s | %s | %s |', op, u, s, round(s / u, 2)) FROM r;
SELECT format('| table size (heap) | %s | %s | |', pg_size_pretty(pg_table_size('t_uuid')), pg_size_pretty(pg_table_size('t_sno')));
SELECT format('| btree index size (random values) | %s | %s | |', pg_size_pretty(pg_relation_size('i_uuid')), pg_size_pretty(pg_relation_size('i_sno')));
