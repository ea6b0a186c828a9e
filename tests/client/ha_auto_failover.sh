#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=1 estimate=330
# sno under pg_auto_failover 2.0 (Debian's postgresql-15-auto-failover; PostgreSQL 15 only): a
# monitor and two data nodes set up with the manual's commands ("### pg_auto_failover", run as
# printed: only paths, host names, ports and node names are substituted), in each of the three
# topologies of the manual's HA table, each on a fresh monitor and pair:
#   derived   no sno.partition; pg_auto_failover's default (synchronous) replication;
#   per_node  sno.partition 1 and 2 in a file beside each data directory, included by the
#             postgresql.conf that pg_basebackup and pg_rewind copy between the nodes;
#             synchronous; once, the secondary is killed: the primary must go on (wait_primary,
#             synchronous_standby_names emptied) and get its synchronous standby back;
#   shared    one partition (ALTER SYSTEM on the first node, copied into the second's
#             postgresql.auto.conf by pg_basebackup); ASYNCHRONOUS replication
#             (replication-quorum false on both nodes).
# In each, three clients write through the multi-host URI of `pg_autoctl show uri` (the README's
# target_session_attrs=read-write), connecting again after every error: each batch is one psql
# session that records which server and WAL timeline served it, inserts rows (INSERT ... RETURNING
# id into a table with id sno PRIMARY KEY DEFAULT sno_generate(1)) and merely reads IDs (SELECT
# sno_generate(2) FROM generate_series(1, N)). Every ID a client was given goes to the ledger
# (cluster.bash) as NODE / tliN.ins|gen (the primary's term: the node and its WAL timeline), and
# so does every row of the table no client was given (committed, acknowledgement lost: .unacked).
# Meanwhile the primary is killed (its pg_autoctl, postmaster and backends SIGKILLed at once, then
# `pg_autoctl run` started again: it rejoins, trying pg_rewind first) and switched over
# (`pg_autoctl perform switchover`), twice each. After each round: `pg_autoctl show state --json`
# shows the other node as primary and the old one back as secondary, pg_is_in_recovery() says so,
# the manual's sno_generator query gives each node the expected partition, and the replication
# is the topology's again (synchronous: ANY 1 (pgautofailover_standby_N); asynchronous: none).
# At the end of each topology: no sno message reached a client (the clients' stderr holds
# connection errors only); derived and per_node: no ID twice among every ID any client was given
# and every row of the table, and no acknowledged row missing; shared (asynchronous): every
# repeated ID and every missing acknowledged row is one an old primary (killed, or switched over:
# pg_auto_failover promotes an asynchronous standby without waiting for the old primary to stop)
# made in its last moments (ASYNC_RULE below), with the counts. Then no ID twice
# over the synchronous topologies together, and none shared between topologies. About 3.5
# minutes on 2 cores (printed at the end).
#
# Usage: ha_auto_failover.sh SOCKET_DIR PORT BINDIR (only PORT and BINDIR: own servers on odd
# ports from PORT+600, the ledger on PORT+699), with SNO_PG_MAJOR=15 (any other major: skipped).
# SNO_README: the README to take the commands from (default: the repository's);
# HA_TOPOLOGIES: a subset ("derived per_node shared"); HA_PHASE_SECONDS: the clients' time
# between two events (4).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped ha_auto_failover.sh: pg_auto_failover is tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
SNO_ROOT="${SNO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
README="${SNO_README:-$SNO_ROOT/doc/high-availability.md}"
command -v pg_autoctl >/dev/null ||
    { echo "FAIL: pg_autoctl is not installed (Debian package postgresql-15-auto-failover)"; exit 1; }
cluster_setup ha_auto_failover "$2" "$3"
echo "    $(pg_autoctl --version | head -1), PostgreSQL $CL_MAJOR, README $README"

# --- settings ----------------------------------------------------------------------------------

PHASE_SECONDS="${HA_PHASE_SECONDS:-4}"  # clients write this long between two events
CLIENTS=3
INS_PER_BATCH=10
GEN_PER_BATCH=100
CLIENT_MAX_SECONDS=240
WAIT_SECONDS=60                         # the longest wait for a state of the formation
# The monitor's health checks, lowered so that a failover takes seconds (defaults: 5 s period
# and timeout, 2 retries 2 s apart, unhealthy after 20 s, demote timeout 30 s, grace 10 s). The
# test never cuts a node off the network, so the keepers' network_partition_timeout (20 s) is
# left alone (see the README on keeping primary_demote_timeout above it).
MONITOR_SETTINGS=(
    "pgautofailover.health_check_period = 1000"
    "pgautofailover.health_check_timeout = 1000"
    "pgautofailover.health_check_max_retries = 1"
    "pgautofailover.health_check_retry_delay = 500"
    "pgautofailover.node_considered_unhealthy_timeout = 2000"
    "pgautofailover.primary_demote_timeout = 2000"
    "pgautofailover.startup_grace_period = 1000"
)

# --- the manual's commands ---------------------------------------------------------------------

# readme_block MARKER: the first fenced block after the README line that is exactly MARKER.
readme_block() {
    awk -v m="$1" '$0 == m { f = 1; next } f && !b && /^```/ { b = 1; next } b && /^```$/ { exit } b' "$README"
}
for m in monitor node conf per-node-include per-node-file shared async uri check; do
    [[ -n "$(readme_block "<!-- autofailover:$m -->")" ]] || die "no block after <!-- autofailover:$m --> in $README"
done

# --- pg_autoctl --------------------------------------------------------------------------------

# Every pg_autoctl node (monitor or data node) is a harness node (lib.bash's node_new: a port, a
# directory $CL_WORK/NAME, stopped on exit): pg_autoctl makes its data directory at
# $CL_WORK/NAME/data and runs as postgres with HOME and XDG directories of its own there (its
# configuration, state and pid files), so nodes on one machine keep their state apart.
# PG_REGRESS_SOCK_DIR (pg_autoctl's hook for its own tests) makes it start PostgreSQL with its
# Unix socket in $CL_WORK, where the harness's node_sql finds it. Its output goes to
# $CL_WORK/NAME/log (shown on failure), PostgreSQL's to $CL_WORK/NAME/data/log/ (pg_autoctl's
# logging_collector).
# TCP: the nodes reach each other, and the clients reach them, on 127.0.0.1, where PostgreSQL
# listens with pg_autoctl's listen_addresses '*'. Every node gets an ODD port of the harness's
# range: those ports are in Linux's ephemeral range (32768-60999), and a server cannot bind
# 0.0.0.0:PORT while a socket of this machine has the local address 127.0.0.1:PORT, as every
# connection keeps for a minute after it closed (TIME_WAIT): it then starts without IPv4 ("could
# not bind IPv4 address ... Address already in use") and nobody reaches it. The clients' thousands
# of connections made that happen to a monitor on an even port. Linux gives connect() even
# ephemeral ports (odd ones only when the even ones run out), so no connection holds an odd one.
TCP_HOST=127.0.0.1
declare -A PAF_PID=()
paf_env() {
    local d="$CL_WORK/$1"
    echo "HOME=$d/home XDG_CONFIG_HOME=$d/config XDG_DATA_HOME=$d/share XDG_RUNTIME_DIR=$d/run" \
        "PG_REGRESS_SOCK_DIR=$CL_WORK PGHOST=$CL_WORK PGDATA=$d/data PATH=/usr/bin:/bin"
}
paf_new() {
    local p q
    for ((p = CL_FIRST_PORT | 1; p <= CL_LAST_PORT; p += 2)); do
        for q in "${CL_PORT[@]}"; do ((p == q)) && continue 2; done
        break
    done
    node_new "$1" "" "$p"
    as_pg mkdir -m 700 "$CL_WORK/$1/home" "$CL_WORK/$1/config" "$CL_WORK/$1/share" "$CL_WORK/$1/run"
}
# paf NODE ARGS...: pg_autoctl ARGS in NODE's environment.
paf() {
    local n="$1"
    shift
    # shellcheck disable=SC2046 # the environment's words
    as_pg env $(paf_env "$n") pg_autoctl "$@"
}
# paf_sh NODE SCRIPT: a README snippet run by bash in NODE's environment, with the manual's paths,
# host names, ports and node name replaced by the test's; its `pg_autoctl run` lines are left out
# (paf_run starts it, in the background).
paf_sh() {
    local n="$1" s="$2"
    s="$(sed -e "s|/var/lib/postgresql/15/monitor|$CL_WORK/$MON/data|g" \
        -e "s|/var/lib/postgresql/15/node|$CL_WORK/$n/data|g" \
        -e "s|/usr/lib/postgresql/15/bin|$CL_BINDIR|g" \
        -e "s|--pgport 5432|--pgport $(node_port "$n")|g" \
        -e "s|monitor.example:5432|$TCP_HOST:$(node_port "$MON")|g" \
        -e "s|monitor.example|$TCP_HOST|g; s|node[0-9].example|$TCP_HOST|g" \
        -e "s|--name node[0-9]|--name $n|g" \
        -e '/^pg_autoctl run/d' <<<"$s")"
    echo "\$ $s" | sed 's/^/    /' >>"$CL_WORK/commands"
    # shellcheck disable=SC2046 # the environment's words
    as_pg env $(paf_env "$n") bash -euc "cd; $s" >>"$(node_log "$n")" 2>&1 ||
        { tail -n 30 "$(node_log "$n")"; die "$n: the manual's commands failed: $s"; }
}
# paf_pidfile NODE: pg_autoctl's pid file (under XDG_RUNTIME_DIR).
paf_pidfile() { echo "$CL_WORK/$1/run/pg_autoctl$CL_WORK/$1/data/pg_autoctl.pid"; }
# paf_run NODE: `pg_autoctl run` in the background, in a session (and process group) of its own,
# which its postmaster shares; waits until it wrote its pid file.
paf_run() {
    local f i
    f="$(paf_pidfile "$1")"
    # shellcheck disable=SC2046 # the environment's words
    as_pg env $(paf_env "$1") setsid pg_autoctl run >>"$(node_log "$1")" 2>&1 &
    for ((i = 0; i < 100; i++)); do
        if [[ -s "$f" ]] && kill -0 "$(head -1 "$f")" 2>/dev/null; then
            PAF_PID[$1]="$(head -1 "$f")"
            return 0
        fi
        sleep 0.1
    done
    tail -n 20 "$(node_log "$1")"
    die "$1: pg_autoctl run did not start"
}
# paf_procs NODE: the pids of NODE's pg_autoctl processes (its process group, by pid).
paf_procs() {
    local g="${PAF_PID[$1]:-}" p
    [[ -n "$g" ]] || return 0
    for p in $(pgrep -g "$g" 2>/dev/null || true); do
        [[ "$(ps -o comm= -p "$p" 2>/dev/null)" == pg_autoctl ]] && echo "$p"
    done
    return 0
}
# paf_attached SHMKEY: the processes still attached to a PostgreSQL shared memory segment.
paf_attached() { (grep -l "$1" /proc/[0-9]*/maps 2>/dev/null || true) | cut -d/ -f3 | xargs; }
# paf_crash NODE: a crash of the whole node, as when its machine fails: its pg_autoctl processes,
# its postmaster and its backends SIGKILLed at once (pg_autoctl with them, so that it cannot
# start PostgreSQL again). A backend forked in that moment is not in the list: every process
# still attached to the server's shared memory after 3 s is reported (it did not notice its
# postmaster's death) and killed too, as PostgreSQL would not start again while one is. The
# lock files of a postmaster left as a zombie are removed (as lib.bash's node_kill does).
paf_crash() {
    local n="$1" pm shm kids procs state k att=""
    pm="$(head -1 "$(node_data "$n")/postmaster.pid")"
    shm="$(sed -n 7p "$(node_data "$n")/postmaster.pid" | awk '{ printf "SYSV%08x", $1 }')"
    kids="$(pgrep -P "$pm" | xargs)"
    procs="$(paf_procs "$n" | xargs)"
    # shellcheck disable=SC2086 # lists of pids
    kill -9 $procs "$pm" $kids 2>/dev/null || true
    for _ in $(seq 30); do
        att="$(paf_attached "$shm")"
        [[ -z "$att" ]] && break
        sleep 0.1
    done
    if [[ -n "$att" ]]; then
        echo "    note: $n: processes still attached to the shared memory 3 s after the crash (killed now):"
        for k in $att; do
            echo "      $(ps -o pid=,stat=,wchan:24=,args= -p "$k" 2>/dev/null | cut -c1-150)"
            head -n 8 "/proc/$k/stack" 2>/dev/null | sed 's/^/        /'
        done
        # shellcheck disable=SC2086 # a list of pids
        kill -9 $att 2>/dev/null || true
    fi
    for _ in $(seq 100); do
        state="$(ps -o stat= -p "$pm" 2>/dev/null || true)"
        [[ -z "$state" ]] && break
        if [[ "$state" == Z* ]]; then
            rm -f "$(node_data "$n")/postmaster.pid" "$CL_WORK/.s.PGSQL.$(node_port "$n").lock"
            break
        fi
        sleep 0.1
    done
    for _ in $(seq 50); do [[ -z "$(paf_attached "$shm")" ]] && break; sleep 0.1; done
    PAF_PID[$n]=""
}
# paf_stop NODE: pg_autoctl stopped (SIGTERM: it stops PostgreSQL, fast), a crash after 30 s.
paf_stop() {
    local g="${PAF_PID[$1]:-}"
    [[ -n "$g" ]] || return 0
    kill -TERM "$g" 2>/dev/null || true
    for _ in $(seq 300); do
        [[ -z "$(paf_procs "$1")" ]] && ! node_running "$1" && { PAF_PID[$1]=""; return 0; }
        sleep 0.1
    done
    echo "    $1: pg_autoctl did not stop in 30 s; killed"
    paf_crash "$1"
}

# paf_states: "NAME:REPORTED/ASSIGNED ..." of every node of the formation, by name, from
# `pg_autoctl show state --json` on the monitor.
paf_states() {
    paf "$MON" show state --json 2>/dev/null |
        awk -F'"' '/"nodename"/ { n = $4 } /"current_group_state"/ { c = $4 }
                   /"assigned_group_state"/ { print n ":" c "/" $4 }' | sort | xargs
}
# paf_wait REGEX DESCRIPTION: waits (up to WAIT_SECONDS) until paf_states matches REGEX.
PAF_STATES=""
paf_wait() {
    local t0=$SECONDS
    while ((SECONDS - t0 < WAIT_SECONDS)); do
        PAF_STATES="$(paf_states)"
        [[ "$PAF_STATES" =~ ^($1)$ ]] && return 0
        sleep 0.3
    done
    bad "$2: the formation is '$PAF_STATES' after $WAIT_SECONDS s, want '$1'"
    return 1
}
paf_primary() { paf_states | tr ' ' '\n' | sed -n 's|^\([a-z0-9_]*\):primary/primary$|\1|p'; }

# --- clients -----------------------------------------------------------------------------------

# A client's batch is one psql session through the URI: its first line (S|PORT|TIMELINE) says
# which server took the session and that server's WAL timeline, then I|ID per acknowledged row,
# G|ID per ID read. psql runs with stdout line-buffered (a psql killed by its timeout keeps what
# it printed) and no statement_timeout (a cancelled wait for the synchronous standby would
# acknowledge a commit the standby may not have).
TLI_SQL="('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::int"
mkdir -p "$CL_WORK/clients"
client() {
    set +e
    local topo="$1" c="$2" out="$CL_WORK/clients/$1.$2" b=0 deadline=$((SECONDS + CLIENT_MAX_SECONDS)) sql i
    sql="SELECT 'S', current_setting('port'), $TLI_SQL;"
    for ((i = 1; i <= INS_PER_BATCH; i++)); do sql+=$'\n'"INSERT INTO ha (client) VALUES ('$c') RETURNING 'I', id;"; done
    sql+=$'\n'"SELECT 'G', sno_generate(2) FROM generate_series(1, $GEN_PER_BATCH);"
    while [[ ! -e "$CL_WORK/clients/$topo.stop" ]] && ((SECONDS < deadline)); do
        b=$((b + 1))
        if PGUSER=postgres PGCONNECT_TIMEOUT=3 timeout 60 stdbuf -oL "$CL_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 \
            -d "$URI" <<<"$sql" >>"$out.raw" 2>>"$out.err"; then
            echo "$b ok" >>"$out.batches"
        else
            echo "$b failed" >>"$out.batches"
            sleep 0.2
        fi
    done
}
CLIENT_PIDS=()
clients_start() {
    local c
    for ((c = 1; c <= CLIENTS; c++)); do
        client "$1" "c$c" &
        CLIENT_PIDS+=($!)
    done
}
# clients_stop TOPO: the stop file, then waits for the clients' batches (psql's own timeout
# bounds them).
clients_stop() {
    touch "$CL_WORK/clients/$1.stop"
    wait "${CLIENT_PIDS[@]}" 2>/dev/null || true
    CLIENT_PIDS=()
}

# On exit (also after a failure): the clients, every pg_autoctl (so that none starts PostgreSQL
# again), then the harness's cleanup (every node's PostgreSQL stopped, immediate).
# shellcheck disable=SC2317 # called by the EXIT trap
on_exit() {
    local rc=$? p n
    # Not errexit here: `(exit "$rc")` below, which hands the status to harness_cleanup, would
    # end the trap before the cleanup when rc is not 0.
    set +e
    for p in "${CLIENT_PIDS[@]}"; do
        pkill -P "$p" 2>/dev/null || true
        kill "$p" 2>/dev/null || true
    done
    for n in "${!PAF_PID[@]}"; do
        p="$(paf_procs "$n" | xargs)"
        # shellcheck disable=SC2086 # a list of pids
        [[ -n "$p" ]] && { kill -9 $p 2>/dev/null || true; }
    done
    (exit "$rc")
    harness_cleanup
}
trap on_exit EXIT

# --- the ledger's side tables ------------------------------------------------------------------

# final: the rows of each topology's table at its end (node and timeline of the primary that
# inserted them, from the table's own columns); terms: every primary's term (node, timeline)
# and how it ended (kill, switchover, or end).
ledger_psql -c "CREATE TABLE final (id sno NOT NULL, node text NOT NULL, term text NOT NULL)" \
    -c "CREATE TABLE terms (node text NOT NULL, term text NOT NULL, ended text NOT NULL)" \
    -c "CREATE FUNCTION issue_key(sno) RETURNS numeric LANGUAGE sql IMMUTABLE AS
          \$\$ SELECT extract(epoch FROM sno_time(\$1) - '2010-01-01 00:00:00+00') * 250 * 65536 + sno_sequence(\$1) \$\$" >/dev/null

# --- one topology -------------------------------------------------------------------------------

declare -A PART=()
TOPO=""
MON=""
N1=""
N2=""
URI=""
ROUND=0
SHARED_PARTITION="$(readme_block "<!-- autofailover:shared -->" | sed -n 's/^ALTER SYSTEM SET sno.partition = \([0-9]*\);$/\1/p')"
[[ -n "$SHARED_PARTITION" ]] || die "the manual's shared partition was not found"

# expect_partitions: the manual's sno_generator query on both nodes gives what the topology says.
expect_partitions() {
    local n got want
    for n in "$N1" "$N2"; do
        got="$(node_psql "$n" -F'|' -c "$(readme_block "<!-- autofailover:check -->")" 2>&1 || true)"
        case "$TOPO" in
        derived) want="*|system identifier" ;;
        per_node) want="${PART[$n]}|sno.partition" ;;
        shared) want="$SHARED_PARTITION|sno.partition" ;;
        esac
        if [[ "$want" == '*'* ]]; then
            check "$1: $n: sno_generator: a derived partition" "${got#*|}" "${want#*|}"
        else
            check "$1: $n: sno_generator: partition and source" "$got" "$want"
        fi
    done
}

# poll_sql NODE SQL WANT: SQL's answer on NODE once it is WANT, or the last one after 10 s.
poll_sql() {
    local r=""
    for _ in $(seq 100); do
        r="$(node_sql "$1" "$2" 2>&1 || true)"
        [[ "$r" == "$3" ]] && break
        sleep 0.1
    done
    echo "$r"
}

# term NODE: NODE's WAL timeline (the primary's term is NODE/tliN).
term() { echo "tli$(node_sql "$1" "SELECT $TLI_SQL")"; }

# per_node_file NODE: the manual's per-node file, beside NODE's data directory, with its partition.
per_node_file() {
    readme_block "<!-- autofailover:per-node-file -->" | sed "s/^sno.partition = 1$/sno.partition = ${PART[$1]}/" |
        as_pg tee "$CL_WORK/$1/sno-node.conf" >/dev/null
    check "$TOPO: the per-node file of $1 says partition ${PART[$1]}" "$(cat "$CL_WORK/$1/sno-node.conf")" "sno.partition = ${PART[$1]}"
}

setup() {
    TOPO="$1"
    MON="${TOPO}_mon" N1="${TOPO}_1" N2="${TOPO}_2"
    ROUND=0
    echo "--- $TOPO: a monitor and two nodes, with the manual's commands"
    : >"$CL_WORK/commands"
    local t0=$SECONDS n
    paf_new "$MON"
    paf_sh "$MON" "$(readme_block "<!-- autofailover:monitor -->")"
    paf_run "$MON"
    node_wait_ready "$MON" 30 || die "$TOPO: the monitor does not accept connections"
    for s in "${MONITOR_SETTINGS[@]}"; do node_psql_db "$MON" pg_auto_failover -c "ALTER SYSTEM SET $s" >/dev/null; done
    node_psql_db "$MON" pg_auto_failover -c "SELECT pg_reload_conf()" >/dev/null

    paf_new "$N1"
    paf_sh "$N1" "$(readme_block "<!-- autofailover:node -->")"
    {
        readme_block "<!-- autofailover:conf -->"
        [[ "$TOPO" == per_node ]] && readme_block "<!-- autofailover:per-node-include -->"
        # Test only: no fsync (the nodes crash as processes, never as machines; cluster.bash's
        # nodes run so too) and a small shared_buffers.
        echo "fsync = off"
        echo "shared_buffers = 32MB"
    } | as_pg tee -a "$(node_data "$N1")/postgresql.conf" >/dev/null
    PART[$N1]=1 PART[$N2]=2
    [[ "$TOPO" == per_node ]] && per_node_file "$N1"
    paf_run "$N1"
    paf_wait "$N1:single/single" "$TOPO: $N1 runs" || die "$TOPO: $N1 did not start"
    node_wait_ready "$N1" 30 || die "$TOPO: $N1 does not accept connections"
    node_sql "$N1" "CREATE EXTENSION sno" >/dev/null
    if [[ "$TOPO" == shared ]]; then
        node_psql "$N1" <<<"$(readme_block "<!-- autofailover:shared -->")" >/dev/null
        CL_CLAIMED+=("$SHARED_PARTITION")
        node_reload "$N1" sno.partition "$SHARED_PARTITION"
    fi
    node_sql "$N1" "CREATE TABLE ha (id sno PRIMARY KEY DEFAULT sno_generate(1), client text NOT NULL,
                      port int NOT NULL DEFAULT current_setting('port')::int, term int NOT NULL DEFAULT $TLI_SQL)" \
        "CHECKPOINT" >/dev/null

    paf_new "$N2"
    [[ "$TOPO" == per_node ]] && per_node_file "$N2"
    paf_sh "$N2" "$(readme_block "<!-- autofailover:node -->" | sed 's/node1/node2/g')"
    paf_run "$N2"
    paf_wait "$N1:primary/primary $N2:secondary/secondary" "$TOPO: $N2 is $N1's standby" ||
        die "$TOPO: the pair did not form"
    if [[ "$TOPO" == shared ]]; then
        for n in "$N1" "$N2"; do paf_sh "$n" "$(readme_block "<!-- autofailover:async -->")"; done
        check "$TOPO: replication is asynchronous (replication-quorum false)" \
            "$(poll_sql "$N1" "SELECT current_setting('synchronous_standby_names'), sync_state FROM pg_stat_replication" "|async")" "|async"
    else
        check "$TOPO: replication is synchronous (pg_auto_failover's default)" \
            "$(poll_sql "$N1" "SELECT current_setting('synchronous_standby_names'), sync_state FROM pg_stat_replication" \
                "ANY 1 (pgautofailover_standby_2)|quorum")" "ANY 1 (pgautofailover_standby_2)|quorum"
    fi
    check "$TOPO: sno is preloaded on $N2 (its copy of postgresql.conf)" \
        "$(node_sql "$N2" "SHOW shared_preload_libraries")" "pg_stat_statements,sno"
    expect_partitions "$TOPO: set up"
    URI="$(paf_sh_out "$MON" "$(readme_block "<!-- autofailover:uri -->")")"
    # shellcheck disable=SC2001 # a pattern with a count
    check "$TOPO: the URI lists both nodes, read-write" \
        "$(sed 's/[0-9]\{4,5\}/P/g' <<<"$URI")" "postgres://$TCP_HOST:P,$TCP_HOST:P/postgres?target_session_attrs=read-write&sslmode=disable"
    echo "    set up in $((SECONDS - t0)) s; clients use $URI"
}
# paf_sh_out NODE SCRIPT: paf_sh's substitutions, the output printed.
paf_sh_out() {
    # shellcheck disable=SC2046 # the environment's words
    as_pg env $(paf_env "$1") bash -euc "cd; $2" 2>>"$(node_log "$1")"
}

# round kill|switchover: the primary crashes (then pg_autoctl runs again on it) or is switched
# over; the other node must be the primary after it, the old one its secondary.
round() {
    local kind="$1" old new t0=$SECONDS t1 tli want
    ROUND=$((ROUND + 1))
    old="$(paf_primary)"
    [[ "$old" == "$N1" || "$old" == "$N2" ]] || die "$TOPO: no primary before round $ROUND ($(paf_states))"
    if [[ "$old" == "$N1" ]]; then new="$N2"; else new="$N1"; fi
    tli="$(term "$old")"
    ledger_psql -c "INSERT INTO terms VALUES ('$old', '$tli', '$kind')" >/dev/null
    case "$kind" in
    kill)
        paf_crash "$old"
        paf_wait "$old:[a-z_]+/[a-z_]+ $new:(wait_primary/wait_primary|primary/primary)|$new:(wait_primary/wait_primary|primary/primary) $old:[a-z_]+/[a-z_]+" \
            "$TOPO round $ROUND: failover to $new" || die "$TOPO: no failover"
        t1=$((SECONDS - t0))
        paf_run "$old"
        ;;
    switchover)
        # The monitor refuses a switchover while the secondary it just saw rejoin is not yet
        # reported ready (seen once under load, right after a kill round): try again, as a DBA
        # would, up to three times.
        local try switched=""
        for try in 1 2 3; do
            if paf "$MON" perform switchover --formation default >>"$(node_log "$MON")" 2>&1; then
                switched=yes
                break
            fi
            echo "    round $ROUND: pg_autoctl perform switchover failed (try $try; $(paf_states))"
            sleep 5
        done
        [[ -n "$switched" ]] || bad "$TOPO round $ROUND: pg_autoctl perform switchover failed three times"
        t1=$((SECONDS - t0))
        ;;
    esac
    if [[ "$old" < "$new" ]]; then
        paf_wait "$old:secondary/secondary $new:primary/primary" "$TOPO round $ROUND ($kind): $old rejoins" || die "$TOPO: $old did not rejoin"
    else
        paf_wait "$new:primary/primary $old:secondary/secondary" "$TOPO round $ROUND ($kind): $old rejoins" || die "$TOPO: $old did not rejoin"
    fi
    check "$TOPO round $ROUND ($kind): $new is the primary now, $old in recovery" \
        "$(node_sql "$new" "SELECT pg_is_in_recovery()") $(node_sql "$old" "SELECT pg_is_in_recovery()")" "f t"
    echo "    round $ROUND, $kind of $old ($tli): $new primary after $t1 s, $old secondary again after $((SECONDS - t0)) s" \
        "(pg_rewind: $(grep -c 'pg_rewind: Done' "$(node_log "$old")" || true) rewinds, $(grep -c 'no rewind required' "$(node_log "$old")" || true) not required so far)"
    expect_partitions "$TOPO round $ROUND ($kind)"
    # The replication the topology runs, back with the new roles.
    if [[ "$TOPO" == shared ]]; then want="|async"; else want="ANY 1 (pgautofailover_standby_${old##*_})|quorum"; fi
    check "$TOPO round $ROUND ($kind): the replication to $old" "$(poll_sql "$new" "SELECT current_setting('synchronous_standby_names'),
                      sync_state FROM pg_stat_replication" "$want")" "$want"
}

# secondary_crash: the synchronous standby crashes while clients write: the primary goes to
# wait_primary, with synchronous_standby_names emptied, and goes on; then the standby rejoins and
# is synchronous again.
secondary_crash() {
    local p s t0=$SECONDS i0 i1 t1
    p="$(paf_primary)"
    if [[ "$p" == "$N1" ]]; then s="$N2"; else s="$N1"; fi
    echo "    the secondary $s crashes"
    SB_CRASH="$(date +%s.%3N)" SB_TERM="$p.$(term "$p")"
    paf_crash "$s"
    paf_wait "($p:wait_primary/wait_primary $s:[a-z_]+/[a-z_]+|$s:[a-z_]+/[a-z_]+ $p:wait_primary/wait_primary)" \
        "$TOPO: $p without its standby" || return 0
    t1=$((SECONDS - t0))
    check "$TOPO: wait_primary: synchronous_standby_names is empty" "$(node_sql "$p" "SHOW synchronous_standby_names")" ""
    i0="$(node_sql "$p" "SELECT ids_issued FROM sno_generator")"
    sleep 2
    i1="$(node_sql "$p" "SELECT ids_issued FROM sno_generator")"
    check "$TOPO: the primary makes IDs without its standby" "$((i1 > i0))" 1
    paf_run "$s"
    if [[ "$p" < "$s" ]]; then
        paf_wait "$p:primary/primary $s:secondary/secondary" "$TOPO: $s rejoins" || die "$TOPO: $s did not rejoin"
    else
        paf_wait "$s:secondary/secondary $p:primary/primary" "$TOPO: $s rejoins" || die "$TOPO: $s did not rejoin"
    fi
    check "$TOPO: $s is synchronous again" "$(poll_sql "$p" "SELECT sync_state FROM pg_stat_replication" quorum)" quorum
    echo "    $p in wait_primary $t1 s after the crash (IDs made meanwhile: $((i1 - i0)) in 2 s); $s synchronous again after $((SECONDS - t0)) s"
}

# standby_pause: from the ledger, the longest pause in the rows and in the IDs the primary gave
# the clients in the 20 s after its standby crashed (secondary_crash).
SB_CRASH="" SB_TERM=""
standby_pause() {
    [[ -n "$SB_CRASH" ]] || return 0
    ledger_sql "SELECT k, extract(epoch FROM max(gap))::numeric(6,2) FROM (SELECT split_part(phase, '.', 2) k,
                       sno_time(id) - lag(sno_time(id)) OVER (PARTITION BY split_part(phase, '.', 2) ORDER BY sno_time(id)) gap
                FROM ledger WHERE node = '${SB_TERM%%.*}' AND split_part(phase, '.', 1) = '${SB_TERM#*.}'
                  AND sno_time(id) BETWEEN to_timestamp($SB_CRASH) - interval '1 s' AND to_timestamp($SB_CRASH) + interval '20 s') x
                GROUP BY k ORDER BY k" | awk -F'|' '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), ($1 == "ins" ? "rows" : "IDs read"), $2 }'
}

# finish: the clients stop; their files and the table's rows into the ledger; the checks.
finish() {
    local p f raw map n x W Wl
    clients_stop "$TOPO"
    p="$(paf_primary)"
    ledger_psql -c "INSERT INTO terms VALUES ('$p', '$(term "$p")', 'end')" >/dev/null
    map="$(node_port "$N1")=$N1 $(node_port "$N2")=$N2"
    # The clients' IDs, by node and term, into ledger files.
    rm -rf "$CL_WORK/parse" && mkdir "$CL_WORK/parse"
    cat "$CL_WORK/clients/$TOPO".c*.raw | awk -F'|' -v map="$map" -v d="$CL_WORK/parse" '
        BEGIN { k = split(map, a, " "); for (i = 1; i <= k; i++) { split(a[i], b, "="); node[b[1]] = b[2] } }
        $1 == "S" { s = node[$2] "." "tli" $3; next }
        $1 == "I" { print $2 > (d "/" s ".ins"); next }
        $1 == "G" { print $2 > (d "/" s ".gen"); next }
        { print > (d "/unparsed") }'
    [[ ! -s "$CL_WORK/parse/unparsed" ]] || { bad "$TOPO: lines the clients printed that are no ID:"; head -3 "$CL_WORK/parse/unparsed"; }
    rm -f "$CL_WORK/parse/unparsed"
    for f in "$CL_WORK/parse"/*; do
        x="$(basename "$f")"
        cat "$f" >>"$(ledger_file "${x%%.*}" "${x#*.}")"
    done
    # The table, from the primary.
    node_psql "$p" -c "COPY (SELECT id, port, term FROM ha) TO STDOUT" |
        awk -v map="$map" -v OFS='\t' 'BEGIN { k = split(map, a, " "); for (i = 1; i <= k; i++) { split(a[i], b, "="); node[b[1]] = b[2] } }
                                     { print $1, node[$2], "tli" $3 }' |
        ledger_psql -c "COPY final FROM STDIN"
    ledger_psql -c "ANALYZE final" >/dev/null
    ledger_load
    # Rows in the table no client was given (committed, but the acknowledgement was lost with a
    # failing server): issued IDs too, into the ledger as NODE / tliN.unacked.
    ledger_sql "SELECT node || '.' || term || '.unacked', id FROM final f WHERE node LIKE '$TOPO\\_%'
                AND NOT EXISTS (SELECT 1 FROM ledger l WHERE l.id = f.id AND l.node = f.node AND l.phase = f.term || '.ins')" |
        while IFS='|' read -r x raw; do echo "$raw" >>"$(ledger_file "${x%%.*}" "${x#*.}")"; done
    ledger_load

    echo "--- $TOPO: what the clients were given"
    W="node LIKE '$TOPO\\_%'" Wl="l.node LIKE '$TOPO\\_%'"
    echo "    batches: $(cat "$CL_WORK/clients/$TOPO".c*.batches | wc -l), failed (connection errors, failovers):" \
        "$(cat "$CL_WORK/clients/$TOPO".c*.batches | grep -c failed || true)"
    ledger_sql "SELECT node, split_part(phase, '.', 1), count(*) FILTER (WHERE phase LIKE '%.ins'),
                       count(*) FILTER (WHERE phase LIKE '%.gen'), count(*) FILTER (WHERE phase LIKE '%.unacked'),
                       string_agg(DISTINCT sno_partition(id)::text, ','), string_agg(DISTINCT sno_tick(id)::text, ','),
                       to_char(min(sno_time(id)), 'HH24:MI:SS.MS'), to_char(max(sno_time(id)), 'HH24:MI:SS.MS')
                FROM ledger WHERE $W GROUP BY 1, 2 ORDER BY min(seq)" |
        awk -F'|' '{ printf "    %-11s %-5s %6d rows acknowledged %7d IDs read %4d rows unacknowledged  partition %-6s tick %s  %s .. %s\n",
                            $1, $2, $3, $4, $5, $6, $7, $8, $9 }'
    echo "    most frequent client errors:"
    cat "$CL_WORK/clients/$TOPO".c*.err | sed 's/[0-9]\{2,\}/N/g' | sort | uniq -c | sort -rn | head -n 5 | cut -c1-150 | sed 's/^/      /'
    # No sno message reached a client: only connection errors.
    x="$(cat "$CL_WORK/clients/$TOPO".c*.err | grep -iE '(^|[^a-z0-9])sno' || true)"
    check "$TOPO: no sno message reached a client" "$x" ""
    check "$TOPO: no client was refused a duplicate key" "$(cat "$CL_WORK/clients/$TOPO".c*.err | grep -c 'duplicate key' || true)" 0
    check "$TOPO: the clients were given IDs by both nodes" \
        "$(ledger_sql "SELECT count(DISTINCT node) FROM ledger WHERE $W AND phase LIKE '%.ins'")" 2

    # Partitions.
    case "$TOPO" in
    derived)
        check "$TOPO: no partition is carried by IDs of two primaries' terms" \
            "$(ledger_sql "SELECT coalesce(string_agg(p || ': ' || t, '; '), '') FROM (SELECT sno_partition(id) p,
                             string_agg(DISTINCT node || '/' || split_part(phase, '.', 1), ',') t FROM ledger WHERE $W
                             GROUP BY 1 HAVING count(DISTINCT node || '/' || split_part(phase, '.', 1)) > 1) x")" ""
        ;;
    per_node)
        check "$TOPO: each node's IDs carry its own partition" \
            "$(ledger_sql "SELECT string_agg(node || ':' || p, ' ' ORDER BY node) FROM (SELECT node,
                             string_agg(DISTINCT sno_partition(id)::text, ',') p FROM ledger WHERE $W GROUP BY 1) x")" \
            "$N1:${PART[$N1]} $N2:${PART[$N2]}"
        ;;
    shared)
        check "$TOPO: every ID carries the shared partition" \
            "$(ledger_sql "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ledger WHERE $W")" "$SHARED_PARTITION"
        ;;
    esac

    echo "--- $TOPO: duplicates and lost rows"
    ledger_psql -c "SET client_min_messages = warning" -c "DROP TABLE IF EXISTS lost, risk, surv" \
        -c "CREATE TABLE lost AS SELECT l.id, l.node, split_part(l.phase, '.', 1) term FROM ledger l
              WHERE $Wl AND l.phase LIKE '%.ins' AND NOT EXISTS (SELECT 1 FROM final f WHERE f.id = l.id)" \
        -c "CREATE TABLE surv AS SELECT DISTINCT ON (node, term) node, term, issue_key(id) key, sno_tick(id) tick, id
              FROM final WHERE $W ORDER BY node, term, issue_key(id) DESC" \
        -c "CREATE TABLE risk AS SELECT l.id, l.node, split_part(l.phase, '.', 1) term,
                   (k.ended IN ('kill', 'switchover') AND (s.key IS NULL OR (sno_tick(l.id) = s.tick AND issue_key(l.id) > s.key))) AS at_risk
              FROM ledger l LEFT JOIN terms k ON k.node = l.node AND k.term = split_part(l.phase, '.', 1)
              LEFT JOIN surv s ON s.node = l.node AND s.term = split_part(l.phase, '.', 1) WHERE $Wl" >/dev/null
    local ids dups lost
    ids="$(ledger_sql "SELECT count(*) FROM ledger WHERE $W")"
    dups="$(ledger_sql "SELECT count(*) FROM (SELECT id FROM ledger WHERE $W GROUP BY id HAVING count(*) > 1) d")"
    lost="$(ledger_sql "SELECT count(*) FROM lost")"
    if [[ "$TOPO" == shared ]]; then
        # ASYNC_RULE: with asynchronous replication and one partition, the promoted node may make
        # again IDs the old primary made but never sent (README: the sequence baseline). That
        # holds for a switchover too: pg_auto_failover 2.0 promotes an asynchronous standby as
        # soon as it reaches prepare_promotion, without waiting for the draining primary to stop,
        # and that primary may still commit for a moment (seen in CI: 19 acknowledged rows of a
        # switched-over term's last 30 ms missing). So a repeated ID must be one of two copies
        # from two terms, one of which an old primary (killed or switched over) made after the
        # newest of its term's rows that reached the table; and a missing acknowledged row must
        # be one an old primary acknowledged in its last moments. Nothing else.
        check "$TOPO: every repeated ID is one an old primary made after its newest surviving row" \
            "$(ledger_sql "SELECT count(*) FROM (SELECT id FROM risk GROUP BY id HAVING count(*) > 1 AND NOT (count(*) = 2
                             AND bool_or(at_risk) AND count(DISTINCT node || term) = 2)) d")" 0
        # A lost row: acknowledged by a primary killed or switched over, in the last moments of its term
        # (its commit never reached the standby). Its ID may be a little older than the newest
        # row of that term that did reach it (another session's, made a moment later and
        # committed first), so the bound is the newest surviving row's time less one second.
        check "$TOPO: every missing acknowledged row is one an old primary acknowledged in its last second" \
            "$(ledger_sql "SELECT count(*) FROM lost l LEFT JOIN terms k ON k.node = l.node AND k.term = l.term
                             LEFT JOIN surv s ON s.node = l.node AND s.term = l.term
                           WHERE NOT (coalesce(k.ended, '') IN ('kill', 'switchover') AND (s.id IS NULL OR sno_time(l.id) > sno_time(s.id) - interval '1 second'))")" 0
        echo "    $ids IDs; repeated (allowed): $dups; acknowledged rows missing (allowed): $lost;" \
            "IDs at risk (made by an old primary after its newest surviving row): $(ledger_sql "SELECT count(*) FROM risk WHERE at_risk")"
        if [[ "$lost" != 0 ]]; then
            ledger_sql "SELECT l.node, l.term, count(*), to_char(min(sno_time(l.id)), 'HH24:MI:SS.MS'),
                               to_char(max(sno_time(l.id)), 'HH24:MI:SS.MS'), to_char(max(sno_time(s.id)), 'HH24:MI:SS.MS'),
                               coalesce(min(k.ended), 'none')
                        FROM lost l LEFT JOIN surv s USING (node, term)
                             LEFT JOIN terms k ON k.node = l.node AND k.term = l.term GROUP BY 1, 2" |
                awk -F'|' '{ printf "      %s %s (ended by %s): %d rows missing, made %s .. %s, newest surviving row of that term %s\n", $1, $2, $7, $3, $4, $5, $6 }'
        fi
    else
        ledger_check "$TOPO: every ID any client was given and every row of the table" "$W"
        check "$TOPO: no acknowledged row is missing" "$lost" 0
    fi
    echo "    $TOPO: $ROUND leader moves, $(ledger_sql "SELECT count(*) FROM final WHERE $W") rows in the table," \
        "$(ledger_sql "SELECT count(*) FROM ledger WHERE $W AND phase LIKE '%.unacked'") of them unacknowledged"
    [[ -z "$SB_CRASH" ]] || echo "    after the standby's crash, the longest pause of the primary: $(standby_pause)"
    SB_CRASH=""
    # What sno said in the servers' logs (not to the clients), for the record.
    x="$(cat "$CL_WORK/$N1"/data/log/*.log "$CL_WORK/$N2"/data/log/*.log 2>/dev/null | grep -E '(WARNING|ERROR|FATAL|PANIC|LOG): +sno' |
        sed -e 's/^.*\(WARNING\|ERROR\|FATAL\|PANIC\|LOG\): */\1: /' -e 's/[0-9]\{2,\}/N/g' | sort | uniq -c | sort -rn | head -n 6 | cut -c1-200 || true)"
    echo "    sno's messages in the servers' logs:${x:+$'\n'}${x:- none}" | sed '2,$s/^/     /'
    for n in "$N1" "$N2" "$MON"; do paf_stop "$n"; done
}

topology() {
    setup "$1"
    clients_start "$TOPO"
    sleep "$PHASE_SECONDS"
    round kill
    sleep "$PHASE_SECONDS"
    round switchover
    sleep "$PHASE_SECONDS"
    round kill
    sleep "$PHASE_SECONDS"
    round switchover
    if [[ "$TOPO" == per_node ]]; then
        sleep "$PHASE_SECONDS"
        secondary_crash
    fi
    sleep "$PHASE_SECONDS"
    finish
}

for t in ${HA_TOPOLOGIES:-derived per_node shared}; do topology "$t"; done

echo "--- every topology"
ledger_check "every ID of the synchronous topologies (derived, per_node)" "node NOT LIKE 'shared\\_%'"
check "no ID of one topology is in another's" \
    "$(ledger_sql "SELECT count(*) FROM (SELECT id FROM ledger GROUP BY id HAVING count(DISTINCT split_part(node, '_', 1)) > 1) d")" 0
ledger_summary
echo "    $((SECONDS - CL_T0)) s in all"
exit "$fail"
