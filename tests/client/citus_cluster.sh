#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=2 timeout=1800 estimate=540
# A real Citus 13.2.2 cluster (PostgreSQL 15 only) writing sno keys through every node while
# workers fail over and the cluster grows:
#   co (coordinator, group 0), w1 with a SYNCHRONOUS streaming standby w1s, w2 with an
#   ASYNCHRONOUS streaming standby w2s (both made with node_basebackup); Citus and sno preloaded
#   on every server, standbys included. Metadata is synced, so workers take writes too.
#   Tables: events (id sno PRIMARY KEY DEFAULT sno_generate(1)) distributed by id; audit, by id
#   and co-located with events (for joins on the sno key); tev (tenant int, id sno DEFAULT
#   sno_generate(2), PRIMARY KEY (tenant, id)) distributed by tenant; refs, a reference table
#   with an sno key (DEFAULT sno_generate(3)).
#   Clients, two per node (bounded in batches and seconds), write through co, w1 and w2 (and w3
#   once it is added) at once: single-row INSERT ... RETURNING id into events, tev and refs;
#   COPY into events, then INSERT ... SELECT from those rows into tev (repartitioned: new IDs,
#   made on the workers) and into audit (co-located, the same IDs). Every ID a client was given
#   is recorded, per node that served it, and every acknowledged COPY with its row count.
#   Meanwhile: w1 is stopped with -m immediate, w1s promoted and citus_update_node'd into w1's
#   place; the same for w2 and w2s; a new worker w3 is added with citus_add_node and the
#   shards rebalanced onto it (citus_rebalance_start with shard_transfer_mode 'block_writes').
# At the end, after recover_prepared_transactions() on every node: no ID twice among every ID
# any client was given (and every ID in the tables), no acknowledged row missing (the only
# exception allowed: rows that w2 acknowledged in the last moment before it was stopped and never
# sent to its asynchronous standby, see ASYNC_LOSS below), joins on the sno key and sno_time()
# range queries through the coordinator give what the ledger gives, and each node's IDs carry
# partitions no other node's IDs carry (plus, where sno takes them from Citus, its group's).
#
# Usage: citus_cluster.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own clusters), with
# SNO_PG_MAJOR=15 (any other major: skipped; Citus 13.2 is built for Debian's 15 only here).
# Citus is built from ../shared/citus on the first run (tests/citus/citus.bash, about a minute).
set -euo pipefail

# shellcheck source=../citus/citus.bash
source "$(dirname "${BASH_SOURCE[0]}")/../citus/citus.bash"
citus_test_setup citus_cluster "$@"

# --- settings ----------------------------------------------------------------------------------

# How long the clients write in each phase, and their hard bounds.
PHASE_SECONDS="${CITUS_PHASE_SECONDS:-8}"
CLIENT_MAX_SECONDS=180
CLIENT_MAX_BATCHES=5000
INS_PER_BATCH=20
COPY_ROWS=50

# ASYNC_LOSS: whether acknowledged rows may be missing at the end when they are explained by
# w2's asynchronous standby: w2 acknowledged them (as the shard's node, or as the node that ran a
# client's two-phase commit) before it was stopped with -m immediate, and its WAL never reached
# w2s. That is PostgreSQL's asynchronous replication, not sno; it takes a kill within a
# millisecond of an acknowledgement, so it is rare. 1: such rows are reported, not a failure;
# 0: any missing row fails.
ASYNC_LOSS="${CITUS_ASYNC_LOSS:-1}"

# GROUP_PARTITIONS: the assertion that sno takes each node's partitions from its Citus node group
# (partition_source 'citus group N', partition = generation * 4096 + N, a promoted standby on a
# new generation of its primary's group), in check_group_partitions below:
#   require  asserted for every node (the default: what sno guarantees);
#   auto     asserted for every node whose sno_generator says 'citus group N', a note for the
#            others (to run this test against an sno that draws partitions at random);
#   off      not asserted.
# Either way each node's IDs must carry partitions no other node's IDs carry (checked always).
GROUP_PARTITIONS="${CITUS_GROUP_PARTITIONS:-require}"

# --- clients -----------------------------------------------------------------------------------

# A client writes through a role (co, w1, w2, w3): $CL_WORK/route/ROLE holds the node that
# serves it now and its port (w1s after w1's failover). Each client keeps its own files, per
# node that served it, in $CL_WORK/clients/ROLE.KIND: NODE.raw (LABEL|ID[|TENANT] lines, one
# per ID it was given), acks (TAG ROWS per acknowledged COPY), errors (what psql said).
mkdir -p "$CL_WORK/route" "$CL_WORK/clients"
chmod 777 "$CL_WORK/clients"
route() { echo "$2 $(node_port "$2")" >"$CL_WORK/route/$1.new" && mv "$CL_WORK/route/$1.new" "$CL_WORK/route/$1"; }

cpsql() {
    PGOPTIONS="-c statement_timeout=20s" timeout 40 "$CL_BINDIR/psql" -X -q -At \
        -h "$CL_WORK" -p "$1" -U postgres -d postgres "${@:2}"
}

# client_ins NODE PORT TAG BATCH: single-row INSERT ... RETURNING, one statement each.
client_ins() {
    local i sql="" t
    for ((i = 1; i <= INS_PER_BATCH; i++)); do
        t=$(((($4 * INS_PER_BATCH) + i) % 32))
        case $((i % 5)) in
        0) sql+="INSERT INTO refs (client) VALUES ('$3') RETURNING 'r', id;"$'\n' ;;
        1 | 3) sql+="INSERT INTO events (client, seq) VALUES ('$3', $i) RETURNING 'e', id;"$'\n' ;;
        *) sql+="INSERT INTO tev (tenant, client) VALUES ($t, '$3') RETURNING 't', id, tenant;"$'\n' ;;
        esac
    done
    cpsql "$2" <<<"$sql" >>"$OUT/$1.raw" 2>>"$OUT/errors"
}

# client_copy NODE PORT TAG: COPY into events; then those rows' IDs, and INSERT ... SELECT of
# them into tev (new IDs) and audit (the same IDs).
client_copy() {
    seq 1 "$COPY_ROWS" | awk -v t="$3" '{ print t "\t" $1 }' |
        cpsql "$2" -c "COPY events (client, seq) FROM STDIN" 2>>"$OUT/errors" || return 1
    echo "$3 $COPY_ROWS $1" >>"$OUT/acks"
    cpsql "$2" -c "SELECT 'ce', id FROM events WHERE client = '$3'" \
        -c "INSERT INTO tev (tenant, client, src) SELECT seq % 32, '$3/is', id FROM events WHERE client = '$3'
            RETURNING 'st', id, tenant" \
        -c "INSERT INTO audit (id, note) SELECT id, '$3' FROM events WHERE client = '$3'
            ON CONFLICT DO NOTHING RETURNING 'sa', id" >>"$OUT/$1.raw" 2>>"$OUT/errors"
}

# client ROLE KIND: one client's loop (in the background), until the stop file, its batches or
# its seconds run out. A batch that fails (its node is down, a shard it needs is) is retried as a
# new batch after a moment.
client() {
    set +e
    local role="$1" kind="$2" b=0 node port ok deadline=$((SECONDS + CLIENT_MAX_SECONDS))
    OUT="$CL_WORK/clients/$role.$kind"
    mkdir -p "$OUT"
    touch "$OUT/acks" "$OUT/errors"
    while [[ ! -e "$CL_WORK/clients/stop" ]] && ((SECONDS < deadline && b < CLIENT_MAX_BATCHES)); do
        b=$((b + 1))
        read -r node port <"$CL_WORK/route/$role"
        echo "$node" >>"$OUT/nodes"
        case "$kind" in
        ins) client_ins "$node" "$port" "$node:$kind:$b" "$b" && ok=1 || ok=0 ;;
        copy) client_copy "$node" "$port" "$node:$kind:$b" && ok=1 || ok=0 ;;
        esac
        echo "$b $ok" >>"$OUT/batches"
        ((ok)) || sleep 0.3
    done
}

CLIENT_PIDS=()
clients_alive() {
    local p
    for p in "${CLIENT_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && return 0; done
    return 1
}
clients_start() {
    local kind
    for kind in ins copy; do
        client "$1" "$kind" &
        CLIENT_PIDS+=($!)
    done
}

# clients_stop [SECONDS]: the stop file, then waits for the clients' current batches; a client
# still running after SECONDS (20) is killed (with its psql).
clients_stop() {
    local p i
    touch "$CL_WORK/clients/stop"
    for ((i = 0; i < ${1:-20} * 10; i++)); do
        clients_alive || break
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

# On exit (also after a failure): the clients first, then the harness's cleanup.
# shellcheck disable=SC2317 # called by the EXIT trap
on_exit() {
    local rc=$? p
    # Not under set -e: `(exit "$rc")` below (which gives harness_cleanup the status to report)
    # would end the trap before the cleanup.
    set +e
    [[ -n "$CL_WORK" ]] && touch "$CL_WORK/clients/stop" 2>/dev/null
    for p in "${CLIENT_PIDS[@]}"; do
        pkill -P "$p" 2>/dev/null || true
        kill "$p" 2>/dev/null || true
    done
    (exit "$rc")
    harness_cleanup
}
trap on_exit EXIT

now_utc() { date -u +%Y-%m-%dT%H:%M:%S.%3N+00; }

# generator_snapshot MOMENT: partition and partition_source of every running primary's sno
# generator, into $CL_WORK/generators (MOMENT NODE PARTITION SOURCE).
generator_snapshot() {
    local n g
    for n in $(citus_primaries); do
        g="$(citus_generator "$n" 2>&1)" || g="error|$(head -1 <<<"$g")"
        echo "$1|$n|$g" >>"$CL_WORK/generators"
    done
}

# --- the cluster -------------------------------------------------------------------------------

echo "--- the cluster: co, w1 (+ synchronous w1s), w2 (+ asynchronous w2s)"
for n in co w1 w2; do
    citus_node_init "$n"
    citus_start "$n" || exit 1
    citus_node_setup "$n"
done
citus_coordinator co
citus_add_node w1 >/dev/null
citus_add_node w2 >/dev/null
declare -A GROUP=()
for n in co w1 w2; do GROUP[$n]="$(citus_group "$n")"; done
check "Citus groups: co 0, w1 and w2 groups of their own" \
    "${GROUP[co]} $((${GROUP[w1]} > 0 && ${GROUP[w2]} > 0 && ${GROUP[w1]} != ${GROUP[w2]}))" "0 1"
check "every node has metadata, synced" \
    "$(node_sql co "SELECT count(*) FILTER (WHERE hasmetadata AND metadatasynced), count(*) FROM pg_dist_node")" "3|3"

node_sql co "CREATE TABLE events (id sno PRIMARY KEY DEFAULT sno_generate(1), client text NOT NULL, seq int)" \
    "CREATE INDEX ON events (client)" \
    "SELECT create_distributed_table('events', 'id', shard_count => 8)" \
    "CREATE TABLE audit (id sno PRIMARY KEY, note text)" \
    "SELECT create_distributed_table('audit', 'id', colocate_with => 'events')" \
    "CREATE TABLE tev (tenant int, id sno DEFAULT sno_generate(2), client text, src sno, PRIMARY KEY (tenant, id))" \
    "SELECT create_distributed_table('tev', 'tenant', shard_count => 8)" \
    "CREATE TABLE refs (id sno PRIMARY KEY DEFAULT sno_generate(3), client text)" \
    "SELECT create_reference_table('refs')" >/dev/null

# The standbys, made now so that they have the tables (and every node's metadata) already.
node_basebackup w1 w1s standby
citus_start w1s || exit 1
node_basebackup w2 w2s standby
citus_start w2s || exit 1
# Synchronous only now: w1s's copy of postgresql.auto.conf must not have it (promoted, it would
# wait for a standby of its own).
node_alter w1 synchronous_standby_names '*'
node_reload w1
for _ in $(seq 100); do
    [[ "$(node_sql w1 "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" == 1 ]] && break
    sleep 0.1
done
check "w1s is w1's synchronous standby" "$(node_sql w1 "SELECT sync_state FROM pg_stat_replication")" sync
check "w2s is w2's asynchronous standby" "$(node_sql w2 "SELECT sync_state FROM pg_stat_replication")" async
generator_snapshot start

# --- writes through every node, failovers, a new worker ----------------------------------------

echo "--- clients write through co, w1 and w2 ($PHASE_SECONDS s per phase)"
for n in co w1 w2; do route "$n" "$n"; done
T_START="$(now_utc)"
for n in co w1 w2; do clients_start "$n"; done
sleep "$PHASE_SECONDS"
generator_snapshot before_failovers

echo "--- w1 is stopped (immediate), its synchronous standby w1s promoted, citus_update_node"
check "w1s is still synchronous when w1 is stopped" "$(node_sql w1 "SELECT sync_state FROM pg_stat_replication")" sync
T_KILL1="$(now_utc)"
node_stop w1 immediate
t0=$SECONDS
node_promote w1s
check "w1s keeps w1's Citus group" "$(citus_group w1s)" "${GROUP[w1]}"
citus_update_node w1 w1s
citus_wait_synced 30
route w1 w1s
echo "    w1s in w1's place after $((SECONDS - t0)) s; recovered: $(citus_recover_all | xargs)"
sleep "$PHASE_SECONDS"

echo "--- w2 is stopped (immediate), its asynchronous standby w2s promoted, citus_update_node"
# The shard placements w2 holds at its end (for rows its asynchronous standby may not have).
node_sql co "SELECT shardid FROM pg_dist_placement WHERE groupid = ${GROUP[w2]}" >"$CL_WORK/w2_shards"
echo "    w2s's lag when w2 stops: $(node_sql w2 "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn) FROM pg_stat_replication") bytes of WAL"
T_KILL2="$(now_utc)"
node_stop w2 immediate
t0=$SECONDS
node_promote w2s
check "w2s keeps w2's Citus group" "$(citus_group w2s)" "${GROUP[w2]}"
citus_update_node w2 w2s
citus_wait_synced 30
route w2 w2s
echo "    w2s in w2's place after $((SECONDS - t0)) s; recovered: $(citus_recover_all | xargs)"
sleep "$PHASE_SECONDS"

echo "--- a new worker w3: citus_add_node, clients through it, shards rebalanced onto it (block_writes)"
citus_node_init w3
citus_start w3 || exit 1
citus_node_setup w3
T_W3="$(now_utc)"
citus_add_node w3 >/dev/null
GROUP[w3]="$(citus_group w3)"
GROUP[w1s]="${GROUP[w1]}" GROUP[w2s]="${GROUP[w2]}"
check_distinct "w3's Citus group is new" "${GROUP[w3]}" "${GROUP[co]}" "${GROUP[w1]}" "${GROUP[w2]}"
route w3 w3
clients_start w3
t0=$SECONDS
node_sql co "SELECT citus_rebalance_start(shard_transfer_mode => 'block_writes')" >/dev/null 2>&1 ||
    bad "citus_rebalance_start"
node_sql co "SELECT citus_rebalance_wait()" >/dev/null || bad "citus_rebalance_wait"
echo "    rebalanced in $((SECONDS - t0)) s ($(node_sql co "SELECT state FROM citus_rebalance_status()" | head -1));" \
    "shard placements per node: $(node_sql co "SELECT string_agg(name || ' ' || c, ', ' ORDER BY name) FROM (
        SELECT name, count(*) c FROM pg_dist_placement JOIN pg_dist_node USING (groupid)
        JOIN (VALUES $(for n in co w1s w2s w3; do printf "(%s, '%s')," "$(node_port "$n")" "$n"; done | sed 's/,$//')) v (port, name)
          ON v.port = nodeport GROUP BY 1) x")"
check "w3 holds shards of events and tev after the rebalance" \
    "$(node_sql co "SELECT count(DISTINCT logicalrelid) FROM pg_dist_shard JOIN pg_dist_placement USING (shardid)
                    WHERE groupid = ${GROUP[w3]} AND logicalrelid IN ('events'::regclass, 'tev'::regclass)")" 2
sleep "$PHASE_SECONDS"
generator_snapshot end

echo "--- the clients stop; recover_prepared_transactions() on every node"
clients_stop 30
T_END="$(now_utc)"
echo "    recovered: $(citus_recover_all | xargs)"
check "no prepared transaction is left on any node" "$(citus_prepared | xargs)" ""

# --- what the clients were given ----------------------------------------------------------------

# The clients' files into the ledger (cluster.bash): node = the node that served the client,
# phase = TABLE_KIND. events_ins, tev_ins, refs_ins (single-row INSERT), events_copy (COPY),
# tev_inssel (INSERT ... SELECT, new IDs) make new IDs; audit_inssel copies events' IDs.
declare -A PHASE_OF=([e]=events_ins [t]=tev_ins [r]=refs_ins [ce]=events_copy [st]=tev_inssel [sa]=audit_inssel)
for d in "$CL_WORK"/clients/*/; do
    for f in "$d"*.raw; do
        [[ -f "$f" ]] || continue
        n="$(basename "$f" .raw)"
        for l in "${!PHASE_OF[@]}"; do
            grep -q "^$l|" "$f" || continue
            awk -F'|' -v l="$l" '$1 == l { print $2 }' "$f" >>"$(ledger_file "$n" "${PHASE_OF[$l]}")"
        done
        awk -F'|' '($1 == "t" || $1 == "st") { print $2 "\t" $3 }' "$f" >>"$CL_WORK/tenants"
    done
done
ledger_load >/dev/null
NEW="phase <> 'audit_inssel'"
echo "--- clients"
for d in "$CL_WORK"/clients/*/; do
    r="$(basename "$d")"
    printf '    %-9s batches %5s (failed %4s), through %-12s errors %4s\n' "$r" \
        "$(wc -l <"$d/batches")" "$(grep -c ' 0$' "$d/batches" || true)" \
        "$(sort -u "$d/nodes" | xargs | tr ' ' ,)" "$(grep -c ERROR "$d/errors" || true)"
done
echo "    most frequent errors:"
cat "$CL_WORK"/clients/*/errors | grep -E "ERROR|FATAL|failed" | sed 's/[0-9]\{3,\}/N/g' | sed 's/^psql:<stdin>:N: //' |
    sort | uniq -c | sort -rn | head -n 6 | cut -c1-160 | sed 's/^/      /'
check "no client was refused a duplicate key" "$(cat "$CL_WORK"/clients/*/errors | grep -c "duplicate key" || true)" 0
IDS="$(ledger_sql "SELECT count(*) FROM ledger WHERE $NEW")"
echo "    $IDS new IDs given to clients: $(ledger_sql "SELECT string_agg(phase || ' ' || c, ', ' ORDER BY phase)
                                         FROM (SELECT phase, count(*) c FROM ledger GROUP BY phase) p")"
check "the clients were given IDs through co, w1, w1s, w2, w2s and w3" \
    "$(ledger_sql "SELECT string_agg(DISTINCT node, ',' ORDER BY node) FROM ledger WHERE phase IN ('events_ins', 'events_copy')")" \
    "co,w1,w1s,w2,w2s,w3"

# The tables as the coordinator sees them, beside the ledger.
ledger_psql -c "CREATE TABLE d_events (id sno, client text)" -c "CREATE TABLE d_tev (id sno, tenant int, src sno)" \
    -c "CREATE TABLE d_refs (id sno)" -c "CREATE TABLE d_audit (id sno)" \
    -c "CREATE TABLE acks (tag text, n int, node text)" -c "CREATE TABLE tenants (id sno, tenant int)" >/dev/null
node_psql co -c "COPY (SELECT id, client FROM events) TO STDOUT" | ledger_psql -c "COPY d_events FROM STDIN"
node_psql co -c "COPY (SELECT id, tenant, src FROM tev) TO STDOUT" | ledger_psql -c "COPY d_tev FROM STDIN"
node_psql co -c "COPY (SELECT id FROM refs) TO STDOUT" | ledger_psql -c "COPY d_refs FROM STDIN"
node_psql co -c "COPY (SELECT id FROM audit) TO STDOUT" | ledger_psql -c "COPY d_audit FROM STDIN"
cat "$CL_WORK"/clients/*/acks | tr ' ' '\t' | ledger_psql -c "COPY acks FROM STDIN"
ledger_psql -c "COPY tenants FROM STDIN" <"$CL_WORK/tenants"
ledger_psql -c "ANALYZE" >/dev/null

# The IDs in the tables that no client was given: committed, but the client's acknowledgement
# (or, after a COPY, its read of the IDs) was lost with a failing node.
ledger_psql -c "CREATE TABLE extras AS
    SELECT 'events' t, id FROM d_events WHERE id NOT IN (SELECT id FROM ledger WHERE phase IN ('events_ins', 'events_copy'))
    UNION ALL SELECT 'tev', id FROM d_tev WHERE id NOT IN (SELECT id FROM ledger WHERE phase IN ('tev_ins', 'tev_inssel'))
    UNION ALL SELECT 'refs', id FROM d_refs WHERE id NOT IN (SELECT id FROM ledger WHERE phase = 'refs_ins')
    UNION ALL SELECT 'audit', id FROM d_audit WHERE id NOT IN (SELECT id FROM ledger WHERE phase = 'audit_inssel')" >/dev/null

echo "--- duplicates"
ledger_check "every new ID any client was given ($IDS)" "$NEW"
check "no ID twice among the clients' IDs and the tables' IDs no client was given" \
    "$(ledger_sql "SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM ledger WHERE $NEW
                   UNION ALL SELECT id FROM extras WHERE t <> 'audit') a")" 0
echo "    IDs in the tables no client was given: $(ledger_sql "SELECT coalesce(string_agg(t || ' ' || c, ', '), 'none')
       FROM (SELECT t, count(*) c FROM extras GROUP BY t) e")"

echo "--- lost rows"
# Every acknowledged row missing from its table, with what may explain it.
ledger_psql -c "CREATE TABLE lost AS
    SELECT 'events' t, l.id, l.node, l.phase FROM ledger l WHERE phase IN ('events_ins', 'events_copy') AND id NOT IN (SELECT id FROM d_events)
    UNION ALL SELECT 'tev', l.id, l.node, l.phase FROM ledger l WHERE phase IN ('tev_ins', 'tev_inssel') AND id NOT IN (SELECT id FROM d_tev)
    UNION ALL SELECT 'refs', l.id, l.node, l.phase FROM ledger l WHERE phase = 'refs_ins' AND id NOT IN (SELECT id FROM d_refs)
    UNION ALL SELECT 'audit', l.id, l.node, l.phase FROM ledger l WHERE phase = 'audit_inssel' AND id NOT IN (SELECT id FROM d_audit)" >/dev/null
ledger_psql -c "ALTER TABLE lost ADD shardid bigint, ADD async bool NOT NULL DEFAULT false" >/dev/null
while IFS='|' read -r t id tenant; do
    [[ -n "$t" ]] || continue
    if [[ "$t" == tev ]]; then key="$tenant"; else key="$id"; fi
    [[ -n "$key" ]] || continue
    s="$(node_sql co "SELECT get_shard_id_for_distribution_column('$t', '$key')")"
    ledger_psql -c "UPDATE lost SET shardid = $s WHERE t = '$t' AND id = '$id'" >/dev/null
done < <(ledger_sql "SELECT t, l.id, m.tenant FROM lost l LEFT JOIN tenants m USING (id) WHERE t <> 'refs'")
# Explained by w2's asynchronous standby: made before w2 stopped, and either stored in a shard
# on w2 then, or written through w2 (which ran the client's two-phase commit).
w2_shards="$(xargs <"$CL_WORK/w2_shards" | tr ' ' ,)"
ledger_psql -c "UPDATE lost SET async = sno_time(id) <= '$T_KILL2'::timestamptz + interval '1 s'
                  AND (node = 'w2' OR shardid IN (${w2_shards:-0}))" >/dev/null
n_lost="$(ledger_sql "SELECT count(*) FROM lost")"
n_async="$(ledger_sql "SELECT count(*) FROM lost WHERE async")"
if [[ "$n_lost" != 0 ]]; then
    echo "    acknowledged rows missing: $n_lost, by table, node and phase:"
    ledger_sql "SELECT t, node, phase, count(*), count(*) FILTER (WHERE async), to_char(min(sno_time(id)), 'HH24:MI:SS.MS'),
                       to_char(max(sno_time(id)), 'HH24:MI:SS.MS')
                FROM lost GROUP BY 1, 2, 3 ORDER BY 1, 2, 3" |
        awk -F'|' '{ printf "      %-7s %-4s %-13s %5d missing (%d explained by w2s), made %s .. %s\n", $1, $2, $3, $4, $5, $6, $7 }'
    echo "    (w2 stopped at ${T_KILL2:11:12}, w1 at ${T_KILL1:11:12})"
fi
if [[ "$ASYNC_LOSS" == 1 ]]; then
    check "no acknowledged row is missing, but for w2's last ones its asynchronous standby never got ($n_async)" \
        "$(ledger_sql "SELECT count(*) FROM lost WHERE NOT async")" 0
else
    check "no acknowledged row is missing" "$n_lost" 0
fi
# By the row counts the COPYs acknowledged (also for a COPY whose IDs its client could not read).
check "the rows acknowledged COPYs miss are the COPY IDs counted missing above" \
    "$(ledger_sql "SELECT coalesce(sum(a.n - (SELECT count(*) FROM d_events e WHERE e.client = a.tag)), 0) FROM acks a")" \
    "$(ledger_sql "SELECT count(*) FROM lost WHERE phase = 'events_copy'")"
echo "    acknowledged COPYs: $(ledger_sql "SELECT count(*) || ' of ' || sum(n) || ' rows' FROM acks")"
declare -A refs=()
for n in $(citus_primaries); do refs[$n]="$(node_sql "$n" "SELECT count(*) FROM refs")"; done
r=""
for n in co w1s w3; do r+="$n ${refs[$n]:-?} "; done
check "the reference table's placements on co, w1s and w3 hold the same rows" "$r" "co ${refs[co]} w1s ${refs[co]} w3 ${refs[co]} "
if [[ "${refs[w2s]:-}" != "${refs[co]}" ]]; then
    echo "    w2s's placement of refs holds ${refs[w2s]:-?} rows, co's ${refs[co]} (w2s was an asynchronous standby)"
    [[ "$ASYNC_LOSS" == 1 ]] || bad "w2s's placement of refs differs from co's"
fi

# --- the same answers through the coordinator as over the ledger -------------------------------

echo "--- joins on the sno key and sno_time() ranges through the coordinator, against the ledger"
# What the tables must hold: every ID the clients were given (but those allowed missing above),
# and the ones no client was given.
ledger_psql -c "CREATE TABLE want AS
    SELECT CASE WHEN phase LIKE 'events%' THEN 'events' WHEN phase LIKE 'tev%' THEN 'tev'
                WHEN phase LIKE 'refs%' THEN 'refs' ELSE 'audit' END t, id FROM ledger
    UNION SELECT t, id FROM extras" \
    -c "DELETE FROM want w USING lost l WHERE l.t = w.t AND l.id = w.id AND l.async" \
    -c "CREATE TABLE want_tev AS SELECT w.id, m.tenant FROM want w JOIN (SELECT DISTINCT id, tenant FROM tenants
                                 UNION SELECT id, tenant FROM d_tev) m USING (id) WHERE w.t = 'tev'" \
    -c "ANALYZE" >/dev/null
# same DESCRIPTION CITUS-SQL LEDGER-SQL: one answer through the coordinator and the ledger's.
same() { check "$1" "$(node_sql co "$2")" "$(ledger_sql "$3")"; }
W() { echo "(SELECT id FROM want WHERE t = '$1')"; }
agg="count(*), min(id)::text, max(id)::text"
# Windows of sno_time: A|B as SQL, around each event of the run.
windows=("'$T_START'|'$T_END'" "'$T_KILL1'|'$T_KILL2'" "'$T_KILL2'|'$T_W3'" "'$T_W3'|'$T_END'"
    "'$T_KILL1'::timestamptz - interval '2 s'|'$T_KILL1'::timestamptz + interval '3 s'"
    "'$T_KILL2'::timestamptz - interval '2 s'|'$T_KILL2'::timestamptz + interval '3 s'")
for w in "${windows[@]}"; do
    a="(${w%|*})::timestamptz" b="(${w#*|})::timestamptz"
    label="$(ledger_sql "SELECT to_char($a, 'HH24:MI:SS.MS') || '..' || to_char($b, 'HH24:MI:SS.MS')")"
    same "events, sno_time(id) >= A AND < B ($label)" \
        "SELECT $agg FROM events WHERE sno_time(id) >= $a AND sno_time(id) < $b" \
        "SELECT $agg FROM $(W events) e WHERE sno_time(id) >= $a AND sno_time(id) < $b"
    same "events JOIN audit ON the sno key, sno_time(e.id) BETWEEN A AND B ($label)" \
        "SELECT count(*), min(e.id)::text, max(a.id)::text FROM events e JOIN audit a ON a.id = e.id
         WHERE sno_time(e.id) BETWEEN $a AND $b" \
        "SELECT count(*), min(e.id)::text, max(a.id)::text FROM $(W events) e JOIN $(W audit) a ON a.id = e.id
         WHERE sno_time(e.id) BETWEEN $a AND $b"
    same "tev, tenant = 7 AND sno_time(id) > A AND <= B ($label)" \
        "SELECT $agg FROM tev WHERE tenant = 7 AND sno_time(id) > $a AND sno_time(id) <= $b" \
        "SELECT $agg FROM want_tev WHERE tenant = 7 AND sno_time(id) > $a AND sno_time(id) <= $b"
done
same "events JOIN audit ON the sno key: rows per partition" \
    "SELECT string_agg(p || ':' || c, ' ' ORDER BY p) FROM (SELECT sno_partition(e.id) p, count(*) c
         FROM events e JOIN audit a USING (id) GROUP BY 1) x" \
    "SELECT string_agg(p || ':' || c, ' ' ORDER BY p) FROM (SELECT sno_partition(e.id) p, count(*) c
         FROM $(W events) e JOIN $(W audit) a USING (id) GROUP BY 1) x"
# Not co-located (tev is distributed by tenant): a repartition join.
check "tev JOIN events ON tev.src = events.id (repartitioned), tenants 0 to 9, since w3 was added" \
    "$(node_sql co "SET citus.enable_repartition_joins = on" \
        "SELECT count(*), min(e.id)::text FROM tev t JOIN events e ON e.id = t.src WHERE t.tenant < 10 AND sno_time(t.id) >= '$T_W3'")" \
    "$(ledger_sql "SELECT count(*), min(e.id)::text FROM want_tev t JOIN d_tev d USING (id) JOIN $(W events) e ON e.id = d.src
                   WHERE t.tenant < 10 AND sno_time(t.id) >= '$T_W3'")"
same "refs, sno_time(id) < A (w1's stop)" \
    "SELECT $agg FROM refs WHERE sno_time(id) < '$T_KILL1'" \
    "SELECT $agg FROM $(W refs) r WHERE sno_time(id) < '$T_KILL1'"

# --- partitions ---------------------------------------------------------------------------------

echo "--- partitions"
echo "    sno_generator (partition | partition_source) per node:"
awk -F'|' '{ printf "      %-17s %-4s %6s  %s\n", $1, $2, $3, $4 }' "$CL_WORK/generators"
echo "    partitions of the IDs each node made (single-row INSERT and COPY: made by the client's node):"
MADE="phase IN ('events_ins', 'tev_ins', 'refs_ins', 'events_copy')"
ledger_sql "SELECT node, count(*), string_agg(DISTINCT sno_partition(id)::text, ',')
            FROM ledger WHERE $MADE GROUP BY node ORDER BY node" |
    awk -F'|' '{ printf "      %-4s %7d IDs  partitions %s\n", $1, $2, $3 }'
echo "    partitions of the IDs INSERT ... SELECT made (on the workers holding the rows):" \
    "$(ledger_sql "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ledger WHERE phase = 'tev_inssel'")"

# check_node_partitions: each node's IDs carry partitions no other node's IDs carry (a partition
# is one node's), and the IDs INSERT ... SELECT made carry partitions of the nodes.
check_node_partitions() {
    check "no partition is carried by IDs of two nodes" \
        "$(ledger_sql "SELECT coalesce(string_agg(p || ': ' || nodes, '; '), '') FROM (
                         SELECT sno_partition(id) p, string_agg(DISTINCT node, ',') nodes FROM ledger WHERE $MADE
                         GROUP BY 1 HAVING count(DISTINCT node) > 1) x")" ""
    check "the IDs INSERT ... SELECT made carry partitions of the workers' IDs" \
        "$(ledger_sql "SELECT count(*) FROM ledger WHERE phase = 'tev_inssel' AND sno_partition(id) NOT IN
                         (SELECT sno_partition(id) FROM ledger WHERE $MADE AND node <> 'co')")" 0
}
check_node_partitions

# check_group_partitions NODE...: THE CITUS-GROUP ASSERTION (see GROUP_PARTITIONS above). For each
# node: sno_generator's partition_source is 'citus group G' with G its Citus group, and its IDs
# carry partitions of group G only (partition % 4096 = G); a promoted standby (w1s, w2s) is on
# another generation of its primary's group than its primary (sno's 'citus group' partitions:
# src/generator/citus.rs).
check_group_partitions() {
    local n g src parts
    for n in "$@"; do
        g="${GROUP[$n]}"
        src="$(awk -F'|' -v n="$n" '$2 == n { s = $4 } END { print s }' "$CL_WORK/generators")"
        if [[ "$src" != "citus group "* && "$GROUP_PARTITIONS" == auto ]]; then
            echo "    note: $n's partitions are not from its Citus group (partition_source '$src'): not asserted"
            continue
        fi
        check "$n: sno_generator's partition_source is its Citus group" "$src" "citus group $g"
        parts="$(ledger_sql "SELECT string_agg(DISTINCT sno_partition(id)::text, ',') FROM ledger WHERE $MADE AND node = '$n'")"
        check "$n: its IDs carry partitions of group $g only ($parts)" \
            "$(ledger_sql "SELECT count(*) FROM ledger WHERE $MADE AND node = '$n' AND sno_partition(id) % 4096 <> $g")" 0
    done
    for n in w1 w2; do
        [[ "$GROUP_PARTITIONS" == require || "$(awk -F'|' -v n="${n}s" '$2 == n { s = $4 } END { print s }' "$CL_WORK/generators")" == "citus group "* ]] ||
            continue
        check "${n}s, promoted, is on another generation of group ${GROUP[$n]} than $n" \
            "$(ledger_sql "SELECT count(*) FROM ledger WHERE $MADE AND node = '${n}s' AND sno_partition(id) / 4096 IN
                             (SELECT DISTINCT sno_partition(id) / 4096 FROM ledger WHERE $MADE AND node = '$n')")" 0
    done
}
if [[ "$GROUP_PARTITIONS" != off ]]; then
    check_group_partitions co w1 w1s w2 w2s w3
fi

ledger_summary
echo "    $((SECONDS - CL_T0)) s in all"
exit "$fail"
