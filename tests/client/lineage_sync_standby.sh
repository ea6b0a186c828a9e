#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=60
# A synchronous standby and IDs a client only reads (SELECT sno_generate(), no row written, in
# a transaction that never commits because the primary dies): the lineage record that covers them must be flushed and
# confirmed by the synchronous standby before they are returned, as a commit would be (what
# nextval() gets by assigning a transaction ID). The primary and its standby share the
# explicit partition 9; the WAL writer is slowed down (10 s) so that nothing else flushes the
# record; the primary is stopped with -m immediate right after the IDs were read; the standby,
# its clock 5 s behind, is promoted: its lineage bound for partition 9 covers every ID the
# client read, and none of them is made again. The flip that follows is not a clock regression:
# `regressions` stays 0, `flips` is 1, and the log says why.
#
# Usage: lineage_sync_standby.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_sync_standby "$2" "$3"

node_init p
# No idle lease (sno.idle_horizon = 0): the pause below must leave the horizon behind the clock.
node_cmdline p shared_preload_libraries=sno sno.partition=9 wal_writer_delay=10s sno.idle_horizon=0
node_start p
node_sql p "CREATE EXTENSION sno" >/dev/null
node_basebackup p s standby
node_cmdline s shared_preload_libraries=sno sno.partition=9
node_clock s -5s
node_start s
node_make_sync p
check "the standby is synchronous" "$(node_sql p "SELECT sync_state FROM pg_stat_replication")" sync
# Past the horizon written at CREATE EXTENSION (2 s ahead, no idle lease), so that these IDs
# need a new one.
sleep 3
# The client reads the IDs inside a transaction that never ends: the primary dies first, so no
# commit (not even an asynchronous one) can flush WAL for it.
printf 'BEGIN;\nSELECT sno_generate(1) FROM generate_series(1, 50000);\nSELECT pg_sleep(120);\n' |
    node_psql p >"$CL_WORK/read.ids" 2>/dev/null &
reader=$!
for _ in $(seq 300); do
    [[ "$(wc -l <"$CL_WORK/read.ids")" -ge 50000 ]] && break
    sleep 0.1
done
check "the client read 50000 IDs" "$(wc -l <"$CL_WORK/read.ids")" 50000
node_stop p immediate
wait "$reader" || true
mark="$(node_log_mark s)"
node_promote s
node_sql s "CREATE TABLE got (id sno)" "CREATE TABLE seen (id sno)" >/dev/null
node_psql s -c "COPY seen FROM STDIN" <"$CL_WORK/read.ids"
check "the promoted standby's bound for partition 9 covers every ID the client read" \
    "$(node_sql s "SELECT (SELECT max(ids_until) FROM sno_generator_lineage WHERE partition = 9 AND NOT used_here)
                          >= (SELECT max(sno_time(id)) FROM seen)")" t
node_sql s "INSERT INTO got SELECT sno_generate(1) FROM generate_series(1, 300000)" >/dev/null
check "none of them is made again" "$(node_sql s "SELECT count(*) FROM seen JOIN got USING (id)")" 0
# The promoted server resumed behind its old primary's bound: a tick-tock flip, but no clock
# went back (its clock only ever moved forward), so no regression is counted or logged.
check "the promotion flipped the tick-tock bit without a clock regression (regressions, flips, tick)" \
    "$(node_sql s "SELECT regressions, flips, tick FROM sno_generator")" "0|1|1"
check "... and the log says so, not that the clock went back" \
    "$(node_log_since s "$mark" | grep -c 'is ahead of the clock; IDs now use tick-tock bit 1')|$(node_log_since s "$mark" | grep -c 'clock went back')" "1|0"
exit "$fail"
