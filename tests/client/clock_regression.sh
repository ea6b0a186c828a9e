#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=120
# A real clock regression: a server of its own runs under libfaketime, whose offset file this
# script rewrites while clients generate IDs.
#  1. Step back 2 s while 4 pgbench clients insert IDs: no wait, the tick-tock bit flips.
#  2. Step back again, below the first regression's safe mark: clients wait (about 2 s)
#     instead of repeating IDs, then go on.
#  3. Step back a minute: sno_generate fails after sno.max_clock_wait with a clear error, and a
#     statement_timeout cancels a longer wait (one session's, after a restart, with libfaketime's
#     cache, which a signal handler's clock read cannot deadlock).
# Zero duplicates throughout (a primary key holds every ID).
#
# Usage: clock_regression.sh SOCKET_DIR PORT BINDIR  (only BINDIR is used: own cluster)
set -euo pipefail
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup clock_regression "$3" $(($2 + 200))

# Only the server runs under libfaketime; its monotonic clock stays real so timeouts work.
# Phases 1 and 2: FAKETIME_NO_CACHE (clock mode nocache): every backend sees each step at its
# next clock call, as on one real machine (with a cache, backends would switch up to a second
# apart, each its own clock). It is not async-signal-safe (see lib.bash): a signal handler that
# reads the clock while the process is inside libfaketime's file read deadlocks it. So nothing
# here arms a SIGALRM timer then: no statement or lock timeout, and deadlock_timeout (armed at
# every lock wait) an hour. Phase 3, which needs statement_timeout, is one session's: the node
# restarts in mode cache for it, where a session's clock steps as the file does.
node_new srv
node_clock_mode srv nocache
node_initdb srv
node_cmdline srv fsync=off shared_preload_libraries=sno deadlock_timeout=1h
node_start srv
psql() { node_psql srv "$@"; }

psql -c "CREATE EXTENSION sno" -c "CREATE TABLE ids (id sno PRIMARY KEY)"
echo 'INSERT INTO ids SELECT sno_generate(1) FROM generate_series(1, 50);' >"$CL_WORK/insert.sql"

# run_clients SECONDS: 4 pgbench clients in the background (wait for them with `wait`).
run_clients() {
    node_client srv pgbench -n -c 4 -j 2 -T "$1" -f "$CL_WORK/insert.sql" postgres >"$CL_WORK/pgbench.$1.out" 2>&1 &
}
transactions() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$1"; }

# Phase 1: the first regression flips T without waiting.
run_clients 5
pid=$!
sleep 2
node_clock srv "-2s"
wait "$pid" || { echo "FAIL: pgbench (phase 1)"; cat "$CL_WORK/pgbench.5.out"; fail=1; }
n1="$(transactions "$CL_WORK/pgbench.5.out")"
check "phase 1: rows = 50 x transactions" "$(psql -At -c "SELECT count(*) FROM ids")" "$((50 * n1))"
check "phase 1: one regression, tick 1, no clock waits" \
    "$(psql -At -c "SELECT regressions, tick, clock_waits FROM sno_generator")" "1|1|0"
check "phase 1: IDs on both timelines" \
    "$(psql -At -c "SELECT string_agg(DISTINCT sno_tick(id)::text, ',') FROM ids")" "0,1"

# Phase 2: back again, 4 s more (below the safe mark): clients wait, nothing repeats.
run_clients 6
pid=$!
sleep 1.5
node_clock srv "-6s"
wait "$pid" || { echo "FAIL: pgbench (phase 2)"; cat "$CL_WORK/pgbench.6.out"; fail=1; }
n2="$(transactions "$CL_WORK/pgbench.6.out")"
check "phase 2: rows = 50 x transactions" "$(psql -At -c "SELECT count(*) FROM ids")" "$((50 * (n1 + n2)))"
check "phase 2: clients waited for the clock" "$(psql -At -c "SELECT clock_waits > 0 FROM sno_generator")" "t"
check "phase 2: then flipped back (two regressions, tick 0)" \
    "$(psql -At -c "SELECT regressions, tick FROM sno_generator")" "2|0"
[[ "$((n1 * n2))" -gt 0 ]] || { echo "FAIL: no transactions ($n1, $n2)"; fail=1; }

# Phase 3: back a minute more: a bounded wait that fails, and a wait a cancel ends (after a
# restart in clock mode cache: above).
node_clock_mode srv cache
node_restart srv
node_clock srv "-66s"
t0=$SECONDS
out="$(psql -c "SET sno.max_clock_wait = 800" -c "SELECT sno_generate(1)" 2>&1 || true)"
check "phase 3: gives up with a clear error" \
    "$(grep -c 'ERROR:  sno_generate gave up after waiting' <<<"$out")" "1"
grep -q "HINT:  Check the server's clock" <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
echo "$out" | sed 's/^/    /'
out="$(psql -c "SET sno.max_clock_wait = '10min'" -c "SET statement_timeout = '1s'" -c "SELECT sno_generate(1)" 2>&1 || true)"
check "phase 3: a long wait is cancellable" \
    "$(grep -c 'canceling statement due to statement timeout' <<<"$out")" "1"
((SECONDS - t0 < 10)) || { echo "FAIL: phase 3 took $((SECONDS - t0)) s"; fail=1; }
check "phase 3: failures counted" "$(psql -At -c "SELECT clock_wait_failures FROM sno_generator")" "1"

# Back to the real clock: generation goes on, still no duplicates.
node_clock srv "+0"
psql -c "INSERT INTO ids SELECT sno_generate(1) FROM generate_series(1, 1000)"
check "after: every ID distinct, all inserted" \
    "$(psql -At -c "SELECT count(*) = count(DISTINCT id), count(*) FROM ids")" "t|$((50 * (n1 + n2) + 1000))"
exit "$fail"
