-- Partition leases (0.8.0; a registry no caller's transaction undoes since 0.8.1): sno_lease_acquire, sno_lease_renew, sno_lease_release and the views,
-- as a leasing role and as one without the right; every refusal's SQLSTATE and message. Values
-- that depend on the server (partitions, times, tokens) are shown as relations between them.
CREATE EXTENSION IF NOT EXISTS sno;
SET timezone = 'UTC';

CREATE FUNCTION pg_temp.res(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v text; st text; msg text;
BEGIN
    EXECUTE q INTO v;
    RETURN coalesce(v, 'NULL');
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
    RETURN 'ERROR ' || st || ': ' || msg;
END $$;

SET client_min_messages = warning;
DROP ROLE IF EXISTS sno_lease_svc;
DROP ROLE IF EXISTS sno_lease_none;
RESET client_min_messages;
CREATE ROLE sno_lease_svc;
CREATE ROLE sno_lease_none;
GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(bigint, uuid, interval),
    sno_lease_release(bigint, uuid) TO sno_lease_svc;
-- Who may call what: EXECUTE is not PUBLIC's; the views are readable by everyone.
SELECT p.proname, has_function_privilege('sno_lease_none', p.oid, 'EXECUTE') AS none,
       has_function_privilege('sno_lease_svc', p.oid, 'EXECUTE') AS svc
FROM pg_proc p WHERE p.proname LIKE 'sno\_lease\_%' ORDER BY 1;
SELECT has_table_privilege('sno_lease_none', 'sno_leases', 'SELECT'),
       has_table_privilege('sno_lease_none', 'sno_lease_space', 'SELECT'),
       has_table_privilege('sno_lease_none', 'sno_internal.leases', 'SELECT');

SET ROLE sno_lease_none;
SELECT pg_temp.res($$SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min')$$);
RESET ROLE;

SET ROLE sno_lease_svc;
CREATE TEMP TABLE got AS SELECT * FROM sno_lease_acquire(holder => 'golden', ttl => '1 min');
SELECT lease, holder, partition BETWEEN 61440 AND 65535 AS reserved, sequence_min, sequence_max,
       expires_at - not_before BETWEEN interval '60 s' AND interval '61.004 s' AS window,
       renew_after - not_before BETWEEN interval '20 s' AND interval '21.004 s' AS renew_after,
       extract(microseconds FROM not_before)::int8 % 4000 = 0 AND extract(microseconds FROM expires_at)::int8 % 4000 = 0 AS whole_units,
       length(token::text) = 36 AS token
FROM got;
-- A second lease: the next slice of the same partition, a third: a whole partition of its own.
SELECT s.lease, s.partition = g.partition AS same_partition, s.sequence_min, s.sequence_max
FROM sno_lease_acquire(holder => 'golden-2', ttl => '1 min', sequences => 8) s, got g;
SELECT s.lease, s.partition <> g.partition AS other_partition, s.sequence_min, s.sequence_max
FROM sno_lease_acquire(holder => 'golden-3', ttl => '1 min', sequences => 65536) s, got g;
-- (f(...)).*: one lease, not one per column (set-returning since 0.8.1).
CREATE TEMP TABLE before_star AS SELECT count(*) AS n FROM sno_leases;
SELECT l.lease, l.holder, l.sequence_max - l.sequence_min + 1 AS sequences
FROM (SELECT (sno_lease_acquire(holder => 'star', ttl => '1 min', sequences => 8)).*) l;
SELECT count(*) - (SELECT n FROM before_star) AS new_leases FROM sno_leases;
-- Renewal: the same lease, partition, slice and start; a later end.
SELECT r.lease = g.lease AND r.token = g.token AND r.partition = g.partition AND r.sequence_min = g.sequence_min
       AND r.not_before = g.not_before AS same, r.expires_at > g.expires_at AS later
FROM got g, LATERAL sno_lease_renew(lease => g.lease, token => g.token, ttl => '2 min') r;
SELECT lease, holder, grantee, sequence_min, sequence_max, ttl, renewed_at IS NOT NULL AS renewed, state
FROM sno_leases ORDER BY lease;
-- Release (twice is fine), then no renewal. Errors are shown with their DETAIL and HINT
-- (their SQLSTATEs are checked by tests/client/leases.sh).
SELECT count(*) AS released FROM (SELECT sno_lease_release(lease => lease, token => token) FROM got) r;
SELECT count(*) AS released_again FROM (SELECT sno_lease_release(lease => lease, token => token) FROM got) r;
-- (terse: its DETAIL names the lease's end, a time)
\set VERBOSITY terse
SELECT r.lease FROM got g, LATERAL sno_lease_renew(lease => g.lease, token => g.token, ttl => '1 min') r;
\set VERBOSITY default
SELECT lease, state FROM sno_leases ORDER BY lease;

-- Misuse.
SELECT lease FROM sno_lease_renew(lease => 1, token => '00000000-0000-4000-8000-000000000000', ttl => '1 min');
SELECT sno_lease_release(lease => 99, token => '00000000-0000-4000-8000-000000000000');
SELECT lease FROM sno_lease_renew(lease => NULL, token => NULL, ttl => '1 min');
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => NULL);
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '0');
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '-1 min');
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '999 ms');
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '10 min 0.001 s');
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 mon');
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min', sequences => NULL);
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min', sequences => 0);
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min', sequences => 6);
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min', sequences => 12);
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min', sequences => 131072);
SELECT lease FROM sno_lease_acquire(holder => 'x', ttl => '1 min', sequences => -8);
SELECT lease FROM sno_lease_acquire(holder => NULL, ttl => '1 min');
SELECT lease FROM sno_lease_acquire(holder => '', ttl => '1 min');
SELECT lease FROM sno_lease_acquire(holder => repeat('h', 257), ttl => '1 min');
SELECT length(holder) FROM sno_lease_acquire(holder => repeat('h', 256), ttl => '1 min');
SET sno.lease_limit = 1000;
SELECT sno_lease_take_over();
-- A lease is the registry's once granted: a rollback of the caller's transaction, or of its
-- subtransaction, takes nothing back (the registry committed it in a transaction of its own).
BEGIN;
CREATE TEMP TABLE rolled_back AS SELECT lease FROM sno_lease_acquire(holder => 'rolled back', ttl => '1 min');
SELECT lease FROM rolled_back;
ROLLBACK;
SELECT pg_temp.res($$SELECT lease FROM sno_lease_acquire(holder => 'in an exception block', ttl => '1 min')$$) AS in_an_exception_block;
RESET ROLE;
SELECT lease, holder, state FROM sno_leases WHERE holder IN ('rolled back', 'in an exception block') ORDER BY lease;
SELECT share BETWEEN 0 AND 14 AS share, share_left BETWEEN 0 AND 137, reserved_left BETWEEN 0 AND 4096,
       pool_partitions >= 2, active_leases FROM sno_lease_space;
SELECT count(*) AS conflicting FROM sno_internal.leases a JOIN sno_internal.leases b
    ON a.lease < b.lease AND a.partition = b.partition
   AND a.sequence_min <= b.sequence_max AND b.sequence_min <= a.sequence_max
   AND a.not_before < b.expires_at AND b.not_before < a.expires_at;
DROP OWNED BY sno_lease_svc;
DROP OWNED BY sno_lease_none;
DROP ROLE sno_lease_svc;
DROP ROLE sno_lease_none;
