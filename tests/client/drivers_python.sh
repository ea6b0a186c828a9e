#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=yes cpu=1 estimate=60
# The Python drivers psycopg 3 and asyncpg against the live cluster: runs
# tests/drivers/python/run.py (the test files there say what each driver must do, out of the
# box or with the README's recipe, and which documented failures must still fail) with
# SNO_TEST_DSN set to a fresh database with the extension and SNO_TEST_DSN_EXT to one with the
# extension in schema ext.
#
# The drivers come from PyPI, pinned in tests/drivers/python/requirements.txt, into a venv at
# ${SNO_WORK:-/tmp/sno-work}/venv-drivers, made and filled on the first run (about 10 s) and
# again only when requirements.txt changes; then a run takes about a second.
#
# Usage: drivers_python.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
db=sno_py_drivers
db_ext=sno_py_drivers_ext
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
t0=$SECONDS

# The venv (tests/client/lib.bash's drivers_venv).
venv="$(drivers_venv "$root")"
versions="$("$venv/bin/python" -c 'import psycopg, asyncpg; print(f"psycopg {psycopg.__version__} ({psycopg.pq.__impl__}), asyncpg {asyncpg.__version__}")')"

PGOPTIONS="-c client_min_messages=warning" psql -d postgres \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" \
    -c "DROP DATABASE IF EXISTS $db_ext" -c "CREATE DATABASE $db_ext"
psql -d "$db" -c "CREATE EXTENSION sno"
psql -d "$db_ext" -c "CREATE SCHEMA ext" -c "CREATE EXTENSION sno SCHEMA ext"

export SNO_TEST_DSN="postgresql:///$db?host=$host&port=$port&user=postgres"
export SNO_TEST_DSN_EXT="postgresql:///$db_ext?host=$host&port=$port&user=postgres"
rc=0
# No __pycache__ left in the work tree.
out="$(PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" "$root/tests/drivers/python/run.py" 2>&1)" || rc=$?
# The cases' own ok:/FAIL: lines, then the harness's verdict.
grep -E '^(ok|FAIL): ' <<<"$out" || true
summary="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' <<<"$out" || true)"
check "python driver tests ($versions): exit code, failures" "$rc ${summary#* passed, }" "0 0 failed"
if ((fail)); then
    echo "--- what else run.py printed:"
    grep -vE '^(ok|FAIL): ' <<<"$out" | tail -n 60
fi
echo "(drivers_python: $((SECONDS - t0)) s, $summary)"
psql -d postgres -c "DROP DATABASE IF EXISTS $db" -c "DROP DATABASE IF EXISTS $db_ext"
exit "$fail"
