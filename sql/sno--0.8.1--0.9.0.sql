-- sno 0.8.1 -> 0.9.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.9.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.9.0 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's operators and
-- functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh).
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema; every object of sno's is
-- named through @extschema@, and everything else is pg_catalog's.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- sno's own tables are kept out of logical replication on the receiving side ---------------------
-- A new C symbol (sno_internal_arrival_wrapper): this library still serves a database at 0.8.1,
-- whose tables have no such trigger (a subscription into it breaks on them as before).
CREATE FUNCTION @extschema@.sno_internal_arrival() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'sno_internal_arrival_wrapper';
CREATE TRIGGER arrival_by_replication BEFORE INSERT OR UPDATE OR DELETE ON sno_internal.reserved_grants
    FOR EACH ROW EXECUTE FUNCTION @extschema@.sno_internal_arrival();
ALTER TABLE sno_internal.reserved_grants ENABLE ALWAYS TRIGGER arrival_by_replication;
CREATE TRIGGER arrival_by_replication BEFORE INSERT OR UPDATE OR DELETE ON sno_internal.lease_partitions
    FOR EACH ROW EXECUTE FUNCTION @extschema@.sno_internal_arrival();
ALTER TABLE sno_internal.lease_partitions ENABLE ALWAYS TRIGGER arrival_by_replication;
CREATE TRIGGER arrival_by_replication BEFORE INSERT OR UPDATE OR DELETE ON sno_internal.leases
    FOR EACH ROW EXECUTE FUNCTION @extschema@.sno_internal_arrival();
ALTER TABLE sno_internal.leases ENABLE ALWAYS TRIGGER arrival_by_replication;
CREATE TRIGGER arrival_by_replication BEFORE INSERT OR UPDATE OR DELETE ON sno_internal.lease_ledger
    FOR EACH ROW EXECUTE FUNCTION @extschema@.sno_internal_arrival();
ALTER TABLE sno_internal.lease_ledger ENABLE ALWAYS TRIGGER arrival_by_replication;
-- Firing a trigger checks no EXECUTE privilege: revoked so that no other role calls it (it
-- refuses to act as any other table's trigger too).
REVOKE ALL ON FUNCTION @extschema@.sno_internal_arrival() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.sno_internal_arrival() IS 'the trigger that keeps sno''s own tables out of logical replication on the receiving side';

-- Members of a replicating group compare partitions over each subscription's connection ----------
CREATE FUNCTION @extschema@.sno_member_hello(caller_id bigint, caller_partition integer, caller_made_ids boolean, caller_known text)
    RETURNS TABLE (system_identifier bigint, partition integer, made_ids boolean, verdict text)
    STRICT VOLATILE PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'sno_member_hello_wrapper';
CREATE FUNCTION @extschema@.sno_member_check()
    RETURNS TABLE (subscription text, peer_system_identifier bigint, peer_partition integer, peer_made_ids boolean, this_server text)
    STRICT VOLATILE PARALLEL UNSAFE
    LANGUAGE c AS 'MODULE_PATHNAME', 'sno_member_check_wrapper';
REVOKE ALL ON FUNCTION @extschema@.sno_member_check() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.sno_member_hello(bigint, integer, boolean, text) IS 'the publisher''s half of the handshake between members of a replicating group (called by the other server''s sno)';
COMMENT ON FUNCTION @extschema@.sno_member_check() IS 'compares this server''s partition with the publisher of every subscription, at once';
