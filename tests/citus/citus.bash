# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR
# Citus for the tests: the build of Citus 13.2.2 from the project's shared sources, installed
# into Debian's PostgreSQL 15, and cluster helpers on top of tests/client/cluster.bash (which
# this file sources: nodes, standbys, promotion, the ID ledger, ok:/FAIL: lines).
#
#   source "$SNO_ROOT/tests/citus/citus.bash"
#   citus_ensure /usr/lib/postgresql/15/bin/pg_config || exit 1   # builds once, then only checks
#   cluster_setup citus_x "$PORT" "$BINDIR"
#   citus_node_init co; citus_start co; citus_node_setup co; citus_coordinator co
#   citus_node_init w1; citus_start w1; citus_node_setup w1; citus_add_node co w1
#   citus_recover_all                # recover_prepared_transactions() on every primary
#
# Citus's sources are not in any registry these machines reach: they are kept in the shared
# folder beside the project (../shared/citus, or $SNO_SHARED/citus), with README.md there.
#
# How the nodes reach each other. lib.bash starts every node with listen_addresses = '' and
# its Unix socket in $CL_WORK (-k). Citus opens its connections between nodes with libpq from
# the node name and port in pg_dist_node (host=NODENAME port=NODEPORT), and libpq reads a
# host that begins with a slash as a Unix socket directory. So the node name of every node is
# $CL_WORK itself, the nodes are told apart by port, and no node listens on TCP at all (checked
# on Citus 13.2.2: citus_add_node, metadata sync, two-phase commit, repartitioned INSERT ...
# SELECT and joins, citus_update_node and shard moves all work so; EXPLAIN shows the tasks'
# "Node: host=/tmp/sno-work/... port=N"). One more place needs it: for shard moves Citus connects
# to its own server by citus.local_hostname and its port, and that is 'localhost' (TCP) by
# default: citus_move_shard_placement and citus_rebalance_start then fail with "connection to
# the remote node postgres@localhost:PORT failed ... Connection refused". citus_node_init sets
# it to $CL_WORK too.

# shellcheck source=../client/cluster.bash
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/../client" && pwd)/cluster.bash"

SNO_ROOT="${SNO_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
CITUS_VERSION=13.2.2
# The settings every Citus node starts with (node_cmdline: not in the data directory, so a
# standby made by node_basebackup needs them given again, which citus_start does).
CITUS_PRELOAD=shared_preload_libraries=citus,sno

# citus_shared: the folder of Citus's sources.
# (tests/client/lib.bash's shared_dir: $SNO_SHARED, ../shared, or beside the repository a clean
# clone came from, as a CI run's is.)
citus_shared() { echo "$(shared_dir "$SNO_ROOT")/citus"; }

# citus_installed_version PG_CONFIG: the version of the citus.so installed there, if any.
citus_installed_version() {
    local so
    so="$("$1" --pkglibdir)/citus.so"
    [[ -f "$so" ]] || return 0
    # citus_version() returns "Citus X.Y.Z on ..., compiled by ...", a string in the library.
    grep -aom1 'Citus [0-9][0-9.]* on ' "$so" | awk '{ print $2 }'
}

# citus_build DIR PG_CONFIG: Citus's sources unpacked into DIR, patched (pg15-minor.patch, see
# the shared README) and built for that PostgreSQL, in DIR/citus-$CITUS_VERSION (not installed).
citus_build() {
    tar xzf "$(citus_shared)/citus-$CITUS_VERSION.tar.gz" -C "$1" &&
        patch -d "$1/citus-$CITUS_VERSION" -p1 <"$(citus_shared)/pg15-minor.patch" &&
        (cd "$1/citus-$CITUS_VERSION" && ./configure PG_CONFIG="$2") &&
        make -C "$1/citus-$CITUS_VERSION" -j"$(nproc)"
}

# citus_ensure [PG_CONFIG]: Citus $CITUS_VERSION built and installed into that PostgreSQL
# (Debian's 15 by default), unless its citus.so already is that version. About a minute on 2
# cores; the Debian packages its build needs are installed first if missing. Serialized with a
# lock, so that two tests (or engineers) starting together build it once.
citus_ensure() {
    local pgc="${1:-/usr/lib/postgresql/15/bin/pg_config}" src patch build log fd rc=0 missing=() p
    [[ "$(citus_installed_version "$pgc")" == "$CITUS_VERSION" ]] && return 0
    src="$(citus_shared)/citus-$CITUS_VERSION.tar.gz"
    patch="$(citus_shared)/pg15-minor.patch"
    [[ -r "$src" && -r "$patch" ]] || { echo "citus_ensure: no Citus sources at $(citus_shared)"; return 1; }
    exec {fd}>"/tmp/sno-citus-install.lock"
    flock "$fd"
    if [[ "$(citus_installed_version "$pgc")" != "$CITUS_VERSION" ]]; then
        for p in liblz4-dev libzstd-dev libcurl4-openssl-dev libkrb5-dev "postgresql-server-dev-$("$pgc" --version | awk '{ print $2 }' | cut -d. -f1)"; do
            dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
        done
        if ((${#missing[@]})); then
            echo "citus_ensure: installing ${missing[*]}"
            export DEBIAN_FRONTEND=noninteractive
            { apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
                { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }; } || rc=1
        fi
        build="$(mktemp -d /tmp/sno-citus-build.XXXXXX)"
        log="$build/build.log"
        if ((rc == 0)); then
            echo "citus_ensure: building Citus $CITUS_VERSION for $("$pgc" --version) (log $log)"
            { citus_build "$build" "$pgc" && make -C "$build/citus-$CITUS_VERSION" install; } >"$log" 2>&1 || rc=1
        fi
        if ((rc == 0)) && [[ "$(citus_installed_version "$pgc")" == "$CITUS_VERSION" ]]; then
            rm -rf "$build"
        else
            echo "citus_ensure: the build of Citus $CITUS_VERSION failed; the end of $log:"
            tail -n 30 "$log" 2>/dev/null
            rc=1
        fi
    fi
    flock -u "$fd"
    exec {fd}>&-
    return "$rc"
}

# citus_test_setup NAME SOCKET_DIR PORT BINDIR: the start of a Citus test (tests/client/citus_*.sh,
# called with its command line): on any major but 15 (SNO_PG_MAJOR) an ok line and exit, Citus
# built and installed if missing, then cluster_setup.
citus_test_setup() {
    if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
        echo "ok: skipped $1.sh: Citus is tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
        exit 0
    fi
    local pgc="$4/pg_config"
    [[ -x "$pgc" ]] || pgc=/usr/lib/postgresql/15/bin/pg_config
    citus_ensure "$pgc" || { echo "FAIL: Citus $CITUS_VERSION could not be installed"; exit 1; }
    cluster_setup "$1" "$3" "$4"
}

# --- nodes -------------------------------------------------------------------------------------

# citus_node_init NAME: node_init (cluster.bash), and what Citus needs in postgresql.conf
# (which node_basebackup copies to a standby, as a hot standby requires for these settings):
# prepared transactions for Citus's two-phase commit on every node (the coordinator too: it
# holds the reference tables' placement), connections for the clients and for the other
# nodes' connections in, and citus.local_hostname (above).
citus_node_init() {
    node_init "$1"
    node_conf "$1" "# citus.bash" \
        "max_connections = 100" \
        "max_prepared_transactions = 100" \
        "shared_buffers = 24MB" \
        "citus.local_hostname = '$CL_WORK'" \
        "citus.log_remote_commands = off"
}

# citus_start NAME: node_start with Citus and sno preloaded (Citus first, as it requires).
citus_start() {
    node_cmdline "$1" "$CITUS_PRELOAD"
    node_start "$1"
}

# citus_node_setup NAME: the citus and sno extensions in database postgres of NAME (a primary;
# every node needs citus before the coordinator adds it).
citus_node_setup() { node_sql "$1" "CREATE EXTENSION citus" "CREATE EXTENSION sno" >/dev/null; }

# citus_nodename: the node name of every node in pg_dist_node: the socket directory (above).
citus_nodename() { echo "$CL_WORK"; }

# citus_coordinator NAME: NAME becomes the coordinator (group 0) of its cluster.
citus_coordinator() {
    CITUS_COORD="$1"
    node_sql "$1" "SELECT citus_set_coordinator_host('$(citus_nodename)', $(node_port "$1"))" >/dev/null
}
CITUS_COORD=""

# citus_add_node NAME: the coordinator adds the running NAME as a worker (metadata synced to
# it); prints its nodeid.
citus_add_node() {
    node_sql "$CITUS_COORD" "SELECT citus_add_node('$(citus_nodename)', $(node_port "$1"))"
}

# citus_nodeid NAME: NAME's nodeid in the coordinator's pg_dist_node (by its port).
citus_nodeid() {
    node_sql "$CITUS_COORD" "SELECT nodeid FROM pg_dist_node
                             WHERE nodename = '$(citus_nodename)' AND nodeport = $(node_port "$1")"
}

# citus_group NAME: the group Citus gave NAME (its pg_dist_local_group; a standby's is its
# primary's).
citus_group() { node_sql "$1" "SELECT groupid FROM pg_dist_local_group"; }

# citus_update_node OLD NEW: the coordinator points OLD's entry of pg_dist_node (its nodeid,
# group and shard placements) at NEW, OLD's promoted standby. Prints nothing.
citus_update_node() {
    local id
    id="$(citus_nodeid "$1")"
    [[ -n "$id" ]] || { bad "citus_update_node: $1 is not in pg_dist_node"; return 1; }
    node_sql "$CITUS_COORD" "SELECT citus_update_node($id, '$(citus_nodename)', $(node_port "$2"))" >/dev/null
}

# citus_wait_synced [SECONDS]: waits until the coordinator's pg_dist_node shows every active
# primary with metadata as synced (the maintenance daemon pushes a changed pg_dist_node to the
# workers: after citus_update_node, for instance). 30 s by default.
citus_wait_synced() {
    local i
    for ((i = 0; i < ${1:-30} * 10; i++)); do
        [[ "$(node_sql "$CITUS_COORD" "SELECT count(*) FROM pg_dist_node
                  WHERE isactive AND noderole = 'primary' AND hasmetadata AND NOT metadatasynced" 2>/dev/null)" == 0 ]] &&
            return 0
        sleep 0.1
    done
    bad "the coordinator's metadata is not synced to every worker after ${1:-30} s"
    return 1
}

# citus_primaries: the running nodes that are not in recovery.
citus_primaries() {
    local n
    for n in "${CL_NODES[@]}"; do
        node_running "$n" || continue
        [[ "$(node_sql "$n" "SELECT pg_is_in_recovery()" 2>/dev/null)" == f ]] && echo "$n"
    done
    return 0
}

# citus_recover_all: SELECT recover_prepared_transactions() on every running primary. A
# distributed write is committed with two-phase commit by the node its client was connected
# to (a worker too); when a node died after acknowledging one, the other nodes keep its
# prepared transactions until the node that started it (or its promoted standby) recovers them,
# which its maintenance daemon does only every citus.recover_2pc_interval (a minute). Call this
# before counting rows. Prints "NODE:recovered" for the nodes that recovered any.
citus_recover_all() {
    local n r
    for n in $(citus_primaries); do
        r="$(node_sql "$n" "SELECT recover_prepared_transactions()" 2>&1)" ||
            { bad "recover_prepared_transactions() on $n: $r"; continue; }
        [[ "$r" == 0 ]] || echo "$n:$r"
    done
    return 0
}

# citus_prepared: prepared transactions left on the running primaries (NODE:COUNT, for those
# with any).
citus_prepared() {
    local n c
    for n in $(citus_primaries); do
        c="$(node_sql "$n" "SELECT count(*) FROM pg_prepared_xacts")"
        [[ "$c" == 0 ]] || echo "$n:$c"
    done
    return 0
}

# citus_generator NAME: "partition|partition_source" of NAME's sno generator.
citus_generator() { node_sql "$1" "SELECT partition, partition_source FROM sno_generator"; }
