# shellcheck shell=bash
# .ci/bench, section text: primary-key lookups with a varchar value (what ORMs send) against a
# sno value (text.sql). Sourced by .ci/bench after common.sh.
say "text parameters: key lookups with a varchar value against the same with a sno value"
# What an ORM sends: WHERE id = $1 with $1 typed varchar (the sno-text operator, which reads
# the string at each comparison of the index descent) against $1 typed sno. 200,000 random
# keys of a $ROWS-row table, looked up one by one in a PL/pgSQL loop (a prepared statement
# each); each form $RUNS times, alternating, median.
psql -v rows="$ROWS" -f "$BENCH_D/text.sql"
: >"$SCRATCH/text.txt"
for ((r = 1; r <= RUNS; r++)); do
    for kind in $(rotate "$r" "sno varchar"); do
        echo "$kind $(psql -At -c "SELECT lookups_ns('$kind')")" >>"$SCRATCH/text.txt"
    done
done
med() { awk -v s="$1" '$1 == s { print $2 }' "$SCRATCH/text.txt" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo
echo "| $ROWS-row table, 200,000 lookups by primary key x $RUNS (PostgreSQL $(psql -At -c 'SHOW server_version')) | ns per lookup (median) |"
echo "|---|---:|"
echo "| WHERE id = \$1, \$1 sno | $(med sno) |"
echo "| WHERE id = \$1, \$1 varchar | $(med varchar) |"
echo "| varchar / sno | $(awk -v a="$(med varchar)" -v b="$(med sno)" 'BEGIN { printf "%.2f", a / b }') |"
psql -c "EXPLAIN (COSTS OFF) SELECT v FROM t_text WHERE id = ANY((SELECT array_agg(t) FROM t_keys WHERE t < '3')::varchar[])" | sed 's/^/    plan: /'
