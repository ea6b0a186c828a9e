#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=1 estimate=290
# Patroni 3.0 with etcd (PostgreSQL 15 only): three PostgreSQL nodes run by Patroni, one etcd,
# synchronous_mode, use_pg_rewind (and a new base backup if a rewind fails), with the README's
# patroni.yml ("### Patroni") as printed. For each topology of the manual's HA table, a new
# cluster (a scope of its own in the one etcd):
#   derived   no sno.partition: each node derives its own, a promoted node draws a new one;
#   per_node  sno.partition 1, 2, 3 in each node's own patroni.yml (postgresql.parameters, the
#             README's per-node snippet): Patroni writes it into the postgresql.conf it
#             generates before every start, so pg_rewind and base backups do not change it;
#   shared    sno.partition 7 in the DCS (bootstrap.dcs.postgresql.parameters, the README's
#             shared snippet); at the end it is changed to 8 with patronictl edit-config --pg.
# In each: four clients (two insert rows with INSERT ... RETURNING id into a table keyed by
# DEFAULT sno_generate(1), two merely read IDs with SELECT sno_generate(2) FROM
# generate_series(1, 100)) connect through one multi-host connection string (host=SOCKETS
# port=P1,P2,P3 target_session_attrs=read-write), reconnecting after errors, and record every
# ID they were given and which server and WAL timeline gave it. Meanwhile the leader is killed
# (Patroni and the postmaster with SIGKILL, so Patroni cannot demote it; then Patroni is
# started again and the node rejoins, through pg_rewind when it needs one) and switched over
# (patronictl switchover to the synchronous standby), twice each; per_node: then one replica is
# rebuilt with patronictl reinit. After each round: another member holds the leader key and is
# out of recovery, the old one is a streaming replica again, synchronous replication is back
# and Patroni has recorded the synchronous standby in the DCS (before that, Patroni would
# promote no one if the leader failed: the next event waits for it), and each node's
# sno_generator (the manual's query) shows the partition its topology gives it.
# At the end: no ID twice among every ID any client was given (per topology and over the whole
# run), no acknowledged row missing on the final leader, no message from sno in any client's
# stderr (connection errors during a failover are expected), no duplicate-key error, IDs from
# every node that led and in every leadership term, and the IDs' partitions are the topology's
# (derived: each partition one node's in one leadership term; per_node: each node's IDs its
# own; shared: the shared one).
#
# How the manual's configuration is used: each node's Patroni reads a configuration directory
# (Patroni merges the *.yml files of a directory in name order): 10-readme.yml is the README's
# patroni.yml as printed, 20-topology.yml the topology's snippet as printed (per_node: its
# "sno.partition: 1" made the node's number), 30-test.yml what differs on this machine:
# names, addresses and ports (everything on 127.0.0.1, sockets in the work directory, Patroni's
# own connections by socket), paths, trust authentication, the logs, fsync off, and shorter
# timeouts (ttl 6, loop_wait 1, retry_timeout 2). SNO_README=FILE reads the snippets from FILE
# instead of README.md.
#
# Ports: nodes (PostgreSQL) PORT+600..698, the ledger PORT+699 (cluster.bash); Patroni's REST
# API PORT+500..589; etcd two of PORT+590..599 (clients, peers). Unlike the harness's servers
# (Unix sockets only), these listen on TCP (127.0.0.1), in the range the kernel also takes the
# local ports of outgoing connections from: each is the lowest odd port of its range that no
# socket of this machine uses (/proc/net/tcp), so that a client's connection cannot make a bind
# fail (outgoing connections get even ports first).
#
# Usage: ha_patroni.sh SOCKET_DIR PORT BINDIR (only PORT and BINDIR: own clusters), with
# SNO_PG_MAJOR=15 (any other major: skipped). HA_PATRONI_PHASE: seconds the clients write
# between two events (5).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped ha_patroni.sh: Patroni is tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi
for b in patroni patronictl etcd; do
    command -v "$b" >/dev/null || { echo "FAIL: $b is not installed (Debian: patroni, etcd-server)"; exit 1; }
done

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
SNO_ROOT="${SNO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
README="${SNO_README:-$SNO_ROOT/doc/high-availability.md}"
cluster_setup ha_patroni "$2" "$3"
T0=$SECONDS

PHASE="${HA_PATRONI_PHASE:-5}"
PORT0=$2
SHARED=7
SHARED_LATER=8
CLIENT_MAX_SECONDS=600

# readme_block MARKER LANG: the first ```LANG block after the README line that starts with
# MARKER.
readme_block() {
    awk -v m="$1" -v l="$2" 'index($0, m) == 1 { f = 1 } f && $0 == "```" l { b = 1; next } b && /^```$/ { exit } b' "$README"
}
README_CONFIG="$(readme_block '<!-- patroni:config -->' yaml)"
README_PER_NODE="$(readme_block '<!-- patroni:per-node -->' yaml)"
README_SHARED="$(readme_block '<!-- patroni:shared -->' yaml)"
README_CHECK="$(readme_block '<!-- patroni:check -->' sql)"
[[ -n "$README_CONFIG" && -n "$README_PER_NODE" && -n "$README_SHARED" && -n "$README_CHECK" ]] ||
    die "the manual's Patroni snippets were not found in $README"
grep -q '^ *shared_preload_libraries: sno$' <<<"$README_CONFIG" || die "the manual's patroni.yml does not preload sno"
grep -q '^ *synchronous_mode: true$' <<<"$README_CONFIG" || die "the manual's patroni.yml has no synchronous_mode: true"
grep -q '^ *use_pg_rewind: true$' <<<"$README_CONFIG" || die "the manual's patroni.yml has no use_pg_rewind: true"
grep -q '^    sno.partition: 1$' <<<"$README_PER_NODE" || die "the manual's per-node snippet has no 'sno.partition: 1'"
grep -q "^        sno.partition: $SHARED\$" <<<"$README_SHARED" || die "the manual's shared snippet has no 'sno.partition: $SHARED'"

# --- processes: etcd, Patroni, clients -----------------------------------------------------------

# bg_pid FILE: the pid in a pid file (empty if none).
bg_pid() { cat "$1" 2>/dev/null || true; }

# bg_start PIDFILE LOG COMMAND...: COMMAND as postgres in the background, its pid in PIDFILE.
bg_start() {
    local pidfile="$1" log="$2"
    shift 2
    rm -f "$pidfile"
    # sudo itself (lib.bash's as_pg), not a function in the background: a background function
    # is a subshell that would print a "Killed" note when the process is killed.
    # shellcheck disable=SC2016 # expanded by the inner shell
    sudo -u postgres bash -c 'echo $$ >"$0"; log="$1"; shift; exec "$@" >>"$log" 2>&1' "$pidfile" "$log" "$@" &
    disown
    for _ in $(seq 50); do
        [[ -s "$pidfile" ]] && return 0
        sleep 0.1
    done
    die "$* did not start"
}

# http_get PORT PATH: the status code and body of GET http://127.0.0.1:PORT/PATH (empty if no
# answer within 2 s); bash's /dev/tcp, no client needed.
http_get() {
    # shellcheck disable=SC2016 # expanded by the inner shell
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n" "$1" >&3
        cat <&3' "$1" "$2" 2>/dev/null | tr -d '\r' || true
}
http_code() { http_get "$1" "$2" | awk 'NR == 1 { print $2 }'; }

etcd_start() {
    as_pg mkdir -p "$CL_WORK/etcd"
    bg_start "$CL_WORK/etcd/pid" "$CL_WORK/etcd/log" etcd --name etcd --data-dir "$CL_WORK/etcd/data" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "etcd=http://127.0.0.1:$ETCD_PEER_PORT"
    for _ in $(seq 100); do
        [[ "$(http_get "$ETCD_PORT" /health)" == *'"health":"true"'* ]] && return 0
        sleep 0.1
    done
    tail -n 20 "$CL_WORK/etcd/log"
    die "etcd did not start"
}

# dcs_sync SCOPE: Patroni's synchronous-replication key of the cluster in etcd (etcd's v3 JSON
# gateway), as "LEADER SYNC_STANDBY": the leader that wrote it and the standby it may promote.
dcs_sync() {
    local body
    body="{\"key\":\"$(printf '/service/%s/sync' "$1" | base64 -w0)\"}"
    # shellcheck disable=SC2016 # expanded by the inner shell
    timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0" || exit 1
        printf "POST /v3/kv/range HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" "${#1}" "$1" >&3
        cat <&3' "$ETCD_PORT" "$body" 2>/dev/null | tail -n 1 | sed -n 's/.*"value":"\([^"]*\)".*/\1/p' | base64 -d 2>/dev/null |
        sed -n 's/.*"leader": *"\([^"]*\)".*"sync_standby": *"\([^"]*\)".*/\1 \2/p' || true
}

# port_busy PORT: whether a TCP socket of this machine has PORT as its local port (but in
# TIME_WAIT, which does not stop etcd, Patroni and PostgreSQL: they bind with SO_REUSEADDR).
port_busy() {
    awk -v p="$(printf '%04X' "$1")" 'FNR > 1 { split($2, a, ":"); if (a[2] == p && $4 != "06") f = 1 } END { exit !f }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port FIRST LAST TAKEN...: the lowest odd port of FIRST..LAST that is not busy nor TAKEN.
# Odd: Linux (4.6+) gives outgoing connections even local ports first, so a connection opened
# between this check and the bind (one did, in CI: "Address already in use" for Patroni's REST
# API) takes an even one.
free_port() {
    local p t
    for ((p = $1 | 1; p <= $2; p += 2)); do
        for t in "${@:3}"; do [[ "$t" == "$p" ]] && continue 2; done
        port_busy "$p" || { echo "$p"; return 0; }
    done
    die "no free port in $1..$2"
}

declare -A REST_PORT=()
rest_port() { echo "${REST_PORT[$1]}"; }
patroni_conf() { echo "$(node_dir "$1")/patroni.d"; }
patroni_pidfile() { echo "$(node_dir "$1")/patroni.pid"; }
patroni_log() { echo "$(node_dir "$1")/patroni.log"; }

# patroni_node NAME TOPOLOGY K: a node (cluster.bash's node_new: port, directory; Patroni makes
# the data directory) and its Patroni configuration directory.
patroni_node() {
    local n="$1" topo="$2" k="$3" conf
    node_new "$n" "" "$(free_port $((PORT0 + 600)) $((PORT0 + 698)) "${CL_PORT[@]}" $((PORT0 + 699)))"
    REST_PORT[$n]="$(free_port $((PORT0 + 500)) $((PORT0 + 589)) "${REST_PORT[@]}")"
    conf="$(patroni_conf "$n")"
    mkdir "$conf"
    printf '%s\n' "$README_CONFIG" >"$conf/10-readme.yml"
    case "$topo" in
    per_node) printf '%s\n' "$README_PER_NODE" | sed "s/^\(    sno\.partition:\) 1\$/\1 $k/" >"$conf/20-topology.yml" ;;
    shared) printf '%s\n' "$README_SHARED" >"$conf/20-topology.yml" ;;
    esac
    cat >"$conf/30-test.yml" <<EOF
# ha_patroni.sh: what differs on the test machine
scope: sno-$topo
name: $n
restapi:
  listen: 127.0.0.1:$(rest_port "$n")
  connect_address: 127.0.0.1:$(rest_port "$n")
etcd3:
  hosts: 127.0.0.1:$ETCD_PORT
bootstrap:
  dcs:
    ttl: 6
    loop_wait: 1
    retry_timeout: 2
postgresql:
  listen: 127.0.0.1:$(node_port "$n")
  connect_address: 127.0.0.1:$(node_port "$n")
  data_dir: $(node_data "$n")
  bin_dir: $(node_bindir "$n")
  pgpass: $(node_dir "$n")/pgpass
  use_unix_socket: true
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
  parameters:
    unix_socket_directories: $CL_WORK
    logging_collector: 'on'
    log_directory: $(node_dir "$n")
    log_filename: log
    fsync: 'off'
    shared_buffers: 16MB
EOF
    chown -R postgres: "$conf"
}

patroni_start() { bg_start "$(patroni_pidfile "$1")" "$(patroni_log "$1")" patroni "$(patroni_conf "$1")"; }

# patroni_kill NAME: SIGKILL to the node's Patroni, then at once to its postmaster (lib.bash's
# node_kill: the postmaster, then any child left), so Patroni cannot demote it.
patroni_kill() {
    local p
    p="$(bg_pid "$(patroni_pidfile "$1")")"
    [[ -n "$p" ]] && kill -9 "$p" 2>/dev/null
    if [[ -s "$(node_data "$1")/postmaster.pid" ]]; then node_kill "$1"; fi
    rm -f "$(patroni_pidfile "$1")"
}

# patroni_kill_all: every Patroni killed (on exit; harness_cleanup then stops the servers).
# shellcheck disable=SC2317 # called by the EXIT trap
patroni_kill_all() {
    local f
    for f in "$CL_WORK"/*/patroni.pid; do
        [[ -s "$f" ]] && { kill -9 "$(cat "$f")" 2>/dev/null || true; }
        rm -f "$f"
    done
    return 0
}

ctl() { as_pg patronictl -c "$(patroni_conf "$1")" "${@:2}"; }

# leaders NODE...: the nodes whose Patroni answers GET /primary with 200 (it holds the leader
# key and runs as primary).
leaders() {
    local n
    for n in "$@"; do [[ "$(http_code "$(rest_port "$n")" /primary)" == 200 ]] && echo "$n"; done
    return 0
}

# wait_leader OLD SECONDS NODE...: waits until one node other than OLD is the leader (and out
# of recovery); prints it. Nothing printed on timeout.
wait_leader() {
    local old="$1" secs="$2" l i
    shift 2
    for ((i = 0; i < secs * 5; i++)); do
        l="$(leaders "$@")"
        if [[ -n "$l" && "$l" != *$'\n'* && "$l" != "$old" ]] &&
            [[ "$(node_sql "$l" "SELECT pg_is_in_recovery()" 2>/dev/null)" == f ]]; then
            echo "$l"
            return 0
        fi
        sleep 0.2
    done
    return 1
}

# replication LEADER: the leader's replicas by state and sync state (as pg_stat_replication
# shows them), e.g. "d2:streaming:sync,d3:streaming:async".
replication() {
    node_sql "$1" "SELECT string_agg(application_name || ':' || state || ':' || sync_state, ',' ORDER BY application_name)
                   FROM pg_stat_replication" 2>/dev/null || true
}

# wait_healthy SCOPE LEADER SECONDS NODE...: waits until every other node streams from LEADER
# (in recovery, Patroni's GET /replica 200), one of them is its synchronous standby, and
# Patroni has published that in the DCS (its sync key: LEADER and that standby). Until then
# Patroni would promote no one if LEADER failed (synchronous_mode: only the standby in the
# sync key may be promoted).
wait_healthy() {
    local scope="$1" leader="$2" secs="$3" i n r ok s=""
    shift 3
    for ((i = 0; i < secs * 5; i++)); do
        r="$(replication "$leader")"
        ok=1
        for n in "$@"; do
            [[ "$n" == "$leader" ]] && continue
            [[ ",$r," == *",$n:streaming:"* ]] || ok=0
            ((ok)) && [[ "$(http_code "$(rest_port "$n")" /replica)" == 200 ]] || ok=0
        done
        if ((ok)); then
            s="$(dcs_sync "$scope")"
            [[ -n "$s" && "${s% *}" == "$leader" && ",$r," == *",${s#* }:streaming:sync,"* ]] && return 0
        fi
        sleep 0.2
    done
    echo "    replication on $leader: ${r:-none}; the DCS's sync key: ${s:-none}"
    ctl "$leader" list 2>&1 | sed 's/^/    /'
    return 1
}

# --- clients -------------------------------------------------------------------------------------

mkdir -p "$CL_WORK/clients"
CLIENT_PIDS=()

# client DIR KIND CONNINFO: one client's loop (in the background) until DIR/../stop: a batch is one
# psql session through URI; its first line says which server and WAL timeline serve it
# (#|port|timeline), then the IDs it was given, one a line. ins: 20 single-row INSERT ...
# RETURNING id (autocommit: a row printed is a row acknowledged); read: 2 x 100 sno_generate(2).
# A failed batch (a server going down, no primary yet) is followed by a new one after 0.2 s.
client() {
    set +e
    local out="$1" kind="$2" uri="$3" b=0 i sql deadline=$((SECONDS + CLIENT_MAX_SECONDS))
    local head="SELECT '#', current_setting('port'), substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8);"
    mkdir -p "$out"
    : >"$out/raw"
    : >"$out/err"
    while [[ ! -e "$out/../stop" ]] && ((SECONDS < deadline)); do
        b=$((b + 1))
        sql="$head"$'\n'
        if [[ "$kind" == ins ]]; then
            for ((i = 1; i <= 20; i++)); do
                sql+="INSERT INTO items (client, batch) VALUES ('${out##*/}', $b) RETURNING id;"$'\n'
            done
        else
            sql+="SELECT sno_generate(2) FROM generate_series(1, 100);"$'\n'
            sql+="SELECT sno_generate(2) FROM generate_series(1, 100);"$'\n'
        fi
        if stdbuf -oL timeout 30 "$CL_BINDIR/psql" "$uri" -X -q -At -v ON_ERROR_STOP=1 \
            <<<"$sql" >>"$out/raw" 2>>"$out/err"; then
            echo "$b 1" >>"$out/batches"
        else
            echo "$b 0" >>"$out/batches"
            sleep 0.2
        fi
    done
}

# clients_start TOPOLOGY NODE...: two inserting and two reading clients through the nodes, by
# their Unix sockets (the manual's TCP URI names the same servers; thousands of TCP connections
# would take local ports from the range this test's servers listen in).
clients_start() {
    local topo="$1" hosts="" ports="" n c uri
    shift
    for n in "$@"; do hosts+="$CL_WORK,"; ports+="$(node_port "$n"),"; done
    uri="host=${hosts%,} port=${ports%,} user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2"
    echo "    clients through '${uri//$CL_WORK/WORK}'"
    mkdir -p "$CL_WORK/clients/$topo"
    for c in ins1 ins2 read1 read2; do
        client "$CL_WORK/clients/$topo/$c" "${c%[0-9]}" "$uri" &
        CLIENT_PIDS+=($!)
    done
}

clients_stop() {
    local p i alive
    touch "$CL_WORK/clients/$1/stop"
    for ((i = 0; i < 400; i++)); do
        alive=0
        for p in "${CLIENT_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        ((alive)) || break
        sleep 0.1
    done
    for p in "${CLIENT_PIDS[@]}"; do
        if kill -0 "$p" 2>/dev/null; then
            bad "client $p did not stop"
            pkill -P "$p" 2>/dev/null || true
            kill "$p" 2>/dev/null || true
        fi
    done
    wait "${CLIENT_PIDS[@]}" 2>/dev/null || true
    CLIENT_PIDS=()
}

# clients_ledger TOPOLOGY NODE...: every ID the topology's clients were given into the ledger
# files (node = the node that served it; phase = TOPOLOGY.tlTIMELINE.KIND), the acknowledged
# rows' IDs into $CL_WORK/clients/TOPOLOGY/acked.
clients_ledger() {
    local topo="$1" map="" n d kind
    shift
    for n in "$@"; do map+="$(node_port "$n")=$n "; done
    for d in "$CL_WORK/clients/$topo"/*/; do
        kind="$(basename "$d")"
        kind="${kind%[0-9]}"
        awk -F'|' -v map="$map" -v dir="$CL_WORK/clients/$topo" -v k="$kind" -v t="$topo" '
            BEGIN { split(map, a, " "); for (i in a) { split(a[i], kv, "="); node[kv[1]] = kv[2] } }
            $1 == "#" { srv = node[$2]; tl = $3 + 0; next }
            NF == 1 && length($1) == 16 && $1 ~ /^[2-9a-x]+$/ && srv != "" {
                print $1 >> (dir "/" srv "." t ".tl" tl "." k ".ids")
                if (k == "ins") print $1 >> (dir "/acked")
            }' "$d/raw"
    done
    for f in "$CL_WORK/clients/$topo"/*.ids; do
        [[ -f "$f" ]] || continue
        n="$(basename "$f" .ids)"
        cat "$f" >>"$(ledger_file "${n%%.*}" "${n#*.}")"
    done
}

# shellcheck disable=SC2317 # called by the EXIT trap
on_exit() {
    local rc=$? p
    # Not set -e here: a failing step must not end the cleanup (nor must `(exit "$rc")`, which
    # hands the status on to harness_cleanup).
    set +e
    [[ -n "$CL_WORK" ]] && for p in "$CL_WORK"/clients/*/; do touch "$p/stop" 2>/dev/null; done
    for p in "${CLIENT_PIDS[@]}"; do
        pkill -P "$p" 2>/dev/null || true
        kill "$p" 2>/dev/null || true
    done
    if [[ -n "$CL_WORK" ]]; then
        patroni_kill_all
        p="$(bg_pid "$CL_WORK/etcd/pid")"
        [[ -n "$p" ]] && { kill -9 "$p" 2>/dev/null || true; }
    fi
    if ((rc != 0 || fail != 0)) && [[ -n "$CL_WORK" ]]; then
        patroni_said "${CL_NODES[@]}"
        [[ -f "$CL_WORK/etcd/log" ]] && { echo "--- the end of etcd's log"; tail -n 5 "$CL_WORK/etcd/log"; }
    fi
    (exit "$rc")
    harness_cleanup
}
trap on_exit EXIT

# --- checks --------------------------------------------------------------------------------------

# check_partitions TOPOLOGY WHEN NODE...: the manual's sno_generator query on every node gives
# the partition the topology gives it, with its source, and state ready; with derived partitions
# only the leader shows one (a replica draws its own when promoted: NULL until then).
check_partitions() {
    local topo="$1" when="$2" n k=0 got want all="" parts=()
    shift 2
    for n in "$@"; do
        k=$((k + 1))
        got="$(node_psql "$n" -c "$README_CHECK" 2>&1 || true)"
        all+="$n $got; "
        case "$topo" in
        derived) parts+=("${got%%|*}"); want="${got%%|*}|system identifier|ready" ;;
        per_node) want="$k|sno.partition|ready" ;;
        shared) want="$SHARED|sno.partition|ready" ;;
        esac
        [[ "$got" == "$want" ]] || { bad "$topo, $when: $n's sno_generator: got '$got', want '$want'"; continue; }
    done
    if [[ "$topo" == derived ]]; then
        [[ "$(printf '%s\n' "${parts[@]}" | grep -c .)" == 1 ]] ||
            bad "$topo, $when: not exactly one node (the leader) shows a derived partition: $all"
    fi
    echo "    sno_generator, $when: $all"
}

# patroni_said NODE...: the last things each node's Patroni said (for a failure's diagnosis).
patroni_said() {
    local n
    for n in "$@"; do
        [[ -f "$(patroni_log "$n")" ]] || continue
        echo "--- the end of $n's Patroni log"
        grep -vE "no action|^  |Lock owner" "$(patroni_log "$n")" | tail -n 12 | cut -c1-220
    done
}

# switchover TOPOLOGY LEADER NODE...: patronictl switchover from LEADER to the synchronous
# standby the DCS names (in synchronous_mode the only candidate Patroni accepts; named, it takes
# the lead without comparing itself with the other replica); prints the new leader. Should
# Patroni give a switchover up after the demotion and let LEADER lead again (on a new
# timeline), it is tried again, three times at most.
switchover() {
    local topo="$1" old="$2" attempt l sync
    shift 2
    for attempt in 1 2 3; do
        sync="$(dcs_sync "sno-$topo")"
        sync="${sync#* }"
        if ! ctl "$old" switchover --force --leader "$old" --candidate "$sync" >"$CL_WORK/switchover.out" 2>&1; then
            # (In a command substitution: notes go to stderr; whether the leader moves decides.)
            echo "    patronictl switchover --leader $old --candidate $sync failed (attempt $attempt):" >&2
            sed 's/^/      /' "$CL_WORK/switchover.out" >&2
        fi
        wait_leader "$old" 25 "$@" && return 0
        # Whoever leads now (once one does): the old leader again, or a late new one.
        l="$(wait_leader "" 30 "$@")" || return 1
        [[ "$l" != "$old" ]] && { echo "$l"; return 0; }
        echo "    switchover attempt $attempt: Patroni kept $old the leader; its Patroni said:" >&2
        grep -E "switchover|manual failover|failover|healthiest|demot|promot" "$(patroni_log "$old")" |
            tail -n 6 | cut -c1-200 | sed 's/^/      /' >&2
    done
    return 1
}

# --- one topology --------------------------------------------------------------------------------

# Per topology: leader moves, old leaders that rejoined through pg_rewind, what each round did,
# and the nodes that led (Patroni chooses the new leader: the synchronous standby).
declare -A MOVES=() REWINDS=() ROUNDS=() LEADERS=()

run_topology() {
    local topo="$1" p="${1:0:1}" nodes=() n leader new t0 kind round=0 sync other rows mark rw before phase_end
    nodes=("${p}1" "${p}2" "${p}3")
    echo "--- $topo: a new Patroni cluster, scope sno-$topo: ${nodes[*]}"
    MOVES[$topo]=0 REWINDS[$topo]=0 ROUNDS[$topo]="" LEADERS[$topo]=""
    for n in "${nodes[@]}"; do patroni_node "$n" "$topo" "${n:1}"; done
    t0=$SECONDS
    for n in "${nodes[@]}"; do patroni_start "$n"; done
    leader="$(wait_leader "" 90 "${nodes[@]}")" || die "$topo: no node bootstrapped the cluster"
    wait_healthy "sno-$topo" "$leader" 120 "${nodes[@]}" || die "$topo: the replicas did not join"
    echo "    leader $leader, replication $(replication "$leader"), after $((SECONDS - t0)) s"
    LEADERS[$topo]="$leader"
    check "$topo: shared_preload_libraries is sno on every node (from the DCS)" \
        "$(for n in "${nodes[@]}"; do node_sql "$n" "SHOW shared_preload_libraries"; done | xargs)" "sno sno sno"
    node_sql "$leader" "CREATE EXTENSION sno" \
        "CREATE TABLE items (id sno PRIMARY KEY DEFAULT sno_generate(1), client text NOT NULL, batch int NOT NULL)" >/dev/null
    for n in "${nodes[@]}"; do
        [[ "$n" == "$leader" ]] || node_wait_catchup "$n" "$leader" || die "$topo: $n did not replay CREATE EXTENSION sno"
    done
    check_partitions "$topo" "at the start" "${nodes[@]}"

    clients_start "$topo" "${nodes[@]}"
    sleep 3
    for kind in kill switchover kill switchover; do
        round=$((round + 1))
        mark="$(stat -c %s "$(patroni_log "$leader")")"
        t0=$SECONDS
        if [[ "$kind" == kill ]]; then
            patroni_kill "$leader"
            new="$(wait_leader "$leader" 60 "${nodes[@]}")" || new=""
            patroni_start "$leader"
        else
            new="$(switchover "$topo" "$leader" "${nodes[@]}")" || new=""
        fi
        if [[ -z "$new" ]]; then
            patroni_said "${nodes[@]}"
            die "$topo, round $round ($kind): no other node became the leader after $leader"
        fi
        MOVES[$topo]=$((MOVES[$topo] + 1))
        ROUNDS[$topo]+="$kind $leader->$new ($((SECONDS - t0)) s); "
        LEADERS[$topo]+=" $new"
        echo "ok: $topo, round $round ($kind of $leader): $new is the leader after $((SECONDS - t0)) s, out of recovery"
        phase_end=$((SECONDS + PHASE))
        wait_healthy "sno-$topo" "$new" 120 "${nodes[@]}" || die "$topo, round $round: $leader did not rejoin $new"
        rw=""
        if tail -c +"$((mark + 1))" "$(patroni_log "$leader")" | grep -q "pg_rewind exit code=0"; then
            rw=", rewound"
            REWINDS[$topo]=$((REWINDS[$topo] + 1))
        fi
        check "$topo, round $round: $leader is a replica of $new again$rw ($((SECONDS - t0)) s), synchronous replication back" \
            "$(node_sql "$leader" "SELECT pg_is_in_recovery()")" t
        check_partitions "$topo" "after round $round" "${nodes[@]}"
        leader="$new"
        ((SECONDS < phase_end)) && sleep $((phase_end - SECONDS))
    done

    # per_node: a replica rebuilt from a new base backup of the leader (what Patroni does when
    # pg_rewind fails), whose postgresql.conf and postgresql.auto.conf are the leader's until
    # Patroni writes its own postgresql.conf: the asynchronous one, so that commits go on.
    if [[ "$topo" == per_node ]]; then
        sync="$(replication "$leader" | tr ',' '\n' | awk -F: '$3 == "sync" { print $1 }')"
        other="$(printf '%s\n' "${nodes[@]}" | grep -vxF -e "$leader" -e "$sync" | head -n 1)"
        t0=$SECONDS
        before="$(node_sql "$other" "SELECT pg_postmaster_start_time()")"
        ctl "$leader" reinit "sno-$topo" "$other" --force --wait >"$CL_WORK/reinit.out" 2>&1 ||
            { cat "$CL_WORK/reinit.out"; bad "$topo: patronictl reinit $other"; }
        wait_healthy "sno-$topo" "$leader" 120 "${nodes[@]}" || die "$topo: $other did not come back after patronictl reinit"
        check "$topo: $other was rebuilt by patronictl reinit ($((SECONDS - t0)) s) and streams again" \
            "$(node_sql "$other" "SELECT pg_postmaster_start_time() > '$before' AND pg_is_in_recovery()")" t
        check_partitions "$topo" "after the reinit of $other" "${nodes[@]}"
    fi
    clients_stop "$topo"

    check "$topo: the leader moved 4 times (2 kills, 2 switchovers)" "${MOVES[$topo]}" 4
    echo "    rounds: ${ROUNDS[$topo]}"
    clients_ledger "$topo" "${nodes[@]}"
    # The rows on the final leader, beside the ledger.
    ledger_psql -c "CREATE TABLE rows_$topo (id sno)" -c "CREATE TABLE acked_$topo (id sno)" >/dev/null
    node_psql "$leader" -c "COPY (SELECT id FROM items) TO STDOUT" | ledger_psql -c "COPY rows_$topo FROM STDIN"
    ledger_psql -c "COPY acked_$topo FROM STDIN" <"$CL_WORK/clients/$topo/acked"
    rows="$(ledger_sql "SELECT (SELECT count(*) FROM acked_$topo), (SELECT count(*) FROM rows_$topo)")"
    echo "    $topo: ${rows%|*} acknowledged rows, ${rows#*|} rows on the final leader $leader"
    check "$topo: no acknowledged row is missing on the final leader" \
        "$(ledger_sql "SELECT count(*) FROM acked_$topo a WHERE NOT EXISTS (SELECT FROM rows_$topo r WHERE r.id = a.id)")" 0
    if [[ "$topo" == shared ]]; then
        # The manual's way to set a shared partition on a running cluster.
        ctl "$leader" edit-config "sno-$topo" --pg "sno.partition=$SHARED_LATER" --force >"$CL_WORK/edit.out" 2>&1 ||
            { cat "$CL_WORK/edit.out"; bad "patronictl edit-config --pg sno.partition=$SHARED_LATER"; }
        for _ in $(seq 100); do
            [[ "$(for n in "${nodes[@]}"; do node_sql "$n" "SELECT sno_current_partition()"; done | xargs)" == \
                "$SHARED_LATER $SHARED_LATER $SHARED_LATER" ]] && break
            sleep 0.2
        done
        check "shared: patronictl edit-config --pg sno.partition=$SHARED_LATER reaches every node (reloaded)" \
            "$(for n in "${nodes[@]}"; do node_sql "$n" "SELECT partition, partition_source FROM sno_generator"; done | xargs)" \
            "$SHARED_LATER|sno.partition $SHARED_LATER|sno.partition $SHARED_LATER|sno.partition"
    fi
    for n in "${nodes[@]}"; do patroni_kill "$n"; done
    for n in "${nodes[@]}"; do
        node_drop "$n"
        unset "REST_PORT[$n]"
    done
}

# --- the run ---------------------------------------------------------------------------------------

ETCD_PORT="$(free_port $((PORT0 + 590)) $((PORT0 + 599)))"
ETCD_PEER_PORT="$(free_port $((PORT0 + 590)) $((PORT0 + 599)) "$ETCD_PORT")"
echo "--- etcd $(etcd --version | awk 'NR == 1 { print $3 }') on 127.0.0.1:$ETCD_PORT; $(patroni --version)"
etcd_start
for topo in derived per_node shared; do run_topology "$topo"; done

echo "--- what the clients were given"
# One load of the ledger for all that follows (ledger_check loads it).
ledger_check "every ID of the run"
for topo in derived per_node shared; do
    W="phase LIKE '$topo.%'"
    r="$(ledger_sql "SELECT count(*), count(*) - count(DISTINCT id) FROM ledger WHERE $W")"
    check "$topo: no ID twice among ${r%|*} IDs" "${r#*|}" 0
    echo "    $topo: $(ledger_sql "SELECT count(*) FILTER (WHERE phase LIKE '%.ins') || ' inserted, '
                                      || count(*) FILTER (WHERE phase LIKE '%.read') || ' read'
                              FROM ledger WHERE $W"); by server and timeline (IDs, partitions, tick-tock bits):"
    ledger_sql "SELECT node || '/' || split_part(phase, '.', 2), count(*), string_agg(DISTINCT sno_partition(id)::text, ','),
                       string_agg(DISTINCT sno_tick(id)::text, ','), to_char(min(sno_time(id)), 'HH24:MI:SS'),
                       to_char(max(sno_time(id)), 'HH24:MI:SS')
                FROM ledger WHERE $W GROUP BY 1 ORDER BY min(seq)" |
        awk -F'|' '{ printf "      %-8s %7d IDs  partition %-6s tick %-4s %s .. %s\n", $1, $2, $3, $4, $5, $6 }'
    batches="$(cat "$CL_WORK/clients/$topo"/*/batches | awk '{ n++; f += ($2 == 0) } END { print n " batches, " f " failed" }')"
    echo "      $batches; the clients' errors, most frequent first:"
    cat "$CL_WORK/clients/$topo"/*/err | sed 's/[0-9]\{3,\}/N/g' | sort | uniq -c | sort -rn | head -n 4 |
        cut -c1-150 | sed 's/^/        /'
    leaders="$(tr ' ' '\n' <<<"${LEADERS[$topo]}" | sort -u | xargs)"
    check "$topo: the clients were given IDs by every node that led ($leaders)" \
        "$(ledger_sql "SELECT string_agg(DISTINCT node, ' ' ORDER BY node) FROM ledger WHERE $W")" "$leaders"
    check "$topo: the clients were given IDs in each of the 5 leadership terms (node and timeline)" \
        "$(ledger_sql "SELECT count(DISTINCT node || split_part(phase, '.', 2)) >= 5 FROM ledger WHERE $W")" t
    # No message from sno reached a client (the work directory's name is no message).
    sno_lines="$(cat "$CL_WORK/clients/$topo"/*/err | sed "s|$CL_WORK||g" | grep -i 'sno' | sort | uniq -c || true)"
    check "$topo: no message from sno reached a client" "$sno_lines" ""
    check "$topo: no client got a duplicate-key error" \
        "$(cat "$CL_WORK/clients/$topo"/*/err | grep -c "duplicate key" || true)" 0
    case "$topo" in
    derived)
        check "derived: no partition is carried by IDs of two leadership terms (node and timeline)" \
            "$(ledger_sql "SELECT coalesce(string_agg(p || ': ' || t, '; '), '') FROM (
                  SELECT sno_partition(id) p, string_agg(DISTINCT node || '/' || split_part(phase, '.', 2), ',') t
                  FROM ledger WHERE $W GROUP BY 1
                  HAVING count(DISTINCT node || split_part(phase, '.', 2)) > 1) x")" ""
        ;;
    per_node)
        check "per_node: each node's IDs carry its own partition (pK: K)" \
            "$(ledger_sql "SELECT string_agg(node || ':' || ps, ' ' ORDER BY node) FROM (
                  SELECT node, string_agg(DISTINCT sno_partition(id)::text, ',') ps FROM ledger
                  WHERE $W GROUP BY node) x")" "$(for n in $leaders; do printf '%s:%s ' "$n" "${n:1}"; done | sed 's/ $//')"
        ;;
    shared)
        check "shared: every ID carries the shared partition" \
            "$(ledger_sql "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ledger WHERE $W")" "$SHARED"
        ;;
    esac
done
for topo in derived per_node shared; do
    echo "    $topo: ${MOVES[$topo]} leader moves, ${REWINDS[$topo]} rejoined through pg_rewind: ${ROUNDS[$topo]}"
done
echo "    $((SECONDS - T0)) s in all"
exit "$fail"
