-- .ci/bench, section copy: the tables (psql -v rows=N -v uuid_file=PATH -v sno_file=PATH; the
-- files are written by the server, read back by copy_table.sql).
CREATE UNLOGGED TABLE t_uuid AS SELECT gen_random_uuid() AS id FROM generate_series(1, :rows);
-- Time-ordered sno values as a generator makes them: many per 4 ms unit, rising sequence.
CREATE UNLOGGED TABLE t_sno AS
    SELECT sno_from_parts(timestamptz '2026-01-01+00' + (g / 4096) * interval '4 ms', 1, 42, g % 4096) AS id
    FROM generate_series(0, :rows - 1) g;
-- Random sno values (same randomness as the uuid column, 10 of its 16 bytes).
CREATE UNLOGGED TABLE t_sno_rand AS
    SELECT sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)) AS id FROM generate_series(1, :rows);
CREATE UNLOGGED TABLE t_uuid_in (LIKE t_uuid);
CREATE UNLOGGED TABLE t_sno_in (LIKE t_sno);
COPY t_uuid TO :'uuid_file';
COPY t_sno TO :'sno_file';
VACUUM ANALYZE;
