# shellcheck shell=bash
# .ci/bench, section generator: sno_generate() calls, INSERT 1,000,000 rows, pgbench 16 clients
# sno vs bigserial (generator.sql, generator_table.sql, generator.py). Sourced by .ci/bench after
# common.sh.
say "generator: sno_generate against count(1), gen_random_uuid() and bigserial"
psql -f "$BENCH_D/generator.sql"
psql -At -v runs="$RUNS" -f "$BENCH_D/generator_table.sql"

echo 'INSERT INTO pgb_sno (v) VALUES (1);' >"$SNO_WORK/bench-$V/pgb_sno.sql"
echo 'INSERT INTO pgb_big (v) VALUES (1);' >"$SNO_WORK/bench-$V/pgb_big.sql"
tps() {
    "$BIN/pgbench" -n -c 16 -j 2 -T "$PGBENCH_SECONDS" -f "$SNO_WORK/bench-$V/pgb_$1.sql" \
        -h "$SNO_WORK/bench-$V" -p "$PORT" -U postgres postgres 2>&1 |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
# Warm up both tables (first inserts extend the relations), then alternate the two so that
# drift on the machine hits both alike; report the mean of two runs.
PGBENCH_SECONDS=3 tps big >/dev/null
PGBENCH_SECONDS=3 tps sno >/dev/null
b1="$(tps big)"; s1="$(tps sno)"; b2="$(tps big)"; s2="$(tps sno)"
echo
echo "| pgbench, 16 clients, ${PGBENCH_SECONDS} s x 2 runs, single-row INSERT | tps (run 1, run 2) | mean |"
echo "|---|---:|---:|"
python3 "$BENCH_D/generator.py" "$b1" "$b2" "$s1" "$s2"
psql -c "SELECT partition, ids_issued, units_opened, full_unit_stalls, clock_waits, state_writes, state_write_waits FROM sno_generator"
