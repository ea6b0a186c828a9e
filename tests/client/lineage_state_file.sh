#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=120
# A lost or corrupt generator state file, each HINT followed literally, with the clock set back
# while the server was down (libfaketime). Three servers:
#  r1  sno.partition = 7. 3,000 IDs; stop; the state file moved away; restart with the clock
#      7 s back: sno_generate refuses ("sno generator has no state file") with the documented
#      HINT. Its first branch, while the server runs: the file put back, then the SQL the HINT
#      names (it returns true); 3,000 more IDs. Then a byte of the file flipped: refusal
#      ("cannot use the sno generator state file"); its HINT has one branch: a partition no
#      server has used, ALTER SYSTEM, reload, the SQL it names.
#  r2  sno.partition = 8. The file gone for good (the missing-file HINT's second branch), then
#      corrupt (the corrupt-file HINT): each time a partition no server has used, ALTER SYSTEM,
#      pg_reload_conf(), the SQL the HINT names, with the clock 7 s and then 14 s back.
#  r3  a derived partition (no sno.partition): a missing, then a corrupt file needs no step:
#      generation goes on with a new derived partition, said in the server log.
#  r4  sno.partition = 12, a corrupt file, and a copy of it in a file-level backup taken before
#      the server's last 12 s of IDs (pgbench); restart with the clock 7 s back. The HINT says
#      such a copy is not enough (putting it back would repeat those 12 s of IDs): it is left
#      alone and the HINT followed; pgbench again.
#  r5  sno.partition = 14, the file gone for good, and the HINT's first step skipped:
#      sno_generator_initialize() refuses while sno.partition is still 14 (the partition in
#      force when the file was lost), also after a restart, with a HINT; followed literally, it
#      succeeds.
#  r6  sno.partition = 15, the file gone for good, the HINT's partition set and the server
#      restarted instead of reloaded: sno_generator_initialize() takes the new partition.
# Each "give this server a sno.partition" takes the first of the HINT's own list (61439,
# 57343, ...) that no server has used. Every ID of the servers goes to the ledger: zero
# duplicates; none refused wrongly.
#
# Usage: lineage_state_file.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_state_file "$2" "$3"

NEW_ONE="a sno.partition no server has used, below 61440 (sno reserves 61440-65535), for example the first of 61439, 57343, 53247, ... (4095 + 4096 * k, k from 14 down to 0) that no server has used"
HINT_MISSING="If the file was moved away, put it back (after pg_upgrade: copy the one in the old data directory) and run SELECT sno_generator_initialize(); as a superuser; a copy from an older backup is not enough. Otherwise first give this server $NEW_ONE, and reload the configuration, then run SELECT sno_generator_initialize();."
HINT_CORRUPT="Give this server $NEW_ONE, and reload the configuration, then run SELECT sno_generator_initialize(force => true); as a superuser. A copy of the file from a backup is not enough: IDs made after it could repeat."

# new_server NAME [PARTITION]: sno preloaded (command line), the extension, the ids table, and
# the partition set with ALTER SYSTEM (so that the HINT's "give this server a sno.partition ...
# and reload" can be followed: a -c setting would override it).
new_server() {
    node_init "$1"
    node_cmdline "$1" shared_preload_libraries=sno
    node_start "$1"
    node_sql "$1" "CREATE EXTENSION sno"
    node_ids_table "$1"
    if [[ -n "${2:-}" ]]; then
        node_alter "$1" sno.partition "$2"
        node_reload "$1" sno.partition "$2"
    fi
}

# run_hint_sql NAME N: runs the N-th SQL statement of CL_HINT on NAME, as it is written there;
# prints what it returned.
run_hint_sql() {
    local sql
    sql="$(hint_sql "$CL_HINT" "$2")"
    [[ -n "$sql" ]] || die "no SQL statement number $2 in the HINT: $CL_HINT"
    echo "    $1: following the HINT: $sql" >&2
    node_sql "$1" "$sql"
}

# new_partition NAME: the HINT's "give this server a sno.partition no server has used, below
# 61440, for example the first of 61439, 57343, ... that no server has used, and reload the
# configuration": the first of the HINT's list that no ledger ID carries and no server was given.
new_partition() {
    local p
    p="$(hint_partition "$CL_HINT")" || die "following the HINT: $CL_HINT"
    echo "    $1: following the HINT: ALTER SYSTEM SET sno.partition = $p; SELECT pg_reload_conf();"
    node_alter "$1" sno.partition "$p"
    node_reload "$1" sno.partition "$p"
    NEW_PARTITION="$p"
}

# --- r1: the file put back (first branch of each HINT) ----------------------------------------
echo "--- r1: sno.partition = 7; the state file put back"
new_server r1 7
node_gen r1 first 3000
node_stop r1
as_pg mv "$(node_state_file r1)" "$(node_dir r1)/state.away"
node_clock r1 -7s
node_start r1
node_expect_refusal r1 "r1, no state file" "sno generator has no state file" "$HINT_MISSING"
as_pg cp -p "$(node_dir r1)/state.away" "$(node_state_file r1)"
check "r1: the first branch's SQL returns true" "$(run_hint_sql r1 1)" t
node_gen r1 put_back 3000
check "r1: the IDs after the restart carry partition 7" \
    "$(node_sql r1 "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin = 'r1:put_back'")" 7
check "r1: the clock was 7 s back (new IDs older than the last ones before)" \
    "$(node_sql r1 "SELECT min(sno_time(id)) FILTER (WHERE origin = 'r1:put_back') < max(sno_time(id)) FILTER (WHERE origin = 'r1:first') FROM ids")" t
ledger_check "r1: 6,000 IDs around a lost state file put back"

node_stop r1
as_pg cp -p "$(node_state_file r1)" "$(node_dir r1)/state.good"
node_corrupt_state r1
mark="$(node_log_mark r1)"
node_start r1
check "r1: a WARNING at start-up for the corrupt file" \
    "$(node_log_since r1 "$mark" | grep -c "WARNING:  sno: cannot use the generator state file")" 1
node_expect_refusal r1 "r1, corrupt state file" "cannot use the sno generator state file" "$HINT_CORRUPT"
new_partition r1
p0="$NEW_PARTITION"
check "r1: the HINT's SQL returns true" "$(run_hint_sql r1 1)" t
node_gen r1 good_copy 3000
node_pgbench r1 good_copy_pgbench 3
check "r1: after the corrupt file, IDs carry the new partition" \
    "$(node_sql r1 "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin LIKE 'r1:good_copy%'")" "$p0"
ledger_check "r1: every ID around a corrupt state file"
node_stop r1

# --- r2: no file, then no good copy (second branch of each HINT) --------------------------------
echo "--- r2: sno.partition = 8; the state file gone for good, then corrupt without a copy"
new_server r2 8
node_gen r2 first 3000
node_stop r2
as_pg rm "$(node_state_file r2)"
node_clock r2 -7s
node_start r2
node_expect_refusal r2 "r2, no state file" "sno generator has no state file" "$HINT_MISSING"
new_partition r2
p1="$NEW_PARTITION"
check "r2: the second branch's SQL returns true" "$(run_hint_sql r2 2)" t
node_gen r2 new_partition 3000
check "r2: new IDs carry the new partition" \
    "$(node_sql r2 "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin = 'r2:new_partition'")" "$p1"

node_stop r2
node_corrupt_state r2
node_clock r2 -14s
node_start r2
node_expect_refusal r2 "r2, corrupt state file" "cannot use the sno generator state file" "$HINT_CORRUPT"
new_partition r2
p2="$NEW_PARTITION"
check "r2: the HINT's SQL returns true" "$(run_hint_sql r2 1)" t
node_gen r2 forced 3000
check "r2: new IDs carry the second new partition" \
    "$(node_sql r2 "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin = 'r2:forced'")" "$p2"
node_stop r2

# --- r3: a derived partition needs no step --------------------------------------------------------
echo "--- r3: derived partition; the state file missing, then corrupt"
new_server r3
node_gen r3 first 3000
d0="$(node_partition r3)"
node_stop r3
as_pg rm "$(node_state_file r3)"
node_clock r3 -7s
mark="$(node_log_mark r3)"
node_start r3
node_gen r3 missing 3000
check "r3, no state file: the server log says a new derived partition is used" \
    "$(node_log_since r3 "$mark" | grep -c "LOG:  sno: the generator state file was missing; IDs are now made with a new derived partition")" 1
check "r3, no state file: nothing of it reached the client" "$(grep -c sno <<<"$CL_SAID")" 0
d1="$(node_partition r3)"
check_distinct "r3: a new derived partition without a state file" "$d1" "$d0"
node_stop r3
node_corrupt_state r3
node_clock r3 -14s
mark="$(node_log_mark r3)"
node_start r3
node_gen r3 corrupt 3000
check "r3, corrupt state file: the server log says a new derived partition is used" \
    "$(node_log_since r3 "$mark" | grep -c "LOG:  sno: the generator state file was unusable (.*); IDs are now made with a new derived partition")" 1
check "r3, corrupt state file: nothing of it reached the client" "$(grep -c sno <<<"$CL_SAID")" 0
d2="$(node_partition r3)"
check_distinct "r3: a new derived partition with a corrupt state file" "$d2" "$d1" "$d0"
node_pgbench r3 corrupt_pgbench 3

# --- r4: the last good copy is a backup older than the last IDs -------------------------------
echo "--- r4: sno.partition = 12; corrupt file, a copy from a backup taken before the last IDs at hand"
new_server r4 12
node_gen r4 first 3000
as_pg cp -p "$(node_state_file r4)" "$(node_dir r4)/state.backup" # a file-level backup of the data directory
node_pgbench r4 after_backup 12
node_stop r4
node_corrupt_state r4
node_clock r4 -7s
node_start r4
node_expect_refusal r4 "r4, corrupt state file" "cannot use the sno generator state file" "$HINT_CORRUPT"
check "r4: the HINT says a backup copy is not enough" "$(grep -c 'A copy of the file from a backup is not enough' <<<"$CL_HINT")" 1
new_partition r4
check "r4: the HINT's SQL returns true" "$(run_hint_sql r4 1)" t
node_pgbench r4 hint_followed 3
ledger_check "r4: every ID around a corrupt state file with an old backup copy at hand" "node = 'r4'"

# --- r5: the HINT's first step skipped: sno_generator_initialize refuses --------------------------
echo "--- r5: sno.partition = 14; the file gone for good, initialize without a new partition"
new_server r5 14
node_gen r5 first 3000
node_stop r5
as_pg rm "$(node_state_file r5)"
node_clock r5 -7s
node_start r5
node_expect_refusal r5 "r5, no state file" "sno generator has no state file" "$HINT_MISSING"
out="$(node_try r5 "SELECT sno_generator_initialize()")"
check "r5: initialize with the partition in force when the file was lost is refused" \
    "$(msg_field ERROR "$out")" "cannot initialize the sno generator with partition 14: it was in force when the state file was lost"
CL_HINT="$(msg_field HINT "$out")"
check "r5: its HINT" "$CL_HINT" "Give this server $NEW_ONE, and reload the configuration, then run this again. Only if no other server makes IDs with the old partition and no ID made with it can ever be repeated (every one of them is older than the clock now and the clock will never be set back), run SELECT sno_generator_initialize(force => true, take_over => true); instead."
check "r5: and sno_generate still refuses" "$(node_try r5 "SELECT sno_generate(1)" | grep -c "sno generator has no state file")" 1
check "r5: the lost partition is recorded in the data directory, with the refusal" \
    "$(cat "$(node_data r5)/sno_generator.lost")" "partition 14
refused"
# sno was in use: CREATE EXTENSION in another database does not start a state file afresh.
out="$(node_try r5 "CREATE DATABASE other")$(node_psql_db r5 other -c "CREATE EXTENSION sno" 2>&1 || true)"
check "r5: CREATE EXTENSION sno in another database is refused like initialize" \
    "$(msg_field ERROR "$out")" "cannot initialize the sno generator with partition 14: it was in force when the state file was lost"
# A restart does not forget it.
node_restart r5
check "r5: after a restart, initialize with partition 14 is still refused" \
    "$(msg_field ERROR "$(node_try r5 "SELECT sno_generator_initialize()")")" \
    "cannot initialize the sno generator with partition 14: it was in force when the state file was lost"
# Followed literally: a new partition, then "this again".
new_partition r5
p5="$NEW_PARTITION"
check "r5: then initialize returns true" "$(node_sql r5 "SELECT sno_generator_initialize()")" t
node_gen r5 after 3000
check "r5: new IDs carry the HINT's partition ($p5)" \
    "$(node_sql r5 "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin = 'r5:after'")" "$p5"
check "r5: the record of the lost file is gone with the new state file" \
    "$([[ -e "$(node_data r5)/sno_generator.lost" ]] && echo present || echo gone)" gone
node_stop r5

# --- r6: the HINT's partition set, then a restart instead of a reload ----------------------------
echo "--- r6: sno.partition = 15; the file gone for good; a new partition, and a restart"
new_server r6 15
node_gen r6 first 3000
node_stop r6
as_pg rm "$(node_state_file r6)"
node_clock r6 -7s
node_start r6
node_expect_refusal r6 "r6, no state file" "sno generator has no state file" "$HINT_MISSING"
p6="$(hint_partition "$CL_HINT")" || die "following the HINT: $CL_HINT"
node_alter r6 sno.partition "$p6"
node_restart r6
check "r6: after a restart with partition $p6, initialize returns true" "$(node_sql r6 "SELECT sno_generator_initialize()")" t
node_gen r6 after 3000
check "r6: new IDs carry partition $p6" \
    "$(node_sql r6 "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin = 'r6:after'")" "$p6"
node_stop r6

ledger_check "all servers: every ID ever issued"
ledger_summary
exit "$fail"
