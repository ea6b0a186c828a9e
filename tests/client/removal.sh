#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=40
# Removing sno from a primary with streaming standbys and a WAL archive, following the manual's
# Operations page ("How do I remove sno?") as printed: its commands are read from the page and
# run. The primary preloads pg_stat_statements and sno (postgresql.conf), archives its WAL, and
# uses sno in two databases (sno_generate keys with btree, hash and BRIN indexes, a backfill with
# sno_generate_at, a lease); a third database has no sno. Two standbys stream from it; a base
# backup is taken, then more IDs and a grant. The wrong order first: standby s2 restarted without
# sno stops at sno's WAL with PostgreSQL's FATAL and HINT; following the HINT (sno back) it
# catches up. Step 1 (every sno column to text, DROP EXTENSION in every database; DROP EXTENSION
# alone is refused with 2BP01): the rows keep their IDs, as text, in the same order. Once the
# idle lease is written, the worker writes no sno WAL record while idle, but a restart with sno
# still preloaded writes one (pg_waldump). Step 2 on the primary (sno out of
# shared_preload_libraries, a fast restart, the LSN it prints): no sno record after that LSN,
# through writes, an immediate stop (crash recovery from that LSN, without sno) and a fast
# restart. Step 3 on each standby with that LSN: both restart without sno, replay to the
# primary's end, survive an immediate stop. Step 4: the base backup from before step 2, restored
# as it is (its own configuration preloads sno) with the archive, replays to the end of the
# archive and, after step 2 on it, runs without sno; the same backup with sno taken out of its
# configuration stops with the FATAL and HINT, and goes on to the end once the HINT is followed;
# a base backup taken after step 2 restores to the end without sno.
#
# The page is doc/operations.md, or the file SNO_OPS_DOC names.
#
# Usage: removal.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own servers)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOC="${SNO_OPS_DOC:-$ROOT/doc/operations.md}"
harness_setup removal "$3" $(($2 + 501)) $(($2 + 599))
mkdir "$CL_WORK/backups"
chown postgres: "$CL_WORK/backups"
T0=$SECONDS
part() { echo "--- $* ($((SECONDS - T0)) s)"; }

RMGR_ERROR="resource manager with ID 213 not registered"
# PostgreSQL 17 and later quote setting names in messages.
if ((CL_MAJOR >= 17)); then
    RMGR_HINT='Include the extension module that implements this resource manager in "shared_preload_libraries".'
else
    RMGR_HINT="Include the extension module that implements this resource manager in shared_preload_libraries."
fi
WITH_SNO="pg_stat_statements,sno"
WITHOUT_SNO="pg_stat_statements"

# --- the manual's commands ------------------------------------------------------------------

[[ -f "$DOC" ]] || die "no $DOC (the Operations page; SNO_OPS_DOC names another file)"
# doc_block MARKER: the first fenced block after the line MARKER.
doc_block() {
    awk -v m="$1" '$0 == m { f = 1; next } f && !b && /^```/ { b = 1; next } b && /^```$/ { exit } b' "$DOC"
}
DROP_CMDS="$(doc_block "<!-- removal:drop -->")"
PRIMARY_CMDS="$(doc_block "<!-- removal:primary -->")"
STANDBY_CMDS="$(doc_block "<!-- removal:standby -->")"
[[ -n "$DROP_CMDS" && -n "$PRIMARY_CMDS" && -n "$STANDBY_CMDS" ]] || die "the removal blocks were not found in $DOC"
grep -q '^LSN=[0-9A-F]*/[0-9A-F]* ' <<<"$STANDBY_CMDS" || die "the page's standby block sets no LSN= first"

# run_cmds NODE COMMANDS: the commands, as printed, in bash -e as the postgres OS user, with the
# node's binaries first in PATH and libpq's variables and PGDATA naming the node (a DBA's shell
# on that server). One thing is added: pg_ctl start and restart get -l with the node's log file
# (where its server log goes; a DBA's service manager has its own). Output in $CMDS_OUT.
CMDS_OUT=""
run_cmds() {
    local rc=0
    # shellcheck disable=SC2016 # expanded by the inner bash
    local prelude='pg_ctl() { case "$1" in start | restart) command pg_ctl "$@" -l "$NODE_LOG" ;; *) command pg_ctl "$@" ;; esac; }'
    CMDS_OUT="$(as_pg env PATH="${CL_BIN[$1]}:$PATH" PGHOST="$CL_WORK" PGPORT="${CL_PORT[$1]}" PGUSER=postgres \
        PGDATA="$(node_data "$1")" NODE_LOG="$(node_log "$1")" bash -euo pipefail -c "cd /; $prelude
$2" 2>&1)" || rc=$?
    return "$rc"
}

# --- helpers ----------------------------------------------------------------------------------

lsn() { node_sql "$1" "SELECT pg_current_wal_insert_lsn()"; }
# sno_records NODE FROM: how many WAL records of resource manager 213 NODE's pg_wal holds from
# FROM to its insert position (on its current WAL timeline), as pg_waldump shows them. A logical
# message is written first and (transactional: its commit flushes it) must be read, so that a
# pg_waldump that read nothing cannot pass for none.
sno_records() {
    local to tli out
    to="$(node_sql "$1" "SELECT pg_logical_emit_message(true, 'removal.sh', 'end')")"
    tli="$(node_sql "$1" "SELECT ('x' || substr(pg_walfile_name('$to'), 1, 8))::bit(32)::int")"
    out="$("${CL_BIN[$1]}/pg_waldump" -p "$(node_data "$1")/pg_wal" -t "$tli" -s "$2" -e "$to" 2>&1 || true)"
    grep -q "^rmgr: LogicalMessage .*prefix \"removal.sh\"" <<<"$out" ||
        { bad "pg_waldump of $1 from $2 to $to read nothing: $(tail -n 2 <<<"$out")"; echo 0; return 0; }
    grep -c '^rmgr: custom213 ' <<<"$out" || true
}
preloads() { node_sql "$1" "SHOW shared_preload_libraries"; }
# start_may_fail NAME: pg_ctl start of a node that may stop by itself at once (no FAIL if it does).
start_may_fail() {
    as_pg "${CL_BIN[$1]}/pg_ctl" -D "$(node_data "$1")" -l "$(node_log "$1")" -w -t 60 \
        -o "-p ${CL_PORT[$1]} -k $CL_WORK -c listen_addresses=''" start >/dev/null 2>&1 || true
}
# expect_rmgr_stop NAME MARK WHAT: NAME went down, its log since MARK has the FATAL and the HINT.
expect_rmgr_stop() {
    local log hint
    if node_wait_down "$1" 60; then
        echo "ok: $3: $1 is down"
    else
        bad "$3: $1 still runs"
        node_stop "$1" immediate || true
    fi
    log="$(node_log_since "$1" "$2")"
    check "$3: its log says FATAL:  $RMGR_ERROR" "$(grep -c "FATAL:  $RMGR_ERROR" <<<"$log")" 1
    hint="$(msg_field HINT "$(grep -A 3 "FATAL:  $RMGR_ERROR" <<<"$log")")"
    check "$3: PostgreSQL's HINT" "$hint" "$RMGR_HINT"
}
# orders NODE DB N: N orders by sno_generate (the key's default).
orders() { node_psql_db "$1" "$2" -c "INSERT INTO orders (customer) SELECT g FROM generate_series(1, $3) g" >/dev/null; }
# recovery_from_archive NAME: a restored backup set to recover from the primary's archive to its
# end (no target), without archiving itself.
recovery_from_archive() {
    as_pg touch "$(node_data "$1")/recovery.signal"
    node_auto_conf "$1" restore_command "cp $(node_archive p)/%f %p"
    node_auto_conf "$1" archive_mode off
    node_clock_mode "$1" none
}
DIGEST="SELECT md5(string_agg(id::text, ',' ORDER BY id)) || '|' || count(*) FROM orders"

# --- the primary, its standbys, a backup --------------------------------------------------------

part "a primary preloading $WITH_SNO, archiving; sno in two databases; two standbys"
node_init p archive
node_clock_mode p none
node_conf p "shared_preload_libraries = '$WITH_SNO'"
node_start p || die "p did not start"
node_sql p "CREATE ROLE app LOGIN" "CREATE ROLE svc LOGIN" "CREATE DATABASE app OWNER app" "CREATE DATABASE plain" >/dev/null
node_psql_db p plain -c "CREATE TABLE notes (n int)" -c "INSERT INTO notes VALUES (1)" >/dev/null
for db in postgres app; do
    node_psql_db p "$db" >/dev/null <<'SQL'
CREATE EXTENSION sno;
CREATE TABLE orders (id sno PRIMARY KEY DEFAULT sno_generate(1), customer int);
CREATE INDEX orders_id_hash ON orders USING hash (id);
CREATE INDEX orders_id_brin ON orders USING brin (id);
CREATE TABLE legacy (id sno PRIMARY KEY, created_at timestamptz NOT NULL);
INSERT INTO legacy SELECT sno_generate_at(2, t), t
FROM generate_series('2021-01-01 00:00:00+00'::timestamptz, '2021-01-01 00:00:01+00', '1 ms') t;
GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4) TO svc;
SQL
    orders p "$db" 2000
done
qu p app svc -c "SELECT partition FROM sno_lease_acquire('svc-1', '10 s')" >/dev/null
node_basebackup p s standby
node_clock_mode s none
node_start s || die "s did not start"
node_basebackup p s2 standby
node_clock_mode s2 none
node_start s2 || die "s2 did not start"
node_backup p pre
echo "    base backup 'pre' taken; more IDs after it, and a grant (a WAL record of sno's, surely after it)"
node_psql_db p app -c "SELECT sno_generate_at(2, now())" >/dev/null
orders p app 2000
orders p postgres 2000
node_wait_catchup s p
node_wait_catchup s2 p
check "p: the standbys and the backup preload sno (copied postgresql.conf)" \
    "$(preloads p)|$(preloads s)|$(preloads s2)|$(grep -c "^shared_preload_libraries = '$WITH_SNO'" "$CL_WORK/backups/pre/postgresql.conf")" \
    "$WITH_SNO|$WITH_SNO|$WITH_SNO|1"

part "the wrong order: standby s2 restarted without sno before the primary's step 2"
node_sql s2 "ALTER SYSTEM SET shared_preload_libraries = '$WITHOUT_SNO'" >/dev/null
mark="$(node_log_mark s2)"
node_stop s2
# A grant's record after s2's last restartpoint (its stop's): s2 replays from there.
node_psql_db p app -c "SELECT sno_generate_at(2, now())" >/dev/null
start_may_fail s2
orders p app 500
expect_rmgr_stop s2 "$mark" "s2 restarted without sno"
echo "    s2: following the HINT: sno back into shared_preload_libraries ($WITH_SNO), started again"
node_auto_conf s2 shared_preload_libraries "$WITH_SNO"
node_start s2 || die "s2 did not start with sno back"
node_wait_catchup s2 p

# --- step 1 -----------------------------------------------------------------------------------

part "step 1 on the primary: every sno column to text, DROP EXTENSION in every database"
try p app postgres "DROP EXTENSION sno"
check "DROP EXTENSION sno alone, with sno columns in use: refused" "$STATE" 2BP01
declare -A before
for db in postgres app; do before[$db]="$(node_psql_db p "$db" -c "$DIGEST")"; done
orders p app 100
# The worker's idle lease, written once after the last IDs: waited for, so that it is not taken
# for a record written after DROP EXTENSION (the lease covers the last ID by sno.idle_horizon
# less the 2 s horizon, and is written once).
for _ in $(seq 100); do
    [[ "$(node_sql p "SELECT horizon >= high_water + current_setting('sno.idle_horizon')::interval - interval '2 s' FROM sno_generator")" == t ]] && break
    sleep 0.1
done
check "p: the idle lease covers the last ID" \
    "$(node_sql p "SELECT horizon >= high_water + current_setting('sno.idle_horizon')::interval - interval '2 s' FROM sno_generator")" t
run_cmds p "$DROP_CMDS" || { echo "$CMDS_OUT"; die "the page's step 1 failed"; }
for db in postgres app plain template1; do
    check "p/$db: no sno extension left" "$(node_psql_db p "$db" -c "SELECT count(*) FROM pg_extension WHERE extname = 'sno'")" 0
done
# The digest before step 1 was taken before the last 100 orders of app: compare what both have.
for db in postgres app; do
    n_before="${before[$db]#*|}"
    check "p/$db: the IDs before step 1 read back as text in the same order" \
        "$(node_psql_db p "$db" -c "SELECT md5(string_agg(id, ',' ORDER BY id)) FROM (SELECT id FROM orders ORDER BY id LIMIT $n_before) x")|$n_before" \
        "${before[$db]}"
    check "p/$db: orders.id is text COLLATE \"C\" without a default; its three indexes rebuilt" \
        "$(node_psql_db p "$db" -c "SELECT format_type(atttypid, atttypmod) || ':' || c.collname || ':' || atthasdef FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation WHERE attrelid = 'orders'::regclass AND attname = 'id'")|$(node_psql_db p "$db" -c "SELECT count(*) FROM pg_index WHERE indrelid = 'orders'::regclass AND indisvalid")" \
        "text:C:false|3"
done
l1="$(lsn p)"
sleep 3
check "p: after DROP EXTENSION everywhere, 3 s idle: no sno WAL record" "$(sno_records p "$l1")" 0
echo "    p: restarted with sno still preloaded (not a step of the page)"
node_restart p || die "p did not restart"
for _ in $(seq 50); do (($(sno_records p "$l1") > 0)) && break; sleep 0.1; done
n="$(sno_records p "$l1")"
check "p: a restart with sno still preloaded writes sno WAL records after DROP EXTENSION (the worker's idle lease)" \
    "$((n > 0))" 1
echo "    p: $n sno record(s) written since the restart"

# --- step 2 -----------------------------------------------------------------------------------

part "step 2 on the primary: sno out of shared_preload_libraries, a fast restart"
run_cmds p "$PRIMARY_CMDS" || { echo "$CMDS_OUT"; die "the page's step 2 failed"; }
LSN="$(tail -n 1 <<<"$CMDS_OUT")"
[[ "$LSN" =~ ^[0-9A-F]+/[0-9A-F]+$ ]] || { echo "$CMDS_OUT"; die "step 2 printed no LSN last"; }
echo "    p: step 2 printed $LSN"
check "p: preloads $WITHOUT_SNO only, and pg_stat_statements works" \
    "$(preloads p)|$(node_sql p "CREATE EXTENSION pg_stat_statements" "SELECT count(*) > 0 FROM pg_stat_statements")" "$WITHOUT_SNO|t"
check "p: every sno WAL record is before $LSN" "$(sno_records p "$LSN")" 0
orders_text() { node_psql_db p app -c "INSERT INTO orders (id, customer) SELECT md5(random()::text), g FROM generate_series(1, $1) g" >/dev/null; }
orders_text 1000
check "p: its last checkpoint is still the one step 2 printed (crash recovery starts there)" \
    "$(node_sql p "SELECT redo_lsn FROM pg_control_checkpoint()")" "$LSN"
node_stop p immediate
node_start p || die "p did not start after an immediate stop (crash recovery without sno)"
echo "ok: p: crash recovery without sno, from $LSN"
orders_text 1000
node_restart p || die "p did not restart"
orders_text 1000
check "p: still no sno WAL record after $LSN (writes, an immediate and a fast restart)" "$(sno_records p "$LSN")" 0

# --- step 3 -----------------------------------------------------------------------------------

for st in s s2; do
    part "step 3 on standby $st, with $LSN"
    # The LSN step 2 printed, where the page has its example.
    # shellcheck disable=SC2001 # a line's start
    run_cmds "$st" "$(sed "s|^LSN=[^ ]*|LSN=$LSN|" <<<"$STANDBY_CMDS")" ||
        { echo "$CMDS_OUT"; die "the page's step 3 failed on $st"; }
    check "$st: preloads $WITHOUT_SNO only, in recovery" "$(preloads "$st")|$(node_sql "$st" "SELECT pg_is_in_recovery()")" "$WITHOUT_SNO|t"
done
orders_text 1000
for st in s s2; do
    node_wait_catchup "$st" p
    node_stop "$st" immediate
    node_start "$st" || die "$st did not start after an immediate stop"
done
orders_text 1000
node_psql_db p app -c "CREATE TABLE marker AS SELECT 'end of the archive'::text AS m" >/dev/null
for st in s s2; do
    node_wait_catchup "$st" p
    check "$st: replayed to the primary's end, after an immediate stop without sno" \
        "$(node_psql_db "$st" app -c "SELECT count(*) FROM orders")|$(node_psql_db "$st" app -c "SELECT m FROM marker")" \
        "$(node_psql_db p app -c "SELECT count(*) FROM orders")|end of the archive"
done

# --- step 4: backups ------------------------------------------------------------------------------

part "step 4: base backups and the archive"
node_backup p post
node_psql_db p app -c "INSERT INTO marker VALUES ('after the last backup')" >/dev/null
node_switch_wal p
want="$(node_psql_db p app -c "SELECT count(*) FROM orders")|$(node_psql_db p app -c "SELECT string_agg(m, ',' ORDER BY m) FROM marker")"

echo "    r1: the backup from before step 2, as it is (its configuration preloads sno)"
node_restore pre r1
recovery_from_archive r1
node_start r1 || die "r1 did not start"
node_wait_primary r1 || die "r1 did not end recovery"
check "r1: replayed to the end of the archive, promoted" \
    "$(node_psql_db r1 app -c "SELECT count(*) FROM orders")|$(node_psql_db r1 app -c "SELECT string_agg(m, ',' ORDER BY m) FROM marker")" "$want"
check "r1: sno preloaded during the restore; no database has the extension" \
    "$(preloads r1)|$(node_psql_db r1 app -c "SELECT count(*) FROM pg_extension WHERE extname = 'sno'")" "$WITH_SNO|0"
# Promoted with sno preloaded, it writes sno records on its new timeline, from the switch point
# its history file names: so step 2 on it.
switch="$(awk 'NF { l = $2 } END { print l }' "$(node_data r1)"/pg_wal/00000002.history)"
for _ in $(seq 50); do (($(sno_records r1 "$switch") > 0)) && break; sleep 0.1; done
check "r1: promoted with sno preloaded: its worker writes sno WAL records on the new timeline" \
    "$(($(sno_records r1 "$switch") > 0))" 1
run_cmds r1 "$PRIMARY_CMDS" || { echo "$CMDS_OUT"; die "step 2 failed on r1"; }
r1_lsn="$(tail -n 1 <<<"$CMDS_OUT")"
node_psql_db r1 app -c "INSERT INTO marker VALUES ('r1')" >/dev/null
check "r1: after step 2 on it, no sno record after $r1_lsn" "$(sno_records r1 "$r1_lsn")" 0
node_stop r1 immediate
node_start r1 || die "r1 did not start after an immediate stop"
check "r1: after step 2 on it: runs without sno, crash recovery included" "$(preloads r1)" "$WITHOUT_SNO"

echo "    r2: the same backup with sno taken out of its configuration (installed, not preloaded)"
node_restore pre r2
recovery_from_archive r2
node_auto_conf r2 shared_preload_libraries "$WITHOUT_SNO"
mark="$(node_log_mark r2)"
start_may_fail r2
expect_rmgr_stop r2 "$mark" "r2, the backup from before step 2 restored without sno preloaded"
echo "    r2: following the HINT: sno back into shared_preload_libraries, started again"
node_auto_conf r2 shared_preload_libraries "$WITH_SNO"
node_start r2 || die "r2 did not start with sno back"
node_wait_primary r2 || die "r2 did not end recovery"
check "r2: with the HINT followed, replayed to the end of the archive" \
    "$(node_psql_db r2 app -c "SELECT count(*) FROM orders")|$(node_psql_db r2 app -c "SELECT string_agg(m, ',' ORDER BY m) FROM marker")" "$want"

echo "    r3: the backup taken after step 2, as it is"
node_restore post r3
recovery_from_archive r3
node_start r3 || die "r3 did not start"
node_wait_primary r3 || die "r3 did not end recovery"
check "r3: without sno, replayed to the end of the archive" \
    "$(preloads r3)|$(node_psql_db r3 app -c "SELECT count(*) FROM orders")|$(node_psql_db r3 app -c "SELECT string_agg(m, ',' ORDER BY m) FROM marker")" \
    "$WITHOUT_SNO|$want"
echo "    $((SECONDS - T0)) s"
exit "$fail"
