#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=1 estimate=60
# sno.sequence_min / sno.sequence_max: sno_generate confined to a slice of the sequence pool,
# so that another generator (a Go or Rust service) on the rest of the pool shares the
# partition without a collision.
#  1. An unusable slice (bounds reversed, equal, too small) stops the server at start with
#     SQLSTATE 22023; its HINT, followed word for word, gives a slice the server starts with:
#     the bounds swapped when that makes a slice (the same numbers), otherwise no numbers at
#     all (any other slice could overlap another generator's): with no other generator here,
#     both lines deleted, the whole pool.
#  2. A 4-number slice (sno's smallest): every ID in it, the view shows the bounds, and 2,000
#     IDs (at most 4 per 4 ms unit) wait for full units, counted as before. Then a full unit is
#     not clock trouble: with sno.max_clock_wait = 0, three sessions of a role with no grants
#     hammering and a fourth asking for 400 IDs, the fourth gets all 400 (its turn in a later
#     unit is kept for it), none fails, and no wait counts as a failure; two more sessions of
#     that role give up every call after 1 ms (statement_timeout) meanwhile, so that turns are
#     given up by the thousand.
#  3. The server on 0-32767 with partition 4242, and the sno crate's own timeline
#     (tests/drivers/rust/tests/shared_partition.rs) on 32768-65535 with partition 4242 on the
#     same clock, both inserting into one primary key for several seconds: zero conflicts,
#     in units both used (both sides insert with ON CONFLICT DO NOTHING and count what was
#     not inserted; the server's side is one session inserting without a gap, so that the two
#     meet in most units however busy the machine). A control run with the client on the
#     server's slice must conflict.
#
# Usage: sequence_slice.sh SOCKET_DIR PORT BINDIR  (only BINDIR is used: own clusters)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
harness_setup sequence_slice "$3" $(($2 + 720)) $(($2 + 730))
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

node_new s
node_clock_mode s none
node_initdb s
psql() { node_psql s "$@"; }

# start_refused NAME: starts the node expecting it to refuse; prints its log's new lines.
start_refused() {
    local mark opts kv
    mark="$(node_log_mark_raw)"
    opts="-p $(node_port s) -k $CL_WORK -c listen_addresses=''"
    for kv in ${CL_CMDLINE[s]}; do opts+=" -c '$kv'"; done
    if as_pg "$(node_bindir s)/pg_ctl" -D "$(node_data s)" -l "$(node_log s)" -w -t 60 -o "$opts" start >/dev/null 2>&1; then
        bad "$1: the server started"
        node_stop s
    fi
    tail -c +"$((mark + 1))" "$(node_log s)"
}
node_log_mark_raw() { stat -c %s "$(node_log s)" 2>/dev/null || echo 0; }

# follow_hint HINT: does what "Set sno.sequence_min = A and sno.sequence_max = B in
# postgresql.conf, delete any sno.sequence_min or sno.sequence_max line ALTER SYSTEM left in
# postgresql.auto.conf ..., and start the server" says, leaving A and B in $lo_hint and $hi_hint;
# or, for the HINT without numbers, its branch for a partition no other generator shares (this
# test's): both lines deleted from both files (0 and 65535 then).
follow_hint() {
    lo_hint=- hi_hint=-
    local tail=' in postgresql\.conf, delete any sno\.sequence_min or sno\.sequence_max line ALTER SYSTEM left in postgresql\.auto\.conf \(it overrides postgresql\.conf\), and start the server\.$'
    local re="^Set sno\\.sequence_min = ([0-9]+) and sno\\.sequence_max = ([0-9]+)$tail"
    local re2="^Set sno\\.sequence_min and sno\\.sequence_max in postgresql\\.conf to a slice of at least 4 numbers \\(sno\\.sequence_max at least sno\\.sequence_min \\+ 3\\) that no other generator of this server's partition uses \\(a muyo/sno generator's own slice needs at least 6\\), or delete both lines there if no other generator shares the partition; delete any sno\\.sequence_min or sno\\.sequence_max line ALTER SYSTEM left in postgresql\\.auto\\.conf \\(it overrides postgresql\\.conf\\), and start the server\\.$"
    if [[ "$1" =~ $re ]]; then
        lo_hint="${BASH_REMATCH[1]}" hi_hint="${BASH_REMATCH[2]}"
        node_conf s "sno.sequence_min = $lo_hint" "sno.sequence_max = $hi_hint"
        as_pg sed -i '/^sno\.sequence_m\(in\|ax\)/d' "$(node_data s)/postgresql.auto.conf"
    elif [[ "$1" =~ $re2 ]]; then
        lo_hint=0 hi_hint=65535
        as_pg sed -i '/^sno\.sequence_m\(in\|ax\)/d' "$(node_data s)/postgresql.conf" "$(node_data s)/postgresql.auto.conf"
    else
        bad "HINT not understood: $1"
    fi
}

# --- 1. unusable slices ------------------------------------------------------------------
# Set in postgresql.conf, or with ALTER SYSTEM (postgresql.auto.conf) on a running server.
node_cmdline s shared_preload_libraries=sno
node_start s
psql -c "CREATE EXTENSION sno"
node_stop s
for case in "40000 30000 30000 40000 conf" "7 7 0 65535 conf" "65534 65535 0 65535 conf" \
    "9 7 0 65535 alter" "100 50 50 100 alter"; do
    read -r lo hi want_lo want_hi how <<<"$case"
    if [[ "$how" == conf ]]; then
        node_conf s "sno.sequence_min = $lo" "sno.sequence_max = $hi"
    else
        node_start s
        psql -c "ALTER SYSTEM SET sno.sequence_min = $lo" -c "ALTER SYSTEM SET sno.sequence_max = $hi"
        node_stop s
    fi
    out="$(start_refused "slice $lo-$hi ($how)")"
    check "slice $lo-$hi ($how): the server refuses to start with the message" \
        "$(grep -c "FATAL:  invalid sequence slice for sno: sno.sequence_min = $lo, sno.sequence_max = $hi" <<<"$out")" 1
    hint="$(msg_field HINT "$out")"
    echo "    HINT: $hint"
    follow_hint "$hint"
    check "slice $lo-$hi ($how): the HINT gives $want_lo-$want_hi" "$lo_hint-$hi_hint" "$want_lo-$want_hi"
    if node_start s; then
        check "slice $lo-$hi ($how): after the HINT the server starts and the view shows the slice" \
            "$(psql -c "SELECT sequence_min, sequence_max, ids_per_unit FROM sno_generator")" \
            "$lo_hint|$hi_hint|$((hi_hint - lo_hint + 1))"
        node_stop s
    fi
done
# The settings' own checks, as a client sees them.
node_start s
out="$(node_try s "ALTER SYSTEM SET sno.sequence_max = 70000")"
check "sno.sequence_max = 70000 is refused with the range" \
    "$(grep -c '70000 is outside the valid range for parameter "sno.sequence_max" (0 .. 65535)' <<<"$out")" 1
out="$(node_try s "SET sno.sequence_min = 5")"
check "SET sno.sequence_min in a session is refused (server start only)" \
    "$(grep -c 'parameter "sno.sequence_min" cannot be changed without restarting the server' <<<"$out")" 1
node_stop s
node_conf s "sno.sequence_min = 0" "sno.sequence_max = 65535"

# --- 2. the smallest slice ----------------------------------------------------------------
node_cmdline s shared_preload_libraries=sno sno.sequence_min=100 sno.sequence_max=103
node_start s
psql -c "CREATE TABLE small (id sno PRIMARY KEY)" \
    -c "INSERT INTO small SELECT sno_generate() FROM generate_series(1, 2000)"
check "2000 IDs of slice 100-103: sequences 100..103, at most 4 per unit" \
    "$(psql -c "SELECT min(sno_sequence(id)), max(sno_sequence(id)), max(n) FROM small,
        LATERAL (SELECT count(*) n FROM small s2 WHERE sno_time(s2.id) = sno_time(small.id)) c")" "100|103|4"
# A wait ends with the promised number of a later unit, and at most 4 more of the unit the clock
# reads by then: at most 5 IDs a wait.
check "the waits for a full unit are counted (at least 2000/5 - 1)" \
    "$(psql -c "SELECT full_unit_stalls >= 399, ids_per_unit FROM sno_generator")" "t|4"

# A full unit is not clock trouble: a DBA's "fail fast on clock trouble" (max_clock_wait = 0),
# three sessions of a role with no grants taking every number they can, and a fourth session.
psql -c "CREATE ROLE nobody LOGIN" -c "ALTER SYSTEM SET sno.max_clock_wait = 0" -c "SELECT pg_reload_conf()" >/dev/null
sleep 1
touch "$CL_WORK/hammer"
pids=()
for i in 1 2 3; do
    (
        n=0
        while [[ -e "$CL_WORK/hammer" ]]; do
            node_psql s -U nobody -c "SELECT sno_generate() FROM generate_series(1, 200)" >>"$CL_WORK/hammer-ids" ||
                { echo "hammer $i failed" >>"$CL_WORK/hammer-failed"; break; }
            n=$((n + 1))
        done
        echo "$n" >"$CL_WORK/hammer-$i"
    ) &
    pids+=($!)
done
# Two sessions giving up their calls (and their turns) after 1 ms, as fast as they can.
for i in 4 5; do
    (
        while [[ -e "$CL_WORK/hammer" ]]; do
            node_psql s -U nobody -c "SET statement_timeout = 1" -c "SELECT sno_generate() FROM generate_series(1, 50)" \
                >>"$CL_WORK/hammer-ids" 2>/dev/null || true
        done
    ) &
    pids+=($!)
done
sleep 2
t0=$(date +%s%N)
out="$(node_try s "SELECT sno_generate(7) FROM generate_series(1, 400)")"
ms=$((($(date +%s%N) - t0) / 1000000))
echo "$out" >"$CL_WORK/fourth-ids"
out="$(grep -c '^[2-9a-x]\{16\}$' "$CL_WORK/fourth-ids")"
sleep 1
rm -f "$CL_WORK/hammer"
wait "${pids[@]}"
echo "    the fourth session: $out in $ms ms; hammer statements: $(cat "$CL_WORK"/hammer-[123] | tr '\n' ' ')"
check "max_clock_wait = 0, three sessions hammering: the fourth gets all 400 IDs" "$out" 400
check "in bounded time (under 20 s; 400 IDs at a quarter of 1,000 a second take about 2 s)" "$((ms < 20000))" 1
check "no hammering session failed" "$(cat "$CL_WORK/hammer-failed" 2>/dev/null || echo none)" none
check "every hammering session made IDs" "$(cat "$CL_WORK"/hammer-[123] | awk '$1 > 0' | wc -l)" 3
check "the sessions giving up after 1 ms did give up calls (statement_timeout in the server log)" \
    "$(($(grep -c 'canceling statement due to statement timeout' "$(node_log s)") > 10))" 1
check "no wait ran out of sno.max_clock_wait" "$(psql -c "SELECT clock_wait_failures FROM sno_generator")" 0
psql -c "CREATE TABLE hammered (id sno NOT NULL)" -c "\\copy hammered FROM '$CL_WORK/hammer-ids'" \
    -c "\\copy hammered FROM '$CL_WORK/fourth-ids'"
check "zero duplicates over every ID of the four sessions ($(psql -c "SELECT count(*) FROM hammered") IDs)" \
    "$(psql -c "SELECT count(*) - count(DISTINCT id) FROM hammered")" 0
psql -c "ALTER SYSTEM RESET sno.max_clock_wait" -c "SELECT pg_reload_conf()" >/dev/null
node_stop s

# --- 3. a client generator on the other slice of the same partition -----------------------
# A new server, surely on tick-tock bit 0: a restart resumes on bit 1 after a crash within the
# last run's horizon or idle lease, or with the clock behind its last IDs (a clean stop right
# after them no longer flips), and the client makes IDs on bit 0, as muyo/sno does while its
# clock runs forward.
node_drop s
node_new s
node_clock_mode s none
node_initdb s
node_cmdline s shared_preload_libraries=sno sno.partition=4242 sno.sequence_min=0 sno.sequence_max=32767
node_start s
psql -c "CREATE EXTENSION sno"
check "the server is on tick-tock bit 0, the client's" "$(psql -c "SELECT tick FROM sno_generator")" 0
dsn="postgresql:///postgres?host=$CL_WORK&port=$(node_port s)&user=postgres"
log="$CL_WORK/cargo.log"
export CARGO_TARGET_DIR="${SNO_DRIVERS_TARGET_DIR:-$root/target/drivers-rust}"
cargo test --manifest-path "$root/tests/drivers/rust/Cargo.toml" --test shared_partition --no-run >"$log" 2>&1 ||
    { tail -n 30 "$log"; die "the client generator did not build"; }

# run NAME CLIENT-SLICE EXPECT: the server inserts sno_generate() in a loop while the client
# inserts its own IDs, for 6 s; prints the client's report. Leaves the conflicts of both
# sides in $conflicts.
run() {
    psql -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS shared" -c "CREATE TABLE shared (id sno PRIMARY KEY, origin text NOT NULL)"
    # The server's side: one session inserting statements of 200 rows, one after the other with
    # no gap, for longer than the client runs (a new connection per statement left gaps that a
    # busy machine made long enough for the two never to meet in a unit).
    : >"$CL_WORK/server-made"
    (
        psql -c "CREATE TEMP TABLE made (n int8)" -c "INSERT INTO made VALUES (0)" \
            -c "DO \$\$DECLARE d timestamptz := clock_timestamp() + interval '9 s'; n int8; BEGIN
                    WHILE clock_timestamp() < d LOOP
                        INSERT INTO shared SELECT sno_generate(), 'server' FROM generate_series(1, 200) ON CONFLICT (id) DO NOTHING;
                        UPDATE made SET n = made.n + 200;
                    END LOOP;
                END\$\$" -c "SELECT n FROM made" >"$CL_WORK/server-made" ||
            { echo "server insert failed" >"$CL_WORK/server-failed"; }
    ) &
    local pid=$! made rows client
    SNO_TEST_DSN="$dsn" SNO_CLIENT_SLICE="$2" SNO_CLIENT_PARTITION=4242 SNO_CLIENT_SECONDS=6 \
        SNO_EXPECT_CONFLICTS="$3" RUST_BACKTRACE=0 \
        cargo test --manifest-path "$root/tests/drivers/rust/Cargo.toml" --test shared_partition \
        -- --nocapture >"$log" 2>&1 && r=0 || r=$?
    wait "$pid"
    grep -E '^client IDs:' "$log" | sed 's/^/    /'
    check "$1: the client test passed" "$r" 0
    ((r == 0)) || tail -n 30 "$log"
    check "$1: every server insert ran" "$([[ -e "$CL_WORK/server-failed" ]] && echo failed || echo ok)" ok
    rm -f "$CL_WORK/server-failed"
    made="$(awk '{ s += $1 } END { print s + 0 }' "$CL_WORK/server-made")"
    rows="$(psql -c "SELECT count(*) FROM shared WHERE origin = 'server'")"
    client="$(sed -n 's/^client IDs: .* \([0-9]*\) conflicts$/\1/p' "$log")"
    conflicts=$((made - rows + ${client:-0}))
    echo "    server IDs: $made made, $rows inserted, $((made - rows)) conflicts"
}

run "slices 0-32767 (server) and 32768-65535 (client)" 32768-65535 0
check "slices apart: no conflict on either side" "$conflicts" 0
check "server IDs: partition 4242, sequences in 0..32767; client IDs: 32768..65535" \
    "$(psql -c "SELECT origin, min(sno_partition(id)), max(sno_partition(id)), min(sno_sequence(id)) >= CASE origin WHEN 'server' THEN 0 ELSE 32768 END, max(sno_sequence(id)) <= CASE origin WHEN 'server' THEN 32767 ELSE 65535 END FROM shared GROUP BY 1 ORDER BY 1" | tr '\n' ' ')" \
    "client|4242|4242|t|t server|4242|4242|t|t "
shared="$(psql -c "SELECT count(*) FROM (SELECT sno_time(id), sno_tick(id) FROM shared GROUP BY 1, 2 HAVING count(DISTINCT origin) = 2) u")"
echo "    4 ms units holding IDs of both generators: $shared; rows: $(psql -c "SELECT string_agg(origin || ' ' || n, ', ') FROM (SELECT origin, count(*) n FROM shared GROUP BY 1 ORDER BY 1) c")"
check "the two generators shared at least 100 units" "$((shared >= 100))" 1

run "control: the client on the server's own slice 0-32767" 0-32767 report
check "control: one slice for both generators conflicts (so the check above can fail)" "$((conflicts > 0))" 1
node_stop s
exit "$fail"
