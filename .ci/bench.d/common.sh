# shellcheck shell=bash source-path=SCRIPTDIR
# .ci/bench's shared set-up, sourced by it before the sections: the install and the build, the
# bench server and psql, and what several sections use: rotate, drivers_venv (convert and
# leases), the key kinds and insert_run (pk and fsync; KEYCOL also pause and citus), the fsync
# cluster (fsync and pause). Uses the knobs .ci/bench reads.

ensure_all "$V"
if [[ "${SNO_BENCH_BUILD:-1}" == 0 ]]; then
    say "measuring the sno installed for PostgreSQL $V (SNO_BENCH_BUILD=0: not built)"
    cmp -s "$("$(pg_config_for "$V")" --pkglibdir)/sno.so" "$SNO_ROOT/target/release/libsno.so" ||
        echo "    note: the installed sno.so is not target/release/libsno.so (a debug build?): these numbers are not for the docs"
else
    say "building sno (release) for PostgreSQL $V"
    PROFILE=release install_extension "$V"
fi
# shellcheck disable=SC2153 # PORT: .ci/bench's knob, beside FPORT below
cluster_start "bench-$V" "$V" "$PORT" "shared_preload_libraries=sno" "shared_buffers=512MB" "work_mem=512MB" \
    "max_parallel_workers_per_gather=0" "jit=off" "autovacuum=off"
trap 'cluster_stop "bench-$V" "$V"; cluster_stop "bench-$V-fsync" "$V"' EXIT
BIN="$("$(pg_config_for "$V")" --bindir)"
psql() { "$BIN/psql" -X -q -h "$SNO_WORK/bench-$V" -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
# Scratch for pgbench scripts and logs, the fsync shim and the result files (root's, readable).
SCRATCH="$SNO_WORK/bench-$V-scratch"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
chmod 755 "$SCRATCH"

psql -f "$BENCH_D/common.sql"

# The rounds alternate the kinds, starting one further along each round.
rotate() {
    local round="$1" list n i
    read -ra list <<<"$2"
    n=${#list[@]}
    for ((i = 0; i < n; i++)); do echo "${list[$(((i + round) % n))]}"; done
}

# drivers_venv ROOT: the venv the client tests use for psycopg 3 ($SNO_WORK/venv-drivers, from
# PyPI, pinned in tests/drivers/python/requirements.txt), made or refilled under their lock;
# prints its path (sections convert and leases).
# shellcheck source=../../tests/client/lib.bash
source "$SNO_ROOT/tests/client/lib.bash"

# --- concurrent single-row INSERTs (sections pk and fsync; KEYCOL also pause and citus) --

# Key kinds: the column of each, and its label in the tables. uuidv7() is built in from 18 on.
KINDS="bigserial sno uuid4"
((V >= 18)) && KINDS+=" uuid7"
declare -A KEYCOL=([bigserial]="bigserial PRIMARY KEY" [sno]="sno PRIMARY KEY DEFAULT sno_generate(1)"
    [uuid4]="uuid PRIMARY KEY DEFAULT gen_random_uuid()" [uuid7]="uuid PRIMARY KEY DEFAULT uuidv7()")

# insert_run DIR PORT GROUP KIND ROUND CLIENTS RESULTS: a fresh table with KIND's key, pgbench
# single-row INSERTs for PGBENCH_SECONDS with synchronous_commit=off, one line to RESULTS
# (latency.py: p99 and max latency from pgbench's per-transaction logs).
insert_run() {
    local dir="$1" port="$2" group="$3" kind="$4" round="$5" c="$6" results="$7"
    local tag="$group-$kind-$round" out before after tps lat bpr
    local conn=(-h "$dir" -p "$port" -U postgres)
    "$BIN/psql" -X -q "${conn[@]}" -d postgres -v ON_ERROR_STOP=1 \
        -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS c_$kind" -c "CREATE TABLE c_$kind (id ${KEYCOL[$kind]}, v int)"
    echo "INSERT INTO c_$kind (v) VALUES (1);" >"$SCRATCH/c_$kind.sql"
    rm -f "$SCRATCH/log-$tag".*
    before="$(grep -c '^sno-slow-fsync:' "$dir/server.log" || true)"
    out="$SCRATCH/out-$tag"
    if ! PGOPTIONS="-c synchronous_commit=off" "$BIN/pgbench" -n -c "$c" -j 2 -T "$PGBENCH_SECONDS" \
        -f "$SCRATCH/c_$kind.sql" -l --log-prefix="$SCRATCH/log-$tag" "${conn[@]}" postgres >"$out" 2>&1; then
        cat "$out" >&2
        echo "pgbench failed: $group $kind round $round" >&2
        exit 1
    fi
    after="$(grep -c '^sno-slow-fsync:' "$dir/server.log" || true)"
    tps="$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$out")"
    [[ -n "$tps" ]] || { cat "$out" >&2; echo "no tps in the pgbench output" >&2; exit 1; }
    lat="$(python3 "$BENCH_D/latency.py" "$SCRATCH/log-$tag".*)"
    rm -f "$SCRATCH/log-$tag".*
    bpr="$("$BIN/psql" -X -At "${conn[@]}" -d postgres -v ON_ERROR_STOP=1 \
        -c "SELECT round(pg_relation_size('c_${kind}_pkey') / count(*)::numeric, 2) || ' ' || count(*) FROM c_$kind")"
    echo "$group $kind $round $tps $lat $bpr $((after - before))" | tee -a "$results" | sed 's/^/    run: /'
}

# --- the fsync cluster (sections fsync and pause) -----------------------------------------

FD="$SNO_WORK/bench-$V-fsync"
FPORT=$((PORT + 100))
fpsql() { "$BIN/psql" -X -q -h "$FD" -p "$FPORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }
# fsync_cluster: once per run, the LD_PRELOAD shim built and a cluster of its own started with
# fsync on (a later -c fsync=on wins over cluster_start's fsync=off) and synchronous_commit
# off; the main bench server is stopped first. The shim (slow_fsync.c): fsync and fdatasync on a
# file whose path contains SNO_SLOW_FSYNC_MATCH sleep SNO_SLOW_FSYNC_MS first and say so on
# stderr (the server log).
fsync_cluster() {
    [[ -n "${FSYNC_CLUSTER_UP:-}" ]] && return 0
    cc -shared -fPIC -O2 -Wall -o "$SCRATCH/slow_fsync.so" "$BENCH_D/slow_fsync.c" -ldl
    chmod 755 "$SCRATCH/slow_fsync.so"
    cluster_stop "bench-$V" "$V"
    local extra=()
    [[ -n "$IDLE_HORIZON" ]] && extra+=("sno.idle_horizon=$IDLE_HORIZON")
    cluster_start "bench-$V-fsync" "$V" "$FPORT" "shared_preload_libraries=sno" "shared_buffers=512MB" \
        "work_mem=512MB" "max_parallel_workers_per_gather=0" "jit=off" "autovacuum=off" \
        "fsync=on" "synchronous_commit=off" "${extra[@]}"
    fpsql -c "CREATE EXTENSION sno"
    [[ "$(fpsql -At -c 'SHOW fsync')" == on ]] || { echo "fsync is not on in the fsync cluster" >&2; exit 1; }
    FSYNC_CLUSTER_UP=1
}
# fsync_restart MODE: restarts the cluster (same options) with the shim preloaded (slowed) or
# not (unslowed), and checks that the postmaster has it mapped or not. sudo drops LD_PRELOAD:
# env sets it after.
fsync_restart() {
    local envs=() pid
    [[ "$1" == slowed ]] && envs=(LD_PRELOAD="$SCRATCH/slow_fsync.so" SNO_SLOW_FSYNC_MS="$SLOW_MS"
        SNO_SLOW_FSYNC_MATCH="$SLOW_MATCH")
    sudo -u postgres env "${envs[@]}" "$BIN/pg_ctl" -D "$FD/data" -m fast -w restart -l "$FD/server.log" >/dev/null
    pid="$(head -1 "$FD/data/postmaster.pid")"
    if grep -q slow_fsync.so "/proc/$pid/maps"; then
        [[ "$1" == slowed ]] || { echo "the shim is loaded in the unslowed server" >&2; exit 1; }
    else
        [[ "$1" != slowed ]] || { echo "the shim is not loaded in the slowed server (pid $pid)" >&2; exit 1; }
    fi
    # The first ID after a start waits for one write (the timeline resumes at the horizon on
    # disk); measured here are the writes while IDs are being made, so it is made first.
    fpsql -At -c "SELECT sno_generate()" >/dev/null
}
# delayed_fsyncs: how many fsyncs the shim has delayed so far (its lines in the server log).
delayed_fsyncs() { grep -c '^sno-slow-fsync:' "$FD/server.log" || true; }
