#!/usr/bin/env bash
# ci: majors=all server=no cpu=0 estimate=60
# Standbys, failover and clones, with real servers:
#  1. A streaming standby made with pg_basebackup refuses sno_generate (SQLSTATE 25006)
#     and has its own derived partition.
#  2. It is promoted while its clock (libfaketime) is 5 s behind the primary's; the old
#     primary goes on making IDs too (split brain). All IDs of both meet in one primary key:
#     zero conflicts.
#  3. A clone made with pg_basebackup and run on its own gets its own derived partition (with
#     a message in its log); its IDs and the original's meet in one primary key: zero conflicts.
#  4. A clone of a server with an explicit sno.partition refuses to make IDs with it until it
#     is given its own.
#
# Usage: standby_clone.sh SOCKET_DIR PORT BINDIR  (only BINDIR is used: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
# The replication helpers of cluster.bash without its ledger; ports PORT+400 and up: primary,
# standby, clone, clone2, clone3 in that order.
harness_setup standby_clone "$3" $(($2 + 400)) $(($2 + 499))
q() { node_psql "$@"; } # q NODE PSQL-ARGS...

node_new primary
node_initdb primary
echo "local replication all trust" | as_pg tee -a "$(node_data primary)/pg_hba.conf" >/dev/null
node_cmdline primary shared_preload_libraries=sno
node_start primary
q primary -c "CREATE EXTENSION sno" -c "CREATE TABLE ids (id sno PRIMARY KEY, origin text NOT NULL)"
q primary -c "INSERT INTO ids SELECT sno_generate(1), 'primary' FROM generate_series(1, 10000)"

# --- a streaming standby ------------------------------------------------------------------
# standby.signal and primary_conninfo (node_follow), not pg_basebackup -R: pg_basebackup 16+
# writes libpq options (sslcertmode, sslnegotiation) that the system libpq the PyPI builds load
# may not know.
node_basebackup primary standby standby
node_cmdline standby shared_preload_libraries=sno
node_clock standby -5s
node_start standby
for _ in $(seq 100); do [[ "$(q standby -c "SELECT pg_is_in_recovery()")" == t ]] && break; sleep 0.1; done
out="$(node_try standby "SELECT sno_generate(1)")"
check "standby: sno_generate refuses during recovery" "$(grep -c 'cannot generate sno IDs during recovery' <<<"$out")" "1"
pp="$(q primary -c "SELECT sno_current_partition()")"
sp="$(q standby -c "SELECT coalesce(sno_current_partition()::text, 'none') || ' ' || status FROM sno_generator")"
check "standby: no partition shown yet (a derived one is drawn when it is promoted), status standby" "$sp" "none standby"
grep -q "sno: this data directory is a copy (it has a backup_label)" "$(node_log standby)" ||
    { echo "FAIL: no copy message in the standby's log"; fail=1; }

# More IDs on the primary, replicated; then promote the standby (clock 5 s behind).
q primary -c "INSERT INTO ids SELECT sno_generate(1), 'primary' FROM generate_series(1, 10000)"
lsn="$(q primary -c "SELECT pg_current_wal_lsn()")"
caught_up=f
node_wait_replay standby "$lsn" 60 && caught_up=t
check "standby replayed the primary's WAL up to $lsn" "$caught_up" "t"
[[ "$caught_up" == t ]] || { q standby -c "SELECT pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()"; tail -20 "$(node_log standby)"; }
node_promote standby
check "promoted standby holds the primary's 20000 IDs" "$(q standby -c "SELECT count(*) FROM ids")" "20000"
q standby -c "INSERT INTO ids SELECT sno_generate(1), 'promoted' FROM generate_series(1, 20000)"
# The old primary goes on as well (split brain); bring its new IDs over.
q primary -c "INSERT INTO ids SELECT sno_generate(1), 'old primary' FROM generate_series(1, 20000)"
q primary -c "COPY (SELECT id, origin FROM ids WHERE origin = 'old primary') TO STDOUT" |
    q standby -c "COPY ids FROM STDIN"
check "after failover: 60000 IDs from both servers in one primary key" \
    "$(q standby -c "SELECT count(*), count(DISTINCT id) FROM ids")" "60000|60000"
check "the promoted standby drew a partition of its own" \
    "$(q standby -c "SELECT sno_current_partition() IS NOT NULL AND sno_current_partition() <> $pp")" t
check "the promoted server's clock was behind the old primary's" \
    "$(q standby -c "SELECT min(sno_time(id)) FILTER (WHERE origin = 'promoted') < max(sno_time(id)) FILTER (WHERE origin = 'old primary') FROM ids")" "t"

# --- a clone run on its own -----------------------------------------------------------------
node_basebackup primary clone
node_cmdline clone shared_preload_libraries=sno
node_start clone
cp="$(q clone -c "SELECT sno_current_partition()")"
[[ "$cp" != "$pp" ]] && echo "ok: clone has its own derived partition ($cp, original $pp)" ||
    { echo "FAIL: clone shares the original's partition $pp"; fail=1; }
grep -q "sno: this data directory is a copy (it has a backup_label)" "$(node_log clone)" ||
    { echo "FAIL: no copy message in the clone's log"; fail=1; }
q clone -c "INSERT INTO ids SELECT sno_generate(1), 'clone' FROM generate_series(1, 20000)"
q primary -c "INSERT INTO ids SELECT sno_generate(1), 'original' FROM generate_series(1, 20000)"
q clone -c "COPY (SELECT id, origin FROM ids WHERE origin = 'clone') TO STDOUT" |
    q primary -c "COPY ids FROM STDIN"
check "clone and original: every ID distinct in one primary key" \
    "$(q primary -c "SELECT count(*), count(DISTINCT id) FROM ids")" "80000|80000"

# --- a clone of a server with an explicit sno.partition -------------------------------------
q primary -c "ALTER SYSTEM SET sno.partition = 9" -c "SELECT pg_reload_conf()" >/dev/null
# The sno lineage worker records the configured partition in the state file at the reload,
# before the primary makes any ID with it.
for _ in $(seq 50); do grep -q '^used=9,1,' "$(node_state_file primary)" && break; sleep 0.1; done
check "the primary's state records partition 9 before any ID uses it" \
    "$(grep -c '^used=9,1,' "$(node_state_file primary)")" "1"
node_basebackup primary clone2
node_cmdline clone2 shared_preload_libraries=sno
node_start clone2
out="$(node_try clone2 "SELECT sno_generate(1)")"
check "clone with the original's explicit partition refuses" \
    "$(grep -c 'this server is a copy of one that made IDs with partition 9' <<<"$out")" "1"
grep -q "HINT:  Give this server a sno.partition no server has used, below 61440" <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
# The HINT's list: 61439 first (no server here has used it).
q clone2 -c "ALTER SYSTEM SET sno.partition = 61439" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 50); do [[ "$(q clone2 -c "SELECT sno_current_partition()")" == 61439 ]] && break; sleep 0.1; done
check "with its own partition it makes IDs" "$(q clone2 -c "SELECT sno_partition(sno_generate(1))")" "61439"

# --- a copy whose state file cannot be written at its first start ---------------------------
# Nothing is half-done: the copy keeps its new state in memory, makes no ID until the file is
# written, and never ends up with its original's partition (not even with force).
node_basebackup primary clone3
as_pg mkdir "$(node_data clone3)/sno_generator.state.tmp"
node_cmdline clone3 shared_preload_libraries=sno
node_start clone3
grep -q "sno: could not write the generator state file" "$(node_log clone3)" ||
    { echo "FAIL: no WARNING for the failed write at start"; fail=1; }
g3() { node_try clone3 "SELECT sno_generate(1)"; }
out="$(g3)"
check "copy with an unwritable state file: refused with the original's partition" \
    "$(grep -c 'this server is a copy of one that made IDs with partition 9' <<<"$out")" "1"
out="$(q clone3 -c "SELECT sno_generator_initialize(force => true)" 2>&1 || true)"
check "force neither accepts the original's partition nor half-writes" \
    "$(grep -c 'could not write sno generator state file' <<<"$out")" "1"
check "then: still refused with the original's partition" \
    "$(grep -c 'this server is a copy of one that made IDs with partition 9' <<<"$(g3)")" "1"
# The HINT's first branch: its own partition (the next of its list).
q clone3 -c "ALTER SYSTEM SET sno.partition = 57343" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.3
out="$(g3)"
check "own partition, state file still unwritable: no ID" "$(grep -c 'could not write sno generator state file' <<<"$out")" "1"
grep -q "HINT:  Check the data directory's free space and permissions." <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
# Following that HINT: the obstacle is in the data directory.
rm -rf "$(node_data clone3)/sno_generator.state.tmp"
check "then IDs with its own partition" "$(q clone3 -c "SELECT sno_partition(sno_generate(1))")" "57343"
exit "$fail"
