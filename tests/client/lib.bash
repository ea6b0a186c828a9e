# shellcheck shell=bash
# The harness of the client tests (tests/client/*.sh and tests/upgrade/pg_upgrade.sh). Sourced,
# not a test itself: .ci/test runs only *.sh here. Sourcing it defines functions and starts
# nothing; a test that runs servers of its own calls harness_setup first.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
#   harness_setup restart "$3" $(($2 + 300)) $(($2 + 399))   # NAME BINDIR FIRST-PORT LAST-PORT
#   node_new a; node_initdb a; node_cmdline a shared_preload_libraries=sno; node_start a
#   check "one ID" "$(node_sql a "CREATE EXTENSION sno" "SELECT count(sno_generate(1))")" 1
#   node_clock a -3600s; node_restart a immediate
#   exit "$fail"
#
# This file is the core, for every test: the work directory, servers (here called nodes),
# their clocks, psql, and the ok:/FAIL: lines. tests/client/cluster.bash adds what only the
# multi-server tests need (standbys, base backups, promotion, pg_rewind, WAL archives and the
# ID ledger) on top of it.
#
# Work directory. harness_setup makes one under $SNO_WORK (/tmp/sno-work by default, as
# .ci/lib.sh sets it), named after the test, owned by postgres. On exit, also after a failure,
# `set -e`, Ctrl-C or timeout's SIGTERM: on failure the end of every node's log, then every
# server this harness started (and every data directory registered with harness_stop_also)
# stopped with pg_ctl -m immediate, then the directory removed. SNO_KEEP_WORK=1 (or SNO_KEEP=1)
# keeps the directory and what node_drop would remove, and prints where it is.
#
# Nodes. A node is a name (a-z, 0-9, _) with a directory $CL_WORK/NAME holding data/ (the data
# directory), log, faketime (its clock offset) and initdb.log; a port, the lowest free one of
# the range given to harness_setup (ports of dropped nodes are free again); and a bindir (the
# harness's by default; pg_upgrade gives each node the bindir of its major). Every server runs
# as the `postgres` OS user, listens on a Unix socket in $CL_WORK only (listen_addresses = ''),
# and is reached as user postgres.
#
# Clocks. A node runs under libfaketime with its own offset file, so node_clock can move its
# clock, also while it runs; monotonic clocks are not faked (timeouts stay real). The mode is
# per node (node_clock_mode):
#   cache   (the default) libfaketime re-reads the file at most once a second
#           (FAKETIME_CACHE_DURATION=1), so node_clock waits 2 s when the node runs. Not
#           FAKETIME_NO_CACHE: then every clock call reads the file with fopen, and a signal
#           handler that reads the clock (PostgreSQL's SIGALRM timeouts) during another clock
#           call deadlocks the process in glibc's stdio lock; this hung a recovering server
#           once. libfaketime returns the real time when re-entered, so some log lines carry
#           unfaked times.
#   nocache FAKETIME_NO_CACHE=1: every process sees a new offset at its next clock call, as on
#           one real machine (with the cache, backends switch up to a second apart, each on a
#           clock of its own); node_clock does not wait. Not async-signal-safe (above): only
#           while nothing arms a SIGALRM timer in the node (clock_regression.sh: no statement
#           or lock timeout, deadlock_timeout an hour).
#   none    no libfaketime at all (the real clock; node_clock cannot move it).
#
# Settings given with node_cmdline are -c options at every start of the node (they live
# outside the data directory); node_conf appends lines to its postgresql.conf.

# Set to 1 by the first failed check; each test exits with it.
fail=0

# check DESCRIPTION GOT WANT: one assertion, reported as ok/FAIL, never stopping the test.
check() {
    if [[ "$2" == "$3" ]]; then echo "ok: $1"; else echo "FAIL: $1: got '$2', want '$3'"; fail=1; fi
}

# bad MESSAGE: a failure that does not stop the test.
bad() {
    echo "FAIL: $*"
    fail=1
}

# die MESSAGE: a failure that ends the test (the harness or a step that everything after needs).
die() {
    echo "FAIL: $*"
    fail=1
    exit 1
}

as_pg() { sudo -u postgres "$@"; }

CL_FAKETIME=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
SNO_WORK="${SNO_WORK:-/tmp/sno-work}"
declare -gA CL_PORT=() CL_CMDLINE=() CL_BIN=() CL_CLOCK=() CL_ENV=()
CL_NODES=()
# Explicit partitions given to any node with node_cmdline (cluster.bash never hands them out).
CL_CLAIMED=()
# "BINDIR|DATADIR" of servers not started as nodes, stopped on exit too.
CL_STOP_ALSO=()
CL_WORK=""
CL_BINDIR=""
CL_MAJOR=""
CL_FIRST_PORT=0
CL_LAST_PORT=-1
# shellcheck disable=SC2034 # for the tests (cluster.bash's ledger_summary)
CL_T0=$SECONDS

# harness_setup NAME BINDIR [FIRST-PORT [LAST-PORT]]: the work directory $CL_WORK and the exit
# trap; BINDIR is the nodes' default bindir, the ports are theirs (none: no node).
harness_setup() {
    CL_BINDIR="$2"
    CL_FIRST_PORT="${3:-0}"
    CL_LAST_PORT="${4:-${3:--1}}"
    local p
    for p in postgres pg_ctl initdb psql; do
        [[ -x "$CL_BINDIR/$p" ]] || { echo "FAIL: no PostgreSQL binaries in $CL_BINDIR"; exit 1; }
    done
    # The PostgreSQL major (some of PostgreSQL's own messages differ between majors).
    # shellcheck disable=SC2034 # for the tests
    CL_MAJOR="$("$CL_BINDIR/postgres" --version | awk '{ print $3 }' | cut -d. -f1)"
    mkdir -p "$SNO_WORK"
    CL_WORK="$(mktemp -d "$SNO_WORK/$1.XXXXXX")"
    chmod 755 "$CL_WORK"
    chown postgres: "$CL_WORK"
    trap harness_cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# harness_stop_also BINDIR DATADIR: a server that is not a node, stopped on exit too.
harness_stop_also() { CL_STOP_ALSO+=("$1|$2"); }

harness_keep() { [[ -n "${SNO_KEEP_WORK:-}${SNO_KEEP:-}" ]]; }

# On exit: on failure the end of every node's log, then every server stopped (immediate) and
# the work directory removed.
# shellcheck disable=SC2317 # called by the EXIT trap
harness_cleanup() {
    local rc=$? n s
    [[ -n "$CL_WORK" ]] || return 0
    if ((rc != 0 || fail != 0)) && [[ -z "${CL_QUIET_LOGS:-}" ]]; then
        for n in "${CL_NODES[@]}"; do
            [[ -f "$CL_WORK/$n/log" ]] || continue
            echo "--- last lines of $n's log"
            tail -n 12 "$CL_WORK/$n/log"
        done
    fi
    local pm
    for n in "${CL_NODES[@]}"; do
        [[ -f "$CL_WORK/$n/data/postmaster.pid" ]] || continue
        # A node a test stopped with SIGSTOP (lineage_ha_events.sh's stalled standby) and left
        # so by a failure would ignore the immediate stop and outlive the test: continued first.
        pm="$(head -1 "$CL_WORK/$n/data/postmaster.pid")"
        # shellcheck disable=SC2046 # a list of pids
        [[ "$pm" =~ ^[0-9]+$ ]] && { kill -CONT "$pm" $(pgrep -P "$pm" | xargs) 2>/dev/null || true; }
        as_pg "${CL_BIN[$n]}/pg_ctl" -D "$CL_WORK/$n/data" -m immediate -w stop >/dev/null 2>&1 || true
    done
    for s in "${CL_STOP_ALSO[@]}"; do
        [[ -f "${s#*|}/postmaster.pid" ]] &&
            { as_pg "${s%%|*}/pg_ctl" -D "${s#*|}" -m immediate -w stop >/dev/null 2>&1 || true; }
    done
    if harness_keep; then echo "kept $CL_WORK"; else rm -rf "$CL_WORK"; fi
    CL_WORK=""
}

node_dir() { echo "$CL_WORK/$1"; }
node_data() { echo "$CL_WORK/$1/data"; }
node_log() { echo "$CL_WORK/$1/log"; }
node_port() { echo "${CL_PORT[$1]}"; }
node_bindir() { echo "${CL_BIN[$1]}"; }
# The connection string of a node (for primary_conninfo, pg_rewind, subscriptions).
node_conninfo() { echo "host=$CL_WORK port=${CL_PORT[$1]} user=postgres dbname=postgres"; }

# node_new NAME [BINDIR [PORT]]: registers a node (port, directory, clock at +0, mode cache)
# without a data directory. Its port is the lowest free one, or PORT (which must be free).
node_new() {
    local name="$1" port p
    [[ "$name" =~ ^[a-z0-9_]+$ ]] || die "node name '$name': use a-z, 0-9 and _"
    [[ -z "${CL_PORT[$name]:-}" ]] || die "node $name exists"
    [[ ! -e "$CL_WORK/$name" ]] || die "node $name existed before (its directory was kept)"
    for ((port = ${3:-$CL_FIRST_PORT}; port <= CL_LAST_PORT; port++)); do
        for p in "${CL_PORT[@]}"; do ((p == port)) && continue 2; done
        break
    done
    if ((port > CL_LAST_PORT || port < CL_FIRST_PORT)) || [[ "$port" != "${3:-$port}" ]]; then
        die "no port ${3:-left} for node $name"
    fi
    CL_PORT[$name]=$port
    CL_BIN[$name]="${2:-$CL_BINDIR}"
    CL_CMDLINE[$name]=""
    CL_CLOCK[$name]=cache
    CL_NODES+=("$name")
    mkdir "$CL_WORK/$name"
    echo "+0" >"$CL_WORK/$name/faketime"
    chmod a+r "$CL_WORK/$name/faketime"
    chown -R postgres: "$CL_WORK/$name"
}

# node_initdb NAME [INITDB-OPTIONS...]: initdb -A trust -U postgres --no-sync, and the options.
node_initdb() {
    local name="$1"
    shift
    as_pg "${CL_BIN[$name]}/initdb" -D "$(node_data "$name")" -A trust -U postgres --no-sync "$@" \
        >"$CL_WORK/$name/initdb.log" 2>&1 ||
        { cat "$CL_WORK/$name/initdb.log"; bad "initdb of $name"; return 1; }
}

# node_conf NAME LINE...: lines appended to the node's postgresql.conf.
node_conf() {
    local name="$1"
    shift
    printf '%s\n' "$@" | as_pg tee -a "$(node_data "$name")/postgresql.conf" >/dev/null
}

# node_drop NAME: the node stopped (immediate) if it runs, its directory removed (kept with
# SNO_KEEP_WORK), its name and port free again.
node_drop() {
    local name="$1" n keep=()
    [[ -f "$(node_data "$name")/postmaster.pid" ]] &&
        { as_pg "${CL_BIN[$name]}/pg_ctl" -D "$(node_data "$name")" -m immediate -w stop >/dev/null 2>&1 || true; }
    harness_keep || rm -rf "${CL_WORK:?}/$name"
    for n in "${CL_NODES[@]}"; do [[ "$n" == "$name" ]] || keep+=("$n"); done
    CL_NODES=("${keep[@]}")
    unset "CL_PORT[$name]" "CL_BIN[$name]" "CL_CMDLINE[$name]" "CL_CLOCK[$name]"
}

# node_cmdline NAME [KEY=VALUE...]: the -c options of this node's next starts (replacing the
# previous ones). Values must not hold spaces or quotes.
node_cmdline() {
    local name="$1" kv
    shift
    CL_CMDLINE[$name]="$*"
    for kv in "$@"; do
        [[ "$kv" =~ ^sno\.partition=([0-9]+)$ ]] && CL_CLAIMED+=("${BASH_REMATCH[1]}")
    done
    return 0
}

# node_clock_mode NAME cache|nocache|none: how the node's next starts run libfaketime (above).
node_clock_mode() {
    [[ "$2" =~ ^(cache|nocache|none)$ ]] || die "clock mode '$2': cache, nocache or none"
    CL_CLOCK[$1]="$2"
}

# node_clock NAME OFFSET: the node's clock offset (libfaketime syntax: +0, -5s, +1h), at once
# (in mode cache a running node needs up to a second: this waits 2 s).
node_clock() {
    echo "$2" >"$CL_WORK/$1/faketime"
    if [[ "${CL_CLOCK[$1]}" == cache ]] && node_running "$1"; then sleep 2; fi
    return 0
}

# node_start NAME: pg_ctl start -w under libfaketime (as its clock mode says), with the node's
# -c options. On failure: FAIL, the end of its log, returns 1.
node_start() {
    local name="$1" opts kv env=()
    opts="-p ${CL_PORT[$name]} -k $CL_WORK -c listen_addresses=''"
    for kv in ${CL_CMDLINE[$name]}; do opts+=" -c '$kv'"; done
    case "${CL_CLOCK[$name]}" in
    cache | nocache)
        [[ -r "$CL_FAKETIME" ]] || die "libfaketime is not installed ($CL_FAKETIME)"
        env=(LD_PRELOAD="$CL_FAKETIME" FAKETIME_TIMESTAMP_FILE="$CL_WORK/$name/faketime"
            DONT_FAKE_MONOTONIC=1 FAKETIME_DONT_FAKE_MONOTONIC=1)
        if [[ "${CL_CLOCK[$name]}" == cache ]]; then env+=(FAKETIME_CACHE_DURATION=1); else env+=(FAKETIME_NO_CACHE=1); fi
        ;;
    esac
    # Extra environment of the server (CL_ENV[NAME]: space-separated KEY=VALUE words).
    local extra=()
    [[ -n "${CL_ENV[$name]:-}" ]] && read -ra extra <<<"${CL_ENV[$name]}"
    env+=("${extra[@]}")
    if ! as_pg env "${env[@]}" "${CL_BIN[$name]}/pg_ctl" -D "$(node_data "$name")" -l "$(node_log "$name")" \
        -w -t 120 -o "$opts" start >/dev/null 2>&1; then
        echo "FAIL: $name did not start; its log ends with:"
        tail -n 20 "$(node_log "$name")"
        fail=1
        return 1
    fi
}

# node_stop NAME [fast|immediate|smart]
node_stop() {
    as_pg "${CL_BIN[$1]}/pg_ctl" -D "$(node_data "$1")" -m "${2:-fast}" -w -t 120 stop >/dev/null ||
        { echo "FAIL: could not stop $1"; fail=1; return 1; }
}

# node_restart NAME [MODE]: stop (fast by default) and start.
node_restart() { node_stop "$1" "${2:-fast}" && node_start "$1"; }

# node_running NAME: whether its postmaster runs.
node_running() { as_pg "${CL_BIN[$1]}/pg_ctl" -D "$(node_data "$1")" status >/dev/null 2>&1; }

# node_kill NAME: a crash of the whole server: its postmaster killed with SIGKILL, then any child
# still attached to the old shared memory too; waits until the postmaster is gone, and removes
# its lock files if it lingers as a zombie (stale, as after any postmaster crash).
node_kill() {
    local name="$1" pm kids alive k state
    pm="$(head -1 "$(node_data "$name")/postmaster.pid")"
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
    # shellcheck disable=SC2086 # a list of pids
    [[ -n "$alive" ]] && { kill -9 $alive 2>/dev/null || true; }
    # A killed postmaster can linger as a zombie until this machine's init reaps it.
    for _ in $(seq 100); do
        state="$(ps -o stat= -p "$pm" 2>/dev/null || true)"
        [[ -z "$state" ]] && break
        if [[ "$state" == Z* ]]; then
            rm -f "$(node_data "$name")/postmaster.pid" "$CL_WORK/.s.PGSQL.${CL_PORT[$name]}.lock"
            break
        fi
        sleep 0.1
    done
    return 0
}

# node_wait_down NAME [SECONDS]: waits for a server that is going down by itself.
node_wait_down() {
    local i
    for ((i = 0; i < ${2:-60} * 10; i++)); do
        node_running "$1" || return 0
        sleep 0.1
    done
    return 1
}

# node_wait_ready NAME [SECONDS]: waits until the server accepts connections (pg_isready), 10 s
# by default.
node_wait_ready() {
    local i
    for ((i = 0; i < ${2:-10} * 10; i++)); do
        "${CL_BIN[$1]}/pg_isready" -q -h "$CL_WORK" -p "${CL_PORT[$1]}" -U postgres && return 0
        sleep 0.1
    done
    return 1
}

# node_psql_db NAME DATABASE PSQL-ARGS...: psql (of the node's bindir) as postgres, unaligned,
# tuples only, stopping at the first error.
node_psql_db() {
    local name="$1" db="$2"
    shift 2
    "${CL_BIN[$name]}/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$CL_WORK" -p "${CL_PORT[$name]}" -U postgres -d "$db" "$@"
}

# node_psql NAME PSQL-ARGS...: the same on database postgres.
node_psql() {
    local name="$1"
    shift
    node_psql_db "$name" postgres "$@"
}

# node_sql NAME SQL...: runs each SQL (one -c each), prints the results.
node_sql() {
    local name="$1" a=() s
    shift
    for s in "$@"; do a+=(-c "$s"); done
    node_psql "$name" "${a[@]}"
}

# node_try NAME SQL: runs SQL and prints everything psql says, errors included (never fails).
node_try() { node_psql "$1" -c "$2" 2>&1 || true; }

# node_client NAME PROGRAM ARGS...: a client program of the node's bindir (pgbench, pg_isready,
# pg_dump...) connected to it: PROGRAM -h SOCKET-DIR -p PORT -U postgres ARGS.
node_client() {
    local name="$1" prog="$2"
    shift 2
    "${CL_BIN[$name]}/$prog" -h "$CL_WORK" -p "${CL_PORT[$name]}" -U postgres "$@"
}

# shared_dir ROOT: the folder of sources no registry here serves (muyo-sno, citus, timescaledb;
# see the README), beside the project: $SNO_SHARED if set, else ROOT/../shared, else, for a clone
# of a local repository (a CI run's clean clone), the shared folder beside the repository it was
# cloned from. Prints nothing when none is found.
shared_dir() {
    local root="$1" origin d
    origin="$(git -C "$root" remote get-url origin 2>/dev/null || true)"
    for d in "${SNO_SHARED:-}" "$root/../shared" "${origin:+$origin/../shared}"; do
        if [[ -n "$d" && -d "$d" ]]; then
            (cd "$d" && pwd)
            return 0
        fi
    done
}

# debian_packages LOG PACKAGE...: installs the Debian packages that are missing (an apt-get
# update first only if the install fails; waiting up to 5 minutes for dpkg's lock, which another
# test may hold), apt's output to LOG. Dies if they cannot be installed.
debian_packages() {
    local log="$1" p missing=() apt=(apt-get -o DPkg::Lock::Timeout=300)
    shift
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    echo "installing the Debian packages ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
        "${apt[@]}" update >"$log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1 ||
            { tail -n 30 "$log"; die "apt-get install ${missing[*]}"; }
    fi
}

# drivers_venv ROOT: the venv with the Python drivers of ROOT/tests/drivers/python/requirements.txt
# (from PyPI), $SNO_WORK/venv-drivers: made if missing, refilled when the requirements are not the
# ones it was filled from, under a lock (tests on several majors may start together). Prints its
# path.
drivers_venv() {
    local venv="$SNO_WORK/venv-drivers" req="$1/tests/drivers/python/requirements.txt"
    mkdir -p "$SNO_WORK"
    (
        flock 9
        if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$venv/sno-requirements.txt"; then
            echo "(installing the Python drivers into $venv)" >&2
            { [[ -x "$venv/bin/python" ]] || "${SNO_PYTHON:-python3}" -m venv "$venv"; } ||
                { echo "FAIL: could not make a venv with ${SNO_PYTHON:-python3} -m venv" >&2; exit 1; }
            "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" >&2 ||
                { echo "FAIL: pip install -r tests/drivers/python/requirements.txt failed" >&2; exit 1; }
            cp "$req" "$venv/sno-requirements.txt"
        fi
    ) 9>"$SNO_WORK/venv-drivers.lock" || exit 1
    echo "$venv"
}
