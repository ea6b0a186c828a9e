#!/usr/bin/env bash
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
bindir="$3"
base=$((${2} + 400))
lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
work="$(mktemp -d /tmp/sno-work/standby.XXXXXX)"
chown postgres: "$work"
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
# start NAME PORT [FAKETIME-OFFSET]
start() {
    echo "${3:-+0}" >"$work/$1.faketime"
    chmod a+r "$work/$1.faketime"
    sudo -u postgres env LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$work/$1.faketime" FAKETIME_CACHE_DURATION=1 \
        FAKETIME_DONT_FAKE_MONOTONIC=1 DONT_FAKE_MONOTONIC=1 \
        "$bindir/pg_ctl" -D "$work/$1" -l "$work/$1.log" -w \
        -o "-p $2 -k $work -c listen_addresses='' -c shared_preload_libraries=sno" start >/dev/null ||
        { tail -20 "$work/$1.log"; return 1; }
}
stop_all() {
    for d in primary standby clone clone2 clone3; do
        [[ -d "$work/$d" ]] && sudo -u postgres "$bindir/pg_ctl" -D "$work/$d" -m immediate -w stop >/dev/null 2>&1
    done
    rm -rf "$work"
}
trap stop_all EXIT
q() { # q PORT SQL...: one value
    local port="$1"
    shift
    "$bindir/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres -d postgres "$@"
}
P=$base S=$((base + 1)) C=$((base + 2))

sudo -u postgres "$bindir/initdb" -D "$work/primary" -A trust -U postgres --no-sync >/dev/null
echo "local replication all trust" >>"$work/primary/pg_hba.conf"
start primary "$P"
q "$P" -c "CREATE EXTENSION sno" -c "CREATE TABLE ids (id sno PRIMARY KEY, origin text NOT NULL)"
q "$P" -c "INSERT INTO ids SELECT sno_generate(1), 'primary' FROM generate_series(1, 10000)"

# --- a streaming standby ------------------------------------------------------------------
sudo -u postgres "$bindir/pg_basebackup" -h "$work" -p "$P" -U postgres -D "$work/standby" -X stream -c fast
# The standby's settings, written here rather than with -R: pg_basebackup 16+ writes libpq
# options (sslcertmode, sslnegotiation) that the system libpq the PyPI builds load may not know.
sudo -u postgres touch "$work/standby/standby.signal"
echo "primary_conninfo = 'host=$work port=$P user=postgres'" | sudo -u postgres tee -a "$work/standby/postgresql.auto.conf" >/dev/null
start standby "$S" "-5s"
for _ in $(seq 100); do [[ "$(q "$S" -c "SELECT pg_is_in_recovery()")" == t ]] && break; sleep 0.1; done
out="$("$bindir/psql" -X -h "$work" -p "$S" -U postgres -d postgres -c "SELECT sno_generate(1)" 2>&1 || true)"
check "standby: sno_generate refuses during recovery" "$(grep -c 'cannot generate sno IDs during recovery' <<<"$out")" "1"
pp="$(q "$P" -c "SELECT sno_current_partition()")"
sp="$(q "$S" -c "SELECT sno_current_partition()")"
[[ "$pp" != "$sp" ]] && echo "ok: standby has its own derived partition ($sp, primary $pp)" ||
    { echo "FAIL: standby shares the primary's partition $pp"; fail=1; }
grep -q "sno: this data directory is a copy (it has a backup_label)" "$work/standby.log" ||
    { echo "FAIL: no copy message in the standby's log"; fail=1; }

# More IDs on the primary, replicated; then promote the standby (clock 5 s behind).
q "$P" -c "INSERT INTO ids SELECT sno_generate(1), 'primary' FROM generate_series(1, 10000)"
lsn="$(q "$P" -c "SELECT pg_current_wal_lsn()")"
caught_up=f
for _ in $(seq 600); do
    caught_up="$(q "$S" -c "SELECT pg_last_wal_replay_lsn() >= '$lsn'")"
    [[ "$caught_up" == t ]] && break
    sleep 0.1
done
check "standby replayed the primary's WAL up to $lsn" "$caught_up" "t"
[[ "$caught_up" == t ]] || { q "$S" -c "SELECT pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()"; tail -20 "$work/standby.log"; }
sudo -u postgres "$bindir/pg_ctl" -D "$work/standby" -w promote >/dev/null
check "promoted standby holds the primary's 20000 IDs" "$(q "$S" -c "SELECT count(*) FROM ids")" "20000"
q "$S" -c "INSERT INTO ids SELECT sno_generate(1), 'promoted' FROM generate_series(1, 20000)"
# The old primary goes on as well (split brain); bring its new IDs over.
q "$P" -c "INSERT INTO ids SELECT sno_generate(1), 'old primary' FROM generate_series(1, 20000)"
q "$P" -c "COPY (SELECT id, origin FROM ids WHERE origin = 'old primary') TO STDOUT" |
    q "$S" -c "COPY ids FROM STDIN"
check "after failover: 60000 IDs from both servers in one primary key" \
    "$(q "$S" -c "SELECT count(*), count(DISTINCT id) FROM ids")" "60000|60000"
check "the promoted server's clock was behind the old primary's" \
    "$(q "$S" -c "SELECT min(sno_time(id)) FILTER (WHERE origin = 'promoted') < max(sno_time(id)) FILTER (WHERE origin = 'old primary') FROM ids")" "t"

# --- a clone run on its own -----------------------------------------------------------------
sudo -u postgres "$bindir/pg_basebackup" -h "$work" -p "$P" -U postgres -D "$work/clone" -X stream -c fast
start clone "$C"
cp="$(q "$C" -c "SELECT sno_current_partition()")"
[[ "$cp" != "$pp" ]] && echo "ok: clone has its own derived partition ($cp, original $pp)" ||
    { echo "FAIL: clone shares the original's partition $pp"; fail=1; }
grep -q "sno: this data directory is a copy (it has a backup_label)" "$work/clone.log" ||
    { echo "FAIL: no copy message in the clone's log"; fail=1; }
q "$C" -c "INSERT INTO ids SELECT sno_generate(1), 'clone' FROM generate_series(1, 20000)"
q "$P" -c "INSERT INTO ids SELECT sno_generate(1), 'original' FROM generate_series(1, 20000)"
q "$C" -c "COPY (SELECT id, origin FROM ids WHERE origin = 'clone') TO STDOUT" |
    q "$P" -c "COPY ids FROM STDIN"
check "clone and original: every ID distinct in one primary key" \
    "$(q "$P" -c "SELECT count(*), count(DISTINCT id) FROM ids")" "80000|80000"

# --- a clone of a server with an explicit sno.partition -------------------------------------
q "$P" -c "ALTER SYSTEM SET sno.partition = 9" -c "SELECT pg_reload_conf()" >/dev/null
# The sno lineage worker records the configured partition in the state file at the reload,
# before the primary makes any ID with it.
for _ in $(seq 50); do grep -q '^used=9,1,' "$work/primary/sno_generator.state" && break; sleep 0.1; done
check "the primary's state records partition 9 before any ID uses it" \
    "$(grep -c '^used=9,1,' "$work/primary/sno_generator.state")" "1"
sudo -u postgres "$bindir/pg_basebackup" -h "$work" -p "$P" -U postgres -D "$work/clone2" -X stream -c fast
C2=$((base + 3))
start clone2 "$C2"
out="$("$bindir/psql" -X -h "$work" -p "$C2" -U postgres -d postgres -c "SELECT sno_generate(1)" 2>&1 || true)"
check "clone with the original's explicit partition refuses" \
    "$(grep -c 'this server is a copy of one that made IDs with partition 9' <<<"$out")" "1"
grep -q "HINT:  Give this server its own sno.partition" <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
q "$C2" -c "ALTER SYSTEM SET sno.partition = 10" -c "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 50); do [[ "$(q "$C2" -c "SELECT sno_current_partition()")" == 10 ]] && break; sleep 0.1; done
check "with its own partition it makes IDs" "$(q "$C2" -c "SELECT sno_partition(sno_generate(1))")" "10"

# --- a copy whose state file cannot be written at its first start ---------------------------
# Nothing is half-done: the copy keeps its new state in memory, makes no ID until the file is
# written, and never ends up with its original's partition (not even with force).
sudo -u postgres "$bindir/pg_basebackup" -h "$work" -p "$P" -U postgres -D "$work/clone3" -X stream -c fast
sudo -u postgres mkdir "$work/clone3/sno_generator.state.tmp"
C3=$((base + 4))
start clone3 "$C3"
grep -q "sno: could not write the generator state file" "$work/clone3.log" ||
    { echo "FAIL: no WARNING for the failed write at start"; fail=1; }
g3() { "$bindir/psql" -X -h "$work" -p "$C3" -U postgres -d postgres -c "SELECT sno_generate(1)" 2>&1 || true; }
out="$(g3)"
check "copy with an unwritable state file: refused with the original's partition" \
    "$(grep -c 'this server is a copy of one that made IDs with partition 9' <<<"$out")" "1"
out="$(q "$C3" -c "SELECT sno_generator_initialize(force => true)" 2>&1 || true)"
check "force neither accepts the original's partition nor half-writes" \
    "$(grep -c 'could not write sno generator state file' <<<"$out")" "1"
check "then: still refused with the original's partition" \
    "$(grep -c 'this server is a copy of one that made IDs with partition 9' <<<"$(g3)")" "1"
# The HINT's first branch: its own partition.
q "$C3" -c "ALTER SYSTEM SET sno.partition = 11" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.3
out="$(g3)"
check "own partition, state file still unwritable: no ID" "$(grep -c 'could not write sno generator state file' <<<"$out")" "1"
grep -q "HINT:  Check the data directory's free space and permissions." <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
# Following that HINT: the obstacle is in the data directory.
rm -rf "$work/clone3/sno_generator.state.tmp"
check "then IDs with its own partition" "$(q "$C3" -c "SELECT sno_partition(sno_generate(1))")" "11"
exit $fail
