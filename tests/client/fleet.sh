#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=all server=no cpu=1 estimate=60
# A fleet: three PostgreSQL servers with sno.partition 1, 2 and 3 generate IDs concurrently;
# servers 2 and 3 publish their rows and server 1 subscribes to both (built-in logical
# replication), merging everything into one table under a primary key. Zero conflicts, every
# row arrives, and the merged IDs sort by creation time across servers.
#
# Usage: fleet.sh SOCKET_DIR PORT BINDIR  (only BINDIR is used: own clusters)
set -euo pipefail
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
# Nodes s1, s2, s3 on ports PORT+501 .. PORT+503, on the real clock.
harness_setup fleet "$3" $(($2 + 501)) $(($2 + 599))
q() { # q SERVER SQL...
    local n="$1"
    shift
    node_psql "s$n" "$@"
}

for n in 1 2 3; do
    node_new "s$n"
    node_clock_mode "s$n" none
    node_initdb "s$n"
    node_cmdline "s$n" wal_level=logical shared_preload_libraries=sno "sno.partition=$n"
    node_start "s$n"
    q "$n" -c "CREATE EXTENSION sno" \
        -c "CREATE TABLE events (id sno PRIMARY KEY DEFAULT sno_generate(1), server int NOT NULL, created timestamptz NOT NULL DEFAULT clock_timestamp())"
    check "server $n uses partition $n" "$(q "$n" -c "SELECT sno_current_partition()")" "$n"
done
for n in 2 3; do
    q "$n" -c "CREATE PUBLICATION fleet_$n FOR TABLE events"
    q 1 -c "CREATE SUBSCRIPTION from_$n CONNECTION '$(node_conninfo "s$n")' PUBLICATION fleet_$n"
done

# Generate on all three at once: 4 clients each, 5 s, 10 rows a transaction.
for n in 1 2 3; do
    echo "INSERT INTO events (server) SELECT $n FROM generate_series(1, 10);" >"$CL_WORK/insert$n.sql"
    node_client "s$n" pgbench -n -c 4 -j 2 -T 5 -f "$CL_WORK/insert$n.sql" postgres >"$CL_WORK/pgbench$n.out" 2>&1 &
done
wait
total=0
for n in 1 2 3; do
    rows="$(q "$n" -c "SELECT count(*) FROM events WHERE server = $n")"
    echo "server $n made $rows rows"
    total=$((total + rows))
done

# Wait for the subscriptions to bring everything over.
for _ in $(seq 300); do
    [[ "$(q 1 -c "SELECT count(*) FROM events")" == "$total" ]] && break
    sleep 0.1
done
check "all $total rows merged on server 1" "$(q 1 -c "SELECT count(*), count(DISTINCT id) FROM events")" "$total|$total"
check "no replication conflict in server 1's log" "$(grep -c 'duplicate key' "$(node_log s1)" || true)" "0"
check "every row carries its server's partition" \
    "$(q 1 -c "SELECT bool_and(sno_partition(id) = server) FROM events")" "t"
# One clock here, so an ID's time is its row's creation time (up to 4 ms, plus any scheduling
# delay between evaluating the two defaults on a busy machine): sorting the merged IDs sorts
# the rows of all servers by creation time.
check "merged IDs sort by creation time across servers (within 0.5 s of the rows' clock_timestamp())" \
    "$(q 1 -c "SELECT max(abs(extract(epoch FROM created - sno_time(id)))) < 0.5 FROM events")" "t"
q 1 -c "SELECT 'largest gap between an ID''s time and its row''s clock_timestamp(): ' || max(abs(extract(epoch FROM created - sno_time(id)))) || ' s' FROM events"
check "rows of all three servers interleave in ID order" \
    "$(q 1 -c "SELECT count(*) > 3 FROM (SELECT server, lag(server) OVER (ORDER BY id) AS prev FROM events) s WHERE server <> prev")" "t"
exit "$fail"
