#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=60
# A streaming standby whose first start does not preload sno, then failover.
#
# The primary preloads sno (command line) and makes IDs; its standby, made by pg_basebackup,
# first starts without sno (the -c setting is not in the data directory). When the primary
# makes IDs, it writes sno's WAL records and the standby's replay stops: PostgreSQL's
# "resource manager with ID 213 not registered", whose HINT (read from the standby's log and
# checked word for word) is followed: the standby restarts with sno preloaded. It catches up,
# is restarted twice more (fast, immediate), refuses to make IDs while in recovery, then:
#   main   sno.partition = 3 (ALTER SYSTEM, so the standby has it too). The primary stops
#          (fast); the standby is promoted with its clock 5 s behind and makes IDs at once
#          (within sno.max_clock_wait): it takes over partition 3.
#   split  derived partitions. The standby is promoted with its clock 5 s behind while the old
#          primary goes on making IDs (split brain), both at once.
# Every ID either server made goes to the ledger: zero duplicates; no wrong refusal.
#
# Usage: lineage_standby_nopreload.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_standby_nopreload "$2" "$3"

RMGR_ERROR="resource manager with ID 213 not registered"
# PostgreSQL 17 and later quote setting names in messages.
if ((CL_MAJOR >= 17)); then
    RMGR_HINT='Include the extension module that implements this resource manager in "shared_preload_libraries".'
else
    RMGR_HINT="Include the extension module that implements this resource manager in shared_preload_libraries."
fi

run() {
    local v="$1" p="${1}_p" s="${1}_s" mark log hint t0 ms
    echo "--- $v"
    node_init "$p"
    # No idle lease: its record, written when the IDs below stop, could come after the base
    # backup starts (the standby without sno could not even start), and it would cover the IDs
    # made later, which must write the records that stop the standby's replay.
    node_cmdline "$p" shared_preload_libraries=sno sno.idle_horizon=0
    node_start "$p"
    node_sql "$p" "CREATE EXTENSION sno"
    node_ids_table "$p"
    if [[ "$v" == main ]]; then
        node_alter "$p" sno.partition 3
        node_reload "$p" sno.partition 3
    fi
    node_gen "$p" before_backup 3000

    node_basebackup "$p" "$s" standby
    node_clock "$s" -5s
    mark="$(node_log_mark "$s")"
    node_start "$s"
    check "$v: the standby without sno is in recovery" "$(node_sql "$s" "SELECT pg_is_in_recovery()")" t

    node_gen "$p" standby_without_sno 3000
    node_pgbench "$p" standby_without_sno_pgbench 2
    if node_wait_down "$s" 30; then
        echo "ok: $v: the standby without sno stopped"
    else
        echo "FAIL: $v: the standby without sno still runs after the primary wrote sno WAL records"
        fail=1
        node_stop "$s" immediate
    fi
    log="$(node_log_since "$s" "$mark")"
    check "$v: the standby's log says: $RMGR_ERROR" "$(grep -c "FATAL:  $RMGR_ERROR" <<<"$log")" 1
    hint="$(msg_field HINT "$(grep -A 3 "FATAL:  $RMGR_ERROR" <<<"$log")")"
    check "$v: PostgreSQL's HINT" "$hint" "$RMGR_HINT"
    # Following it: the module implementing resource manager 213 is sno.
    echo "    $s: following the HINT: shared_preload_libraries=sno"
    node_cmdline "$s" shared_preload_libraries=sno
    node_start "$s"
    node_wait_catchup "$s" "$p"
    check "$v: the standby holds every row of the primary" \
        "$(node_sql "$s" "SELECT count(*) FROM ids")" "$(node_sql "$p" "SELECT count(*) FROM ids")"
    for mode in fast immediate; do
        node_restart "$s" "$mode"
        node_gen "$p" "after_${mode}_restart" 3000
        node_wait_catchup "$s" "$p"
    done
    check "$v: the standby, after restarts, has replayed everything" \
        "$(node_sql "$s" "SELECT count(*) FROM ids")" "$(node_sql "$p" "SELECT count(*) FROM ids")"
    out="$(node_try "$s" "SELECT sno_generate(1)")"
    check "$v: the standby refuses to make IDs during recovery" \
        "$(grep -c "ERROR:  cannot generate sno IDs during recovery" <<<"$out")" 1

    if [[ "$v" == main ]]; then
        node_stop "$p" fast
        mark="$(node_log_mark "$s")"
        node_promote "$s"
        t0="$(date +%s%N)"
        node_gen "$s" promoted 3000 || true
        ms=$((($(date +%s%N) - t0) / 1000000))
        check "$v: the promoted standby made IDs at once, within sno.max_clock_wait (${ms} ms)" \
            "$((ms < 10000))" 1
        check "$v: the server log (not the client) says it took over partition 3" \
            "$(node_said "$s" "$mark" "LOG:  sno: partition 3 was used before this server's promotion, point-in-time restore or upgrade")" yes
        check "$v: the promoted standby's IDs carry partition 3" \
            "$(node_sql "$s" "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ids WHERE origin = '$s:promoted'")" 3
        node_pgbench "$s" promoted_pgbench 3
    else
        node_promote "$s"
        node_pgbench "$p" split_brain_pgbench 4 &
        local bg=$!
        t0="$(date +%s%N)"
        node_gen "$s" promoted 3000 || true
        ms=$((($(date +%s%N) - t0) / 1000000))
        check "$v: the promoted standby made IDs at once, within sno.max_clock_wait (${ms} ms)" \
            "$((ms < 10000))" 1
        node_pgbench "$s" promoted_pgbench 3
        wait "$bg" || { echo "FAIL: pgbench on the old primary"; fail=1; }
        node_gen "$p" split_brain 3000
        local pp sp
        pp="$(node_partition "$p")" sp="$(node_partition "$s")"
        check_distinct "$v: the promoted standby's partition differs from the old primary's" "$sp" "$pp"
    fi
    check "$v: the promoted standby's clock was behind the primary's" \
        "$(node_sql "$s" "SELECT min(sno_time(id)) FILTER (WHERE origin LIKE '$s:%') < max(sno_time(id)) FILTER (WHERE origin LIKE '$p:%') FROM ids")" t
    ledger_check "$v: every ID of the primary and its standby" "node LIKE '$v\\_%'"
}

run main
run split
ledger_check "everything"
ledger_summary
exit "$fail"
