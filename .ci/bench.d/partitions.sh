# shellcheck shell=bash
# .ci/bench, section partitions (PostgreSQL 18 and later): the last hour of a table with daily
# partitions keyed by sno against the same keyed by uuidv7 and partitioned by a timestamptz
# column (partitions.sql). Sourced by .ci/bench after common.sh.
if ((V < 18)); then
    say "partitions: skipped on PostgreSQL $V (uuidv7() is built in from 18: SNO_PG_VERSION=18)"
else
DAYS="${SNO_BENCH_PARTITION_DAYS:-30}"
say "partitions: the last hour of $ROWS rows over $DAYS daily partitions, sno key (sno_time(id)) against uuidv7 key + timestamptz partition column"
# The same instants for both: $ROWS rows spread evenly over the last $DAYS days, up to now.
psql -v rows="$ROWS" -v days="$DAYS" -f "$BENCH_D/partitions.sql"
: >"$SCRATCH/partitions.txt"
for ((r = 1; r <= RUNS; r++)); do
    for k in $(rotate "$r" "sno uuid"); do
        if [[ $k == sno ]]; then
            q="SELECT count(*), sum(v) FROM tp_sno WHERE sno_time(id) >= now() - interval ''1 hour''"
        else
            q="SELECT count(*), sum(v) FROM tp_uuid WHERE created_at >= now() - interval ''1 hour''"
        fi
        psql -At -c "SELECT '$k ' || planning || ' ' || execution FROM plan_exec('$q', 20)" >>"$SCRATCH/partitions.txt"
    done
done
psql -At -c "SELECT '| the last hour of $ROWS rows, $DAYS daily partitions (PostgreSQL ' || current_setting('server_version') || ') | planning ms | execution ms | rows |'" \
    -c "SELECT '|---|---:|---:|---:|'"
med() { awk -v k="$1" -v f="$2" '$1 == k { print $f }' "$SCRATCH/partitions.txt" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
rows_sno="$(psql -At -c "SELECT count(*) FROM tp_sno WHERE sno_time(id) >= now() - interval '1 hour'")"
rows_uuid="$(psql -At -c "SELECT count(*) FROM tp_uuid WHERE created_at >= now() - interval '1 hour'")"
echo "| sno key, PARTITION BY RANGE (id), WHERE sno_time(id) >= now() - interval '1 hour' | $(med sno 2) | $(med sno 3) | $rows_sno |"
echo "| uuidv7 key, PARTITION BY RANGE (created_at), WHERE created_at >= now() - interval '1 hour' | $(med uuid 2) | $(med uuid 3) | $rows_uuid |"
echo "| sno / uuidv7 | $(awk -v a="$(med sno 2)" -v b="$(med uuid 2)" 'BEGIN { printf "%.2f", a / b }') | $(awk -v a="$(med sno 3)" -v b="$(med uuid 3)" 'BEGIN { printf "%.2f", a / b }') | |"
psql -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*), sum(v) FROM tp_sno WHERE sno_time(id) >= now() - interval '1 hour'" | sed 's/^/    plan sno: /'
psql -c "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*), sum(v) FROM tp_uuid WHERE created_at >= now() - interval '1 hour'" | sed 's/^/    plan uuidv7: /'
psql -At -c "SELECT 'sizes: sno ' || pg_size_pretty(sum(pg_total_relation_size(partition))) FROM sno_time_partitions WHERE parent_table = 'tp_sno'::regclass" \
    -c "SELECT 'sizes: uuidv7 ' || pg_size_pretty(sum(pg_total_relation_size(inhrelid))) FROM pg_inherits WHERE inhparent = 'tp_uuid'::regclass" | sed 's/^/    /'
psql -c "DROP TABLE tp_sno, tp_uuid, tp_times"
fi
