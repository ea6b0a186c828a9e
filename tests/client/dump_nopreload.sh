#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=30
# pg_dump of a database that uses sno, restored into servers that have sno installed but not
# preloaded, following the manual's Operations page ("Can I restore a dump into a server without
# sno preloaded?") as printed: its commands are read from the page and run. The source (sno
# preloaded, sno.partition = 1) has tables with sno keys (DEFAULT sno_generate(1)), btree, hash
# and BRIN indexes, a view, IDs for past times (sno_generate_at) and a lease whose holder stamped
# IDs into a table. Its custom-format dump (the page's commands) and a plain one are restored into
# `dst` without preload: the restore finishes without an error; every row, index (amcheck, index
# scans), view, and the type's input, output, fields and order read as on the source; every call
# that needs the library is refused with 55000 and the documented message and HINT (sno_generate,
# a DEFAULT, sno_generate_at, the lease functions, sno_reserved_relearn, the lineage views), and
# sno_generator_initialize() returns false. The HINT is followed literally (its line appended to
# postgresql.conf, a restart; sno.partition = 2 with it, as Running many servers asks). What the
# page's order relies on is checked first: sno_reserved_relearn() before the state file exists
# records the dump's grants, its lease pool's too (0.9.0; sno 0.8.1 returned the count and
# recorded nothing, and read no lease pool), and
# sno_generator_initialize() without take_over refuses the
# partition configured at that start. Then the page's steps, then sno_generate, sno_generate_at in
# both restored databases and in one created afterwards, and a lease: refused until the HINT's
# sno_lease_take_over(), run once the source is stopped and sno.lease_max_ttl has passed, as the
# HINT says. The source makes IDs after the dump until it stops. No ID made on dst repeats an ID
# the source made, before or after the dump (the ledger). Two more targets show why the page's
# steps are there:
#   pre  sno preloaded before the restore: a database created afterwards is granted a reserved
#        partition the dump does not name (the restore's trigger recorded the dump's grants);
#   nop  restored without preload, then only the HINTs followed: a database created afterwards is
#        refused sno_generate_at (55000) until, as its HINT says, sno_reserved_relearn() ran in every
#        database that has sno and sno_generator_initialize(take_over => true) once (0.9.0; sno 0.8.1
#        granted the dump's partition and repeated the source's IDs). A streaming standby of it,
#        taken before the read-back (its base backup copies the record of the restore), loses the
#        record by the read-back's WAL record: promoted (nop stopped) and restarted, it grants.
#        (0.9.0; before, it refused every grant at its first restart after promotion.)
#
# The page is doc/operations.md, or the file SNO_OPS_DOC names.
#
# Usage: dump_nopreload.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own servers)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOC="${SNO_OPS_DOC:-$ROOT/doc/operations.md}"
harness_setup dump_nopreload "$3" $(($2 + 501)) $(($2 + 599))
CL_LEDGER_PORT=$(($2 + 500))
mkdir "$CL_WORK/ledger" "$CL_WORK/dump"
chown postgres: "$CL_WORK/dump"
ledger_start
T0=$SECONDS
part() { echo "--- $* ($((SECONDS - T0)) s)"; }

# --- the manual's commands ------------------------------------------------------------------

[[ -f "$DOC" ]] || die "no $DOC (the Operations page; SNO_OPS_DOC names another file)"
# doc_block MARKER: the first fenced block after the line MARKER.
doc_block() {
    awk -v m="$1" '$0 == m { f = 1; next } f && !b && /^```/ { b = 1; next } b && /^```$/ { exit } b' "$DOC"
}
SOURCE_CMDS="$(doc_block "<!-- dump:source -->")"
TARGET_CMDS="$(doc_block "<!-- dump:target -->")"
AFTER_CMDS="$(doc_block "<!-- dump:after-preload -->")"
[[ -n "$SOURCE_CMDS" && -n "$TARGET_CMDS" && -n "$AFTER_CMDS" ]] || die "the dump blocks were not found in $DOC"
grep -q '^pg_restore -d app app.dump$' <<<"$TARGET_CMDS" || die "the page's target block does not restore app.dump"

# run_cmds NODE COMMANDS: the commands, as printed, in bash as the postgres OS user in the dump
# directory, with the node's binaries first in PATH and libpq's variables naming the node (what a
# DBA's shell on that server has). Output in $CMDS_OUT; returns bash's status (set -e).
CMDS_OUT=""
run_cmds() {
    local rc=0
    CMDS_OUT="$(as_pg env PATH="${CL_BIN[$1]}:$PATH" PGHOST="$CL_WORK" PGPORT="${CL_PORT[$1]}" PGUSER=postgres \
        PGDATA="$(node_data "$1")" bash -euo pipefail -c "cd '$CL_WORK/dump'; $2" 2>&1)" || rc=$?
    return "$rc"
}

NOT_PRELOADED="sno_generate needs the sno library in shared_preload_libraries"
LEASE_NOT_PRELOADED="sno partition leases need the sno library in shared_preload_libraries"
PRELOAD_HINT="Add sno to shared_preload_libraries in postgresql.conf (shared_preload_libraries = 'sno') and restart the server."
LEASE_FNS="sno_lease_acquire(text, interval, int4), sno_lease_renew(bigint, uuid, interval), sno_lease_release(bigint, uuid)"
# The same times as the source's backfill: a repeated grant repeats its IDs.
AT_SERIES="generate_series('2021-01-01 00:00:00+00'::timestamptz, '2021-01-01 00:00:10+00', '1 ms')"

# gen_orders NODE DB PHASE N: N orders inserted by role app (the key's DEFAULT sno_generate(1)),
# their IDs to the ledger.
gen_orders() {
    qu "$1" "$2" app -c "COPY (INSERT INTO orders (customer, total) SELECT g % 97, g FROM generate_series(1, $4) g
        RETURNING id) TO STDOUT" >>"$(ledger_file "$1" "$3")"
}
# gen_at NODE DB PHASE: a backfill by role app (sno_generate_at(2, t) over AT_SERIES) inserted
# into legacy (or only selected where DB has no such table), the IDs to the ledger.
gen_at() {
    local sql="SELECT sno_generate_at(2, t), t FROM $AT_SERIES t ORDER BY t"
    if [[ "$(qu "$1" "$2" app -c "SELECT to_regclass('legacy') IS NOT NULL")" == t ]]; then
        sql="INSERT INTO legacy (id, created_at) $sql RETURNING id"
    else
        sql="SELECT id FROM ($sql) x(id, t)"
    fi
    qu "$1" "$2" app -c "COPY ($sql) TO STDOUT" >>"$(ledger_file "$1" "$3")"
}
# gen_lease NODE DB PHASE HOLDER: role svc acquires a lease (ttl 2 s) and stamps 40 IDs in its
# window and slice (10 units, 4 sequence numbers, meta 3) into service_events; IDs to the ledger.
gen_lease() {
    qu "$1" "$2" svc -c "COPY (WITH l AS (SELECT * FROM sno_lease_acquire('$4', '2 s', 1024))
        INSERT INTO service_events (id, holder)
        SELECT sno_from_parts(l.not_before + k * interval '4 ms', 3, l.partition, l.sequence_min + j), l.holder
        FROM l, generate_series(0, 9) k, generate_series(0, 3) j RETURNING id) TO STDOUT" >>"$(ledger_file "$1" "$3")"
}
partitions_of() { ledger_partitions "$1" "$2"; }

# The digest of what a database holds, for comparing a restore with its source.
DIGESTS=(
    "SELECT md5(string_agg(format('%s|%s|%s', id, customer, total), ',' ORDER BY id)) FROM orders"
    "SELECT md5(string_agg(format('%s|%s', id, created_at), ',' ORDER BY id)) FROM legacy"
    "SELECT md5(string_agg(format('%s|%s', id, holder), ',' ORDER BY id)) FROM service_events"
    "SELECT md5(string_agg(format('%s|%s|%s|%s|%s', id, sno_time(id), sno_meta(id), sno_partition(id), sno_sequence(id)), ',' ORDER BY id)) FROM orders"
    "SELECT md5(string_agg(format('%s|%s|%s|%s', id, made_at, meta, customer), ',' ORDER BY id)) FROM recent_orders"
    "SELECT string_agg(format('%s|%s', partition, grantee), ',' ORDER BY partition) FROM sno_reserved_grants"
    "SELECT string_agg(format('%s|%s|%s|%s|%s', lease, partition, sequence_min, sequence_max, expires_at), ',' ORDER BY lease) FROM sno_leases"
)
digest() {
    local d out=""
    for d in "${DIGESTS[@]}"; do out+="$(node_psql_db "$1" "$2" -c "$d");"; done
    echo "$out"
}

# new_target NAME [preload]: a server of these binaries (which have sno installed), with no role
# but postgres yet; sno preloaded only with "preload".
new_target() {
    node_init "$1"
    node_clock_mode "$1" none
    [[ "${2:-}" == preload ]] && node_conf "$1" "shared_preload_libraries = 'sno'"
    node_start "$1" || die "$1 did not start"
}

# restore_target NAME: the page's target commands on NAME; the restore must finish, and say no
# error but the one the page expects.
restore_target() {
    if ! run_cmds "$1" "$TARGET_CMDS"; then
        echo "$CMDS_OUT" | tail -n 20
        die "$1: the page's restore commands failed"
    fi
    local errors
    errors="$(grep -E "ERROR|error:" <<<"$CMDS_OUT" | grep -vF 'role "postgres" already exists' || true)"
    check "$1: the page's restore ran, with no error but the expected 'role \"postgres\" already exists'" "$errors" ""
}

# --- the source ------------------------------------------------------------------------------

part "the source: sno preloaded, sno.partition = 1"
node_init src
node_clock_mode src none
node_conf src "shared_preload_libraries = 'sno'" "sno.partition = 1" "sno.lease_max_ttl = '2s'"
node_start src || die "src did not start"
node_sql src "CREATE ROLE app LOGIN" "CREATE ROLE svc LOGIN" "CREATE DATABASE app OWNER app" >/dev/null
node_psql_db src app >/dev/null <<SQL
CREATE EXTENSION sno;
GRANT EXECUTE ON FUNCTION sno_generate_at(int, timestamptz) TO app;
GRANT EXECUTE ON FUNCTION $LEASE_FNS TO svc;
SET ROLE app;
CREATE TABLE orders (id sno PRIMARY KEY DEFAULT sno_generate(1), customer int, total numeric);
CREATE INDEX orders_id_hash ON orders USING hash (id);
CREATE INDEX orders_id_brin ON orders USING brin (id);
CREATE TABLE legacy (id sno PRIMARY KEY, created_at timestamptz NOT NULL);
CREATE TABLE service_events (id sno PRIMARY KEY, holder text NOT NULL);
GRANT SELECT, INSERT ON service_events TO svc;
CREATE VIEW recent_orders AS SELECT id, sno_time(id) AS made_at, sno_meta(id) AS meta, customer FROM orders;
SQL
gen_orders src app before_dump 3000
gen_at src app at_before_dump
gen_lease src app lease_before_dump svc-1
SRC_GRANTS="$(node_psql_db src app -c "SELECT string_agg(partition::text, ' ' ORDER BY partition) FROM sno_reserved_grants")"
SRC_POOL="$(node_psql_db src app -c "SELECT string_agg(partition::text, ' ' ORDER BY partition) FROM sno_internal.lease_partitions")"
check "src: IDs of partition 1, a reserved partition granted to the backfill, a lease pool partition" \
    "$(partitions_of src before_dump)|$(wc -w <<<"$SRC_GRANTS")|$(wc -w <<<"$SRC_POOL")" "1|1|1"
echo "    src: granted $SRC_GRANTS to sno_generate_at, lease pool $SRC_POOL"

part "the page's dump commands on the source (and a plain dump)"
run_cmds src "$SOURCE_CMDS" || { echo "$CMDS_OUT"; die "the page's source commands failed"; }
run_cmds src "pg_dump -Fp -d app -f app.sql" || { echo "$CMDS_OUT"; die "pg_dump -Fp failed"; }
SRC_DIGEST="$(digest src app)"
# The source goes on after the dump: more IDs, and a lease with its stamps.
gen_orders src app after_dump 2000
gen_lease src app lease_after_dump svc-2

# --- dst: the page's way ----------------------------------------------------------------------

part "dst: sno installed, not preloaded: the page's restore, and a plain dump"
new_target dst
restore_target dst
if node_psql_db dst postgres -c "CREATE DATABASE app_plain" >/dev/null &&
    node_psql_db dst app_plain -f "$CL_WORK/dump/app.sql" >"$CL_WORK/plain.out" 2>&1; then
    echo "ok: dst: the plain dump restored (psql -v ON_ERROR_STOP=1 -f)"
else
    tail -n 5 "$CL_WORK/plain.out"
    bad "dst: the plain dump did not restore"
fi

for db in app app_plain; do
    check "dst/$db: every row, field, view, grant and lease as in the source's dump" "$(digest dst "$db")" "$SRC_DIGEST"
    check "dst/$db: sno_generator says not_preloaded" "$(node_psql_db dst "$db" -c "SELECT status FROM sno_generator")" not_preloaded
    check "dst/$db: no restored lease is active: each is inherited, or expired once its window ended" \
        "$(node_psql_db dst "$db" -c "SELECT count(*) > 0 AND bool_and(state IN ('inherited', 'expired')) FROM sno_leases")" t
    check "dst/$db: text and bytea round trips, comparisons" \
        "$(node_psql_db dst "$db" -c "SELECT bool_and(id::text::sno = id AND sno(id::bytea) = id AND id::text = upper(id::text)::sno::text)
                                      AND count(*) FILTER (WHERE id > (SELECT min(id) FROM orders)) = count(*) - 1 FROM orders")" t
    if node_psql_db dst "$db" -c "CREATE EXTENSION amcheck" -c "SELECT bt_index_parent_check('orders_pkey', true)" \
        -c "SELECT bt_index_parent_check('legacy_pkey', true)" -c "SELECT bt_index_parent_check('service_events_pkey', true)" >/dev/null; then
        echo "ok: dst/$db: amcheck finds the restored btree indexes sound"
    else
        bad "dst/$db: amcheck"
    fi
    # A lookup through each index alone (the others dropped in a transaction rolled back).
    one="$(node_psql_db dst "$db" -c "SELECT id FROM orders ORDER BY id OFFSET 1500 LIMIT 1")"
    for idx in orders_pkey orders_id_hash orders_id_brin; do
        drops="SET enable_seqscan = off;"
        [[ "$idx" == orders_pkey ]] || drops+=" ALTER TABLE orders DROP CONSTRAINT orders_pkey CASCADE;"
        for other in orders_id_hash orders_id_brin; do [[ "$other" == "$idx" ]] || drops+=" DROP INDEX $other;"; done
        plan="$(node_psql_db dst "$db" -c "BEGIN" -c "$drops" -c "EXPLAIN (COSTS OFF) SELECT * FROM orders WHERE id = '$one'" \
            -c "SELECT count(*) FROM orders WHERE id = '$one'" -c "ROLLBACK")"
        check "dst/$db: a lookup through $idx alone finds the row" "$(grep -c "$idx" <<<"$plan")|$(tail -n 1 <<<"$plan")" "1|1"
    done
done

part "dst: what is refused without preload"
expect_refused() { # DESCRIPTION USER SQL MESSAGE
    try dst app "$2" "$3"
    check "dst: $1: 55000" "$STATE" 55000
    check "dst: $1: its message" "$(msg_field ERROR "$SAID")" "$4"
    check "dst: $1: its HINT" "$(msg_field HINT "$SAID")" "$PRELOAD_HINT"
}
SRC_LEASE="$(node_psql_db src app -c "SELECT lease FROM sno_leases WHERE holder = 'svc-1'")"
expect_refused "sno_generate" app "SELECT sno_generate(1)" "$NOT_PRELOADED"
expect_refused "an INSERT using DEFAULT sno_generate(1)" app "INSERT INTO orders (customer) VALUES (1)" "$NOT_PRELOADED"
expect_refused "sno_generate_at" app "SELECT sno_generate_at(2, now())" "$NOT_PRELOADED"
expect_refused "sno_reserved_relearn" postgres "SELECT sno_reserved_relearn()" "$NOT_PRELOADED"
expect_refused "the view sno_generator_lineage" postgres "SELECT * FROM sno_generator_lineage" "$NOT_PRELOADED"
expect_refused "the view sno_generator_backends" postgres "SELECT * FROM sno_generator_backends" "$NOT_PRELOADED"
expect_refused "sno_lease_acquire" svc "SELECT * FROM sno_lease_acquire('svc-3', '2 s')" "$LEASE_NOT_PRELOADED"
expect_refused "sno_lease_renew" svc "SELECT * FROM sno_lease_renew($SRC_LEASE, gen_random_uuid(), '2 s')" "$LEASE_NOT_PRELOADED"
expect_refused "sno_lease_release" svc "SELECT sno_lease_release($SRC_LEASE, gen_random_uuid())" "$LEASE_NOT_PRELOADED"
expect_refused "sno_lease_take_over" postgres "SELECT sno_lease_take_over()" "$LEASE_NOT_PRELOADED"
check "dst: sno_generator_initialize() does nothing: false" \
    "$(node_psql_db dst app -c "SELECT sno_generator_initialize()")" f
check "dst: no state file" "$([[ -e "$(node_state_file dst)" ]] && echo yes || echo no)" no

part "dst: the HINT followed literally, then the page's steps"
try dst app app "SELECT sno_generate(1)"
hint="$(msg_field HINT "$SAID")"
line="$(sed -n "s/^Add sno to shared_preload_libraries in postgresql.conf (\(shared_preload_libraries = '[a-z,]*'\)) and restart the server.$/\1/p" <<<"$hint")"
[[ -n "$line" ]] || die "no setting in the HINT: $hint"
echo "    dst: appending to postgresql.conf: $line (and sno.partition = 2, Running many servers' rule)"
node_conf dst "$line" "sno.partition = 2" "sno.lease_max_ttl = '2s'"
node_restart dst || die "dst did not restart"
# What the page's order avoids: sno_reserved_relearn() before the state file exists, and
# sno_generator_initialize() without take_over where sno.partition was set at that first start.
relearned="$(node_psql_db dst app -c "SELECT sno_reserved_relearn()" 2>/dev/null || echo refused)"
recorded="$(node_psql_db dst app -c "SELECT granted FROM sno_reserved")"
if [[ "$relearned" == refused || ("$recorded" == "$relearned" && "$recorded" == 2) ]]; then
    echo "ok: dst: sno_reserved_relearn() before the state file exists refuses ($relearned) or records the dump's grant ($recorded)"
else
    bad "dst: sno_reserved_relearn() before the state file exists returned $relearned but recorded nothing (sno_reserved.granted = $recorded)"
fi
try dst app postgres "SELECT sno_generator_initialize()"
check "dst: sno_generator_initialize() without take_over refuses the partition configured at the first start" \
    "$STATE|$(msg_field ERROR "$SAID")" "55000|cannot initialize the sno generator with partition 2: it was in force when the state file was lost"
run_cmds dst "$AFTER_CMDS" || { echo "$CMDS_OUT"; die "dst: the page's steps after the preload failed"; }
check "dst: the page's steps: sno_reserved_relearn in app and app_plain, 2 grants each (the backfill's, the lease pool's), sno_generator_initialize true" \
    "$(grep -cxE ' *t' <<<"$CMDS_OUT")|$(grep -cxE ' *2' <<<"$CMDS_OUT")" "1|2"
check "dst: ready, partition 2" "$(node_psql_db dst app -c "SELECT status || '|' || partition FROM sno_generator")" "ready|2"

gen_orders dst app orders 2000
check "dst: sno_generate works: partition 2" "$(partitions_of dst orders)" 2
node_sql dst "CREATE DATABASE other" >/dev/null
node_psql_db dst other -c "CREATE EXTENSION sno" -c "GRANT EXECUTE ON FUNCTION sno_generate_at(int, timestamptz) TO app" >/dev/null
node_psql_db dst app_plain -c "GRANT EXECUTE ON FUNCTION sno_generate_at(int, timestamptz) TO app" >/dev/null
gen_at dst other at_other
gen_at dst app at_app
gen_at dst app_plain at_app_plain
p_other="$(partitions_of dst at_other)"
# shellcheck disable=SC2086 # a list
check_distinct "dst: a database created after the restore: sno_generate_at's partition is none of the dump's grants" \
    "$p_other" $SRC_GRANTS
# shellcheck disable=SC2086 # a list
check_distinct "dst: the restored database's own sno_generate_at" "$(partitions_of dst at_app)" $SRC_GRANTS "$p_other"
# shellcheck disable=SC2086 # a list
check_distinct "dst: the plain restore's sno_generate_at" "$(partitions_of dst at_app_plain)" $SRC_GRANTS "$p_other" \
    "$(partitions_of dst at_app)"

try dst app svc "SELECT * FROM sno_lease_acquire('svc-3', '2 s')"
check "dst: a lease in the restored database: 55000" "$STATE" 55000
check "dst: its message" "$(msg_field ERROR "$SAID")" "this database's sno lease pool was restored from another server"
hint="$(msg_field HINT "$SAID")"
stmt="$(grep -oE 'SELECT sno_lease_take_over\(\);' <<<"$hint" || true)"
wait_s="$(sed -n 's/.*sno.lease_max_ttl after its last grant: \([0-9]*\) s.*/\1/p' <<<"$hint")"
check "dst: its HINT names sno_lease_take_over() and the wait (sno.lease_max_ttl, 2 s)" "$stmt|$wait_s" "SELECT sno_lease_take_over();|2"
# Following it: the source will never grant leases again (stopped for good, after its last IDs),
# and its leases have ended: sno.lease_max_ttl after its last grant, which was before the stop.
gen_orders src app before_stop 1000
node_stop src
stopped=$SECONDS
while ((SECONDS - stopped <= wait_s)); do sleep 0.2; done
node_psql_db dst app -c "$stmt" >/dev/null
gen_lease dst app lease svc-3
# shellcheck disable=SC2086 # a list
check_distinct "dst: after sno_lease_take_over(): a lease, on a partition the source's pool did not use" \
    "$(partitions_of dst lease)" $SRC_POOL

# --- pre: preloaded before the restore (the control) ------------------------------------------

part "pre: sno preloaded before the restore (the page's first advice)"
new_target pre preload
restore_target pre
node_sql pre "CREATE DATABASE other" >/dev/null
node_psql_db pre other -c "CREATE EXTENSION sno" -c "GRANT EXECUTE ON FUNCTION sno_generate_at(int, timestamptz) TO app" >/dev/null
gen_at pre other at_other
# shellcheck disable=SC2086 # a list
check_distinct "pre: a database created after the restore: sno_generate_at's partition is none of the dump's grants" \
    "$(partitions_of pre at_other)" $SRC_GRANTS

# --- nop: only the HINT followed ----------------------------------------------------------------

part "nop: restored without preload, then only the HINT followed (no page steps)"
new_target nop
restore_target nop
try nop app app "SELECT sno_generate(1)"
line="$(sed -n "s/^Add sno to shared_preload_libraries in postgresql.conf (\(shared_preload_libraries = '[a-z,]*'\)) and restart the server.$/\1/p" <<<"$(msg_field HINT "$SAID")")"
[[ -n "$line" ]] || die "nop: no setting in the HINT"
node_conf nop "$line"
node_restart nop || die "nop did not restart"
node_sql nop "CREATE DATABASE other" >/dev/null
node_psql_db nop other -c "CREATE EXTENSION sno" -c "GRANT EXECUTE ON FUNCTION sno_generate_at(int, timestamptz) TO app" >/dev/null
try nop other app "SELECT sno_generate_at(2, timestamptz '2021-01-01 00:00:00+00')"
check "nop: sno_generate_at in a database created after the restore: refused (55000)" "$STATE" 55000
check "nop: its message" "$(msg_field ERROR "$SAID")" \
    "this server grants no reserved sno partition until the grants a restore loaded are read back"
hint="$(msg_field HINT "$SAID")"
echo "    nop: HINT: $hint"
relearn="$(grep -oE 'SELECT sno_reserved_relearn\(\);' <<<"$hint" || true)"
init="$(grep -oE 'SELECT sno_generator_initialize\(take_over => true\);' <<<"$hint" || true)"
check "nop: its HINT: relearn in every database that has sno, then initialize with take_over in one" \
    "$relearn|$init|$(grep -c 'in every database of this server that has sno, then, in one of them, ' <<<"$hint")" \
    "SELECT sno_reserved_relearn();|SELECT sno_generator_initialize(take_over => true);|1"
# A standby taken now copies the record of the restore (a base backup copies the data
# directory); the read-back below reaches it by WAL, so once promoted and restarted it grants.
node_basebackup nop nopsb standby
node_start nopsb || die "nopsb did not start"
check "nopsb: the base backup copied the record of the restore" \
    "$([[ -e "$(node_data nopsb)/sno_generator.unrecorded" ]] && echo copied)" copied
# Followed as printed, as a superuser: every database of this server that has sno, then in one.
one=""
for db in $(node_psql nop -c "SELECT datname FROM pg_database WHERE datallowconn"); do
    if [[ "$(node_psql_db nop "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'sno'")" == 1 ]]; then
        node_psql_db nop "$db" -c "$relearn" >/dev/null
        one="$db"
    fi
done
check "nop: then $init (in $one)" "$(node_psql_db nop "$one" -c "$init")" t
gen_at nop other at_other
p_nop="$(partitions_of nop at_other)"
# shellcheck disable=SC2086 # a list
check_distinct "nop: a database created after the restore: sno_generate_at's partition is none of the dump's grants" \
    "$p_nop" $SRC_GRANTS
node_restart nop || die "nop did not restart"
gen_at nop other at_other_restarted
check "nop: after a restart, still granted (the record is gone)" "$(partitions_of nop at_other_restarted | wc -w)" 1
node_wait_catchup nopsb nop || bad "nopsb did not replay nop's WAL"
check "nopsb: the read-back's WAL record removed its copy of the record" \
    "$([[ -e "$(node_data nopsb)/sno_generator.unrecorded" ]] && echo kept || echo removed)" removed
# The standby replaces nop (stopped first: never two primaries), then restarts.
node_stop nop fast
node_promote nopsb
node_restart nopsb || die "nopsb did not restart"
gen_at nopsb other at_promoted_restarted
check "nopsb: promoted and restarted, it grants (no refusal from the copied record)" \
    "$(partitions_of nopsb at_promoted_restarted | wc -w)" 1
ledger_load
n_dup="$(ledger_sql "SELECT count(*) FROM (SELECT id FROM ledger WHERE node = 'nop' INTERSECT SELECT id FROM ledger WHERE node = 'src') x")"
check "nop: no ID repeats one of the source's" "$n_dup" 0
check "nopsb: no ID repeats one of the source's or nop's" \
    "$(ledger_sql "SELECT count(*) FROM (SELECT id FROM ledger WHERE node = 'nopsb' INTERSECT SELECT id FROM ledger WHERE node IN ('src', 'nop')) x")" 0

# --- every ID ---------------------------------------------------------------------------------

ledger_check "the source and dst (the page's way)" "node IN ('src', 'dst')"
ledger_check "the source and pre (preloaded before the restore)" "node IN ('src', 'pre')"
ledger_summary
exit "$fail"
