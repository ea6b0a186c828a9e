-- PostgreSQL 16+: soft input errors (pg_input_is_valid, pg_input_error_info). Only run on 16+.
CREATE EXTENSION IF NOT EXISTS sno;

SELECT input, pg_input_is_valid(input, 'sno') AS valid
FROM (VALUES ('brpk4q72xwf2m63l'), ('BRPK4Q72XWF2M63L'), ('brpk4q72xwf2m63y'), (''), ('brpk4q72xwf2m63l ')) AS t(input);

SELECT * FROM pg_input_error_info('brpk4q72xwf2m63_', 'sno');
SELECT * FROM pg_input_error_info('short', 'sno');
SELECT * FROM pg_input_error_info('\x4e6f2160a0ff9a0a10', 'sno');
SELECT pg_input_is_valid('\x4e6f2160a0ff9a0a1033', 'sno') AS hex_form;
SELECT * FROM pg_input_error_info('brpk4q72xwf2m63l', 'sno');
-- Arrays of sno report element errors softly too.
SELECT pg_input_is_valid('{brpk4q72xwf2m63l,2222222222222222}', 'sno[]') AS ok,
       pg_input_is_valid('{brpk4q72xwf2m63l,nope}', 'sno[]') AS bad;
