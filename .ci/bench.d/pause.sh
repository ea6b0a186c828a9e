# shellcheck shell=bash
# .ci/bench, section pause: one session, a single-row INSERT after each pause per key kind, on the
# fsync cluster (common.sh), on the real disk and with the shim (pause_session.py, pause.py).
# Sourced by .ci/bench after common.sh.
# One session, one INSERT after a pause: what an application that inserts in bursts meets first.
PAUSE_KINDS="bigserial sno"
((V >= 18)) && PAUSE_KINDS+=" uuid7"
pause_secs="$(awk -v p="$PAUSES" -v r="$PAUSE_RUNS" -v k="$(wc -w <<<"$PAUSE_KINDS")" \
    'BEGIN { n = split(p, a, " "); for (i = 1; i <= n; i++) s += a[i]; printf "%d", 2 * s * r * k }')"
# pause_time: the pauses' total, in seconds under 2 minutes, in minutes above.
pause_time() { ((pause_secs < 120)) && echo "$pause_secs s" || echo "about $(((pause_secs + 59) / 60)) minutes"; }
say "pause: one session, an INSERT after pauses of ${PAUSES// /, } s, $PAUSE_RUNS per key ($PAUSE_KINDS), on the real disk and with the state-file fsync slowed by ${SLOW_MS} ms (pauses: $(pause_time))"
fsync_cluster
echo "sno.idle_horizon = $(fpsql -At -c "SHOW sno.idle_horizon")${IDLE_HORIZON:+ (SNO_BENCH_IDLE_HORIZON)}"
: >"$SCRATCH/pause.txt"
: >"$SCRATCH/pause-delayed.txt"
for mode in unslowed slowed; do
    fsync_restart "$mode"
    # The session's script. Each sample, each key in turn (rotate): one INSERT, so that the
    # key's last ID is made just before the pause (the pause is the time since it); the
    # state_write_waits count; the pause (psql's \! sleep: the session idle, nothing on the
    # server makes an ID); the timed INSERT; the count again. Pause 0: back-to-back.
    {
        echo "SET client_min_messages = warning;"
        for kind in $PAUSE_KINDS; do
            echo "DROP TABLE IF EXISTS p_$kind;"
            echo "CREATE TABLE p_$kind (id ${KEYCOL[$kind]}, v int);"
            echo "INSERT INTO p_$kind (v) SELECT 1 FROM generate_series(1, 100);"
        done
        for pause in 0 $PAUSES; do
            for ((r = 1; r <= PAUSE_RUNS; r++)); do
                for kind in $(rotate "$r" "$PAUSE_KINDS"); do
                    tag="$mode $pause $kind $r"
                    echo "INSERT INTO p_$kind (v) VALUES (1);"
                    echo "SELECT 'w0 $tag ' || sum(state_write_waits) FROM sno_generator;"
                    [[ "$pause" == 0 ]] || printf '\\! sleep %s\n' "$pause"
                    printf '\\echo t %s\n' "$tag"
                    printf '%s\n' '\timing on'
                    echo "INSERT INTO p_$kind (v) VALUES (1);"
                    printf '%s\n' '\timing off'
                    echo "SELECT 'w1 $tag ' || sum(state_write_waits) FROM sno_generator;"
                done
            done
        done
    } >"$SCRATCH/pause-$mode.sql"
    before="$(delayed_fsyncs)"
    t0=$(date +%s)
    LC_ALL=C fpsql -At -f "$SCRATCH/pause-$mode.sql" >"$SCRATCH/pause-$mode.out"
    echo "$mode $(($(delayed_fsyncs) - before))" >>"$SCRATCH/pause-delayed.txt"
    # One line a timed INSERT: mode pause kind sample ms state_write_waits-growth.
    python3 "$BENCH_D/pause_session.py" "$SCRATCH/pause-$mode.out" >>"$SCRATCH/pause.txt"
    echo "    $mode: $(awk -v m="$mode" '$1 == m' "$SCRATCH/pause.txt" | wc -l) inserts timed, the session $(($(date +%s) - t0)) s"
done
echo
echo "An INSERT after a pause: one psql session, \`INSERT INTO t (v) VALUES (1)\` timed by psql (timing on) after a pause" \
    "in which the server makes no ID, the same key's INSERT just before it; the keys in turn, $PAUSE_RUNS inserts per" \
    "pause and key; fsync=on, synchronous_commit=off, the server restarted for each disk mode, the state-file fsync" \
    "slowed by ${SLOW_MS} ms by the LD_PRELOAD shim in the second (PostgreSQL $(fpsql -At -c 'SHOW server_version')):"
echo
python3 "$BENCH_D/pause.py" "$SCRATCH/pause.txt" "$SLOW_MS"
fpsql -c "SELECT partition, ids_issued, units_opened, full_unit_stalls, clock_waits, state_writes, state_write_waits FROM sno_generator"
echo "delayed fsyncs in the server log, per session: $(awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2 }' "$SCRATCH/pause-delayed.txt")"
if (($(awk '$1 == "slowed" { print $2 }' "$SCRATCH/pause-delayed.txt") == 0)); then
    echo "FAILED: the shim delayed no fsync during the slowed session: its rows measure no slow disk" >&2
    grep -i 'sno' "$FD/server.log" | tail -20 >&2
    exit 1
fi
