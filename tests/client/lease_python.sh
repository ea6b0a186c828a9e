#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=yes cpu=0 estimate=20
# The Python lease client (python/sno_pg/lease.py, issue 32) with psycopg 3:
#   1. its pure tests (python/tests/test_lease.py: a fake registry and a fake clock; window
#      refusals, a clock behind the registry's or stepped back, a slice used up, renewal and
#      its failures, fork), no server;
#   2. tests/client/lease_python.py against the live cluster, as a role that may lease (EXECUTE
#      on the three lease functions) and one that may not: misuse SQLSTATEs (42501, 22023); a
#      generator with ttl 2 s stamped by four threads for 5 s (renewals in the background, IDs
#      past the first window's end), a child forked meanwhile (a lease of its own, renewed and
#      released), a slice of 8 sequences used up, close() releasing (the old token then 55000),
#      renewal refused (EXECUTE revoked) stopping the IDs at expires_at and a new lease after
#      the grant is back; then over every ID, with 10,000 of sno_generate's: zero duplicates, and
#      each inside its own lease's window, partition and slice as sno_leases shows them.
# About 20 s. It makes and drops the databases sno_lease_py and sno_lease_py_ext and the roles
# sno_lease_py_app and sno_lease_py_nogrant (each run takes a reserved partition or two into
# a lease pool for good, as every new pool does).
#
# psycopg 3 comes from the venv drivers_python.sh fills (${SNO_WORK}/venv-drivers, from
# tests/drivers/python/requirements.txt: PyPI), made here too when missing; sno_pg from python/
# (PYTHONPATH).
#
# Usage: lease_python.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-15}" != 15 ]]; then
    echo "ok: skipped lease_python.sh: leases are tested on PostgreSQL 15 only (SNO_PG_MAJOR=$SNO_PG_MAJOR)"
    exit 0
fi
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
db=sno_lease_py
db_ext=sno_lease_py_ext
app=sno_lease_py_app
nogrant=sno_lease_py_nogrant
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
t0=$SECONDS

# The venv with psycopg 3, as drivers_python.sh fills it (tests/client/lib.bash's drivers_venv).
venv="$(drivers_venv "$root")"
# No __pycache__ left in the work tree.
export PYTHONPATH="$root/python" PYTHONDONTWRITEBYTECODE=1
versions="$("$venv/bin/python" -c 'import sys, psycopg; print(f"Python {sys.version.split()[0]}, psycopg {psycopg.__version__}")')"

# 1. The pure tests.
rc=0
out="$("$venv/bin/python" -m unittest discover -s "$root/python/tests" 2>&1)" || rc=$?
summary="$(grep -E '^Ran [0-9]+ tests' <<<"$out" || true)"
check "pure tests of sno_pg.lease (python/tests, $versions): ${summary:-no summary}" "$rc $(tail -n 1 <<<"$out")" "0 OK"
((rc == 0)) || tail -n 40 <<<"$out"

# 2. Against the live cluster.
cleanup() {
    psql -d postgres -c "SET client_min_messages = warning" -c "DROP DATABASE IF EXISTS $db" \
        -c "DROP DATABASE IF EXISTS $db_ext" -c "DROP ROLE IF EXISTS $app" -c "DROP ROLE IF EXISTS $nogrant" \
        -c "DROP ROLE IF EXISTS orders_api" # python/README.md's role, which its SQL block (run by lease_python.py) makes
}
cleanup
psql -d postgres -c "CREATE DATABASE $db" -c "CREATE DATABASE $db_ext" \
    -c "CREATE ROLE $app LOGIN" -c "CREATE ROLE $nogrant LOGIN"
grant="GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(bigint, uuid, interval), sno_lease_release(bigint, uuid) TO $app"
psql -d "$db" -c "SET client_min_messages = warning" -c "CREATE EXTENSION sno" -c "$grant" \
    -c "CREATE TABLE ids (id sno NOT NULL, holder text NOT NULL)"
psql -d "$db_ext" -c "SET client_min_messages = warning" -c "CREATE SCHEMA ext" -c "CREATE EXTENSION sno SCHEMA ext" \
    -c "GRANT USAGE ON SCHEMA ext TO $app" -c "SET search_path = ext" -c "$grant"

rc=0
out="$(cd "$root/tests/client" && timeout 120 "$venv/bin/python" lease_python.py "$host" "$port" "$db" "$db_ext" 2>&1)" || rc=$?
grep -E '^(ok|FAIL): ' <<<"$out" || true
summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$out" || true)"
check "python lease client against the server: exit code, failures" "$rc ${summary#* passed, }" "0 0 failed"
if ((fail)); then
    echo "--- what else lease_python.py printed:"
    grep -vE '^(ok|FAIL): ' <<<"$out" | tail -n 60
else
    grep -E '^\(' <<<"$out" || true
fi
# 3. A lease taken in a pipeline (psycopg's; pgx batches and JDBC batches behave the same) is
# committed at once: a later statement of the pipeline that fails does not take it back.
got="$(PGHOST="$host" PGPORT="$port" "$venv/bin/python" - "$db" <<'PY' 2>&1 || true
import sys, psycopg
c = psycopg.connect(dbname=sys.argv[1], user="postgres", autocommit=True)
try:
    with c.pipeline():
        c.execute("SELECT lease FROM sno_lease_acquire(holder => 'pipeline', ttl => '1 min')")
        c.execute("SELECT 1/0")
except psycopg.errors.DivisionByZero:
    pass
print(c.execute("SELECT count(*) FROM sno_leases WHERE holder = 'pipeline'").fetchone()[0])
PY
)"
check "a lease acquired in a pipeline whose next statement fails is kept (committed at once)" "$got" 1
cleanup
echo "(lease_python: $((SECONDS - t0)) s, $summary)"
exit "$fail"
