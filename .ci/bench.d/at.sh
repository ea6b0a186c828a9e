# shellcheck shell=bash
# .ci/bench, section at: sno_generate_at(meta, at) per ID against sno_generate per ID, in one
# session (at.sql). Sourced by .ci/bench after common.sh.
AT_CALLS="${SNO_BENCH_AT_CALLS:-5000000}"
[[ "$AT_CALLS" =~ ^[1-9][0-9]*$ ]] || { echo "SNO_BENCH_AT_CALLS: a count above 0 ('$AT_CALLS')" >&2; exit 2; }
say "sno_generate_at: $AT_CALLS calls a round, $RUNS rounds (medians), against sno_generate"
# The times come from a table (one column per shape, $AT_CALLS rows in time order for the
# in-order shapes), so that the baseline, count() of the column, is a plain scan: computing the
# times in the query (interval arithmetic, generate_series' tuplestore) costs several times what
# the function does, and its noise swamped the difference. One session; each round runs every
# shape's baseline and then the shape, back to back; the difference per round, median of $RUNS
# rounds. In time order, each round gives the shape a meta byte of its own (so a cursor of its
# own, in the same grant): every call is in order for the session, as in a backfill in
# created_at order, one call per 6 s (a year of rows: a 4 ms unit each) or one per 40 µs (about
# 100 calls per 4 ms unit, as sno_generate makes them in this loop). Random: a time anywhere in
# one year, out of order for the cursor: each such call takes the grant's out-of-order counter,
# so a new grant every 65,536 calls (the state file written, a WAL record flushed, a row in
# sno_reserved_grants), its cost included.
((RUNS <= 50)) || { echo "SNO_BENCH_RUNS: at most 50 for the at section (a meta byte per round and shape)" >&2; exit 2; }
psql -At -v at_calls="$AT_CALLS" -v runs="$RUNS" -f "$BENCH_D/at.sql"
psql -c "SELECT granted, remaining FROM sno_reserved"
