#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The sno crate's `postgres` (tokio-postgres) and `sqlx` features against the live cluster:
# builds and runs the separate cargo project tests/drivers/rust (tests/drivers.rs there says
# what each driver must do) with SNO_TEST_DSN set to a fresh database with the extension.
#
# The project's build goes to target/drivers-rust (SNO_DRIVERS_TARGET_DIR to change), so it is
# built once and reused by the next major and the next run: from scratch about 2-3 minutes
# on two cores, then about 2 s a run.
#
# Usage: rust_drivers.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"
db=sno_rust_drivers
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

PGOPTIONS="-c client_min_messages=warning" psql -d postgres \
    -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -d "$db" -c "CREATE EXTENSION sno"

export SNO_TEST_DSN="postgresql:///$db?host=$host&port=$port&user=postgres"
export CARGO_TARGET_DIR="${SNO_DRIVERS_TARGET_DIR:-$root/target/drivers-rust}"
t0=$SECONDS
rc=0
RUST_BACKTRACE=0 cargo test --manifest-path "$root/tests/drivers/rust/Cargo.toml" --test drivers >"$log" 2>&1 || rc=$?

# One line per test function, as cargo reported it.
what() {
    case "$1" in
    tokio_postgres) echo "tokio-postgres (binary)" ;;
    sqlx) echo "sqlx (binary, and text through raw_sql)" ;;
    *) echo "$1" ;;
    esac
}
while read -r _ name _ result; do
    if [[ "$result" == ok ]]; then
        echo "ok: $(what "$name"): Sno, Option<Sno> and Vec<Sno> as parameters and columns, WHERE id = \$1, sno_generate(7) fields as the server computes them, other types refused"
    else
        echo "FAIL: $(what "$name"): $result"
        fail=1
    fi
done < <(grep -E '^test [a-z_]+ \.\.\. ' "$log")
n="$(grep -cE '^test [a-z_]+ \.\.\. ok$' "$log" || true)"
check "rust driver tests passed (cargo test exit code, tests passed)" "$rc $n" "0 2"
if ((fail)); then
    echo "--- the cargo output's failures (or its last lines):"
    if grep -q '^failures:$' "$log"; then
        sed -n '/^failures:$/,$p' "$log" | head -n 120
    else
        tail -n 60 "$log"
    fi
fi
echo "(rust_drivers: $((SECONDS - t0)) s including the build)"
psql -d postgres -c "DROP DATABASE IF EXISTS $db"
exit "$fail"
