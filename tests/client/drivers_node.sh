#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=yes cpu=1 estimate=60
# node-postgres (npm `pg`, pinned in tests/drivers/node/package.json and package-lock.json)
# against the live cluster: runs tests/drivers/node/sno.test.js (it says what the driver must
# do, and RECIPES.md there what the README shows) with node's own test runner, over the Unix
# socket as user postgres, in a fresh database with the extension; one ok:/FAIL: line per test.
#
# `npm ci` fills tests/drivers/node/node_modules from the npm registry when it is missing or
# was installed from another package-lock.json (about 2 s); Debian's nodejs and npm are
# installed first when node is missing. After that a run takes about a second.
#
# Usage: drivers_node.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
host="$1" port="$2" bindir="$3"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dir="$root/tests/drivers/node"
db=sno_drivers_node
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$host" -p "$port" -U postgres "$@"; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
t0=$SECONDS

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "installing from Debian: nodejs npm"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends nodejs npm; } >"$log" 2>&1 ||
        { tail -n 30 "$log"; die "apt-get install nodejs npm"; }
fi
# node_modules as package-lock.json says, or npm ci again (the stamp is the lock's checksum).
stamp="$dir/node_modules/.sno-package-lock.sha256"
sum="$(sha256sum <"$dir/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$stamp" 2>/dev/null || true)" != "$sum" ]]; then
    echo "npm ci in tests/drivers/node"
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1 ||
        { grep -v 'Unknown user config' "$log" | tail -n 30; die "npm ci"; }
    echo "$sum" >"$stamp"
fi
pg_version="$(cd "$dir" && node -p "require('pg/package.json').version")"

PGOPTIONS="-c client_min_messages=warning" psql -d postgres \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -d "$db" -c "CREATE EXTENSION sno"

rc=0
(cd "$dir" && PGHOST="$host" PGPORT="$port" PGUSER=postgres PGDATABASE="$db" \
    node --test --test-reporter=tap sno.test.js) >"$log" 2>&1 || rc=$?

# One line per top-level test, as the runner reported it (TAP: "ok N - name", "not ok N - name").
while IFS= read -r line; do
    if [[ "$line" =~ ^ok\ [0-9]+\ -\ (.*)$ ]]; then
        echo "ok: node-postgres $pg_version: ${BASH_REMATCH[1]}"
    elif [[ "$line" =~ ^not\ ok\ [0-9]+\ -\ (.*)$ ]]; then
        echo "FAIL: node-postgres $pg_version: ${BASH_REMATCH[1]}"
        fail=1
    fi
done <"$log"
n_pass="$(sed -n 's/^# pass \([0-9]*\)$/\1/p' "$log")"
n_fail="$(sed -n 's/^# fail \([0-9]*\)$/\1/p' "$log")"
check "node-postgres tests (exit code, tests passed > 0, failed)" "$rc $((${n_pass:-0} > 0)) ${n_fail:-none}" "0 1 0"
if ((fail)); then
    echo "--- the runner's report of the failures (or its last lines):"
    if grep -q '^not ok ' "$log"; then
        # Each failed test's line and its YAML block (up to the block's closing "  ...").
        awk '/^not ok /{p=1} p{print} p&&/^  \.\.\.$/{p=0}' "$log" | head -n 150
    else
        tail -n 60 "$log"
    fi
fi
echo "(drivers_node: $((SECONDS - t0)) s)"
psql -d postgres -c "DROP DATABASE IF EXISTS $db"
exit "$fail"
