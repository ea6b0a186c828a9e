-- sno's own tables and logical replication (since 0.9.0; src/pg/arrival.rs,
-- src/generator/arrival.rs).
--
-- A FOR ALL TABLES publication publishes sno_internal's tables with the application's. They
-- describe the publishing server: its grants, its lease pool, its leases and ledger. A
-- subscriber keeps them out: the first BEFORE row trigger of each table (ENABLE ALWAYS, so also
-- under session_replication_role = replica, which replication workers run with) drops every
-- row a replication worker brings, and notes the reserved partitions the publisher granted
-- (reserved_grants, lease_partitions) as granted here, never to be granted by this server.
-- Everything else (sno's functions, the registry, pg_restore) goes on as before. Named so that
-- it fires before lease_partition_noted (triggers fire in name order).
--
-- pgrx generates the function (before this file):
--   sno_internal_arrival()   RETURNS trigger   (src/pg/arrival.rs)
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

-- Members of a replicating group compare partitions over each subscription's connection
-- (src/pg/handshake.rs). pgrx generates:
--   sno_member_hello(caller_id bigint, caller_partition integer, caller_made_ids boolean,
--       caller_known text)   (the publisher's half;
--       a superuser or a REPLICATION role only, checked inside: what it is told can make this
--       server refuse its own partition)
--   sno_member_check()   (the round at once; superusers only: it uses the subscriptions'
--       credentials)
REVOKE ALL ON FUNCTION @extschema@.sno_member_check() FROM PUBLIC;
COMMENT ON FUNCTION @extschema@.sno_member_hello(bigint, integer, boolean, text) IS 'the publisher''s half of the handshake between members of a replicating group (called by the other server''s sno)';
COMMENT ON FUNCTION @extschema@.sno_member_check() IS 'compares this server''s partition with the publisher of every subscription, at once';
