#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=120
# Point-in-time recovery beside the original.
#
# The original archives its WAL (archive_mode, archive_command). A base backup; IDs; a restore
# point; more IDs. The backup is restored elsewhere with recovery.signal, restore_command,
# recovery_target_name (the restore point) and recovery_target_action = promote. The restored
# server, its clock 10 s behind, makes IDs while the original goes on making IDs too (pgbench
# on both at once).
#   derived   no sno.partition: zero duplicates over every ID either server ever issued.
#   explicit  sno.partition = 5 (ALTER SYSTEM before the backup, so both have it): the
#             restored server takes over partition 5 (the server log says so). Zero duplicates
#             against every ID the restored server holds in its data, i.e. every ID whose WAL
#             came before the recovery target. The original's IDs after the target are the
#             documented exclusion (as with sequences): the only overlap allowed is with them,
#             and its size is printed.
#
# Usage: lineage_pitr.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_pitr "$2" "$3"

run() {
    local v="$1" o="${1}_o" r="${1}_r" rp held want bg mark overlap
    echo "--- $v"
    node_init "$o" archive
    node_cmdline "$o" shared_preload_libraries=sno
    node_start "$o"
    node_sql "$o" "CREATE EXTENSION sno"
    node_ids_table "$o"
    if [[ "$v" == explicit ]]; then
        node_alter "$o" sno.partition 5
        node_reload "$o" sno.partition 5
    fi
    node_gen "$o" before_backup 3000
    node_backup "$o" "${v}_base"
    node_gen "$o" before_target 3000
    node_pgbench "$o" before_target_pgbench 2
    rp="$(node_sql "$o" "SELECT pg_create_restore_point('${v}_target')")"
    t_target=$SECONDS
    node_gen "$o" after_target 3000
    node_pgbench "$o" after_target_pgbench 2
    node_switch_wal "$o"

    node_restore "${v}_base" "$r"
    node_recover_to "$r" "$o" name "${v}_target"
    # Its own archive would be the original's (the copied archive_command): off.
    node_cmdline "$r" shared_preload_libraries=sno archive_mode=off
    # Behind the original's last IDs before the target by 10 s, however long the restore takes
    # (a fixed offset let a slow machine's restore end with a clock no longer behind).
    node_clock "$r" "-$((SECONDS - t_target + 10))s"
    mark="$(node_log_mark "$r")"
    node_start "$r"
    node_wait_primary "$r"
    check "$v: the restored server stopped at the restore point ($rp) and was promoted" \
        "$(node_log_since "$r" "$mark" | grep -c "recovery stopping at restore point \"${v}_target\"")" 1
    held="$(node_sql "$r" "SELECT count(*) FROM ids")"
    ledger_load
    want="$(ledger_sql "SELECT count(*) FROM ledger WHERE node = '$o' AND phase LIKE 'before%'")"
    check "$v: the restored server holds exactly the IDs made before the target" "$held" "$want"

    node_pgbench "$o" after_restore_pgbench 4 &
    bg=$!
    node_gen "$r" restored 3000
    node_pgbench "$r" restored_pgbench 3
    wait "$bg" || { echo "FAIL: $v: pgbench on the original"; fail=1; }
    check "$v: the restored server's clock was behind the original's" \
        "$(node_sql "$r" "SELECT min(sno_time(id)) FILTER (WHERE origin LIKE '$r:%') < max(sno_time(id)) FILTER (WHERE origin LIKE '$o:%') FROM ids")" t
    if [[ "$v" == explicit ]]; then
        check "$v: the server log (not the client) says the restored server took over partition 5" \
            "$(node_said "$r" "$mark" "LOG:  sno: partition 5 was used before this server's promotion, point-in-time restore or upgrade")" yes
        check "$v: the restored server's IDs carry partition 5" "$(ledger_partitions "$r")" 5
        ledger_check "$v: the restored server's IDs against every ID with WAL before the target" \
            "node = '$r' OR (node = '$o' AND phase LIKE 'before%')"
        ledger_check "$v: both servers, except the original's IDs after the target (the exclusion)" \
            "node LIKE '$v\\_%' AND NOT (node = '$o' AND phase LIKE 'after%')"
        overlap="$(ledger_sql "SELECT count(*) FROM (SELECT id FROM ledger WHERE node = '$r'
                               INTERSECT SELECT id FROM ledger WHERE node = '$o' AND phase LIKE 'after%') x")"
        echo "    $v: IDs of the restored server that the original also made after the target (excluded): $overlap"
    else
        check_distinct "$v: the restored server's derived partition" "$(ledger_partitions "$r")" "$(ledger_partitions "$o")"
        ledger_check "$v: every ID of both servers" "node LIKE '$v\\_%'"
    fi
}

run derived
run explicit
ledger_summary
exit "$fail"
