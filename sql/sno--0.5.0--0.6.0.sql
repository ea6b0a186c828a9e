-- sno 0.5.0 -> 0.6.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.6.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.6.0 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's operators and
-- functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh). Nothing is dropped or changed; new:
-- * sno_generate_at(meta, "at"): IDs for any time from a reserved partition granted to the
--   session; EXECUTE revoked from PUBLIC;
-- * sno_reserved_grant(above): a Citus coordinator's grant for a worker's session (it checks
--   that the caller may execute sno_generate_at);
-- * sno_reserved_relearn(): superusers, after a lost state file;
-- * the schema sno_internal and its table reserved_grants (one row per reserved partition
--   granted to a session of this database; pg_dump carries it) with its trigger
--   sno_reserved_grants_noted (a restored row is recorded in the server's lineage), and the view
--   sno_reserved_grants over it, SELECT granted to PUBLIC;
-- * sno_reserved_space() and the view sno_reserved, SELECT granted to PUBLIC.
-- Every C symbol of 0.5.0 keeps its shape: a database still at 0.5.0 works with this library.
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema; every object of sno's is
-- named through @extschema@, and everything else is pg_catalog's.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

CREATE FUNCTION @extschema@.sno_reserved_space() RETURNS TABLE (
	"first_partition" INT,
	"last_partition" INT,
	"total" INT,
	"granted" INT,
	"used_by_live" INT,
	"remaining" INT,
	"may_grant" bool
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'sno_reserved_space_wrapper';

CREATE FUNCTION @extschema@.sno_reserved_grant(
	"above" INT DEFAULT NULL
) RETURNS INT
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'sno_reserved_grant_wrapper';

CREATE FUNCTION @extschema@.sno_reserved_relearn() RETURNS INT
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'sno_reserved_relearn_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sno_reserved_relearn() FROM PUBLIC;

CREATE FUNCTION @extschema@.sno_generate_at(meta int4, "at" timestamptz) RETURNS @extschema@.sno
    AS 'MODULE_PATHNAME', 'sno_generate_at' LANGUAGE C VOLATILE STRICT PARALLEL RESTRICTED;
COMMENT ON FUNCTION @extschema@.sno_generate_at(int4, timestamptz) IS 'a new sno ID for time "at" (floored to 4 ms), with this meta byte, from a reserved partition granted to this session: unique on this server';
REVOKE ALL ON FUNCTION @extschema@.sno_generate_at(int4, timestamptz) FROM PUBLIC;

CREATE SCHEMA sno_internal;
COMMENT ON SCHEMA sno_internal IS 'sno''s own tables, not the application''s: see the view sno_reserved_grants';
CREATE TABLE sno_internal.reserved_grants (
    partition int4 PRIMARY KEY
        CHECK (partition OPERATOR(pg_catalog.>=) 61440 AND partition OPERATOR(pg_catalog.<=) 65535),
    granted_at timestamptz NOT NULL,
    grantee name NOT NULL
);
COMMENT ON TABLE sno_internal.reserved_grants IS 'reserved sno partitions granted to sessions of this database (sno_generate_at)';
SELECT pg_catalog.pg_extension_config_dump('sno_internal.reserved_grants', '');
CREATE FUNCTION @extschema@.sno_reserved_grants_noted()
	RETURNS TRIGGER
	LANGUAGE c
	AS 'MODULE_PATHNAME', 'sno_reserved_grants_noted_wrapper';
CREATE TRIGGER sno_reserved_grants_noted AFTER INSERT ON sno_internal.reserved_grants
    FOR EACH ROW EXECUTE FUNCTION @extschema@.sno_reserved_grants_noted();
ALTER TABLE sno_internal.reserved_grants ENABLE ALWAYS TRIGGER sno_reserved_grants_noted;
REVOKE ALL ON FUNCTION @extschema@.sno_reserved_grants_noted() FROM PUBLIC;
CREATE VIEW @extschema@.sno_reserved_grants AS
    SELECT partition, granted_at, grantee FROM sno_internal.reserved_grants;
COMMENT ON VIEW @extschema@.sno_reserved_grants IS 'reserved sno partitions granted to sessions of this database (sno_generate_at)';
GRANT SELECT ON @extschema@.sno_reserved_grants TO PUBLIC;

ALTER FUNCTION @extschema@.sno_reserved_space() ROWS 1;
CREATE VIEW @extschema@.sno_reserved AS SELECT * FROM @extschema@.sno_reserved_space();
COMMENT ON VIEW @extschema@.sno_reserved IS 'the reserved sno partitions (61440-65535): granted, used, remaining';
GRANT SELECT ON @extschema@.sno_reserved TO PUBLIC;
