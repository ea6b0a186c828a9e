# shellcheck shell=bash
# .ci/bench, section copy: COPY, ORDER BY and CREATE INDEX on $ROWS values (copy.sql,
# copy_table.sql). Sourced by .ci/bench after common.sh.
copy_files=(-v uuid_file="$SNO_WORK/bench-$V/uuid.txt" -v sno_file="$SNO_WORK/bench-$V/sno.txt")
say "loading $ROWS rows per table"
psql -v rows="$ROWS" "${copy_files[@]}" -f "$BENCH_D/copy.sql"

say "running ($RUNS runs each, median)"
psql -At -v rows="$ROWS" -v runs="$RUNS" "${copy_files[@]}" -f "$BENCH_D/copy_table.sql"
psql -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM (SELECT id FROM t_sno ORDER BY id OFFSET 0) s" | sed 's/^/    plan: /'
