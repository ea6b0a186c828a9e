-- Partition leases: the trigger that notes a restored pool, the views and the privileges.
-- Since 0.8.0 (after the functions pgrx generates from src/pg/issuer/lease.rs).

-- A pool partition row inserted by anything but the registry itself (pg_restore, a data-only
-- load) is noted in this server's lineage as granted (never granted again) and is never leased
-- from: of no incarnation when this server had granted it (leases granted after the dump are not
-- in it), restored when it came from another server (no lease is granted here until
-- sno_lease_take_over()). Also under session_replication_role = replica.
CREATE FUNCTION sno_internal.lease_partition_noted() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    CASE @extschema@.sno_lease_partition_noted(NEW.partition)
        WHEN 0 THEN NULL;                    -- the registry's own
        WHEN 1 THEN NEW.incarnation := 0;    -- restored on this server: never leased from again
        ELSE NEW.restored := true;           -- from another server: none leased until take-over
    END CASE;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION sno_internal.lease_partition_noted() FROM PUBLIC;
CREATE TRIGGER lease_partition_noted BEFORE INSERT ON sno_internal.lease_partitions
    FOR EACH ROW EXECUTE FUNCTION sno_internal.lease_partition_noted();
ALTER TABLE sno_internal.lease_partitions ENABLE ALWAYS TRIGGER lease_partition_noted;

-- Leasing is a privilege: the reserved space is finite (GRANT EXECUTE on the three to a role).
REVOKE ALL ON FUNCTION @extschema@.sno_lease_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.int4) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sno_lease_renew(pg_catalog.int8, pg_catalog.uuid, pg_catalog.interval) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sno_lease_release(pg_catalog.int8, pg_catalog.uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sno_lease_take_over() FROM PUBLIC;
REVOKE ALL ON FUNCTION @extschema@.sno_lease_partition_noted(pg_catalog.int4) FROM PUBLIC;
-- One row each (set-returning, so that SELECT (f(...)).* calls them once: since 0.8.1).
ALTER FUNCTION @extschema@.sno_lease_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.int4) ROWS 1;
ALTER FUNCTION @extschema@.sno_lease_renew(pg_catalog.int8, pg_catalog.uuid, pg_catalog.interval) ROWS 1;
COMMENT ON FUNCTION @extschema@.sno_lease_acquire(pg_catalog.text, pg_catalog.interval, pg_catalog.int4) IS 'a new sno partition lease: a reserved partition''s sequence slice and a window of time, for a generator outside the database';
COMMENT ON FUNCTION @extschema@.sno_lease_renew(pg_catalog.int8, pg_catalog.uuid, pg_catalog.interval) IS 'the same sno partition lease with a later end';
COMMENT ON FUNCTION @extschema@.sno_lease_release(pg_catalog.int8, pg_catalog.uuid) IS 'the holder of this sno partition lease stopped (its slice is granted again only after its end)';
COMMENT ON FUNCTION @extschema@.sno_lease_take_over() IS 'grant leases again in a database whose lease pool was restored from another server, once that server grants none';

-- state: active (renewable), released (its window not over yet), expired, ended (released and
-- over), inherited (granted before a failover, copy or restore of this server, released or not:
-- not renewable, its holder stops at expires_at). active and released are this server's own.
CREATE VIEW @extschema@.sno_leases AS
    SELECT l.lease, l.holder, l.grantee, l.partition, l.sequence_min, l.sequence_max,
           l.not_before, l.expires_at, l.ttl, l.acquired_at, l.renewed_at, l.renew_after, l.released_at,
           CASE
               WHEN l.expires_at OPERATOR(pg_catalog.<=) pg_catalog.now() THEN
                   CASE WHEN l.released_at IS NULL THEN 'expired' ELSE 'ended' END
               WHEN p.restored OR p.database OPERATOR(pg_catalog.<>) d.oid
                    OR p.incarnation IS DISTINCT FROM @extschema@.sno_lease_incarnation() THEN 'inherited'
               WHEN l.released_at IS NOT NULL THEN 'released'
               ELSE 'active'
           END AS state
    FROM sno_internal.leases l
    JOIN sno_internal.lease_partitions p USING (partition)
    CROSS JOIN (SELECT oid FROM pg_catalog.pg_database
                WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()) d;
COMMENT ON VIEW @extschema@.sno_leases IS 'sno partition leases granted in this database';
GRANT SELECT ON @extschema@.sno_leases TO PUBLIC;

ALTER FUNCTION @extschema@.sno_lease_space() ROWS 1;
CREATE VIEW @extschema@.sno_lease_space AS
    SELECT s.share, s.share_left, s.reserved_left,
           (SELECT pg_catalog.count(*) FROM sno_internal.lease_partitions p
             WHERE NOT p.restored AND p.incarnation IS NOT DISTINCT FROM @extschema@.sno_lease_incarnation()
               AND p.database OPERATOR(pg_catalog.=) (SELECT oid FROM pg_catalog.pg_database
                   WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))::int4 AS pool_partitions,
           (SELECT pg_catalog.count(*) FROM @extschema@.sno_leases l WHERE l.state OPERATOR(pg_catalog.=) 'active')::int4 AS active_leases
    FROM @extschema@.sno_lease_space() s;
COMMENT ON VIEW @extschema@.sno_lease_space IS 'room for sno partition leases: this database''s pool, and the reserved partitions left for new pool partitions';
GRANT SELECT ON @extschema@.sno_lease_space TO PUBLIC;
