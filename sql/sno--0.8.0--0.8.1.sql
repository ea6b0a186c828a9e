-- sno 0.8.0 -> 0.8.1: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.8.1').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.8.1 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's operators and
-- functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh).
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema; every object of sno's is
-- named through @extschema@, and everything else is pg_catalog's.

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- Leases (src/pg/generator/lease_registry.rs, sql/sno_leases.sql): the registry decides in a
-- worker's transaction of its own; its ledger and lease numbers are kept out of dumps, so that
-- a data-only restore of older rows cannot bring a pool back into use while leases granted
-- after the dump live on. The ledger starts from the rows as they are now, which are the
-- registry's own (0.8.0 wrote them in the callers' transactions, all committed here), at stamp
-- 1: rows of a dump taken before this update come back with stamp 0, behind the ledger.
ALTER TABLE sno_internal.lease_partitions ADD COLUMN stamp int8 NOT NULL DEFAULT 0;
UPDATE sno_internal.lease_partitions SET stamp = 1;
CREATE TABLE sno_internal.lease_ledger (
    partition int4 PRIMARY KEY,
    stamp int8 NOT NULL,
    leased_until timestamptz NOT NULL
);
COMMENT ON TABLE sno_internal.lease_ledger IS 'what the sno lease registry granted on each pool partition, kept out of dumps';
INSERT INTO sno_internal.lease_ledger (partition, stamp, leased_until)
    SELECT p.partition, 1,
           GREATEST(p.busy_until, (SELECT pg_catalog.max(l.expires_at) FROM sno_internal.leases l
                                   WHERE l.partition OPERATOR(pg_catalog.=) p.partition))
    FROM sno_internal.lease_partitions p;
CREATE SEQUENCE sno_internal.lease_ids AS int8;
COMMENT ON SEQUENCE sno_internal.lease_ids IS 'sno lease numbers, kept out of dumps';
SELECT pg_catalog.setval('sno_internal.lease_ids', pg_catalog.max(lease)) FROM sno_internal.leases HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0;
