-- A server where sno is NOT in shared_preload_libraries: the type and every function but the
-- generator work; the generator says what to add to postgresql.conf.
CREATE EXTENSION IF NOT EXISTS sno;
SELECT sno_time('brpk4q72xwf2m63l'::sno) IS NOT NULL AS type_works,
       sno_from_parts('2024-01-01+00', 1, 2, 3) AS from_parts;
CREATE FUNCTION pg_temp.sqlstate(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN EXECUTE q; RETURN 'no error';
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE; END $$;
SELECT pg_temp.sqlstate('SELECT sno_generate(1)') AS sqlstate;
SELECT sno_generate(1);
SELECT sno_generate();
-- A probe gets an answer, not an error: the status says why no ID is made.
SELECT status, partition, partition_source, state, ids_issued, sequence_min, sequence_max,
       status_message
FROM sno_generator;
SELECT sno_current_partition() IS NULL AS no_partition;
-- The session is still fine afterwards.
SELECT 'brpk4q72xwf2m63l'::sno AS still_working;
-- Time predicates answer the same without the preload (the bounds come once the library is
-- loaded in the session, as it is here).
CREATE TABLE np (id sno PRIMARY KEY);
INSERT INTO np SELECT sno_from_parts(timestamptz '2026-01-01+00' + g * interval '1 ms', 0, 1, g) FROM generate_series(1, 2000) g;
SELECT count(*) FROM np WHERE sno_time(id) >= '2026-01-01 00:00:01.002+00';
SELECT count(*) FROM (SELECT id FROM np OFFSET 0) s WHERE sno_time(id) >= '2026-01-01 00:00:01.002+00';
DROP TABLE np;
-- IDs for past times need the preload too; the reserved space's view answers with NULL counts.
SELECT sno_generate_at(0, now());
SELECT total, granted, remaining, may_grant FROM sno_reserved;
