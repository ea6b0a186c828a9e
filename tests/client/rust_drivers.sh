#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=yes cpu=2 timeout=1200 estimate=300
# The sno crate's `postgres` (tokio-postgres) and `sqlx` features against the live cluster:
# builds and runs the separate cargo project tests/drivers/rust (tests/drivers.rs there says
# what each driver must do) with SNO_TEST_DSN set to a fresh database with the extension.
# On PostgreSQL 15 only (SNO_PG_MAJOR unset or 15: the ORM tier), also its `diesel` and
# `sea-orm` features through the ORMs (tests/orm.rs there: the manual's snippets, the six
# checks, bad IDs), each in a fresh database of its own.
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

# --- The ORM tier (PostgreSQL 15 only): Diesel and SeaORM ------------------------------------
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "skip: the Rust ORM tests (Diesel, SeaORM) run on PostgreSQL 15 only (this is $SNO_PG_MAJOR)"
    exit "$fail"
fi
for orm in diesel sea_orm; do
    PGOPTIONS="-c client_min_messages=warning" psql -d postgres \
        -c "DROP DATABASE IF EXISTS sno_rust_orm_$orm" -c "CREATE DATABASE sno_rust_orm_$orm"
    psql -d "sno_rust_orm_$orm" -c "CREATE EXTENSION sno"
done
export SNO_ORM_DIESEL_DSN="postgresql:///sno_rust_orm_diesel?host=$host&port=$port&user=postgres"
export SNO_ORM_SEA_ORM_DSN="postgresql:///sno_rust_orm_sea_orm?host=$host&port=$port&user=postgres"
t0=$SECONDS
rc=0
RUST_BACKTRACE=0 cargo test --manifest-path "$root/tests/drivers/rust/Cargo.toml" --test orm >"$log" 2>&1 || rc=$?
orm_fail=0
six="the manual's schema and queries; insert and the generated id back, find by id, ORDER BY id and id > x, the relation, sno_time(id) in raw SQL, 1,000 rows in bulk"
plain="plain strings compared with and assigned to sno columns (needs sno 0.4.0)"
while read -r _ name _ result; do
    case "$name" in
    diesel) what="Diesel 2.3 (feature diesel, binary)" ;;
    sea_orm) what="SeaORM 2.0 (feature sea-orm, \$1::sno and CAST(id AS text); create_table_from_entity)" ;;
    *) what="$name" ;;
    esac
    if [[ "$result" == ok ]]; then
        case "$name" in
        bad_ids_are_refused_by_from_str) echo "ok: a 15-character ID and a non-base32 one are refused by Sno::from_str" ;;
        diesel) echo "ok: $what: $six; bad IDs through sql_query are the server's invalid input error (its message: Diesel keeps no SQLSTATE); $plain" ;;
        *) echo "ok: $what: $six; bad IDs through raw SQL are the server's 22P02 (the SQLSTATE from the sqlx error); $plain" ;;
        esac
    else
        echo "FAIL: $what: $result"
        orm_fail=1
    fi
done < <(grep -E '^test [a-z_]+ \.\.\. ' "$log")
n="$(grep -cE '^test [a-z_]+ \.\.\. ok$' "$log" || true)"
check "rust ORM tests passed (cargo test exit code, tests passed)" "$rc $n" "0 3"
if ((orm_fail)) || [[ "$rc $n" != "0 3" ]]; then
    fail=1
    echo "--- the cargo output's failures (or its last lines):"
    if grep -q '^failures:$' "$log"; then
        sed -n '/^failures:$/,$p' "$log" | head -n 120
    else
        tail -n 60 "$log"
    fi
fi

# Partition leases (sno 0.8.0; PostgreSQL 15 only, as every lease test): the crate's features
# lease-postgres and lease-tokio-postgres against the server (tests/drivers/rust/tests/lease.rs).
if [[ "${SNO_PG_MAJOR:-15}" == 15 ]]; then
    t0=$SECONDS
    rc=0
    PGOPTIONS="-c client_min_messages=warning" psql -d postgres \
        -c "DROP DATABASE IF EXISTS sno_rust_lease" -c "CREATE DATABASE sno_rust_lease"
    psql -d sno_rust_lease -c "CREATE EXTENSION sno"
    SNO_TEST_DSN="postgresql:///sno_rust_lease?host=$host&port=$port&user=postgres" RUST_BACKTRACE=0 \
        cargo test --manifest-path "$root/tests/drivers/rust/Cargo.toml" --test lease >"$log" 2>&1 || rc=$?
    n="$(grep -cE '^test [a-z_]+ \.\.\. ok$' "$log" || true)"
    grep -E '^test [a-z_]+ \.\.\. ' "$log" | sed 's/^test /  lease: /'
    check "rust lease tests passed (cargo test exit code, tests passed; $((SECONDS - t0)) s)" "$rc $n" "0 5"
    if [[ "$rc $n" != "0 5" ]]; then
        fail=1
        if grep -q '^failures:$' "$log"; then sed -n '/^failures:$/,$p' "$log" | head -n 120; else tail -n 60 "$log"; fi
    fi
fi

# Diesel's introspection: `diesel print-schema` with the manual's diesel.toml prints the README's
# schema.rs, byte for byte. diesel_cli is installed once (about 1.5 minutes) under SNO_WORK.
cli="${SNO_WORK:-/tmp/sno-work}/diesel-cli-2.3.14"
if [[ ! -x "$cli/bin/diesel" ]]; then
    echo "(installing diesel_cli 2.3.14 into $cli, once)"
    cargo install diesel_cli --version =2.3.14 --no-default-features --features postgres \
        --locked --root "$cli" >"$log" 2>&1 || tail -n 30 "$log"
fi
cfg="$(mktemp)"
awk '/^```toml$/ { b = 1; s = ""; next } b && /^```$/ { b = 0; if (s ~ /^\[print_schema\]/) { printf "%s", s; exit } next }
     b { s = s $0 "\n" }' "$root/doc/orms.md" >"$cfg"
want="$(awk '$0 == "<!-- orm-rust: diesel-schema -->" { f = 1; next } f && /^```rust$/ { b = 1; next }
             b && /^```$/ { exit } b' "$root/doc/orms.md")"
got="$("$cli/bin/diesel" print-schema --config-file "$cfg" \
    --database-url "postgresql:///sno_rust_orm_diesel?host=$host&port=$port&user=postgres" 2>&1 || true)"
rm -f "$cfg"
check "diesel print-schema 2.3.14 with the manual's diesel.toml prints the manual's schema.rs" \
    "$([[ -n "$want" && "$got" == "$want" ]] && echo same || printf 'different:\n%s\n' "$got")" "same"
echo "(rust_drivers, ORMs: $((SECONDS - t0)) s including the build)"
for orm in diesel sea_orm; do
    psql -d postgres -c "DROP DATABASE IF EXISTS sno_rust_orm_$orm"
done
exit "$fail"
