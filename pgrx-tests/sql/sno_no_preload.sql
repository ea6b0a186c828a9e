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
SELECT * FROM sno_generator;
SELECT sno_current_partition();
-- The session is still fine afterwards.
SELECT 'brpk4q72xwf2m63l'::sno AS still_working;
