# shellcheck shell=bash
# .ci/bench, section time: sno_time(id) predicates with the added bounds against the same
# without them, and the planner hook's cost on a query without sno (time.sql, time_table.sql).
# Sourced by .ci/bench after common.sh.
say "time predicates: sno_time(id) with the added bounds, against a sequential scan"
# A day of IDs, $ROWS of them, in time order, with a primary key. The same predicate is asked
# as written (the planner hook adds the id bounds) and under OR false (the hook leaves a
# disjunction alone; PostgreSQL then folds it away: the plain predicate, no bounds).
psql -v rows="$ROWS" -f "$BENCH_D/time.sql"
psql -At -v rows="$ROWS" -v runs="$RUNS" -f "$BENCH_D/time_table.sql"
psql -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM t_time WHERE sno_time(id) >= '2026-01-01 23:00+00'" | sed 's/^/    plan: /'
psql -c "EXPLAIN (COSTS OFF) SELECT count(*) FROM t_time WHERE sno_time(id) >= '2026-01-01 23:00+00' OR false" | sed 's/^/    plan without bounds: /'
# The hook's cost on every query: planning a query without sno 20,000 times (EXPLAIN), in a
# session with the library loaded (this server preloads it) and on a server without it.
say "planner hook: planning time of a query without sno, with the hook and without"
plan_loop="DO \$\$ BEGIN FOR i IN 1..20000 LOOP EXECUTE 'EXPLAIN SELECT v FROM t_plain WHERE id = 42 AND v > 0'; END LOOP; END \$\$"
psql -c "CREATE TABLE t_plain (id int PRIMARY KEY, v int)"
cluster_start "bench-$V-nohook" "$V" "$((PORT + 1))" "jit=off"
npsql() { "$BIN/psql" -X -q -h "$SNO_WORK/bench-$V-nohook" -p "$((PORT + 1))" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
npsql -c "CREATE TABLE t_plain (id int PRIMARY KEY, v int)"
: >"$SCRATCH/hook.txt"
for ((r = 1; r <= RUNS; r++)); do
    for side in hook nohook; do
        t0=$(date +%s%N)
        if [[ $side == hook ]]; then psql -c "$plan_loop"; else npsql -c "$plan_loop"; fi
        echo "$side $((($(date +%s%N) - t0) / 20000))" >>"$SCRATCH/hook.txt"
    done
done
cluster_stop "bench-$V-nohook" "$V"
echo
echo "| planning a query without sno, 20,000 times x $RUNS | ns per plan (median) |"
echo "|---|---:|"
for side in nohook hook; do
    echo "| $([[ $side == hook ]] && echo 'sno preloaded (planner hook)' || echo 'server without sno') | $(awk -v s=$side '$1 == s { print $2 }' "$SCRATCH/hook.txt" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }') |"
done
