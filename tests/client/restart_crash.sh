#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=all server=no cpu=0 estimate=60
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
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup restart_crash "$3" $(($2 + 300)) $(($2 + 399))

# new_cluster NAME: a new server (the previous one dropped), sno preloaded, with an ids table.
srv=""
new_cluster() {
    [[ -n "$srv" ]] && node_drop "$srv"
    srv="$1"
    node_new "$srv"
    node_initdb "$srv"
    node_cmdline "$srv" shared_preload_libraries=sno sno.max_clock_wait=500
    node_start "$srv"
    psql -c "CREATE EXTENSION sno" -c "CREATE TABLE ids (id sno PRIMARY KEY, phase int)"
}
psql() { node_psql "$srv" "$@"; }
generate() { psql -c "INSERT INTO ids SELECT sno_generate(1), $1 FROM generate_series(1, 20000)"; }
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
new_cluster clean_restart
generate 1
node_stop "$srv" fast
node_clock "$srv" -3600s
node_start "$srv"
after_restart "clean restart, clock back 1 h"
# A second hour back, into time already used on both timelines: refuse, never repeat.
node_stop "$srv" fast
node_clock "$srv" -7200s
node_start "$srv"
out="$(psql -c "SELECT sno_generate(1)" 2>&1 || true)"
check "clean restart, clock back 2 h: sno_generate gives up" \
    "$(grep -c 'sno_generate gave up after waiting' <<<"$out")" "1"

# --- immediate shutdown ------------------------------------------------------------------
new_cluster immediate_stop
generate 1
node_stop "$srv" immediate
node_clock "$srv" -3600s
node_start "$srv"
after_restart "immediate shutdown, clock back 1 h"

# --- a backend crashes: the postmaster reinitialises shared memory ------------------------
new_cluster backend_crash
generate 1
node_clock "$srv" -3600s
psql -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
sleep 0.5
victim="$(psql -At -c "SELECT pid FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND pid <> pg_backend_pid()")"
kill -9 "$victim"
wait || true
sleep 1
node_wait_ready "$srv" || bad "the server did not come back after the backend crash"
grep -q "terminated by signal 9" "$(node_log "$srv")" || { echo "FAIL: no crash restart in the log"; fail=1; }
after_restart "backend crash, clock back 1 h"

# --- the postmaster and its children killed --------------------------------------------
new_cluster postmaster_kill
generate 1
node_kill "$srv"
node_clock "$srv" -3600s
node_start "$srv"
after_restart "postmaster SIGKILL, clock back 1 h"

# --- corrupt and missing state files -----------------------------------------------------
# With an explicit partition, generation refuses until the administrator acts; with a derived
# one it goes on with a new derived partition (nothing is needed from the lost file).
new_cluster state_file
psql -c "ALTER SYSTEM SET sno.partition = 5" -c "SELECT pg_reload_conf()" >/dev/null
generate 1
node_stop "$srv" fast
printf 'x' | dd of="$(node_data "$srv")/sno_generator.state" bs=1 seek=30 conv=notrunc 2>/dev/null
node_start "$srv"
grep -q 'WARNING:  sno: cannot use the generator state file' "$(node_log "$srv")" ||
    { echo "FAIL: no WARNING for a corrupt state file"; fail=1; }
out="$(psql -c "SELECT sno_generate(1)" 2>&1 || true)"
check "corrupt state file: sno_generate refuses" \
    "$(grep -c 'cannot use the sno generator state file' <<<"$out")" "1"
grep -q 'HINT:  Give this server a sno.partition no server has used, below 61440' <<<"$out" || { echo "FAIL: no hint in: $out"; fail=1; }
check "corrupt state file: the view says why" \
    "$(psql -At -c "SELECT state LIKE 'unusable state file: the file is corrupt%' FROM sno_generator")" "t"
out="$(psql -c "SELECT sno_generator_initialize()" 2>&1 || true)"
check "corrupt state file: initialize without force refuses" \
    "$(grep -c 'cannot use the sno generator state file' <<<"$out")" "1"
# The HINT: a partition no server has used (below 61440; this test's servers used none of its
# list), then force.
psql -c "ALTER SYSTEM SET sno.partition = 61439" -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.2
check "corrupt state file: initialize(force => true) replaces it" \
    "$(psql -At -c "SELECT sno_generator_initialize(force => true)" 2>/dev/null)" "t"
generate 2
check "corrupt state file: then 40000 distinct IDs" \
    "$(psql -At -c "SELECT count(*), count(DISTINCT id) FROM ids")" "40000|40000"

node_stop "$srv" fast
mv "$(node_data "$srv")/sno_generator.state" "$(node_dir "$srv")/state.saved"
node_start "$srv"
out="$(psql -c "SELECT sno_generate(1)" 2>&1 || true)"
check "missing state file: sno_generate refuses" \
    "$(grep -c 'sno generator has no state file' <<<"$out")" "1"
# The HINT's first branch: put back the file this server last wrote, then initialize.
cp "$(node_dir "$srv")/state.saved" "$(node_data "$srv")/sno_generator.state"
chown postgres: "$(node_data "$srv")/sno_generator.state"
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
node_stop "$srv" fast
rm "$(node_data "$srv")/sno_generator.state"
node_clock "$srv" -7s
node_start "$srv"
generate 5
check "derived partition, state file lost: generation goes on with a WARNING" \
    "$(grep -c 'IDs are now made with a new derived partition' "$(node_log "$srv")")" "1"
check "derived partition, state file lost: a new partition" \
    "$(psql -At -c "SELECT count(DISTINCT sno_partition(id)) FROM ids WHERE phase IN (4, 5)")" "2"
check "derived partition, state file lost: 100000 distinct IDs" \
    "$(psql -At -c "SELECT count(*), count(DISTINCT id) FROM ids")" "100000|100000"
[[ -n "$before" ]] || fail=1
exit "$fail"
