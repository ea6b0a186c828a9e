#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ALTER EXTENSION sno UPDATE from the previous release, as a DBA does it, with the package:
#   1. sno 0.1.0 is built from its commit (git archive) and installed into a private copy of a
#      relocatable PostgreSQL (PG_HOME without sno); the 0.1.0 install script it generates must
#      be sql/sno--0.1.0.sql, the one this repository keeps.
#   2. A cluster makes data with it: btree, hash and BRIN indexes, a hash-partitioned table, a
#      column DEFAULT sno_generate(1), a view and a function over sno (database upd), and
#      sno in schema ids with changed privileges, views (one on another) and a function over
#      the monitoring views (database upd_acl).
#   3. The server stops, the 0.2.0 package (TARBALL) is installed over it with the README's
#      commands, and it starts again with its clock behind the last 0.1.0 ID.
#   4. Before ALTER EXTENSION UPDATE, the 0.1.0 catalog works with the new library: its
#      monitoring views (0.1.0's columns), initialize, sno_generate through the DEFAULT.
#   5. ALTER EXTENSION sno UPDATE; then the catalog (tests/upgrade/catalog.sql: functions and
#      their labels, operators, operator classes, casts, views, privileges, comments) equals a
#      fresh CREATE EXTENSION sno in another database, and differed before the update.
#   6. The data: the old rows unchanged, zero duplicates over every ID of 0.1.0 and 0.2.0 (the
#      new ones in the same 4 ms units as old ones), the derived partition kept, amcheck, the
#      hash and BRIN indexes and hash partition routing as in the pg_upgrade test.
#   A streaming standby made under 0.1.0 keeps running it while the primary restarts with 0.2.0:
#      it stops at the first WAL record of sno's resource manager (README, Upgrading, step 1),
#      then, started again with 0.2.0, resumes and replays the update.
#   7. In upd_acl the update refuses (the user's objects depend on the monitoring views); its
#      HINT is followed word for word from a session whose search_path lacks ids, then the
#      WARNING's HINT about the privileges: they end up as before, and pg_dump keeps them.
#
# Usage (as root): extension_update.sh PG_HOME TARBALL PORT
# Prints ok:/FAIL: lines; exits non-zero on any failure. About 3 minutes on 2 cores.
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

# The previous release: its version and the commit it was made from.
OLD_VERSION=0.1.0
OLD_COMMIT=256c4d8ccdd71803ac690205a735bd177c7531ef
NEW_VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -1)"

harness_setup ext_update "$pg_home/bin" "$port" $((port + 1))
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

# --- 1. sno 0.1.0 in a private PostgreSQL ----------------------------------------------------
# shellcheck source=release.bash
source "$(dirname "${BASH_SOURCE[0]}")/release.bash"
private_postgres "$pg_home"
build_release "$OLD_VERSION" "$OLD_COMMIT"

# --- 2. data made with 0.1.0 -------------------------------------------------------------------
node_new srv
node_initdb srv -E UTF8 --locale=C || die "initdb"
node_cmdline srv shared_preload_libraries=sno fsync=off sno.max_clock_wait=2000
node_start srv || die "the 0.1.0 server did not start"
node_psql srv -c "CREATE DATABASE upd" -c "CREATE DATABASE upd_acl" -c "CREATE ROLE sno_ops" || die "databases"
q srv -c "CREATE EXTENSION sno" -c "$SNO_DATA_SCHEMA" \
    -c "CREATE VIEW recent AS SELECT id, sno_time(id) AS made FROM t_main" \
    -c "CREATE FUNCTION new_ref() RETURNS sno LANGUAGE sql VOLATILE AS 'SELECT sno_generate(2)'" >/dev/null ||
    die "the 0.1.0 schema"
check "CREATE EXTENSION sno made version $OLD_VERSION" \
    "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$OLD_VERSION"
batch srv 1 || die "batch 1 with 0.1.0"
partition="$(q srv -c "SELECT sno_current_partition()")"
old_last="$(q srv -c "SELECT extract(epoch FROM max(sno_time(x))) FROM $ALL_IDS")"
digest="$(q srv -c "$DIGEST")"
check "0.1.0's monitoring views" \
    "$(q srv -c "SELECT state, leases > 0 FROM sno_generator" -c "SELECT count(*) FROM sno_generator_backends WHERE lease_end IS NOT NULL")" \
    "ready|t
0"
acl_query="SELECT string_agg(format('%s=%s', o, coalesce(a, 'default')), ' ' ORDER BY o) FROM (
    SELECT 'view:' || c.relname AS o, c.relacl::text AS a FROM pg_class c WHERE c.relname IN ('sno_generator', 'sno_generator_backends')
    UNION ALL SELECT 'function:' || p.proname, p.proacl::text FROM pg_proc p
    WHERE p.proname IN ('sno_generator_info', 'sno_generator_backends', 'sno_generator_initialize')) s"
db=upd_acl
mon_fn="CREATE FUNCTION mon_backends() RETURNS SETOF ids.sno_generator_backends LANGUAGE sql SECURITY DEFINER AS 'SELECT * FROM ids.sno_generator_backends'"
q srv -c "CREATE SCHEMA ids" -c "CREATE EXTENSION sno SCHEMA ids" -c "GRANT USAGE ON SCHEMA ids TO sno_ops" \
    -c "REVOKE SELECT ON ids.sno_generator FROM PUBLIC" \
    -c "GRANT SELECT ON ids.sno_generator, ids.sno_generator_backends TO sno_ops" \
    -c "GRANT EXECUTE ON FUNCTION ids.sno_generator_backends() TO sno_ops" \
    -c "CREATE VIEW my_generator AS SELECT partition, ids_issued FROM ids.sno_generator" \
    -c "CREATE VIEW my_generator2 AS SELECT partition FROM my_generator" -c "$mon_fn" \
    -c "CREATE TABLE snap (taken timestamptz, g ids.sno_generator)" \
    -c "CREATE FUNCTION lease_count() RETURNS bigint LANGUAGE plpgsql AS \$\$ BEGIN RETURN (SELECT leases FROM ids.sno_generator); END \$\$" ||
    die "upd_acl"
acl_before="$(q srv -c "$acl_query")"
db=upd
# A streaming standby of it, also running 0.1.0 (the same installation).
node_basebackup srv stby standby
node_cmdline stby shared_preload_libraries=sno fsync=off
node_start stby || die "the 0.1.0 standby did not start"
node_wait_catchup stby srv || die "the 0.1.0 standby does not replay"

# --- 3. the package --------------------------------------------------------------------------
# The README's commands for a tarball (pg_config: this installation's), while both servers run.
install_tarball "$tarball" "$NEW_VERSION"
# Every C symbol any install or upgrade script names is in the new library (with its
# version-1 record): the library serves every version's SQL.
missing=""
syms="$(nm -D --defined-only "$pg/lib/sno.so" | awk '{ print $3 }')"
for s in $(cat "$root"/sql/sno--*.sql "$extdir"/sno--*.sql | sed -n "s/.*'MODULE_PATHNAME', *'\([A-Za-z0-9_]*\)'.*/\1/p" | sort -u); do
    grep -qx "$s" <<<"$syms" && grep -qx "pg_finfo_$s" <<<"$syms" || missing+=" $s"
done
check "every C symbol of sql/sno--*.sql and the installed scripts is in the new sno.so" "${missing:-none}" none
# Before the restart the server runs the 0.1.0 library: the update fails and changes nothing.
out="$(q srv -c "ALTER EXTENSION sno UPDATE" 2>&1)" && bad "the update ran on the old library: $out"
check "before the restart, ALTER EXTENSION sno UPDATE fails cleanly (the old library is loaded)" \
    "$(grep -c 'ERROR:  could not find function "generator_[a-z_]*_wrapper" in file' <<<"$out")|$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" \
    "1|$OLD_VERSION"
node_stop srv || die "stopping the 0.1.0 server"
state="$(node_data srv)/sno_generator.state"
check "0.1.0 wrote a version 1 state file" "$(head -1 "$state")" "sno generator state 1"
# Its clock 3 s behind the last 0.1.0 ID: the restored state must keep new IDs apart.
offset="$(awk -v last="$old_last" -v now="$(date +%s.%N)" 'BEGIN { d = now - last + 3; printf "%d", (d == int(d)) ? d : int(d) + 1 }')"
node_clock srv "-${offset}s"
mark="$(stat -c %s "$(node_log srv)")"
node_start srv || die "the server did not start with sno $NEW_VERSION"
started="$(tail -c +"$((mark + 1))" "$(node_log srv)")"
check "the 0.1.0 state file was read at start, without a complaint" \
    "$(grep -c 'sno: generator state restored' <<<"$started")|$(grep -c -E 'WARNING|ERROR|FATAL' <<<"$started")" "1|0"
check "and rewritten in the new format" "$(head -1 "$state")" "sno generator state 2"
check "the standby still runs the 0.1.0 library it started with" \
    "$(node_running stby && grep -c 'sno.so (deleted)' /proc/"$(head -1 "$(node_data stby)/postmaster.pid")"/maps | sed 's/^[1-9][0-9]*$/mapped/')" mapped

# --- 4. the 0.1.0 catalog with the new library -------------------------------------------------
check "before the update, the database is still at $OLD_VERSION" \
    "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$OLD_VERSION"
check "0.1.0's sno_generator with the new library: its 15 columns" \
    "$(q srv -c "SELECT count(*) FROM jsonb_object_keys((SELECT to_jsonb(g) FROM sno_generator g))" \
        -c "SELECT state, partition, leases >= 0 FROM sno_generator")" "15
ready|$partition|t"
check "0.1.0's sno_generator_initialize(force) with the new library" \
    "$(q srv -c "SELECT sno_generator_initialize()" -c "SELECT sno_generator_initialize(false)")" "f
f"
batch srv 2 || bad "batch 2 through the 0.1.0 catalog"
check "0.1.0's sno_generator_backends with the new library: 9 columns, no leases" \
    "$(q srv -c "SELECT sno_generate(1) IS NOT NULL" \
        -c "SELECT count(*) FROM jsonb_object_keys((SELECT to_jsonb(b) FROM sno_generator_backends b WHERE pid = pg_backend_pid()))" \
        -c "SELECT count(*) FROM sno_generator_backends WHERE lease_time IS NOT NULL OR lease_end IS NOT NULL")" "t
9
0"

# The README's step 1: a standby still running 0.1.0 stops at the 0.2.0 primary's first record
# of sno's resource manager; restarted with 0.2.0, it resumes.
for ((i = 0; i < 100; i++)); do node_running stby || break; sleep 0.2; done
check "the 0.1.0 standby stopped at the new WAL records, as the README says" \
    "$(node_running stby && echo running || grep -c 'resource manager with ID 213 not registered' "$(node_log stby)")" 1
node_start stby || bad "the standby did not start with sno $NEW_VERSION"
node_wait_catchup stby srv && echo "ok: restarted with $NEW_VERSION, the standby resumes replay" ||
    bad "the standby restarted with $NEW_VERSION does not replay"

# --- 5. ALTER EXTENSION sno UPDATE, and the catalog ------------------------------------------
catalog() { node_psql_db srv "$1" -f "$(dirname "${BASH_SOURCE[0]}")/catalog.sql"; }
node_psql srv -c "CREATE DATABASE fresh" || die "database fresh"
db=fresh
q srv -c "CREATE EXTENSION sno" || die "CREATE EXTENSION sno in a new database"
fresh="$(catalog fresh)"
check "a new database gets $NEW_VERSION" "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$NEW_VERSION"
db=upd
before="$(catalog upd)"
differ="$(diff <(echo "$before") <(echo "$fresh") | grep -c '^[<>]')"
if ((differ > 0)) && grep -q 'function sno_hash(sno) .* LEAKPROOF' <<<"$before"; then
    echo "ok: before the update the catalog comparison sees $differ differing lines (sno_hash LEAKPROOF among them)"
else
    bad "the catalog comparison does not tell 0.1.0 from $NEW_VERSION ($differ lines differ)"
fi
check "ALTER EXTENSION sno UPDATE says nothing" "$(q srv -c "ALTER EXTENSION sno UPDATE" 2>&1)" ""
check "the database is at $NEW_VERSION" "$(q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'")" "$NEW_VERSION"
after="$(catalog upd)"
check "the updated catalog equals a fresh CREATE EXTENSION's ($(wc -l <<<"$fresh") objects compared)" \
    "$(diff <(echo "$after") <(echo "$fresh"))" ""
check "the new monitoring columns" \
    "$(q srv -c "SELECT state, units_opened > 0, state_writes >= 0 FROM sno_generator" -c "SELECT count(*) > 0 FROM sno_generator_lineage")" \
    "ready|t|t
t"
batch srv 3 || bad "batch 3 after the update"

# --- 6. the data ------------------------------------------------------------------------------
name="update $OLD_VERSION -> $NEW_VERSION"
check "$name: the 0.1.0 rows are identical (md5 of ordered rows and partitions)" "$(q srv -c "$DIGEST")" "$digest"
total=$((3 * IDS_PER_BATCH))
check "$name: zero duplicates over all $total IDs of both versions" \
    "$(q srv -c "SELECT count(*), count(DISTINCT x) FROM $ALL_IDS")" "$total|$total"
shared_units "$name: IDs made with the 0.1.0 catalog" 1 2
check "$name: every ID has the derived partition of before ($partition)" \
    "$(q srv -c "SELECT string_agg(DISTINCT sno_partition(x)::text, ',') FROM $ALL_IDS")" "$partition"
check "$name: the DEFAULT, the view and the function over sno work" \
    "$(q srv -c "SELECT pg_get_expr(adbin, adrelid) FROM pg_attrdef WHERE adrelid = 't_main'::regclass" \
        -c "SELECT count(*) = $((3 * ROWS_MAIN)) FROM recent" -c "SELECT sno_meta(new_ref())")" "sno_generate(1)
t
2"
check_integrity "$name" "$work"
node_wait_catchup stby srv || bad "the standby does not replay the update"
check "the standby has the primary's rows and the updated catalog" \
    "$(node_psql_db stby upd -c "SELECT count(*) FROM t_main" -f "$(dirname "${BASH_SOURCE[0]}")/catalog.sql" | md5sum)" \
    "$(q srv -c "SELECT count(*) FROM t_main" -f "$(dirname "${BASH_SOURCE[0]}")/catalog.sql" | md5sum)"

# --- 7. a view over the monitoring views, and changed privileges: the HINTs ------------------
db=upd_acl
out="$(q srv -v VERBOSITY=verbose -c "ALTER EXTENSION sno UPDATE" 2>&1)" && bad "the update ran despite my_generator: $out"
check "the update refuses while the user's objects use the monitoring views (SQLSTATE 2BP01)" \
    "$(sed -n 's/^ERROR:  \([0-9A-Z]*\): cannot update extension sno: objects use its monitoring views or functions, which this update re-creates with new columns: \(.*\)$/\1 \2/p' <<<"$out")" \
    "2BP01 column g of table public.snap, function public.mon_backends(), view public.my_generator, view public.my_generator2"
hint="$(sed -n 's/^HINT:  //p' <<<"$out")"
change="$(sed -n 's/^Change \(.*\) so that it no longer uses them\. Save the definitions.*/\1/p' <<<"$hint")"
drops="$(sed -n 's/.*Save the definitions of those objects, run \(.*;\) then run ALTER EXTENSION sno UPDATE; again, then create them again with the new column names\.$/\1/p' <<<"$hint")"
check "its HINT names what to change" "$change" "column g of table public.snap"
# That change: the column goes (a row of the old view's type cannot be kept as such).
q srv -c "ALTER TABLE public.snap DROP COLUMN g" || bad "dropping column g of table public.snap"
check "its HINT names what to drop, dependents first" "$drops" \
    "DROP VIEW public.my_generator2; DROP FUNCTION public.mon_backends(); DROP VIEW public.my_generator;"
# Followed word for word (search_path without ids): save the definitions, drop, update again,
# create again.
viewdef="$(q srv -c "SELECT pg_get_viewdef('my_generator')")"
viewdef2="$(q srv -c "SELECT pg_get_viewdef('my_generator2')")"
q srv -c "$drops" || bad "running the HINT's $drops"
out="$(q srv -c "ALTER EXTENSION sno UPDATE" 2>&1)" || bad "ALTER EXTENSION sno UPDATE after the HINT: $out"
check "then the update warns that privileges were reset" \
    "$(grep -c "^WARNING:  extension sno: this update re-creates monitoring views and functions whose privileges were changed" <<<"$out")" 1
check "and that lease_count()'s body mentions the monitoring views" \
    "$(grep -c '^WARNING:  extension sno: the bodies of public.lease_count() mention its monitoring views or functions' <<<"$out")" 1
check "with a HINT to change them" "$(grep -c '^HINT:  Where those bodies use leases or the lease_\* columns, change them to the 0.2.0 columns.$' <<<"$out")" 1
q srv -c "CREATE OR REPLACE FUNCTION lease_count() RETURNS bigint LANGUAGE plpgsql AS \$\$ BEGIN RETURN (SELECT units_opened FROM ids.sno_generator); END \$\$" \
    -c "SELECT lease_count() >= 0" >/dev/null || bad "lease_count() changed as the HINT says does not work"
restore="$(sed -n 's/^HINT:  After ALTER EXTENSION sno UPDATE completes, run: //p' <<<"$out")"
[[ -n "$restore" ]] || bad "no statements in the WARNING's HINT: $out"
q srv -c "$restore" || bad "running the HINT's statements: $restore"
check "the privileges are as before the update" "$(q srv -c "$acl_query")" "$acl_before"
q srv -c "CREATE VIEW my_generator AS $viewdef" -c "CREATE VIEW my_generator2 AS $viewdef2" -c "$mon_fn" ||
    bad "creating my_generator, my_generator2 and mon_backends() again"
check "my_generator works again; sno_ops reads the monitoring views" \
    "$(q srv -c "SELECT count(*) FROM my_generator2" -c "SELECT count(*) >= 0 FROM mon_backends()" -c "SET ROLE sno_ops" \
        -c "SELECT count(*) FROM ids.sno_generator" -c "SELECT count(*) >= 0 FROM ids.sno_generator_backends")" "1
t
1
t"
dump="$(node_client srv pg_dump --schema-only upd_acl)"
check "pg_dump keeps the administrator's privileges" \
    "$(grep -c -E '^(REVOKE SELECT ON TABLE ids\.sno_generator FROM PUBLIC|GRANT SELECT ON TABLE ids\.sno_generator TO sno_ops);' <<<"$dump")" 2
# The catalog seen with ids first on the search_path (so that names print as in public); the
# functions' bodies name sno's schema (ids. after any non-word character: OPERATOR(ids.<), ::ids.sno).
check "upd_acl's catalog equals a fresh one but for the schema and those privileges" \
    "$(diff <(PGOPTIONS="-c search_path=ids" catalog upd_acl | sed -e 's/ acl=[^ ]*//' -e 's/schema=ids/schema=public/' -e 's/\([^A-Za-z0-9_]\)ids\./\1public./g') \
        <(sed 's/ acl=[^ ]*//' <<<"$fresh"))" ""
check "upd_acl makes IDs" "$(q srv -c "SELECT count(DISTINCT ids.sno_generate(1)) FROM generate_series(1, 1000)")" 1000

node_stop stby || bad "stopping the standby"
node_stop srv || bad "stopping the server"
check "no process crashed" "$(cat "$(node_log srv)" "$(node_log stby)" | grep -c -E 'terminated by signal|PANIC')" 0
exit "$fail"
