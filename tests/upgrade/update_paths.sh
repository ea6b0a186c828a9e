#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ALTER EXTENSION sno UPDATE from every earlier release (0.1.0, 0.2.0, 0.3.0, 0.4.0, 0.4.1, 0.5.0, 0.6.0, 0.7.0 and
# 0.8.0, 0.8.1, the last) to this version, with its package, while another role's objects wait in sno's schema:
#   1. The package is installed with the manual's commands into a private copy of a relocatable
#      PostgreSQL, and the install scripts of the earlier releases as kept in sql/ beside it
#      (the new library keeps every earlier version's C symbols: no old release is built).
#   2. One database per release: CREATE EXTENSION sno VERSION 'X' in public, the schema any
#      role could create in before PostgreSQL 15. In the 0.6.0 database, data made with 0.6.0's
#      catalog (tests/upgrade/data.bash), a user's view over sno_generator and a grant on it.
#   3. Before the update, the last release's catalog works with the new library; sno = varchar
#      is sno = text, the varchar coerced; a lease is acquired and renewed through it (the
#      registry without its 0.8.1 ledger), and renewed again after the update.
#   4. An unprivileged role plants operators and functions in public (tests/upgrade/hostile.sql,
#      hostile_sno.sql): exact matches for the expressions of the install and update scripts,
#      each recording in a table it owns that it ran, as whom and in which statement.
#   5. The check can fail: the 0.1.0 -> 0.2.0 script as 0.4.0 shipped it (before its search_path
#      was pinned first) runs the role's ||(oid[], oid[]) as the superuser.
#   6. ALTER EXTENSION sno UPDATE in every database: silent; none of the planted objects ran;
#      the catalog equals a fresh CREATE EXTENSION's (tests/upgrade/catalog.sql), no member
#      outside sno's schema; the user's view and grant are kept; sno = char(16) is sno's own
#      (sno, bpchar) operator through the index (sno = varchar stays sno = text: no operator
#      has a varchar argument), and another role's =(sno, bpchar) in a
#      schema later on the search_path is not chosen.
#   7. CREATE EXTENSION sno with the planted objects present: none ran; with a zero-argument
#      sno_generator_initialize() planted, it fails ("not unique") and runs nothing.
#   8. The manual's query for objects other roles left in sno's schema finds exactly the
#      planted ones.
#   9. The 0.6.0 database's data, the planted objects dropped: the old rows unchanged, zero
#      duplicates, amcheck and the hash and BRIN indexes (check_integrity).
# About 20 s.
#
# Usage (as root): update_paths.sh PG_HOME TARBALL PORT
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
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

OLD_VERSIONS=(0.1.0 0.2.0 0.3.0 0.4.0 0.4.1 0.5.0 0.6.0 0.7.0 0.8.0 0.8.1)
LAST_VERSION=0.8.1
# The 0.1.0 -> 0.2.0 update script as 0.4.0 shipped it, before its search_path was pinned first.
UNFIXED_COMMIT=ddb8f69
NEW_VERSION="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -1)"

harness_setup upd_paths "$pg_home/bin" "$port" "$port"
work="$CL_WORK"
# shellcheck source=data.bash
source "$here/data.bash"
db=upd
q() {
    local node="$1"
    shift
    node_psql_db "$node" "$db" "$@"
}
nq=(q srv)
version() { q srv -c "SELECT extversion FROM pg_extension WHERE extname = 'sno'"; }
db_of() { echo "from_${1//./}"; }

# --- 1. the package, and the earlier releases' install scripts ---------------------------------
# shellcheck source=release.bash
source "$here/release.bash"
private_postgres "$pg_home"
install_tarball "$tarball" "$NEW_VERSION"
for v in "${OLD_VERSIONS[@]}"; do
    install -m 644 "$root/sql/sno--$v.sql" "$extdir/" || die "sql/sno--$v.sql"
done
check "the package holds the update script from each earlier release" \
    "$(for v in "${OLD_VERSIONS[@]}"; do ls "$extdir"/sno--"$v"--*.sql >/dev/null 2>&1 && echo "$v"; done | paste -sd' ')" \
    "${OLD_VERSIONS[*]}"

# --- 2. a database per release -----------------------------------------------------------------
node_new srv
node_clock_mode srv none
node_initdb srv -E UTF8 --locale=C || die "initdb"
node_cmdline srv shared_preload_libraries=sno fsync=off
node_start srv || die "the server did not start"
# The role that plants: no privilege but CREATE on public, which every role had before
# PostgreSQL 15 (and still has in clusters upgraded from then).
node_psql srv -c "CREATE ROLE intruder LOGIN" -c "CREATE ROLE sno_ops" || die "roles"
for v in "${OLD_VERSIONS[@]}"; do
    db="$(db_of "$v")"
    node_psql srv -c "CREATE DATABASE $db" || die "database $db"
    q srv -c "GRANT CREATE ON SCHEMA public TO PUBLIC" -c "CREATE EXTENSION sno VERSION '$v'" ||
        die "CREATE EXTENSION sno VERSION '$v' (sql/sno--$v.sql with the new library)"
    check "database $db is at $v" "$(version)" "$v"
done
db="$(db_of "$LAST_VERSION")"
q srv -c "$SNO_DATA_SCHEMA" \
    -c "CREATE VIEW my_generator AS SELECT partition, ids_issued FROM sno_generator" \
    -c "GRANT SELECT ON sno_generator TO sno_ops" >/dev/null || die "the $LAST_VERSION schema"
batch srv 1 || die "batch 1 with $LAST_VERSION's catalog"
digest="$(q srv -c "$DIGEST")"

# --- 3. before the update, the last release's catalog with the new library --------------------
db="$(db_of "$LAST_VERSION")"
check "$LAST_VERSION's sno_generator with the new library" "$(q srv -c "SELECT state FROM sno_generator")" ready
batch srv 2 || bad "batch 2 through the $LAST_VERSION catalog"
some_id="$(q srv -c "SELECT id FROM t_main ORDER BY id LIMIT 1 OFFSET 100")"
idx="SET enable_seqscan = off;"
plan="$(q srv -c "$idx" -c "EXPLAIN (COSTS OFF) SELECT * FROM t_main WHERE id = '$some_id'::varchar")"
check "$LAST_VERSION's catalog: sno = varchar is sno = text, the varchar coerced" \
    "$(grep -c "Index Cond: (id = '$some_id'::text)" <<<"$plan")" 1
old_lease="$(q srv -c "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'before-update', ttl => '5 min')")"
check "$LAST_VERSION's catalog: a lease acquired and renewed with the new library" \
    "$(q srv -c "SELECT lease FROM sno_lease_renew(lease => ${old_lease%%|*}, token => '${old_lease#*|}', ttl => '5 min')")" "${old_lease%%|*}"

# --- 4. another role's objects in public -------------------------------------------------------
# plant DB: hostile.sql (and hostile_sno.sql once sno exists), as the role intruder.
plant() {
    local files=(-f "$here/hostile.sql")
    [[ "$(node_psql_db srv "$1" -c "SELECT count(*) FROM pg_type WHERE typname = 'sno'")" == 1 ]] &&
        files+=(-f "$here/hostile_sno.sql")
    node_psql_db srv "$1" -c "SET ROLE intruder" "${files[@]}" >/dev/null || die "planting in $1"
}
# ran DB: what the planted objects did during CREATE or ALTER EXTENSION, as whom.
ran() {
    node_psql_db srv "$1" -c "SELECT coalesce(string_agg(DISTINCT what || ' as ' || who, ', '), 'nothing')
        FROM public.intruder_log WHERE query ~* '^\\s*(CREATE|ALTER) EXTENSION'"
}
planted_objects="$(grep -c -E '^CREATE (FUNCTION|OPERATOR|AGGREGATE)' "$here/hostile.sql")"
for v in "${OLD_VERSIONS[@]}"; do plant "$(db_of "$v")"; done
echo "ok: the role intruder planted $planted_objects functions and operators (and 3 sno overloads) in public of each database"

# --- 5. the check can fail: 0.4.0's 0.1.0 -> 0.2.0 script ------------------------------------
node_psql srv -c "CREATE DATABASE unfixed" || die "database unfixed"
db=unfixed
q srv -c "GRANT CREATE ON SCHEMA public TO PUBLIC" -c "CREATE EXTENSION sno VERSION '0.1.0'" || die "unfixed: 0.1.0"
plant unfixed
fixed="$(mktemp)"
cp "$extdir/sno--0.1.0--0.2.0.sql" "$fixed"
git -C "$root" show "$UNFIXED_COMMIT:sql/sno--0.1.0--0.2.0.sql" >"$extdir/sno--0.1.0--0.2.0.sql" ||
    die "git show $UNFIXED_COMMIT:sql/sno--0.1.0--0.2.0.sql"
q srv -c "ALTER EXTENSION sno UPDATE TO '0.2.0'" || bad "the unfixed update to 0.2.0 failed"
install -m 644 "$fixed" "$extdir/sno--0.1.0--0.2.0.sql" && rm -f "$fixed"
check "the unfixed 0.1.0 -> 0.2.0 script (commit $UNFIXED_COMMIT) runs the role's operator as the superuser: the check sees it" \
    "$(ran unfixed)" "||(oid[],oid[]) as postgres"

# --- 6. ALTER EXTENSION sno UPDATE, from each release ----------------------------------------
catalog() { node_psql_db srv "$1" -f "$here/catalog.sql"; }
node_psql srv -c "CREATE DATABASE fresh" || die "database fresh"
db=fresh
q srv -c "CREATE EXTENSION sno" || die "CREATE EXTENSION sno in a new database"
# The view's privileges differ by the grant to sno_ops (checked below), the rest must not.
no_acl() { sed '/^view sno_generator |/s/ acl=[^ ]*//'; }
fresh="$(catalog fresh | no_acl)"
check "a fresh install has no member outside sno's schema" \
    "$(grep -c '^members outside sno.s schema | 0$' <<<"$fresh")" 1
for v in "${OLD_VERSIONS[@]}"; do
    db="$(db_of "$v")"
    t0=$SECONDS
    check "ALTER EXTENSION sno UPDATE from $v says nothing" "$(q srv -c "ALTER EXTENSION sno UPDATE" 2>&1)" ""
    check "from $v: the database is at $NEW_VERSION ($((SECONDS - t0)) s)" "$(version)" "$NEW_VERSION"
    check "from $v: none of the planted objects ran" "$(ran "$db")" nothing
    check "from $v: the updated catalog equals a fresh CREATE EXTENSION's ($(wc -l <<<"$fresh") lines)" \
        "$(diff <(catalog "$db" | no_acl) <(echo "$fresh"))" ""
done

db="$(db_of "$LAST_VERSION")"
check "after the update, the lease acquired before it renews (its ledger begun by the update)" \
    "$(q srv -c "SELECT lease FROM sno_lease_renew(lease => ${old_lease%%|*}, token => '${old_lease#*|}', ttl => '5 min')")" "${old_lease%%|*}"
check "  and a new lease is granted beside it, numbered after it" \
    "$(q srv -c "SELECT lease > ${old_lease%%|*} FROM sno_lease_acquire(holder => 'after-update', ttl => '5 min')")" t
check "the grant on sno_generator is kept" \
    "$(q srv -c "SELECT has_table_privilege('sno_ops', 'sno_generator', 'SELECT')")" t
check "the user's view over sno_generator works" "$(q srv -c "SELECT count(*) FROM my_generator")" 1
plan="$(q srv -c "$idx" -c "EXPLAIN (COSTS OFF) SELECT * FROM t_main WHERE id = '$some_id'::varchar")"
check "after the update sno = varchar is still sno = text (no operator has a varchar argument), through the primary key" \
    "$(grep -c "Index Cond: (id = '$some_id'::text)" <<<"$plan")" 1
plan="$(q srv -c "$idx" -c "EXPLAIN (COSTS OFF) SELECT * FROM t_main WHERE id = '$some_id'::char(16)")"
check "after the update sno = char(16) is sno's (sno, bpchar) operator, through the primary key" \
    "$(grep -cF "Index Cond: (id = '$some_id'::character(16))" <<<"$plan")" 1
check "after the update varchar and char compared with literals are PostgreSQL's own (no sno input error)" \
    "$(q srv -c "SELECT 'x'::varchar = 'CHECK', 'CHECK' = 'x'::varchar, 'x'::char(5) = 'CHECK', 'x'::name = 'CHECK'")" "f|f|f|f"
check "after the update sno = varchar finds the row" \
    "$(q srv -c "SELECT id FROM t_main WHERE id = '$some_id'::varchar")" "$some_id"
check "after the update a bad varchar is the 22P02 input error" \
    "$(q srv -c "\\set VERBOSITY verbose" -c "SELECT count(*) FROM t_main WHERE id = '${some_id:0:15}'::varchar" 2>&1 | grep -o 'ERROR:  22P02: invalid input syntax for type sno')" \
    "ERROR:  22P02: invalid input syntax for type sno"
check "after the update an INSERT of a sno column takes a varchar parameter" \
    "$(q srv -c "CREATE TEMP TABLE t_varchar (id sno PRIMARY KEY)" -c "PREPARE ins(varchar) AS INSERT INTO t_varchar VALUES (\$1) RETURNING id" -c "EXECUTE ins('${some_id^^}')")" \
    "$some_id"
# Another role's =(sno, bpchar) in a schema after public on the search_path: not chosen.
q srv -c "CREATE SCHEMA later AUTHORIZATION intruder" || bad "schema later"
q srv -c "SET ROLE intruder" \
    -c "CREATE FUNCTION later.capture(sno, bpchar) RETURNS bool LANGUAGE sql AS \$\$ INSERT INTO public.intruder_log (what) VALUES ('=(sno,bpchar)') RETURNING true \$\$" \
    -c "CREATE OPERATOR later.= (LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = later.capture)" || bad "the operator in later"
check "with another role's =(sno, bpchar) in a schema after sno's, sno = char(16) is still sno's" \
    "$(q srv -c "SET search_path = public, later" -c "SELECT count(*) FROM t_main WHERE id = '$some_id'::char(16)" \
        -c "SELECT count(*) FROM public.intruder_log WHERE what = '=(sno,bpchar)'")" "1
0"
check "... and the check sees that operator where it would be chosen (its schema first)" \
    "$(q srv -c "SET search_path = later, public" -c "SELECT count(*) FROM t_main WHERE id = '$some_id'::char(16) AND batch = 1" \
        -c "SELECT count(*) > 0 FROM public.intruder_log WHERE what = '=(sno,bpchar)'")" "$(q srv -c "SELECT count(*) FROM t_main WHERE batch = 1")
t"
q srv -c "DROP SCHEMA later CASCADE" >/dev/null 2>&1 || bad "dropping schema later"

# --- 7. CREATE EXTENSION sno with the planted objects present --------------------------------
node_psql srv -c "CREATE DATABASE fresh_planted" -c "CREATE DATABASE fresh_blocked" || die "databases fresh_*"
db=fresh_planted
q srv -c "GRANT CREATE ON SCHEMA public TO PUBLIC" || die "fresh_planted"
plant fresh_planted
check "CREATE EXTENSION sno with the planted objects present says nothing" "$(q srv -c "CREATE EXTENSION sno" 2>&1)" ""
check "CREATE EXTENSION sno: none of the planted objects ran" "$(ran fresh_planted)" nothing
check "CREATE EXTENSION sno beside the planted objects: the catalog of a fresh install" \
    "$(diff <(catalog fresh_planted | no_acl) <(catalog fresh | sed '/^view sno_generator |/s/ acl=[^ ]*//'))" ""
db=fresh_blocked
q srv -c "GRANT CREATE ON SCHEMA public TO PUBLIC" || die "fresh_blocked"
plant fresh_blocked
q srv -c "SET ROLE intruder" \
    -c "CREATE FUNCTION public.sno_generator_initialize() RETURNS bool LANGUAGE sql AS \$\$ INSERT INTO public.intruder_log (what) VALUES ('sno_generator_initialize()') RETURNING true \$\$" ||
    bad "planting sno_generator_initialize()"
out="$(q srv -c "CREATE EXTENSION sno" 2>&1)" && bad "CREATE EXTENSION sno ran beside another role's sno_generator_initialize()"
check "beside another role's sno_generator_initialize(), CREATE EXTENSION sno fails: the call is not unique" \
    "$(grep -c 'function .*sno_generator_initialize() is not unique' <<<"$out")|$(ran fresh_blocked)" "1|nothing"

# --- 8. the manual's query: objects other roles left in sno's schema --------------------------
# The query as the README prints it (section "Which schema to install sno in").
planted="$CL_WORK/planted.sql"
awk '/^\*\*Installs updated from 0.1.0 before 0.4.1/ { f = 1 } f && /^```sql$/ { b = 1; next } b && /^```$/ { exit } b' \
    "$root/doc/install.md" >"$planted"
[[ -s "$planted" ]] || bad "the manual's query for planted objects was not found"
intruders="SET search_path = pg_catalog, pg_temp;
    SELECT count(*) FROM (SELECT oid FROM pg_proc WHERE proowner = 'intruder'::regrole AND pronamespace = 'public'::regnamespace
                          UNION ALL SELECT oid FROM pg_operator WHERE oprowner = 'intruder'::regrole AND oprnamespace = 'public'::regnamespace) s"
for v in 0.1.0 "$LAST_VERSION"; do
    got="$(node_psql_db srv "$(db_of "$v")" -f "$planted")"
    check "from $v: the manual's query, as printed, lists every function and operator intruder made in public, nothing else" \
        "$(grep -c '|intruder$' <<<"$got")|$(grep -vc '|intruder$' <<<"$got")" "$(node_psql_db srv "$(db_of "$v")" -c "$intruders")|0"
    check "from $v: ... among them the operator ||(oid[],oid[])" "$(grep -c '^operator public\.||(oid\[\],oid\[\])|intruder$' <<<"$got")" 1
done
check "the manual's query finds nothing where no other role made anything" \
    "$(node_psql_db srv fresh -f "$planted" | grep -c .)" 0

# --- 9. the data ----------------------------------------------------------------------------
db="$(db_of "$LAST_VERSION")"
# The planted objects go (they are exact matches for the workload's own expressions too: with
# ||(text, regclass) there, 'row ' || g is "not unique"), then rows made after the update.
q srv -c "DROP OWNED BY intruder" || bad "DROP OWNED BY intruder"
batch srv 3 || bad "batch 3 after the update"
name="update $LAST_VERSION -> $NEW_VERSION"
check "$name: the $LAST_VERSION rows are identical" "$(q srv -c "$DIGEST")" "$digest"
total=$((3 * IDS_PER_BATCH))
check "$name: zero duplicates over all $total IDs of both versions" \
    "$(q srv -c "SELECT count(*), count(DISTINCT x) FROM $ALL_IDS")" "$total|$total"
check_integrity "$name" "$work"
node_stop srv
exit "$fail"
