#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=0 estimate=150
# The generator under HA-time events (issue 21): what a stalled synchronous standby, a reload, a
# moved data directory and a promotion do to sno_generate and to the sessions that call it.
#
#   1. Stalled synchronous standby. p (partition 9, set with ALTER SYSTEM: its standby s has
#      it too) and its synchronous standby s, stopped with SIGSTOP (every process of it). Each
#      way a wait for it can end must end sno_generate with SQLSTATE 57014 and sno's message
#      ("no synchronous standby confirmed"), with no ID handed out and none of PostgreSQL's
#      "already committed locally" WARNING reaching the client: a statement_timeout, for one
#      ID and for a long INSERT ... SELECT (no row of it stays); pg_cancel_backend; a
#      pg_terminate_backend (the connection ends, no ID printed); a read-only query whose IDs a
#      parallel worker makes (no commit record: only sno's own wait covers them); 20 calls at
#      once in the session of a cancelled wait (none may take IDs on the fast path); a session
#      with log_min_messages = log; a session with synchronous_commit = local (no wait, as for
#      its commits) set back to on (it waits again). Then the
#      HINT is followed as printed (its pg_stat_replication query, once s runs again) and IDs
#      are made; p stops with -m immediate and s, its clock 5 s behind, is promoted: no ID any
#      client was given is made again, and the takeover of partition 9 at the promotion is in
#      s's server log and its sno_generator_lineage, not in the client's output.
#   2. A reload in the middle of a statement. p2 makes IDs in one INSERT ... SELECT for about
#      4 s (one row each millisecond, with clock_timestamp() and sno_current_partition() of the
#      row); meanwhile sno.partition goes from 21 to 22 with ALTER SYSTEM and pg_reload_conf().
#      Every row made after a new session sees 22 has partition 22 (and reports 22); every row
#      made before the reload was asked for has 21.
#   3. A moved data directory (cp -a of a stopped server: another global/pg_control inode, the
#      same system identifier and timeline, no backup_label), partition 31: refused, with a
#      HINT whose move branch is followed as printed (sno_generator_initialize(take_over =>
#      true)); partition 31 goes on, and no ID of the old directory is made again.
#   4. A clone started beside its original, made the same way (cp -a of the stopped original,
#      partition 41), both running: the clone is refused with the same HINT, whose first branch
#      is followed (the first partition of its list no server used, and a reload), after a restart that leaves only
#      that branch; both make IDs at once. Then a copy of a stopped standby of the original
#      (cp -a, standby.signal removed): its HINT has no move branch (41 was its primary's, never
#      its own); given the next of that list. No ID twice.
#   5. RUST_BACKTRACE=1 in a server's environment puts no backtrace into an error's DETAIL (one of
#      PostgreSQL's, raised under sno's planner hook, and one of sno's), and a 100 MB bad input
#      makes a short error that names its length.
#
# Usage: lineage_ha_events.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
cluster_setup lineage_ha_events "$2" "$3"

SNO_MSG="no synchronous standby confirmed the generator's bound"
COPY_HINT="Give this server a sno.partition no server has used, below 61440 (sno reserves 61440-65535), for example the first of 61439, 57343, 53247, ... (4095 + 4096 * k, k from 14 down to 0) that no server has used, in postgresql.conf or with ALTER SYSTEM, and reload the configuration."

# stall NAME STOP|CONT: every process of a node stopped or continued.
stall() {
    local pm
    pm="$(head -1 "$(node_data "$1")/postmaster.pid")"
    # shellcheck disable=SC2046 # a list of pids
    kill -"$2" "$pm" $(pgrep -P "$pm" | xargs)
}

# expect_cancel WHAT OUTPUT: OUTPUT (psql's, verbose) is sno's 57014 error, without an ID or
# PostgreSQL's commit WARNING.
expect_cancel() {
    local what="$1" out="$2"
    check "$what: SQLSTATE 57014" "$(grep -o 'ERROR:  57014' <<<"$out" | head -n 1)" "ERROR:  57014"
    check "$what: sno's message" "$(grep -c "$SNO_MSG" <<<"$out")" 1
    check "$what: no ID handed out" "$(grep -cE '^[2-9a-x]{16}$' <<<"$out" || true)" 0
    check "$what: no 'committed locally' WARNING to the client" "$(grep -c 'committed locally' <<<"$out" || true)" 0
}

# new_record NAME: waits until the durable horizon written before is behind the clock, so the
# next ID needs a new lineage record (which the stalled standby cannot confirm). Only without
# an idle lease (p has sno.idle_horizon = 0), which would cover a pause of up to a minute.
new_record() { sleep 3; }

verbose() { node_psql "$1" -v VERBOSITY=verbose "${@:2}"; }

echo "--- 1. a stalled synchronous standby"
node_init p
# No idle lease (sno.idle_horizon = 0): new_record's pause must leave the durable horizon behind
# the clock, so that the next ID needs a new lineage record for the stalled standby to confirm.
node_cmdline p shared_preload_libraries=sno max_parallel_workers_per_gather=2 sno.idle_horizon=0
node_start p
node_sql p "CREATE EXTENSION sno" "ALTER SYSTEM SET sno.partition = 9" "SELECT pg_reload_conf()" >/dev/null
node_ids_table p
node_gen p before 2000
node_basebackup p s standby
node_cmdline s shared_preload_libraries=sno
node_clock s -5s
node_start s
node_make_sync p
check "s is synchronous" "$(node_sql p "SELECT sync_state FROM pg_stat_replication")" sync
node_gen p synced 2000

# A long INSERT ... SELECT (its rows streamed, not materialized first) that is making IDs when
# the standby stalls: its next lineage record (about a second later) is never confirmed.
before="$(node_sql p "SELECT count(*) FROM ids")"
verbose p -c "SET statement_timeout = '8s'" \
    -c "INSERT INTO ids SELECT sno_generate(1), 'long' FROM (SELECT generate_series(1, 1000000000)) g" \
    >"$CL_WORK/long.out" 2>&1 &
long=$!
sleep 1.5
stall s STOP
# statement_timeout ends it at 8 s; a statement that goes on after its cancel (as sno did
# before: PostgreSQL's wait returns after a cancel) is a failure, ended here.
for _ in $(seq 150); do kill -0 "$long" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$long" 2>/dev/null; then
    bad "the long INSERT ... SELECT still runs 15 s after its statement_timeout of 8 s"
    node_sql p "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'INSERT INTO ids SELECT sno_generate(1), ''long''%'" >/dev/null
fi
wait "$long" || true
expect_cancel "a long INSERT ... SELECT, statement_timeout" "$(cat "$CL_WORK/long.out")"
check "no row of the cancelled INSERT stays" "$(node_sql p "SELECT count(*) FROM ids")" "$before"

new_record
out="$(verbose p -c "SET statement_timeout = '2s'" -c "SELECT sno_generate()" 2>&1 || true)"
echo "$out" | sed 's/^/    (p says) /' | head -n 4
expect_cancel "one ID, statement_timeout" "$out"

# The same session again at once, 20 times: no call may take IDs on the fast path after a
# cancelled wait (the cursor still serves the unit the cancelled call opened).
out="$(node_psql p -v ON_ERROR_STOP=0 -v VERBOSITY=verbose -c "SET statement_timeout = '2s'" \
    -c "SELECT sno_generate()" -c "$(printf 'SELECT sno_generate();%.0s' $(seq 20))" 2>&1 || true)"
check "20 retries in the session of a cancelled wait: no ID" "$(grep -cE '^[2-9a-x]{16}$' <<<"$out" || true)" 0
check "20 retries: each cancelled with sno's message" "$(grep -c "$SNO_MSG" <<<"$out")" 2

# log_min_messages = log (LOG ranks above WARNING for the server log): the cancel is still seen.
new_record
out="$(verbose p -c "SET log_min_messages = log" -c "SET statement_timeout = '2s'" -c "SELECT sno_generate()" 2>&1 || true)"
expect_cancel "one ID, log_min_messages = log" "$out"

# synchronous_commit = local: the session does not wait (as its commits do not); set back to on
# in the same session, its next ID waits again.
new_record
out="$(verbose p -c "SET synchronous_commit = local" -c "SELECT sno_generate()" \
    -c "SET synchronous_commit = on" -c "SET statement_timeout = '2s'" -c "SELECT sno_generate()" 2>&1 || true)"
check "synchronous_commit = local: an ID without waiting" "$(grep -cE '^[2-9a-x]{16}$' <<<"$out" || true)" 1
grep -E '^[2-9a-x]{16}$' <<<"$out" >>"$(ledger_file p local)" || true
expect_cancel "synchronous_commit back on in the session" "$(grep -vE '^[2-9a-x]{16}$' <<<"$out")"

# pg_cancel_backend and pg_terminate_backend: a session waiting in sno_generate.
for how in cancel terminate; do
    new_record
    mark="$(node_log_mark p)"
    verbose p -c "SELECT pg_backend_pid()" -c "SELECT sno_generate()" >"$CL_WORK/$how.out" 2>&1 &
    waiter=$!
    pid=""
    for _ in $(seq 100); do
        pid="$(node_sql p "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT sno_generate()' AND wait_event = 'SyncRep'")"
        [[ -n "$pid" ]] && break
        sleep 0.1
    done
    check "$how: the session waits for the standby (wait_event SyncRep)" "$([[ -n "$pid" ]] && echo yes)" yes
    node_sql p "SELECT pg_${how}_backend($pid)" >/dev/null
    wait "$waiter" || true
    out="$(cat "$CL_WORK/$how.out")"
    if [[ "$how" == cancel ]]; then
        expect_cancel "pg_cancel_backend" "$out"
    else
        # PostgreSQL ends the session (FATAL 57P01) before an ERROR could reach anyone.
        check "pg_terminate_backend: the connection ends" "$(grep -q 'terminating connection\|server closed the connection' <<<"$out" && echo yes)" yes
        check "pg_terminate_backend: no ID handed out" "$(grep -cE '^[2-9a-x]{16}$' <<<"$out" || true)" 0
        sleep 0.5
        check "pg_terminate_backend: the session ended in the server log" \
            "$(node_log_since p "$mark" | grep -c "FATAL:  terminating connection due to administrator command")" 1
    fi
done

# A read-only query whose IDs a parallel worker makes: nothing commits, so nothing else waits.
new_record
if ((CL_MAJOR >= 16)); then force=debug_parallel_query; else force=force_parallel_mode; fi
out="$(verbose p -c "SET $force = on" -c "SET statement_timeout = '3s'" \
    -c "SELECT sno_generate(2) FROM generate_series(1, 10)" 2>&1 || true)"
check "a parallel worker's IDs: SQLSTATE 57014" "$(grep -o 'ERROR:  57014' <<<"$out" | head -n 1)" "ERROR:  57014"
check "a parallel worker's IDs: none handed out" "$(grep -cE '^[2-9a-x]{16}$' <<<"$out" || true)" 0
plan="$(node_sql p "SET $force = on" "EXPLAIN (COSTS OFF) SELECT sno_generate(2) FROM generate_series(1, 10)")"
check "a parallel worker's IDs: the plan has a Gather" "$(grep -c Gather <<<"$plan")" 1

# The HINT, followed as printed: its query on pg_stat_replication, once s runs again.
hint="$(msg_field HINT "$(verbose p -c "SET statement_timeout = '1s'" -c "SELECT sno_generate()" 2>&1 || true)")"
echo "    HINT: $hint"
q="$(hint_sql "$hint" 1)"
check "the HINT names a query" "$([[ "$q" == "SELECT application_name, state, sync_state FROM pg_stat_replication;" ]] && echo yes)" yes
stall s CONT
for _ in $(seq 100); do
    [[ "$(node_sql p "$q" | cut -d'|' -f2,3)" == "streaming|sync" ]] && break
    sleep 0.1
done
check "the HINT's query: s streams, synchronous" "$(node_sql p "$q" | cut -d'|' -f2,3)" "streaming|sync"
node_gen p after_hint 2000
# IDs only read, then the failover at once.
node_psql p -c "SELECT sno_generate(1) FROM generate_series(1, 5000)" >>"$(ledger_file p read)"
node_stop p immediate
mark="$(node_log_mark s)"
node_promote s
node_psql s -c "COPY (INSERT INTO ids (id, origin) SELECT sno_generate(1), 's' FROM generate_series(1, 5000) RETURNING id) TO STDOUT" \
    >>"$(ledger_file s promoted)" 2>"$CL_WORK/s.said"
check "s took partition 9 over" "$(node_partition s)" 9
check "no message of sno reached s's client" "$(grep -c sno "$CL_WORK/s.said" || true)" 0
for _ in $(seq 50); do
    grep -q "partition 9 was used before this server's promotion" <(node_log_since s "$mark") && break
    sleep 0.1
done
check "the takeover is in s's server log" \
    "$(node_log_since s "$mark" | grep -c "LOG:  sno: partition 9 was used before this server's promotion")" 1
check "the takeover is in s's sno_generator_lineage: partition 9 used before the promotion, with its bound" \
    "$(node_sql s "SELECT count(*) FROM sno_generator_lineage WHERE partition = 9 AND NOT used_here AND ids_until IS NOT NULL")" 1
check "and partition 9 used by s itself since" \
    "$(node_sql s "SELECT count(*) FROM sno_generator_lineage WHERE partition = 9 AND used_here")" 1
ledger_check "a stalled synchronous standby, cancels, a failover"

echo "--- 2. a reload in the middle of a statement"
node_init p2
node_cmdline p2 shared_preload_libraries=sno
node_start p2
node_sql p2 "CREATE EXTENSION sno" "ALTER SYSTEM SET sno.partition = 21" "SELECT pg_reload_conf()" >/dev/null
node_sql p2 "CREATE TABLE made (t timestamptz, id sno, reported int)"
node_psql p2 -c "INSERT INTO made SELECT clock_timestamp(), sno_generate(), sno_current_partition()
                 FROM generate_series(1, 4000) g WHERE pg_sleep(0.001)::text = ''" &
long=$!
sleep 1.5
asked="$(node_sql p2 "SELECT clock_timestamp()")"
node_sql p2 "ALTER SYSTEM SET sno.partition = 22" "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 100); do
    [[ "$(node_sql p2 "SHOW sno.partition")" == 22 ]] && break
    sleep 0.01
done
seen="$(node_sql p2 "SELECT clock_timestamp()")"
wait "$long"
r="$(node_sql p2 "SELECT count(*) FILTER (WHERE t < '$asked'), count(*) FILTER (WHERE t < '$asked' AND sno_partition(id) = 21),
                        count(*) FILTER (WHERE t > '$seen'), count(*) FILTER (WHERE t > '$seen' AND sno_partition(id) = 22 AND reported = 22)
                 FROM made")"
IFS='|' read -r n_before ok_before n_after ok_after <<<"$r"
echo "    $n_before rows before the reload was asked for, $n_after after a new session saw it"
check "the statement ran across the reload (over 500 rows before and after)" "$((n_before > 500 && n_after > 500))" 1
check "every row made before the reload: partition 21" "$ok_before" "$n_before"
check "every row made after it: partition 22, reported by sno_current_partition()" "$ok_after" "$n_after"
check "the statement's IDs are distinct" "$(node_sql p2 "SELECT count(*) - count(DISTINCT id) FROM made")" 0

echo "--- 3. a moved data directory"
node_init m
node_cmdline m shared_preload_libraries=sno
node_start m
node_sql m "CREATE EXTENSION sno" "ALTER SYSTEM SET sno.partition = 31" "SELECT pg_reload_conf()" >/dev/null
node_ids_table m
node_gen m old_dir 3000
node_stop m
node_new m2
cp -a "$(node_data m)" "$(node_data m2)"
node_drop m
node_cmdline m2 shared_preload_libraries=sno
node_start m2
out="$(verbose m2 -c "SELECT sno_generate()" 2>&1 || true)"
check "the moved directory is refused first" "$(msg_field ERROR "$out")" \
    "55000: this server is a copy of one that made IDs with partition 31"
hint="$(msg_field HINT "$out")"
echo "    HINT: $hint"
check "its HINT has the branch for a move" "$(grep -c 'moved or copied while its server was stopped' <<<"$hint")" 1
q="$(hint_sql "$hint" 1)"
check "the move branch's command" "$q" "SELECT sno_generator_initialize(take_over => true);"
node_sql m2 "$q" >/dev/null
node_gen m2 moved 3000
check "the moved server goes on with partition 31" "$(node_partition m2)" 31
ledger_check "a moved data directory"

echo "--- 4. a clone started beside its original"
node_init c1
node_cmdline c1 shared_preload_libraries=sno
node_start c1
node_sql c1 "CREATE EXTENSION sno" "ALTER SYSTEM SET sno.partition = 41" "SELECT pg_reload_conf()" >/dev/null
node_ids_table c1
node_gen c1 first 2000
node_stop c1
node_new c2
cp -a "$(node_data c1)" "$(node_data c2)"
node_cmdline c2 shared_preload_libraries=sno
node_start c1
node_start c2
node_gen c1 beside 2000
out="$(verbose c2 -c "SELECT sno_generate()" 2>&1 || true)"
check "the clone is refused" "$(msg_field ERROR "$out")" \
    "55000: this server is a copy of one that made IDs with partition 41"
hint="$(msg_field HINT "$out")"
check "the HINT's first branch: its own sno.partition and a reload" \
    "$(grep -cF "$COPY_HINT" <<<"$hint")" 1
# Restarted before the HINT is followed, it no longer knows it was copied at this start: the
# HINT keeps only the first branch (the safe default).
node_restart c2
hint2="$(msg_field HINT "$(verbose c2 -c "SELECT sno_generate()" 2>&1 || true)")"
check "after a restart, the HINT has only the first branch" "$hint2" "$COPY_HINT"
# Followed literally: the first partition of the HINT's list no server has used.
p42="$(hint_partition "$hint2")" || die "following the HINT: $hint2"
node_sql c2 "ALTER SYSTEM SET sno.partition = $p42" "SELECT pg_reload_conf()" >/dev/null
node_gen c2 own 1 >/dev/null
node_gen c1 together 3000 &
g1=$!
node_gen c2 together 3000
wait "$g1"
check "the clone makes IDs with the HINT's $p42" "$(node_partition c2)" "$p42"
check "the original goes on with 41" "$(node_partition c1)" 41
# A copy of a stopped standby (cp -a, standby.signal removed): partition 41 was its primary's,
# never its own, so the HINT has no branch for a move.
node_basebackup c1 c1s standby
node_cmdline c1s shared_preload_libraries=sno
node_start c1s
node_gen c1 before_standby_copy 2000
node_wait_replay c1s "$(node_lsn c1)"
node_stop c1s
node_new c3
cp -a "$(node_data c1s)" "$(node_data c3)"
rm "$(node_data c3)/standby.signal"
node_cmdline c3 shared_preload_libraries=sno
node_start c3
out="$(verbose c3 -c "SELECT sno_generate()" 2>&1 || true)"
check "a copy of a stopped standby is refused" "$(msg_field ERROR "$out")" \
    "55000: this server is a copy of one that made IDs with partition 41"
check "its HINT: only the first branch (41 was its primary's)" "$(msg_field HINT "$out")" "$COPY_HINT"
p43="$(hint_partition "$(msg_field HINT "$out")")" || die "following the HINT"
node_sql c3 "ALTER SYSTEM SET sno.partition = $p43" "SELECT pg_reload_conf()" >/dev/null
node_gen c3 own 2000
node_gen c1 after_standby_copy 2000
ledger_check "a clone beside its original, a copy of its standby"

echo "--- 5. errors: no backtrace with RUST_BACKTRACE=1, a 100 MB bad input"
node_init e
node_cmdline e shared_preload_libraries=sno
CL_ENV[e]="RUST_BACKTRACE=1"
node_start e
node_sql e "CREATE EXTENSION sno" >/dev/null
# PostgreSQL's own error, raised while sno's planner hook runs (pgrx turns it into a Rust panic
# and back, capturing a backtrace when RUST_BACKTRACE asks for one), and one of sno's.
out="$(verbose e -c "SELECT 1/0" 2>&1 || true)"
check "PostgreSQL's error through sno's planner hook, RUST_BACKTRACE=1" "$(msg_field ERROR "$out")" "22012: division by zero"
check "its DETAIL: none (no backtrace)" "$(grep -c '^DETAIL' <<<"$out" || true)" 0
check "nothing of a backtrace in it" "$(grep -ciE 'backtrace|panicking|^ +[0-9]+: ' <<<"$out" || true)" 0
out="$(verbose e -c "SELECT sno_from_parts(now(), 300, 0, 0)" 2>&1 || true)"
check "sno's error, RUST_BACKTRACE=1: its DETAIL only" "$(msg_field DETAIL "$out")" "The value must be 0 to 255."
check "nothing of a backtrace in it" "$(grep -ciE 'backtrace|panicking|^ +[0-9]+: ' <<<"$out" || true)" 0
out="$(verbose e -c "SELECT repeat('x', 100000000)::sno" 2>&1 || true)"
n="$(wc -c <<<"$out")"
check "a 100 MB bad input: the message is short (under 1000 bytes)" "$((n < 1000))" 1
check "a 100 MB bad input: the message names its start and length" \
    "$(msg_field ERROR "$out")" "22P02: invalid input syntax for type sno: \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...\" (100000000 bytes)"

ledger_summary
exit "$fail"
