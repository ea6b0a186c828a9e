# shellcheck shell=bash
# .ci/bench, section fsync: concurrent single-row INSERTs with the state file's fsync slowed by
# an LD_PRELOAD shim, against without (the fsync cluster and insert_run in common.sh,
# summary.py). Sourced by .ci/bench after common.sh.
say "slowed state-file fsync: ${SLOW_MS} ms on files matching '$SLOW_MATCH', fsync=on, $FSYNC_CLIENTS clients"
fsync_cluster
: >"$SCRATCH/fsync.txt"
for ((round = 1; round <= RUNS; round++)); do
    for mode in unslowed slowed; do
        fsync_restart "$mode"
        for kind in $(rotate "$round" "bigserial sno"); do
            insert_run "$FD" "$FPORT" "$mode" "$kind" "$round" "$FSYNC_CLIENTS" "$SCRATCH/fsync.txt"
        done
    done
done
delayed="$(awk '$1 == "slowed" && $2 == "sno" { n += $9 } END { print n + 0 }' "$SCRATCH/fsync.txt")"
echo
echo "State-file fsync slowed by ${SLOW_MS} ms (LD_PRELOAD shim on paths containing '$SLOW_MATCH') vs not:" \
    "pgbench -c $FSYNC_CLIENTS -j 2 -T $PGBENCH_SECONDS, fsync=on, synchronous_commit=off," \
    "the server restarted for each mode (PostgreSQL $(fpsql -At -c 'SHOW server_version')):"
echo
python3 "$BENCH_D/summary.py" fsync "$SCRATCH/fsync.txt"
fpsql -c "SELECT partition, ids_issued, units_opened, full_unit_stalls, clock_waits, state_writes, state_write_waits FROM sno_generator"
echo "delayed fsyncs in the server log, all slowed sno runs: $delayed"
if ((delayed == 0)); then
    echo "FAILED: the shim delayed no fsync during the slowed sno runs: the measurement means nothing" >&2
    grep -i 'sno' "$FD/server.log" | tail -20 >&2
    exit 1
fi
