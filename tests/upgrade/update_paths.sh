#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ALTER EXTENSION sno UPDATE from 0.3.0 (the last release) to this version, with its package:
#   1. sno 0.3.0 is built from its commit into a private copy of a relocatable PostgreSQL; the
#      install script it generates must be sql/sno--0.3.0.sql.
#   2. Data made with 0.3.0 (tests/upgrade/data.bash), a user's view over sno_generator, a grant
#      on it, and a time query.
#   3. The package is installed with the README's commands; the server restarts.
#   4. Before the update the 0.3.0 catalog works with the new library: sno_generator (its 20
#      columns), sno_generate through the DEFAULT, sno_time predicates with their bounds; a
#      varchar parameter compared with a sno column is still the error it was in 0.3.0
#      (operator does not exist: the library cannot add catalog objects).
#   5. ALTER EXTENSION sno UPDATE: silent; the catalog equals a fresh CREATE EXTENSION's
#      (tests/upgrade/catalog.sql); the user's view and grant are kept; a varchar parameter
#      now compares with the key through its index, and an INSERT takes one.
#   6. The data: the old rows unchanged, zero duplicates over both versions' IDs, amcheck and
#      the hash and BRIN indexes (check_integrity).
#
# Usage (as root): update_from_0.3.0.sh PG_HOME TARBALL PORT
set -uo pipefail
if (($# != 3)); then
    echo "usage: $0 PG_HOME TARBALL PORT" >&2
    exit 2
fi
pg_home="$1" tarball="$(readlink -f "$2")" port="$3"
# shellcheck source=../client/cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/../client/cluster.bash"
[[ -r "$tarball" ]] || { echo "FAIL: no package $tarball"; exit 1; }
((EUID == 0)) || { echo "FAIL: run as root (servers run as postgres through sudo)"; exit 1; }
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

OLD_VERSION=0.3.0
OLD_COMMIT=e56c566 # 0.3.0 as released (2026-11-22; not tagged in this clone)
NEW_VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -1)"

harness_setup upd_030 "$pg_home/bin" "$port" "$port"
work="$CL_WORK"
# shellcheck source=data.bash
source "$(dirname "${BASH_SOURCE[0]}")/data.bash"
db=upd
q() {
    local node="$1"
    shift
    node_psql_db "$node" "$db" "$@"
}
nq=(q srv)

# --- 1. sno 0.3.0 in a private PostgreSQL ----------------------------------------------------
# shellcheck source=release.bash
source "$(dirname "${BASH_SOURCE[0]}")/release.bash"
private_postgres "$pg_home"
build_release "$OLD_VERSION" "$OLD_COMMIT"

# --- 2. data made with 0.3.0 -------------------------------------------------------------------
node_new srv
node_clock_mode srv none
node_initdb srv -E UTF8 --locale=C || die "initdb"
node_cmdline srv shared_preload_libraries=sno fsync=off
node_start srv || die "the 0.3.0 server did not start"
node_psql srv -c "CREATE DATABASE upd" -c "CREATE ROLE sno_ops" || die "database"
q srv -c "CREATE EXTENSION sno" -c "$SNO_DATA_SCHEMA" \
    -c "CREATE VIEW my_generator AS SELECT partition, ids_issued FROM sno_generator" \
    -c "GRANT SELECT ON sno_generator TO sno_ops" >/dev/null || die "the 0.3.0 schema"
check "CREATE EXTENSION sno made version $OLD_VERSION" \
    "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$OLD_VERSION"
batch srv 1 || die "batch 1 with 0.3.0"
digest="$(q srv -c "$DIGEST")"
# A time window in the middle of batch 1, and the rows in it by a sequential scan.
IFS='|' read -r t1 t2 < <(q srv -c "SELECT sno_time(id) + interval '1 s', sno_time(id) + interval '2 s' FROM t_main ORDER BY id LIMIT 1")
window="sno_time(id) >= '$t1' AND sno_time(id) < '$t2'"
seq="SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;"
idx="SET enable_seqscan = off;"
count_seq="$(q srv -c "$seq" -c "SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM t_main WHERE $window")"
[[ "$count_seq" =~ ^[1-9][0-9]*\|[0-9a-f]{32}$ ]] || die "the time window [$t1, $t2) holds no rows: '$count_seq'"
echo "ok: a 1 s window of batch 1 holds ${count_seq%|*} rows (sequential scan)"

# --- 3. the package --------------------------------------------------------------------------
install_tarball "$tarball" "$NEW_VERSION"
node_restart srv || die "the server did not start with sno $NEW_VERSION"

# --- 4. the 0.3.0 catalog with the new library -------------------------------------------------
check "before the update, the database is still at $OLD_VERSION" \
    "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$OLD_VERSION"
check "0.3.0's sno_generator with the new library: its 20 columns" \
    "$(q srv -c "SELECT count(*) FROM information_schema.columns WHERE table_name = 'sno_generator'" -c "SELECT state FROM sno_generator")" \
    "20
ready"
batch srv 2 || bad "batch 2 through the 0.3.0 catalog"
plan="$(q srv -c "$idx" -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM t_main WHERE $window")"
check "0.3.0's catalog: a sno_time predicate scans the primary key with its bounds" \
    "$(grep -c 'Index Cond: ((id >= .*) AND (id <= .*))' <<<"$plan")" 1
check "0.3.0's catalog: the window's rows equal the sequential scan's" \
    "$(q srv -c "$idx" -c "SELECT count(*), md5(string_agg(id::text, ',' ORDER BY id)) FROM t_main WHERE $window")" "$count_seq"
some_id="$(q srv -c "SELECT id FROM t_main ORDER BY id LIMIT 1 OFFSET 100")"
check "0.3.0's catalog: sno = varchar is the error it was" \
    "$(q srv -c "SELECT count(*) FROM t_main WHERE id = '$some_id'::varchar" 2>&1 | grep -o 'operator does not exist: sno = character varying')" \
    "operator does not exist: sno = character varying"

# --- 5. ALTER EXTENSION sno UPDATE -------------------------------------------------------------
catalog() { node_psql_db srv "$1" -f "$(dirname "${BASH_SOURCE[0]}")/catalog.sql"; }
node_psql srv -c "CREATE DATABASE fresh" || die "database fresh"
db=fresh
q srv -c "CREATE EXTENSION sno" || die "CREATE EXTENSION sno in a new database"
# The view's privileges differ by the grant to sno_ops (checked below), the rest must not.
no_acl() { sed '/^view sno_generator |/s/ acl=[^ ]*//'; }
fresh="$(catalog fresh | no_acl)"
db=upd
check "ALTER EXTENSION sno UPDATE says nothing" "$(q srv -c "ALTER EXTENSION sno UPDATE" 2>&1)" ""
check "the database is at $NEW_VERSION" "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$NEW_VERSION"
after="$(catalog upd)"
check "the updated catalog equals a fresh CREATE EXTENSION's, the grant to sno_ops aside ($(wc -l <<<"$fresh") lines)" \
    "$(diff <(no_acl <<<"$after") <(echo "$fresh"))" ""
check "the grant on sno_generator is kept" \
    "$(q srv -c "SELECT has_table_privilege('sno_ops', 'sno_generator', 'SELECT')")" t
check "the user's view over sno_generator works" "$(q srv -c "SELECT count(*) FROM my_generator")" 1
plan="$(q srv -c "$idx" -c "EXPLAIN (COSTS OFF) SELECT * FROM t_main WHERE id = '$some_id'::varchar")"
check "after the update sno = varchar scans the primary key" \
    "$(grep -c "Index Cond: (id = '$some_id'::text)" <<<"$plan")" 1
check "after the update sno = varchar finds the row" \
    "$(q srv -c "SELECT id FROM t_main WHERE id = '$some_id'::varchar")" "$some_id"
check "after the update a bad varchar is the 22P02 input error" \
    "$(q srv -c "\\set VERBOSITY verbose" -c "SELECT count(*) FROM t_main WHERE id = '${some_id:0:15}'::varchar" 2>&1 | grep -o 'ERROR:  22P02: invalid input syntax for type sno')" \
    "ERROR:  22P02: invalid input syntax for type sno"
check "after the update an INSERT of a sno column takes a varchar parameter" \
    "$(q srv -c "CREATE TEMP TABLE t_varchar (id sno PRIMARY KEY)" -c "PREPARE ins(varchar) AS INSERT INTO t_varchar VALUES (\$1) RETURNING id" -c "EXECUTE ins('${some_id^^}')")" \
    "$some_id"
batch srv 3 || bad "batch 3 after the update"

# --- 6. the data ------------------------------------------------------------------------------
name="update $OLD_VERSION -> $NEW_VERSION"
check "$name: the 0.3.0 rows are identical" "$(q srv -c "$DIGEST")" "$digest"
total=$((3 * IDS_PER_BATCH))
check "$name: zero duplicates over all $total IDs of both versions" \
    "$(q srv -c "SELECT count(*), count(DISTINCT x) FROM $ALL_IDS")" "$total|$total"
check_integrity "$name" "$work"
node_stop srv
exit "$fail"
