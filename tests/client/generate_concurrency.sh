#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=all server=yes cpu=1 estimate=60
# sno_generate under real concurrency, against a live cluster with sno preloaded:
#  1. pgbench, 16 clients for 10 s, each transaction inserting one row whose primary key
#     defaults to sno_generate(1): zero errors, rows = transactions.
#  2. The same with a new connection per transaction (-C): backends come and go.
#  3. A forced parallel query (2 workers) generating 2,000,000 IDs: all distinct.
#  4. A partition set with ALTER SYSTEM + reload is what new IDs carry.
#  During 1: the state file is renewed by the worker with no call waiting for it, and the IDs
#  of all clients are numbered in the order they are made (no gaps within a unit).
#
# Usage: generate_concurrency.sh SOCKET_DIR PORT BINDIR   (run by .ci/test)
set -euo pipefail
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
DURATION="${SNO_PGBENCH_SECONDS:-10}"
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d sno_gen "$@"; }
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup generate_concurrency "$bindir" # the work directory only: no server of its own
work="$CL_WORK"

"$bindir/psql" -X -q -d postgres -c "DROP DATABASE IF EXISTS sno_gen" -c "CREATE DATABASE sno_gen"
psql -c "CREATE EXTENSION sno" \
     -c "CREATE TABLE gen (id sno PRIMARY KEY DEFAULT sno_generate(1), client int NOT NULL)"
echo 'INSERT INTO gen (client) VALUES (:client_id);' >"$work/insert.sql"

# pgbench_run NAME ARGS...: runs pgbench, checks it reported no failure, prints transactions.
pgbench_run() {
    local name="$1"
    shift
    local out="$work/$name.out" rc=0
    "$bindir/pgbench" -n -c 16 -j 2 -T "$DURATION" -f "$work/insert.sql" "$@" sno_gen >"$out" 2>&1 || rc=$?
    if ((rc != 0)) || grep -qiE "error|aborted" "$out"; then
        echo "FAIL: pgbench $name exited $rc" >&2
        cat "$out" >&2
        return 1
    fi
    grep -q "number of failed transactions: 0 " "$out" || ! grep -q "number of failed transactions" "$out" || {
        echo "FAIL: pgbench $name had failed transactions" >&2
        return 1
    }
    sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out"
}

# The durable state's writes during the run: the worker renews the horizon ahead of need, so
# no sno_generate call waits for one (state_write_waits stays still) while it writes about
# once a second. An idle lease on disk (sno.idle_horizon, up to a minute past the clock once
# the shared cluster was idle) would cover the whole run with no write: for this run none, and
# the lease given back by terminating the sno lineage worker (as at a clean stop, the horizon
# comes down to the last unit used); the postmaster starts it again within a second.
psql -c "ALTER SYSTEM SET sno.idle_horizon = 0" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.3
psql -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'sno lineage'" >/dev/null
sleep 0.3
for _ in $(seq 50); do
    [[ "$(psql -At -c "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'sno lineage'")" == 1 ]] && break
    sleep 0.1
done
psql -c "SELECT sno_generate()" >/dev/null # past the first write after the lease was given back
writes0="$(psql -At -c "SELECT state_writes || ' ' || state_write_waits FROM sno_generator")"
n1="$(pgbench_run persistent)" || fail=1
writes1="$(psql -At -c "SELECT state_writes || ' ' || state_write_waits FROM sno_generator")"
psql -c "ALTER SYSTEM RESET sno.idle_horizon" -c "SELECT pg_reload_conf()" >/dev/null
rows="$(psql -At -c "SELECT count(*) FROM gen")"
check "16 clients x ${DURATION}s: rows = transactions ($n1)" "$rows" "$n1"
[[ "${n1:-0}" -gt 1000 ]] || { echo "FAIL: too few transactions ($n1)"; fail=1; }
read -r w0 ww0 <<<"$writes0"
read -r w1 ww1 <<<"$writes1"
check "the state file was written ahead of need, no call waited for it ($writes0 -> $writes1)" \
    "$((w1 - w0 >= DURATION / 3)) $((ww1 - ww0))" "1 0"
# One shared cursor: within each 4 ms unit the sixteen clients' IDs are numbered 0, 1, 2, ...
# in the order they were made, with no numbers left unused between them (per-backend blocks
# leave up to 15 per backend and unit). A few may be lost where a backend reads the clock
# just as the unit turns; more than 1 in 100 means blocks again.
gaps="$(psql -At -c "SELECT sum(top + 1 - n) || ' ' || sum(n) FROM (
    SELECT max(sno_sequence(id)) AS top, count(*) AS n FROM gen
    GROUP BY sno_time(id), sno_tick(id)) u")"
read -r unused made <<<"$gaps"
check "sequence numbers used in the order made: $unused unused of $((unused + made))" \
    "$((unused * 100 <= made))" "1"

n2="$(pgbench_run connect -C)" || fail=1
rows="$(psql -At -c "SELECT count(*) FROM gen")"
check "16 clients x ${DURATION}s, new connection per transaction: rows = transactions ($n1 + $n2)" "$rows" "$((n1 + n2))"
check "all IDs distinct" "$(psql -At -c "SELECT count(DISTINCT id) = count(*) FROM gen")" "t"
check "all IDs carry meta 1 and this server's partition" \
    "$(psql -At -c "SELECT bool_and(sno_meta(id) = 1 AND sno_partition(id) = sno_current_partition()) FROM gen")" "t"

# Forced parallel query: the projection (sno_generate) runs in the workers.
cat >"$work/parallel.sql" <<'SQL'
CREATE TABLE par_src AS SELECT g FROM generate_series(1, 2000000) g;
ALTER TABLE par_src SET (parallel_workers = 2);
VACUUM ANALYZE par_src;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
EXPLAIN (ANALYZE, VERBOSE, COSTS OFF, TIMING OFF, SUMMARY OFF)
    SELECT count(*), count(DISTINCT id) FROM (SELECT sno_generate(2) AS id FROM par_src) s;
SELECT 'result', count(*), count(DISTINCT id) FROM (SELECT sno_generate(2) AS id FROM par_src) s;
SQL
psql -At -F ' ' -f "$work/parallel.sql" >"$work/parallel.out"
check "parallel query launched 2 workers" "$(grep -c 'Workers Launched: 2' "$work/parallel.out")" "1"
check "sno_generate ran inside the parallel scan" \
    "$(grep -A1 'Parallel Seq Scan' "$work/parallel.out" | grep -c 'Output: sno_generate(2)')" "1"
check "parallel query: 2,000,000 IDs, all distinct" "$(grep '^result' "$work/parallel.out")" "result 2000000 2000000"

# Partition from the server configuration, applied by a reload.
psql -c "ALTER SYSTEM SET sno.partition = 4242" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 50); do
    [[ "$(psql -At -c "SELECT sno_current_partition()")" == 4242 ]] && break
    sleep 0.1
done
check "sno.partition = 4242 after reload" \
    "$(psql -At -c "SELECT sno_partition(sno_generate()), partition_source FROM sno_generator")" "4242|sno.partition"
psql -c "ALTER SYSTEM RESET sno.partition" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 50); do
    [[ "$(psql -At -c "SELECT partition_source FROM sno_generator")" == "system identifier" ]] && break
    sleep 0.1
done
check "partition derived from the system identifier again" \
    "$(psql -At -c "SELECT partition_source FROM sno_generator")" "system identifier"

# The sno.* prefix is reserved.
out="$("$bindir/psql" -X -d sno_gen -c "SET sno.no_such_setting = 1" 2>&1 || true)"
check "sno.* is a reserved prefix" "$(grep -c '"sno" is a reserved prefix' <<<"$out")" "1"

exit "$fail"
