-- .ci/bench, section generator: sno_generate() calls and INSERT of 1,000,000 rows, and their
-- tables (psql -At -v runs=N, after generator.sql).
CREATE TEMP TABLE r AS SELECT
    bench('SELECT count(1) FROM generate_series(1, 5000000)', :runs) AS base,
    bench('SELECT count(sno_generate(1)) FROM generate_series(1, 5000000)', :runs) AS sno,
    bench('SELECT count(gen_random_uuid()) FROM generate_series(1, 5000000)', :runs) AS uuid;
SELECT '';
SELECT '| 5,000,000 calls (PostgreSQL ' || current_setting('server_version') || ') | ms | ns per call above count(1) |';
SELECT '|---|---:|---:|';
SELECT format('| count(1) | %s | |', base) FROM r;
SELECT format('| count(sno_generate(1)) | %s | %s |', sno, round((sno - base) * 1e6 / 5000000, 1)) FROM r;
SELECT format('| count(gen_random_uuid()) | %s | %s |', uuid, round((uuid - base) * 1e6 / 5000000, 1)) FROM r;
SELECT format('| gen_random_uuid() / sno_generate() cost | | %sx |', round((uuid - base) / (sno - base), 1)) FROM r;
CREATE TEMP TABLE i AS SELECT
    bench('TRUNCATE ins_big; INSERT INTO ins_big (v) SELECT g FROM generate_series(1, 1000000) g', :runs) AS big,
    bench('TRUNCATE ins_sno; INSERT INTO ins_sno (v) SELECT g FROM generate_series(1, 1000000) g', :runs) AS sno,
    NULL::numeric AS big_bpr, NULL::numeric AS sno_bpr;
UPDATE i SET big_bpr = round(pg_relation_size('ins_big_pkey') / 1e6, 2),
    sno_bpr = round(pg_relation_size('ins_sno_pkey') / 1e6, 2);
SELECT '';
SELECT '| INSERT 1,000,000 rows, one session, key defaulting to the generator | ms | primary key index | PK bytes/row |';
SELECT '|---|---:|---:|---:|';
SELECT format('| bigserial | %s | %s | %s |', big, pg_size_pretty(pg_relation_size('ins_big_pkey')), big_bpr) FROM i;
SELECT format('| sno DEFAULT sno_generate(1) | %s | %s | %s |', sno, pg_size_pretty(pg_relation_size('ins_sno_pkey')), sno_bpr) FROM i;
SELECT format('| sno / bigserial | %s | | %s |', round(sno / big, 2), round(sno_bpr / big_bpr, 2)) FROM i;
