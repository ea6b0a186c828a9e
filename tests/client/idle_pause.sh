#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=0 estimate=90
# Pauses (issue 27): the first ID after a pause does not wait for the state file, an idle
# server stays idle, a clean restart flips nothing, and crashes within the idle lease wait at
# most the short horizon. Two servers of its own, on the real clock:
#   A  with sno.idle_horizon = 0 each first insert after a pause waits for the state file
#      (the checks below can fail); set to 60 s, the idle lease is written once (60 s past the
#      clock), then nothing more, in the state file or in WAL, and the lease's WAL record is
#      unimportant: an idle server's timed checkpoint is skipped (checkpoint_timeout = 30 s,
#      nothing for 32 s); then inserts after 3 s pauses leave state_write_waits still;
#   B  meanwhile: a clean restart right after the last ID resumes on the same tick-tock bit
#      (the state file has the last unit used); an immediate shutdown within the lease flips
#      it without waiting; a second one right after waits at most the short horizon (2 s);
#      zero duplicates over every ID made.
# About 45 s. PostgreSQL 15 only (sno's own code, the same on every major).
#
# Usage: idle_pause.sh SOCKET_DIR PORT BINDIR  (only BINDIR is used: own clusters)
set -euo pipefail
if [[ -n "${SNO_PG_MAJOR:-}" && "$SNO_PG_MAJOR" != 15 ]]; then
    echo "ok: skipped idle_pause.sh: it runs on PostgreSQL 15 only (SNO_PG_MAJOR=$SNO_PG_MAJOR)"
    exit 0
fi
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup idle_pause "$3" $(($2 + 750)) $(($2 + 759))

a() { node_psql a -X -At -v ON_ERROR_STOP=1 "$@"; }
b() { node_psql b -X -At -v ON_ERROR_STOP=1 "$@"; }
view() { "$1" -c "SELECT $2 FROM sno_generator"; }
# timed NODE SQL: the statement's time in whole milliseconds (psql's \timing).
timed() { "$1" -c '\timing on' -c "$2" | sed -n 's/^Time: \([0-9]*\)\..*/\1/p' | tail -n 1; }
# leased NODE: waits (3 s at most) until the horizon on disk is at least 30 s past the clock.
leased() {
    local i
    for i in $(seq 30); do
        [[ "$(view "$1" "horizon > now() + interval '30 s'")" == t ]] && return 0
        sleep 0.1
    done
    return 1
}

for n in a b; do
    node_new "$n"
    node_clock_mode "$n" none
    node_initdb "$n"
    node_cmdline "$n" shared_preload_libraries=sno autovacuum=off log_checkpoints=on \
        checkpoint_timeout=30s
    node_start "$n"
done
# In postgresql.conf, not on the command line, so that ALTER SYSTEM can set it later.
node_conf a "sno.idle_horizon = 0"
node_psql a -c "SELECT pg_reload_conf()" >/dev/null
sleep 0.5 # the worker reloads before the state file exists (CREATE EXTENSION below)
a -c "CREATE EXTENSION sno" -c "CREATE TABLE t (id sno PRIMARY KEY DEFAULT sno_generate(1), v int)" \
    -c "CREATE TABLE b (id bigserial PRIMARY KEY, v int)" >/dev/null
b -c "CREATE EXTENSION sno" -c "CREATE TABLE t (id sno PRIMARY KEY DEFAULT sno_generate(1), v int)" >/dev/null

echo "--- A: without the lease (sno.idle_horizon = 0), every first ID after a pause waits"
w0="$(view a state_write_waits)"
for i in 1 2; do
    sleep 2.5 # past the short horizon
    a -c "INSERT INTO t (v) VALUES (1)" >/dev/null
done
check "A: with sno.idle_horizon = 0, both inserts after a pause waited for the state file" \
    "$(($(view a state_write_waits) - w0))" 2

echo "--- A: the lease, and an idle server stays idle"
# The lease is written after the last checkpoint, and its record is the only WAL since: the
# timed checkpoint 30 s later is skipped only if that record is unimportant.
# This test's own queries must not write WAL then: catalog pages pruned and hinted first
# (with data checksums, a hint bit set after a checkpoint is logged), the queries run once.
a -c "VACUUM" >/dev/null
leased a || true
view a "state_writes, pg_current_wal_insert_lsn()" >/dev/null
a -c "CHECKPOINT" >/dev/null
mark_a="$(stat -c %s "$(node_log a)")"
a -c "ALTER SYSTEM SET sno.idle_horizon = '60s'" -c "SELECT pg_reload_conf()" >/dev/null
leased a || bad "A: no idle lease on disk 3 s after sno.idle_horizon was set ($(view a "horizon - now()"))"
check "A: the lease is sno.idle_horizon (60 s) past the clock, give or take 4 s" \
    "$(view a "horizon - now() BETWEEN interval '56 s' AND interval '60 s'")" t
writes_a="$(view a state_writes)"
lsn_a="$(a -c "SELECT pg_current_wal_insert_lsn()")"
idle_from=$SECONDS

echo "--- B: a clean restart right after the last ID"
b -c "INSERT INTO t (v) SELECT 1 FROM generate_series(1, 10000)" >/dev/null
before="$(view b "tick || ' ' || regressions")"
node_restart b fast
b -c "INSERT INTO t (v) SELECT 2 FROM generate_series(1, 10000)" >/dev/null
check "B: clean restart: same tick-tock bit, no regression" "$(view b "tick || ' ' || regressions")" "$before"
check "B: the state file got the last unit used at shutdown" \
    "$(grep -c 'generator state written at shutdown' "$(node_log b)")" 1

echo "--- B: two immediate shutdowns within the lease"
leased b || bad "B: no idle lease on disk"
node_stop b immediate
node_start b
tick0="$(view b tick)"
ms1="$(timed b "INSERT INTO t (v) SELECT 3 FROM generate_series(1, 10000)")"
tick1="$(view b tick)"
check "B: first crash within the lease: the tick-tock bit flipped" "$((tick0 != tick1))" 1
check "B: ... without waiting for the clock" "$(view b clock_waits)" 0
node_stop b immediate
node_start b
ms2="$(timed b "INSERT INTO t (v) VALUES (4)")"
b -c "INSERT INTO t (v) SELECT 4 FROM generate_series(1, 9999)" >/dev/null
echo "inserts after the crashes: $ms1 ms, $ms2 ms"
check "B: second crash right after: its first insert waited at most the short horizon (2 s, 2.3 s with the insert)" \
    "$((ms2 < 2300))" 1
check "B: no wait gave up" "$(view b clock_wait_failures)" 0
check "B: no lease while the other tick-tock timeline is used past the clock" \
    "$(view b "horizon < now() + interval '3 s'")" t
check "B: zero duplicates over all 40000 IDs" "$(b -c "SELECT count(*) || ' ' || count(DISTINCT id) FROM t")" \
    "40000 40000"

echo "--- A: after 32 s idle"
sleep $((idle_from + 32 - SECONDS > 0 ? idle_from + 32 - SECONDS : 0))
check "A: nothing written since the lease (state file)" "$(view a state_writes)" "$writes_a"
# PostgreSQL's own unimportant records (standby snapshots) may follow; none of sno's (its
# resource manager shows as custom213 to pg_waldump, which does not load sno).
check "A: nothing written since the lease (WAL)" \
    "$({ "$(node_bindir a)/pg_waldump" -p "$(node_data a)/pg_wal" -s "$lsn_a" 2>/dev/null || true; } |
        grep -c custom213 || true)" 0
check "A: the timed checkpoint was skipped" \
    "$(tail -c +"$((mark_a + 1))" "$(node_log a)" | grep -c 'checkpoint starting: time' || true)" 0

echo "--- A: pauses under the lease"
w0="$(view a state_write_waits)"
for i in 1 2; do
    sleep 3
    echo "insert after a 3 s pause: $(timed a "INSERT INTO t (v) VALUES (2)") ms"
done
check "A: two inserts after 3 s pauses, state_write_waits still" "$(view a state_write_waits)" "$w0"
check "A: zero duplicates" "$(a -c "SELECT count(*) - count(DISTINCT id) FROM t")" 0

exit "$fail"
