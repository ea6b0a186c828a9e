#!/usr/bin/env bash
# No ID twice across restarts and crashes, with the clock set back while the server is down.
# Each scenario runs a server of its own under libfaketime:
#   clean restart, immediate shutdown, a backend killed (postmaster reinitialises shared
#   memory), the postmaster and its children killed with SIGKILL;
# each time the clock goes back an hour before the server comes back, then IDs are made into
# the same primary key as before: zero duplicates, and the tick-tock bit has flipped. A second
# hour back, into time already used, makes sno_generate fail (bounded wait), never repeat.
# Then a corrupt and a missing state file: with an explicit partition generation refuses
# until the HINT is followed; with a derived one it goes on with a new partition.
#
# Usage: restart_crash.sh SOCKET_DIR PORT BINDIR  (only BINDIR is used: own clusters)
set -euo pipefail
bindir="$3"
port=$((${2} + 300))
lib=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
[[ -r "$lib" ]] || { echo "FAIL: libfaketime is not installed ($lib)"; exit 1; }
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

dir=""
new_cluster() {
    [[ -n "$dir" ]] && { stop immediate; rm -rf "$dir"; }
    dir="$(mktemp -d /tmp/sno-work/restart.XXXXXX)"
    chown postgres: "$dir"
    echo "+0" >"$dir/faketime"
    chmod a+r "$dir/faketime"
    export PGHOST="$dir" PGPORT="$port" PGUSER=postgres
    sudo -u postgres "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync >/dev/null
    start
    psql -c "CREATE EXTENSION sno" -c "CREATE TABLE ids (id sno PRIMARY KEY, phase int)"
}
start() {
    sudo -u postgres env LD_PRELOAD="$lib" FAKETIME_TIMESTAMP_FILE="$dir/faketime" FAKETIME_CACHE_DURATION=1 \
        FAKETIME_DONT_FAKE_MONOTONIC=1 DONT_FAKE_MONOTONIC=1 \
        "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
        -o "-p $port -k $dir -c listen_addresses='' -c shared_preload_libraries=sno -c sno.max_clock_wait=500" \
        start >/dev/null || { tail -20 "$dir/server.log"; return 1; }
}
stop() { sudo -u postgres "$bindir/pg_ctl" -D "$dir/data" -m "$1" -w stop >/dev/null 2>&1 || true; }
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -d postgres "$@"; }
trap '[[ -n "$dir" ]] && { stop immediate; rm -rf "$dir"; }' EXIT
generate() { psql -c "INSERT INTO ids SELECT sno_generate(1), $1 FROM generate_series(1, 20000)"; }
wait_ready() {
    for _ in $(seq 100); do "$bindir/pg_isready" -q && return 0; sleep 0.1; done
    return 1
}
after_restart() { # after_restart NAME: make IDs after the clock went back, check them
    local name="$1"
    if generate 2; then
        check "$name: 40000 distinct IDs before and after" \
            "$(psql -At -c "SELECT count(*), count(DISTINCT id) FROM ids")" "40000|40000"
        check "$name: IDs after the restart are on the other timeline" \
            "$(psql -At -c "SELECT string_agg(DISTINCT sno_tick(id)::text, ',') FROM ids WHERE phase = 2")" "1"
        check "$name: the clock was behind the earlier IDs" \
            "$(psql -At -c "SELECT max(sno_time(id)) FILTER (WHERE phase = 2) < min(sno_time(id)) FILTER (WHERE phase = 1) FROM ids")" "t"
    else
        echo "FAIL: $name: sno_generate failed after the restart"
        fail=1
    fi
}

# --- clean restart ---------------------------------------------------------------------
new_cluster
generate 1
stop fast
echo "-3600s" >"$dir/faketime"
start
after_restart "clean restart, clock back 1 h"
# A second hour back, into time already used on both timelines: refuse, never repeat.
stop fast
echo "-7200s" >"$dir/faketime"
start
out="$(psql -c "SELECT sno_generate(1)" 2>&1 || true)"
check "clean restart, clock back 2 h: sno_generate gives up" \
    "$(grep -c 'sno_generate gave up after waiting' <<<"$out")" "1"

# --- immediate shutdown ------------------------------------------------------------------
new_cluster
generate 1
stop immediate
echo "-3600s" >"$dir/faketime"
start
after_restart "immediate shutdown, clock back 1 h"

# --- a backend crashes: the postmaster reinitialises shared memory ------------------------
new_cluster
generate 1
echo "-3600s" >"$dir/faketime"
psql -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
sleep 0.5
victim="$(psql -At -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND pid <> pg_backend_pid()")"
kill -9 "$victim"
wait || true
sleep 1
wait_ready
grep -q "terminated by signal 9" "$dir/server.log" || { echo "FAIL: no crash restart in the log"; fail=1; }
after_restart "backend crash, clock back 1 h"

# --- the postmaster and its children killed --------------------------------------------
new_cluster
generate 1
pm="$(head -1 "$dir/data/postmaster.pid")"
kids="$(pgrep -P "$pm" | xargs)"
kill -9 "$pm"
# Its children notice the postmaster's death and exit; make sure none is left attached to
# the old shared memory.
for _ in $(seq 50); do
    alive=""
    for k in $kids; do [[ "$(ps -o stat= -p "$k" 2>/dev/null)" == [^Z]* ]] && alive+=" $k"; done
    [[ -z "$alive" ]] && break
    sleep 0.1
done
[[ -n "$alive" ]] && kill -9 $alive 2>/dev/null
# A killed postmaster can linger as a zombie until this machine's init reaps it; its lock
# files are stale, as after any postmaster crash.
if [[ "$(ps -o stat= -p "$pm" 2>/dev/null)" == Z* ]]; then
    rm -f "$dir/data/postmaster.pid" "$dir/.s.PGSQL.$port.lock"
fi
# Wait for the kernel to be done with it. A killed postmaster can linger as a zombie until
# this machine's init reaps it; a zombie's lock file is stale, as after any postmaster crash.
for _ in $(seq 100); do
    state="$(ps -o stat= -p "$pm" 2>/dev/null || true)"
    [[ -z "$state" ]] && break
    [[ "$state" == Z* ]] && { rm -f "$dir/data/postmaster.pid"; break; }
    sleep 0.1
done
echo "-3600s" >"$dir/faketime"
start
after_restart "postmaster SIGKILL, clock back 1 h"

# --- corrupt and missing state files -----------------------------------------------------
# With an explicit partition, generation refuses until the administrator acts; with a derived
# one it goes on with a new derived partition (nothing is needed from the lost file).
new_cluster
psql -c "ALTER SYSTEM SET sno.partition = 5" -c "SELECT pg_reload_conf()" >/dev/null
generate 1
stop fast
printf 'x' | dd of="$dir/data/sno_generator.state" bs=1 seek=30 conv=notrunc 2>/dev/null
start
grep -q 'WARNING:  sno: cannot use the generator state file' "$dir/server.log" ||
    { echo "FAIL: no WARNING for a corrupt state file"; fail=1; }
out="$(psql -c "SELECT sno_generate(1)" 2>&1 || true)"
check "corrupt state file: sno_generate refuses" \
    "$(grep -c 'cannot use the sno generator state file' <<<"$out")" "1"
grep -q 'HINT:  Give this server a sno.partition no server has used' <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
check "corrupt state file: the view says why" \
    "$(psql -At -c "SELECT state LIKE 'unusable state file: the file is corrupt%' FROM sno_generator")" "t"
out="$(psql -c "SELECT sno_generator_initialize()" 2>&1 || true)"
check "corrupt state file: initialize without force refuses" \
    "$(grep -c 'cannot use the sno generator state file' <<<"$out")" "1"
# The HINT: a partition no server has used, then force.
psql -c "ALTER SYSTEM SET sno.partition = 6" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.2
check "corrupt state file: initialize(force => true) replaces it" \
    "$(psql -At -c "SELECT sno_generator_initialize(force => true)" 2>/dev/null)" "t"
generate 2
check "corrupt state file: then 40000 distinct IDs" \
    "$(psql -At -c "SELECT count(*), count(DISTINCT id) FROM ids")" "40000|40000"

stop fast
mv "$dir/data/sno_generator.state" "$dir/state.saved"
start
out="$(psql -c "SELECT sno_generate(1)" 2>&1 || true)"
check "missing state file: sno_generate refuses" \
    "$(grep -c 'sno generator has no state file' <<<"$out")" "1"
# The HINT's first branch: put back the file this server last wrote, then initialize.
cp "$dir/state.saved" "$dir/data/sno_generator.state"
chown postgres: "$dir/data/sno_generator.state"
check "missing state file: initialize() adopts the file put back" "$(psql -At -c "SELECT sno_generator_initialize()")" "t"
check "missing state file: initialize() again does nothing" "$(psql -At -c "SELECT sno_generator_initialize()")" "f"
generate 3
check "missing state file: then 60000 distinct IDs" \
    "$(psql -At -c "SELECT count(*), count(DISTINCT id) FROM ids")" "60000|60000"

# A derived partition: a lost state file needs no step, and the new IDs use a new partition.
psql -c "ALTER SYSTEM RESET sno.partition" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.2
generate 4
before="$(psql -At -c "SELECT sno_current_partition()")"
stop fast
rm "$dir/data/sno_generator.state"
echo "-7s" >"$dir/faketime"
start
generate 5
check "derived partition, state file lost: generation goes on with a WARNING" \
    "$(grep -c 'IDs are now made with a new derived partition' "$dir/server.log")" "1"
check "derived partition, state file lost: a new partition" \
    "$(psql -At -c "SELECT count(DISTINCT sno_partition(id)) FROM ids WHERE phase IN (4, 5)")" "2"
check "derived partition, state file lost: 100000 distinct IDs" \
    "$(psql -At -c "SELECT count(*), count(DISTINCT id) FROM ids")" "100000|100000"
[[ -n "$before" ]] || fail=1
exit $fail
