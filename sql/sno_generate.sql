-- sno_generate: IDs made inside the database (src/pg/issuer/hot.rs), declared by hand like
-- the type. pgrx generates no function of this file; the ones it generates are listed in
-- sno_monitoring.sql.
--
-- VOLATILE: every call returns a new ID. PARALLEL SAFE: the generator's shared state lives in
-- shared memory and every process, parallel workers included, takes its sequence numbers
-- from the same cursor there, so IDs made in workers are as unique as IDs made in the leader
-- (a test runs it in a forced parallel query). It changes no database state.
CREATE FUNCTION sno_generate(meta int4) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_generate' LANGUAGE C VOLATILE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_generate(int4) IS 'a new sno ID with this meta byte (0..255), unique on this server';
CREATE FUNCTION sno_generate() RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_generate_default' LANGUAGE C VOLATILE PARALLEL SAFE;
COMMENT ON FUNCTION sno_generate() IS 'a new sno ID with meta 0, unique on this server';
