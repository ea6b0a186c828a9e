# shellcheck shell=bash source-path=SCRIPTDIR
# .ci/bench, section citus (PostgreSQL 15 only): a Citus cluster on this machine, concurrent
# single-row INSERTs into hash-distributed tables per key kind, through the coordinator and
# through the workers (citus.py). Sourced by .ci/bench after common.sh.
if [[ "$V" != 15 ]]; then
    say "citus: skipped: Citus is built for Debian's PostgreSQL 15 only here (SNO_PG_VERSION=$V)"
else
CITUS_CLIENTS="${SNO_BENCH_CITUS_CLIENTS:-8}"
CITUS_SHARDS="${SNO_BENCH_CITUS_SHARDS:-32}"
# Shorter runs than the other sections' by default: 2 modes x 3 keys x SNO_BENCH_RUNS of them.
CITUS_SECONDS="${SNO_BENCH_PGBENCH_SECONDS:-6}"
CITUS_KINDS="bigserial sno uuid4"
((CITUS_CLIENTS >= 2)) || { echo "SNO_BENCH_CITUS_CLIENTS: at least 2 (one per worker)" >&2; exit 2; }
say "citus: coordinator + 2 workers, $CITUS_CLIENTS clients, ${CITUS_SECONDS} s x $RUNS runs per mode and key"
# The nodes are the client tests' (tests/citus/citus.bash on tests/client/lib.bash): each in a
# directory of a work directory of its own under $SNO_WORK, its Unix socket there and no TCP,
# the socket directory as its node name in pg_dist_node; stopped and removed on exit.
# shellcheck source=../../tests/citus/citus.bash
source "$SNO_ROOT/tests/citus/citus.bash"
citus_ensure "$(pg_config_for 15)" || { echo "Citus $CITUS_VERSION could not be installed" >&2; exit 1; }
CITUS_PIDS=()
# On exit (also after a failure): the pgbench processes still running, the Citus nodes (the
# harness's cleanup: stopped, their work directory removed), then the other sections' servers.
citus_exit() {
    local rc=$? p
    set +e
    for p in "${CITUS_PIDS[@]}"; do kill "$p" 2>/dev/null; done
    (exit "$rc")
    harness_cleanup
    cluster_stop "bench-$V" "$V"
    cluster_stop "bench-$V-fsync" "$V"
}
harness_setup bench-citus "$BIN" $((PORT + 200)) $((PORT + 202))
trap citus_exit EXIT
for n in co w1 w2; do
    citus_node_init "$n"
    node_conf "$n" "# .ci/bench" "shared_buffers = 256MB" "synchronous_commit = off" "autovacuum = off" "jit = off"
    node_clock_mode "$n" none # the real clock: no libfaketime in the measurement
    citus_start "$n" || exit 1
    citus_node_setup "$n"
done
citus_coordinator co
citus_add_node w1 >/dev/null
citus_add_node w2 >/dev/null
citus_wait_synced 30 || exit 1
[[ "$(node_sql co "SELECT count(*) FROM pg_dist_node WHERE groupid > 0 AND hasmetadata AND metadatasynced")" == 2 ]] ||
    { echo "the workers' metadata is not synced" >&2; exit 1; }
for kind in $CITUS_KINDS; do
    node_sql co "CREATE TABLE c_$kind (id ${KEYCOL[$kind]}, v int)" \
        "SELECT create_distributed_table('c_$kind', 'id', shard_count => $CITUS_SHARDS)" >/dev/null
    echo "INSERT INTO c_$kind (v) VALUES (1);" >"$SCRATCH/citus_$kind.sql"
done
echo "    shard placements per worker: $(node_sql co "SELECT string_agg(n, ', ' ORDER BY n) FROM (
    SELECT nodeport || ': ' || count(*) AS n FROM pg_dist_placement JOIN pg_dist_node USING (groupid)
    GROUP BY nodeport) x")"

# citus_run MODE KIND ROUND SECONDS RESULTS: KIND's table truncated, then pgbench single-row
# INSERTs for SECONDS, all clients through the coordinator (coordinator) or half through each
# worker, two pgbench at once (workers); the rows in the table checked against pgbench's count.
# One line to RESULTS: mode kind round tps (each pgbench's, joined by +) rows.
citus_run() {
    local mode="$1" kind="$2" round="$3" secs="$4" results="$5" i out t c tps="" n=0 rows
    local nodes=(co) clients=("$CITUS_CLIENTS") threads=2
    if [[ "$mode" == workers ]]; then
        nodes=(w1 w2) clients=($(((CITUS_CLIENTS + 1) / 2)) $((CITUS_CLIENTS / 2))) threads=1
    fi
    node_sql co "TRUNCATE c_$kind" >/dev/null
    CITUS_PIDS=()
    for i in "${!nodes[@]}"; do
        node_client "${nodes[$i]}" pgbench -n -c "${clients[$i]}" -j "$threads" -T "$secs" \
            -f "$SCRATCH/citus_$kind.sql" postgres >"$SCRATCH/citus-out-${nodes[$i]}" 2>&1 &
        CITUS_PIDS+=($!)
    done
    for i in "${!nodes[@]}"; do
        out="$SCRATCH/citus-out-${nodes[$i]}"
        wait "${CITUS_PIDS[$i]}" || { cat "$out" >&2; echo "pgbench on ${nodes[$i]} failed: $mode $kind round $round" >&2; exit 1; }
        t="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$out")"
        c="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")"
        [[ -n "$t" && -n "$c" ]] || { cat "$out" >&2; echo "no tps in the pgbench output" >&2; exit 1; }
        tps+="${tps:++}$t"
        n=$((n + c))
    done
    CITUS_PIDS=()
    rows="$(node_sql co "SELECT count(*) FROM c_$kind")"
    # pgbench counts the transactions that finished before -T ran out.
    ((rows >= n && rows <= n + CITUS_CLIENTS)) ||
        { echo "c_$kind holds $rows rows after pgbench counted $n INSERTs ($mode, round $round)" >&2; exit 1; }
    echo "$mode $kind $round $tps $rows" | tee -a "$results" | sed 's/^/    run: /'
}

for mode in coordinator workers; do # warm-up (sessions, caches, the tables' first pages)
    for kind in $CITUS_KINDS; do citus_run "$mode" "$kind" 0 2 /dev/null >/dev/null; done
done
: >"$SCRATCH/citus.txt"
for ((round = 1; round <= RUNS; round++)); do
    for mode in coordinator workers; do
        for kind in $(rotate "$round" "$CITUS_KINDS"); do
            citus_run "$mode" "$kind" "$round" "$CITUS_SECONDS" "$SCRATCH/citus.txt"
        done
    done
done
echo
echo "Citus $(node_sql co "SELECT split_part(citus_version(), ' ', 2)") on PostgreSQL" \
    "$(node_sql co 'SHOW server_version'), a coordinator and 2 workers on this machine (Unix sockets)," \
    "each table hash-distributed by id over $CITUS_SHARDS shards; pgbench single-row" \
    "\`INSERT INTO t (v) VALUES (1)\`, $CITUS_CLIENTS clients, ${CITUS_SECONDS} s x $RUNS runs per mode and key," \
    "the table truncated before each run, fsync=off, synchronous_commit=off:"
echo
python3 "$BENCH_D/citus.py" "$SCRATCH/citus.txt" "$CITUS_CLIENTS"
echo
for n in co w1 w2; do
    echo "    $n (Citus group $(citus_group "$n")): sno_generator $(node_sql "$n" "SELECT format('partition %s (%s), %s IDs issued',
        partition, partition_source, ids_issued) FROM sno_generator")"
done
fi
