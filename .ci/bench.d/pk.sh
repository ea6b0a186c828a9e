# shellcheck shell=bash
# .ci/bench, section pk: concurrent single-row INSERTs per key kind: tps, latency, primary-key
# bytes/row (insert_run in common.sh, summary.py). Sourced by .ci/bench after common.sh.
say "concurrent single-row INSERTs: clients $CLIENTS, ${PGBENCH_SECONDS} s x $RUNS runs per key (synchronous_commit=off)"
for kind in $KINDS; do # warm-up
    PGBENCH_SECONDS=2 insert_run "$SNO_WORK/bench-$V" "$PORT" warmup "$kind" 0 16 /dev/null >/dev/null
done
: >"$SCRATCH/pk.txt"
for ((round = 1; round <= RUNS; round++)); do
    for c in $CLIENTS; do
        for kind in $(rotate "$round" "$KINDS"); do
            insert_run "$SNO_WORK/bench-$V" "$PORT" "$c" "$kind" "$round" "$c" "$SCRATCH/pk.txt"
        done
    done
done
echo
echo "Concurrent single-row INSERT, pgbench -c C -j 2 -T $PGBENCH_SECONDS, synchronous_commit=off, fsync=off (PostgreSQL $(psql -At -c 'SHOW server_version')), a fresh table per run:"
echo
python3 "$BENCH_D/summary.py" pk "$SCRATCH/pk.txt"
psql -c "SELECT partition, ids_issued, units_opened, full_unit_stalls, clock_waits, state_writes, state_write_waits FROM sno_generator"
