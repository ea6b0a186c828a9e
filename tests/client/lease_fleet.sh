#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=1 estimate=60
# The fleet trial of partition leases (issue 32): a registry with an asynchronous standby, and
# short-lived generators in Go, Python and Rust started and stopped continuously, all inserting
# into one table where sno_generate also runs; the registry's primary killed with a lost tail
# and its standby promoted during the run.
#
#  - The registry: node a (primary) and b (its asynchronous standby), real clocks, role fleet
#    with EXECUTE on the lease functions. Every client reaches it with one multi-host conninfo
#    (host=A,B ... target_session_attrs=read-write), so it follows the failover by itself.
#  - The data: a third server (node data, no failover) holds the table ids (id sno, lease,
#    batch, token) every generator inserts into, and where sno_generate inserts too. A server of
#    its own so that the rows counted are not cut by the registry's lost tail; the registry's
#    own sno_generate runs as well (its IDs recorded to a file only).
#  - Generators (2 s leases, 1024 sequence numbers, about 1,000 IDs a second each): 3 slots of
#    Go processes (the recipe's Leased, tests/leases/go/lease.go, driven by
#    tests/leases/fleet/go/main.go), 2 of Python (sno_pg.lease's LeasedGenerator,
#    tests/leases/fleet/fleet_py.py) and 2 of Rust (sno::lease::postgres::LeaseKeeper,
#    tests/leases/fleet/rust), each process living 2 to 6 s, then stopped with SIGTERM (it
#    releases its lease) or, one in three, killed with SIGKILL (its lease left to run out), then
#    the next one started. Each writes every ID it lets out of it with its lease's token to a
#    file (written before the insert), and every lease it was given with the window it was told
#    (partition, slice, not_before, the latest expires_at) to another: the checks need no
#    registry to know a lease, also one granted in the lost tail. Long-lived ones besides:
#      py-paused    stopped with SIGSTOP at 4 s for 4.5 s (more than twice the ttl: past its
#                   window), then continued;
#      py-faketime, rs-faketime  under libfaketime (lib.bash's CL_FAKETIME, an offset file of
#                   their own re-read every second, monotonic clocks real), their clocks stepped
#                   back 3 s at 7 s and 10 s (libfaketime does not reach Go's clock: Go reads the
#                   vDSO itself);
#      go-tail      started in the lost tail, so that one lease surely is lost.
#  - At 13 s the primary's walsender is stopped (SIGSTOP: the standby receives nothing more),
#    at 15.5 s it and the primary are killed and b is promoted: the leases granted and renewed
#    in those 2.5 s are the lost tail.
#  - After the run, a is started again (only to read its lease table), and every file loaded
#    into the data server. Checks, over every ID any generator produced: zero duplicates (also
#    in the table; every row of it produced by a generator or sno_generate); every leased ID
#    inside its lease's partition, slice and window as the client was told it; no two leases
#    any client held overlap (partition, slice, window), nor any two the two registries granted
#    (the lost tail included); each client's lease as its registry recorded it (found in a or b
#    by its token's sha256, the registry's expires_at not earlier); no sno_generate ID on a
#    leased partition; the paused generator stamped nothing after the window it was last told
#    and then worked on a new lease; the faked clocks were 3 s behind; go-tail stamped under a
#    lost lease and then one of b's; generators of each language got leases from the promoted
#    standby; killed processes left their last lease unreleased.
#
# Builds: Go as tests/client/lease_go.sh builds it (Debian's Go, GOPATH mode, the real muyo/sno
# from ../shared/muyo-sno, the same cache in target/lease-go); Python in the venv of
# drivers_python.sh / lease_python.sh (${SNO_WORK}/venv-drivers, made here when missing); Rust
# with cargo --locked (its Cargo.lock has tests/drivers/rust's versions) into rust_drivers.sh's
# target/drivers-rust. About 45 s once built (the Rust program's first build: some 20 s more).
#
# Usage: SNO_PG_MAJOR=15 lease_fleet.sh SOCKET_DIR PORT BINDIR (own servers on ports PORT+730
# .. PORT+760). Any other SNO_PG_MAJOR: skipped (leases are tested on PostgreSQL 15 only).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped lease_fleet.sh: leases are tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
harness_setup lease_fleet "$3" $(($2 + 730)) $(($2 + 760))
T0=$SECONDS
export PGTZ=UTC
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
fleet="$root/tests/leases/fleet"
gen="$CL_WORK/gen"
mkdir "$gen"
part() { echo "--- $* ($((SECONDS - T0)) s)"; }
now() { echo "$EPOCHREALTIME"; }

# Every process started here (generators, slot loops, sno_generate loops) is listed in
# $CL_WORK/pids and killed on exit (a stopped one too: SIGKILL), before the servers stop.
: >"$CL_WORK/pids"
# shellcheck disable=SC2317 # called by the EXIT trap
fleet_cleanup() {
    local p
    if [[ -n "$CL_WORK" && -f "$CL_WORK/pids" ]]; then
        while read -r p; do kill -KILL "$p" 2>/dev/null || true; done <"$CL_WORK/pids"
    fi
    harness_cleanup
}
trap fleet_cleanup EXIT
started() { echo "$1" >>"$CL_WORK/pids"; }

# --- the clients' builds -----------------------------------------------------------------------
part "builds"
# Go: as lease_go.sh (Debian's Go, GOPATH mode, no module proxy, the same cache), from a copy
# of the recipe beside the fleet program (one package main).
muyo="$(shared_dir "$root")/muyo-sno"
go_out="${SNO_LEASE_GO_DIR:-$root/target/lease-go}"
# Debian's Go and pgx v4, when missing (this test runs before lease_go.sh).
debian_packages "$CL_WORK/apt.log" golang-go golang-github-jackc-pgx-v4-dev
[[ -f "$muyo/src/github.com/muyo/sno/generator.go" ]] || die "muyo/sno is not in $muyo"
mkdir -p "$go_out" "$CL_WORK/go"
cp "$root/tests/leases/go/lease.go" "$fleet/go/main.go" "$CL_WORK/go/"
go_bin="$go_out/sno-lease-fleet-go"
if ! (cd "$CL_WORK/go" && GO111MODULE=off GOPATH="$muyo:/usr/share/gocode" GOPROXY=off GOFLAGS='' GOENV=off \
    GOCACHE="$go_out/cache" CGO_ENABLED=0 /usr/lib/go/bin/go build -o "$go_bin" . &&
    GO111MODULE=off GOPATH="$muyo:/usr/share/gocode" GOPROXY=off GOFLAGS='' GOENV=off \
        GOCACHE="$go_out/cache" CGO_ENABLED=0 /usr/lib/go/bin/go vet .) >"$CL_WORK/go.log" 2>&1; then
    cat "$CL_WORK/go.log"
    die "go build of tests/leases/fleet/go with tests/leases/go/lease.go"
fi
check "go build and vet: tests/leases/fleet/go with the recipe (tests/leases/go/lease.go)" ok ok
check "gofmt -l tests/leases/fleet/go" "$(/usr/lib/go/bin/gofmt -l "$fleet/go")" ""

# Python: the venv of drivers_python.sh and lease_python.sh (tests/client/lib.bash's drivers_venv).
venv="$(drivers_venv "$root")"
exec 9>&-
export PYTHONPATH="$root/python" PYTHONDONTWRITEBYTECODE=1

# Rust: tests/leases/fleet/rust (sno's lease-postgres feature), its Cargo.lock's versions those
# of tests/drivers/rust, built into the drivers' target directory (rust_drivers.sh's).
export PATH="$HOME/.cargo/bin:$PATH"
rs_target="${SNO_DRIVERS_TARGET_DIR:-$root/target/drivers-rust}"
rs_bin="$rs_target/debug/sno-lease-fleet-rust"
if ! CARGO_TARGET_DIR="$rs_target" cargo build --locked --manifest-path "$fleet/rust/Cargo.toml" >"$CL_WORK/rust.log" 2>&1; then
    tail -n 30 "$CL_WORK/rust.log"
    die "cargo build of tests/leases/fleet/rust"
fi
check "cargo build: tests/leases/fleet/rust (sno::lease::postgres::LeaseKeeper)" ok ok
[[ -r "$CL_FAKETIME" ]] || die "libfaketime is not installed ($CL_FAKETIME)"

# --- the servers ---------------------------------------------------------------------------------
part "the registry (a, its asynchronous standby b) and the data server"
node_init a
node_conf a "max_connections = 100"
node_clock_mode a none
node_cmdline a shared_preload_libraries=sno
node_start a || die "a did not start"
node_sql a "CREATE EXTENSION sno" "CREATE ROLE fleet LOGIN" \
    "GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(int8, uuid, interval),
        sno_lease_release(int8, uuid) TO fleet" >/dev/null
node_basebackup a b standby
node_clock_mode b none
node_cmdline b shared_preload_libraries=sno
node_start b || die "b did not start"
node_new data
node_initdb data || die "initdb of data"
node_clock_mode data none
node_cmdline data shared_preload_libraries=sno fsync=off
node_start data || die "data did not start"
dq() { node_psql data "$@"; }
dq -c "CREATE EXTENSION sno" -c "CREATE TABLE ids (id sno NOT NULL, lease bigint, batch text, token uuid)"
node_wait_catchup b a

REG="host=$CL_WORK,$CL_WORK port=${CL_PORT[a]},${CL_PORT[b]} dbname=postgres target_session_attrs=read-write connect_timeout=2"
DATA="host=$CL_WORK port=${CL_PORT[data]} dbname=postgres user=postgres"
TTL=2

# run_gen LANG NAME SECONDS: a generator process (exec'd: the caller's $! is its pid).
run_gen() {
    local lang="$1" name="$2" s="$3"
    local files=(--out "$gen/$name.ids" --leases "$gen/$name.leases")
    case "$lang" in
    go) exec "$go_bin" -dsn "$REG user=fleet" -holder "$name" -seconds "$s" -ttl "${TTL}s" -out "$gen/$name.ids" \
        -leases "$gen/$name.leases" -table ids -data-dsn "$DATA" 2>"$gen/$name.err" ;;
    py) exec "$venv/bin/python" "$fleet/fleet_py.py" --dsn "$REG user=fleet" --holder "$name" --seconds "$s" \
        --ttl "$TTL" "${files[@]}" --table ids --data-dsn "$DATA" 2>"$gen/$name.err" ;;
    rs) exec "$rs_bin" --dsn "$REG user=fleet" --holder "$name" --seconds "$s" --ttl "$TTL" "${files[@]}" \
        --table ids --data-dsn "$DATA" 2>"$gen/$name.err" ;;
    esac
}

# slot LANG N UNTIL: generator after generator until the epoch second UNTIL, each living 2-6 s,
# then SIGTERM, or SIGKILL one time in three; "NAME LANG FATE EXIT-CODE" to $gen/fates.
slot() {
    local lang="$1" n=0 name life fate pid rc
    RANDOM=$((1000 * $2 + ${#lang}))
    while ((EPOCHSECONDS < $3)); do
        n=$((n + 1))
        name="$lang-$2-$n"
        life=$((2 + RANDOM % 5))
        fate=term
        ((RANDOM % 3 == 0)) && fate="kill"
        run_gen "$lang" "$name" $((life + 10)) &
        pid=$!
        started "$pid"
        sleep "$life"
        if [[ "$fate" == kill ]]; then kill -KILL "$pid"; else kill -TERM "$pid"; fi
        rc=0
        wait "$pid" || rc=$?
        echo "$name $lang $fate $rc" >>"$gen/fates"
    done
}

# --- the run ---------------------------------------------------------------------------------------
RUN=30
part "the fleet: $RUN s"
t_run="$(now)"
until=$((EPOCHSECONDS + RUN - 3))
slots=()
for s in 1 2 3; do
    slot go "$s" "$until" 2>>"$gen/slots.err" &
    slots+=($!)
    started "$!"
done
for s in 1 2; do
    slot py "$s" "$until" 2>>"$gen/slots.err" &
    slots+=($!)
    started "$!"
    slot rs "$s" "$until" 2>>"$gen/slots.err" &
    slots+=($!)
    started "$!"
done
run_gen py py-paused "$RUN" &
pid_paused=$!
started "$pid_paused"
# faked LANG: LANG-faketime under libfaketime, its clock in $CL_WORK/LANG-faketime.faketime.
faked() {
    echo "+0" >"$CL_WORK/$1-faketime.faketime"
    export LD_PRELOAD="$CL_FAKETIME" FAKETIME_TIMESTAMP_FILE="$CL_WORK/$1-faketime.faketime" FAKETIME_CACHE_DURATION=1 \
        DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_FAKE_MONOTONIC=1
    run_gen "$1" "$1-faketime" "$RUN"
}
faked py &
pid_fake_py=$!
started "$pid_fake_py"
faked rs &
pid_fake_rs=$!
started "$pid_fake_rs"
# sno_generate on the data server (into the table) and on the registry (recorded only).
(while ((EPOCHSECONDS < until)); do
    node_psql data -c "COPY (INSERT INTO ids (id, batch) SELECT sno_generate(1), 'sno_generate'
        FROM generate_series(1, 200) RETURNING id) TO STDOUT" >>"$gen/sno_generate@data.ids" || true
    sleep 0.1
done) &
loops=($!)
started "$!"
(while ((EPOCHSECONDS < until)); do
    "$CL_BINDIR/psql" -X -q -At "$REG user=postgres" -c "COPY (SELECT sno_generate(2) FROM generate_series(1, 200)) TO STDOUT" \
        >>"$gen/sno_generate@registry.ids" 2>>"$gen/sno_generate@registry.err" || true
    sleep 0.1
done) &
loops+=($!)
started "$!"

at() { sleep "$(awk -v t0="$t_run" -v t="$1" -v n="$(now)" 'BEGIN { d = t0 + t - n; print (d > 0 ? d : 0) }')"; }
declare -A t_step=()
at 4
kill -STOP "$pid_paused"
t_stop="$(now)"
echo "py-paused stopped (SIGSTOP)"
at 7
echo "-3s" >"$CL_WORK/py-faketime.faketime"
t_step[py]="$(now)"
echo "py-faketime's clock stepped back 3 s"
at 8.5
kill -CONT "$pid_paused"
t_cont="$(now)"
echo "py-paused continued after $(awk -v a="$t_stop" -v b="$t_cont" 'BEGIN { printf "%.1f", b - a }') s"
at 10
echo "-3s" >"$CL_WORK/rs-faketime.faketime"
t_step[rs]="$(now)"
echo "rs-faketime's clock stepped back 3 s"
at 13
walsender="$(node_sql a "SELECT pid FROM pg_stat_replication")"
kill -STOP "$walsender"
t_tail="$(now)"
echo "a's walsender stopped: the lost tail begins"
# A generator sure to take its first lease in the lost tail (8 s: past the failover).
sleep 0.3
run_gen go go-tail 8 &
pid_tail=$!
started "$pid_tail"
at 15.5
# The postmaster and the stopped walsender killed at once (node_kill would wait 5 s for the
# walsender, and a walsender killed first makes the postmaster restart); the other processes of
# a end by themselves on its death.
pm="$(head -1 "$(node_data a)/postmaster.pid")"
kill -KILL "$pm" "$walsender"
t_kill="$(now)"
for _ in $(seq 100); do
    state="$(ps -o stat= -p "$pm" 2>/dev/null || true)"
    [[ -z "$state" ]] && break
    if [[ "$state" == Z* ]]; then
        rm -f "$(node_data a)/postmaster.pid" "$CL_WORK/.s.PGSQL.${CL_PORT[a]}.lock"
        break
    fi
    sleep 0.1
done
node_promote b || die "b was not promoted"
t_promoted="$(now)"
echo "a killed (the lost tail: $(awk -v a="$t_tail" -v b="$t_kill" 'BEGIN { printf "%.1f", b - a }') s), b promoted in $(awk -v a="$t_kill" -v b="$t_promoted" 'BEGIN { printf "%.2f", b - a }') s"

rc=0
for p in "${slots[@]}" "${loops[@]}"; do wait "$p" || rc=1; done
check "the slot loops and sno_generate loops ended" "$rc" 0
rc_paused=0 rc_fake_py=0 rc_fake_rs=0 rc_tail=0
wait "$pid_tail" || rc_tail=$?
wait "$pid_paused" || rc_paused=$?
wait "$pid_fake_py" || rc_fake_py=$?
wait "$pid_fake_rs" || rc_fake_rs=$?
t_end="$(now)"
check "go-tail, py-paused, py-faketime and rs-faketime: exit codes" "$rc_tail $rc_paused $rc_fake_py $rc_fake_rs" "0 0 0 0"
echo "(the run: $(awk -v a="$t_run" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') s)"

# --- what the registries recorded --------------------------------------------------------------
part "the registries' leases"
REGCOLS="lease, encode(token_sha256, 'hex'), holder, partition, sequence_min, sequence_max, not_before, expires_at,
         acquired_at, released_at"
node_psql b -c "COPY (SELECT 'b', $REGCOLS FROM sno_internal.leases) TO STDOUT" >"$CL_WORK/reg.b"
# a, killed, started again (with sno: its WAL has sno's records) only to read its lease table
# (no client runs any more), then stopped.
node_start a || die "a did not start again (to read its lease table)"
node_psql a -c "COPY (SELECT 'a', $REGCOLS FROM sno_internal.leases) TO STDOUT" >"$CL_WORK/reg.a"
node_stop a immediate

# --- everything loaded into the data server -----------------------------------------------------
part "the checks"
dq -c "CREATE TABLE fleet_ids (id sno NOT NULL, token uuid, gen text NOT NULL)" \
    -c "CREATE TABLE fleet_leases (token uuid NOT NULL, lease bigint, partition int, smin int, smax int,
        nb timestamptz, ex timestamptz, holder text)" \
    -c "CREATE TABLE reg (registry text, lease bigint, sha text, holder text, partition int, smin int, smax int,
        nb timestamptz, ex timestamptz, acquired_at timestamptz, released_at timestamptz)" \
    -c "CREATE TABLE fates (gen text, lang text, fate text, rc int)"
for f in "$gen"/*.ids; do
    awk -v g="$(basename "$f" .ids)" -v OFS='\t' 'length($1) == 16 && NF <= 2 { print $1, (NF == 2 ? $2 : "\\N"), g }' "$f"
done | dq -c "COPY fleet_ids FROM STDIN"
malformed="$(cat "$gen"/*.ids | awk 'length($1) != 16 || NF > 2' | wc -l)"
cat "$gen"/*.leases | dq -c "COPY fleet_leases FROM STDIN"
cat "$CL_WORK/reg.a" "$CL_WORK/reg.b" | dq -c "COPY reg FROM STDIN"
tr ' ' '\t' <"$gen/fates" | dq -c "COPY fates FROM STDIN"
dq -c "CREATE INDEX ON fleet_ids (id)" -c "ANALYZE fleet_ids" -c "ANALYZE ids" \
    -c "CREATE VIEW cl AS SELECT token, min(lease) AS lease, min(partition) AS partition, min(smin) AS smin,
        min(smax) AS smax, min(nb) AS nb, max(ex) AS ex, min(holder) AS holder,
        count(DISTINCT (lease, partition, smin, smax, nb)) AS variants,
        sha256(uuid_send(token)) AS sha FROM fleet_leases GROUP BY token" \
    -c "CREATE VIEW lang AS SELECT g, CASE WHEN g LIKE 'go-%' THEN 'Go' WHEN g LIKE 'py-%' THEN 'Python'
        WHEN g LIKE 'rs-%' THEN 'Rust' ELSE g END AS lang FROM (SELECT DISTINCT gen FROM fleet_ids) x(g)"
q() { dq -c "$1"; }
ts() { awk -v t="$1" 'BEGIN { printf "to_timestamp(%.6f)", t }'; }

check "ID lines malformed (cut by a SIGKILL)" "$malformed" 0
echo "IDs produced, by language: $(q "SELECT string_agg(format('%s %s (%s processes)', lang, n, p), ', ' ORDER BY lang)
    FROM (SELECT lang, count(*) n, count(DISTINCT gen) p FROM fleet_ids JOIN lang ON g = gen GROUP BY lang) x")"
echo "leases held, by language: $(q "SELECT string_agg(format('%s %s', lang, n), ', ' ORDER BY lang)
    FROM (SELECT CASE WHEN holder LIKE 'go-%' THEN 'Go' WHEN holder LIKE 'py-%' THEN 'Python' ELSE 'Rust' END lang,
                 count(*) n FROM cl GROUP BY 1) x")"
echo "processes: $(q "SELECT string_agg(format('%s %s', lang || ' ' || fate, n), ', ' ORDER BY lang, fate)
    FROM (SELECT lang, fate, count(*) n FROM fates GROUP BY 1, 2) x")"
check "every process ended as sent: SIGTERM exit 0, SIGKILL 137" \
    "$(q "SELECT count(*) FROM fates WHERE rc <> CASE fate WHEN 'term' THEN 0 ELSE 137 END")" 0
check "some thousands of IDs from Go, Python, Rust, sno_generate on data and on the registry" \
    "$(q "SELECT count(*) FILTER (WHERE n > 2000) FROM (SELECT lang, count(*) n FROM fleet_ids JOIN lang ON g = gen
          WHERE lang IN ('Go', 'Python', 'Rust', 'sno_generate@data', 'sno_generate@registry') GROUP BY lang) x")" 5

DUPS="SELECT count(*) - count(DISTINCT id) FROM fleet_ids"
OUTSIDE="SELECT count(*) FROM fleet_ids f JOIN cl USING (token)
    WHERE sno_partition(f.id) <> cl.partition OR sno_sequence(f.id) NOT BETWEEN cl.smin AND cl.smax
       OR sno_time(f.id) < cl.nb OR sno_time(f.id) >= cl.ex"
# A control first: the checks below count what they must. Planted: an ID at a lease's
# expires_at (its first unit after the window), one a unit before its not_before, and a copy
# of an existing ID; then removed.
q "INSERT INTO fleet_ids SELECT sno_from_parts(t, 0, partition, smin), token, 'control'
   FROM (SELECT * FROM cl WHERE holder = 'py-paused' ORDER BY nb LIMIT 1) l, LATERAL (VALUES (ex), (nb - interval '4 ms')) v(t)"
q "INSERT INTO fleet_ids SELECT id, token, 'control' FROM fleet_ids WHERE gen LIKE 'go-%' LIMIT 1"
check "control: 2 IDs planted outside their lease's window and 1 copied are counted" "$(q "$OUTSIDE")|$(q "$DUPS")" "2|1"
q "DELETE FROM fleet_ids WHERE gen = 'control'"
total="$(q "SELECT count(*) FROM fleet_ids")"
dups="$(q "$DUPS")"
check "duplicates among all $total IDs produced (every file of every generator)" "$dups" 0
if [[ "$dups" != 0 ]]; then
    q "SELECT id, sno_time(id), sno_partition(id), sno_sequence(id), string_agg(gen, ', ')
       FROM fleet_ids GROUP BY id HAVING count(*) > 1 LIMIT 10"
fi
rows="$(q "SELECT count(*) FROM ids")"
check "duplicates among the table's $rows rows" "$(q "SELECT count(*) - count(DISTINCT id) FROM ids")" 0
check "rows of the table no generator's file holds" \
    "$(q "SELECT count(*) FROM ids WHERE NOT EXISTS (SELECT FROM fleet_ids f WHERE f.id = ids.id)")" 0
check "leased IDs whose lease the client did not know (no token)" \
    "$(q "SELECT count(*) FROM fleet_ids WHERE gen NOT LIKE 'sno_generate%' AND (token IS NULL
          OR NOT EXISTS (SELECT FROM cl WHERE cl.token = fleet_ids.token))")" 0
check "leases the client was told of in two versions (other than expires_at)" "$(q "SELECT count(*) FROM cl WHERE variants > 1")" 0
bad_ids="$(q "$OUTSIDE")"
check "leased IDs outside their lease's partition, slice or window (as the client was told it)" "$bad_ids" 0
if [[ "$bad_ids" != 0 ]]; then
    q "SELECT f.gen, f.id, sno_time(f.id), cl.lease, cl.partition, cl.nb, cl.ex FROM fleet_ids f JOIN cl USING (token)
       WHERE sno_partition(f.id) <> cl.partition OR sno_sequence(f.id) NOT BETWEEN cl.smin AND cl.smax
          OR sno_time(f.id) < cl.nb OR sno_time(f.id) >= cl.ex LIMIT 10"
fi
check "pairs of leases held by the clients that could stamp one ID (partition, slice, window)" "$(q "
    SELECT count(*) FROM cl x JOIN cl y ON x.token < y.token AND x.partition = y.partition
       AND x.smin <= y.smax AND y.smin <= x.smax AND x.nb < y.ex AND y.nb < x.ex")" 0
check "sno_generate IDs (data server, registry) on a leased partition" "$(q "
    SELECT count(*) FROM fleet_ids WHERE gen LIKE 'sno_generate%'
       AND sno_partition(id) IN (SELECT partition FROM reg UNION SELECT partition FROM cl)")" 0

# The registries' own records.
dq -c "CREATE VIEW rl AS SELECT sha, min(lease) AS lease, min(partition) AS partition, min(smin) AS smin,
        min(smax) AS smax, min(nb) AS nb, max(ex) AS ex, bool_or(registry = 'a') AS in_a, bool_or(registry = 'b') AS in_b,
        min(acquired_at) AS acquired_at, bool_or(released_at IS NOT NULL) AS released, min(holder) AS holder
        FROM reg GROUP BY sha"
check "pairs of leases the registries granted (a's, lost tail included, and b's) that could stamp one ID" "$(q "
    SELECT count(*) FROM rl x JOIN rl y ON x.sha < y.sha AND x.partition = y.partition
       AND x.smin <= y.smax AND y.smin <= x.smax AND x.nb < y.ex AND y.nb < x.ex")" 0
check "clients' leases no registry recorded, or recorded otherwise (lease, partition, slice, not_before; an earlier expires_at)" "$(q "
    SELECT count(*) FROM cl LEFT JOIN rl ON rl.sha = encode(cl.sha, 'hex')
    WHERE rl.sha IS NULL OR (rl.lease, rl.partition, rl.smin, rl.smax, rl.nb) <> (cl.lease, cl.partition, cl.smin, cl.smax, cl.nb)
       OR rl.ex < cl.ex")" 0
q "SELECT format('leases: %s granted by a (%s of them lost: unknown to b), %s by b after the promotion;'
                 ' renewals a granted and b lost: %s', count(*) FILTER (WHERE in_a), count(*) FILTER (WHERE in_a AND NOT in_b),
                 count(*) FILTER (WHERE NOT in_a), (SELECT count(*) FROM rl JOIN (SELECT sha, ex FROM reg WHERE registry = 'b') rb
                 USING (sha) WHERE rl.in_a AND rb.ex < rl.ex)) FROM rl"
check "go-tail: its first lease granted in the lost tail (by a, unknown to b), then one of b's; IDs in both" "$(q "
    SELECT string_agg(DISTINCT CASE WHEN rl.in_a AND NOT rl.in_b THEN 'lost' WHEN NOT rl.in_a THEN 'b' ELSE 'a' END, ' ')
    FROM fleet_ids f JOIN cl USING (token) JOIN rl ON rl.sha = encode(cl.sha, 'hex') WHERE f.gen = 'go-tail'")" "b lost"
echo "IDs stamped in a window the promoted registry never recorded (a lost grant or renewal): $(q "
    SELECT count(*) FROM fleet_ids f JOIN cl USING (token)
    LEFT JOIN reg rb ON rb.registry = 'b' AND rb.sha = encode(cl.sha, 'hex')
    WHERE rb.sha IS NULL OR sno_time(f.id) >= rb.ex"), of $(q "SELECT count(DISTINCT f.gen) FROM fleet_ids f JOIN cl USING (token)
    LEFT JOIN reg rb ON rb.registry = 'b' AND rb.sha = encode(cl.sha, 'hex')
    WHERE rb.sha IS NULL OR sno_time(f.id) >= rb.ex") generators"
check "Go, Python and Rust generators got leases from the promoted standby, and stamped IDs in them" "$(q "
    SELECT string_agg(DISTINCT lang, ' ' ORDER BY lang) FROM fleet_ids f JOIN lang ON g = f.gen JOIN cl USING (token)
    JOIN rl ON rl.sha = encode(cl.sha, 'hex') WHERE NOT rl.in_a")" "Go Python Rust"
first_b="$(q "SELECT extract(epoch FROM min(acquired_at)) FROM rl WHERE NOT in_a")"
echo "failover: a killed at +$(awk -v a="$t_run" -v b="$t_kill" 'BEGIN { printf "%.1f", b - a }') s;" \
    "b promoted $(awk -v a="$t_kill" -v b="$t_promoted" 'BEGIN { printf "%.2f", b - a }') s later;" \
    "its first lease $(awk -v a="$t_kill" -v b="$first_b" 'BEGIN { printf "%.2f", b - a }') s after the kill"

# Killed and stopped processes.
check "processes killed with SIGKILL (with a lease): their last lease left unreleased" "$(q "
    SELECT count(*) FILTER (WHERE NOT released) || ' of ' || count(*) FROM (
        SELECT DISTINCT ON (f.gen) rl.released FROM fates f JOIN rl ON rl.holder = f.gen
        WHERE f.fate = 'kill' ORDER BY f.gen, rl.acquired_at DESC) x")" \
    "$(q "SELECT n || ' of ' || n FROM (SELECT count(DISTINCT f.gen) n FROM fates f JOIN rl ON rl.holder = f.gen
          WHERE f.fate = 'kill') x")"
echo "processes stopped with SIGTERM: last lease released by $(q "
    SELECT count(*) FILTER (WHERE released) || ' of ' || count(*) FROM (
        SELECT DISTINCT ON (f.gen) rl.released FROM fates f JOIN rl ON rl.holder = f.gen
        WHERE f.fate = 'term' ORDER BY f.gen, rl.acquired_at DESC) x")"

# py-paused: what it was told before the pause, what it stamped, what it did after.
stop_ts="$(ts "$t_stop")" cont_ts="$(ts "$t_cont")"
check "py-paused: the windows it was told before the pause ended before the SIGCONT (paused past its window)" "$(q "
    SELECT bool_and(ex < $cont_ts) FROM cl WHERE holder = 'py-paused' AND nb < $stop_ts")" t
check "py-paused: IDs of those leases at or after their expires_at as last told" "$(q "
    SELECT count(*) FROM fleet_ids f JOIN cl USING (token) WHERE f.gen = 'py-paused' AND cl.nb < $stop_ts
       AND sno_time(f.id) >= cl.ex")" 0
check "py-paused: IDs after the SIGCONT, in leases acquired after it" "$(q "
    SELECT count(*) > 100 FROM fleet_ids f JOIN cl USING (token) WHERE f.gen = 'py-paused'
       AND cl.nb > $stop_ts AND sno_time(f.id) > $cont_ts")" t
echo "py-paused: last ID before the pause at $(q "SELECT to_char(max(sno_time(f.id)), 'HH24:MI:SS.MS')
    FROM fleet_ids f JOIN cl USING (token) WHERE f.gen = 'py-paused' AND cl.nb < $stop_ts"), the window it was told ended" \
    "$(q "SELECT to_char(max(ex), 'HH24:MI:SS.MS') FROM cl WHERE holder = 'py-paused' AND nb < $stop_ts"), SIGSTOP at" \
    "$(q "SELECT to_char($stop_ts, 'HH24:MI:SS.MS')"), SIGCONT at $(q "SELECT to_char($cont_ts, 'HH24:MI:SS.MS')");" \
    "refusals: $(sed -n 's/^fleet-py: .*refused=\([0-9]*\).*/\1/p' "$gen/py-paused.err"), the first:"
grep -E 'refused \(' "$gen/py-paused.err" | head -n 1 | cut -c 1-200 | sed 's/^/    /' || true

# py-faketime and rs-faketime: their clocks behind, and what they stamped.
for l in py rs; do
    # The process prints its faked wall time as it ends, up to a few seconds before this script reads
    # the real one (t_end): behind by the 3 s step, plus that.
    check "$l-faketime: its clock at least 3 s behind at its end (libfaketime)" "$(awk -v real="$t_end" -v f="$(
        sed -n 's/.* wall=\([0-9.]*\).*/\1/p' "$gen/$l-faketime.err")" 'BEGIN { d = real - f; print (d > 2.5 && d < 10) ? "yes" : "no: " d }')" yes
    echo "$l-faketime (clock stepped back at +$(awk -v a="$t_run" -v b="${t_step[$l]}" 'BEGIN { printf "%.1f", b - a }') s):" \
        "$(grep -E '^fleet-(py|rs):' "$gen/$l-faketime.err")"
    grep -E 'refused \(' "$gen/$l-faketime.err" | head -n 3 | cut -c 1-200 | sed 's/^/    /' || true
done

for f in "$gen"/*.err; do
    if grep -qE 'panic|Traceback' "$f"; then
        bad "$(basename "$f" .err) crashed:"
        head -n 20 "$f"
    fi
done
echo "lease_fleet.sh: $((SECONDS - T0)) s"
exit "$fail"
