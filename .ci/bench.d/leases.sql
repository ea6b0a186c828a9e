-- .ci/bench, section leases: the database bench_leases, its two roles and their limits.
CREATE EXTENSION sno;
DO $$ BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'sno_lease_rust') THEN CREATE ROLE sno_lease_rust LOGIN; END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'bench_lease_py') THEN CREATE ROLE bench_lease_py LOGIN; END IF;
END $$;
GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(int8, uuid, interval),
    sno_lease_release(int8, uuid) TO bench_lease_py;
ALTER ROLE sno_lease_rust SET sno.lease_limit = 65536;
ALTER ROLE sno_lease_rust SET sno.reserved_limit = 4096;
ALTER ROLE bench_lease_py SET sno.lease_limit = 65536;
ALTER ROLE bench_lease_py SET sno.reserved_limit = 4096;
