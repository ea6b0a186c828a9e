#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=18 server=no cpu=1 estimate=45
# An active-active group with PostgreSQL's own logical replication (origin = none, PostgreSQL
# 16+): three nodes with sno.partition 301, 302 and 303, each publishing FOR ALL TABLES (sno's
# own tables included) and subscribing to the two others, insert with sno_generate at once;
# the first node also backfills with sno_generate_at and takes leases (the rule for now: one
# node of a group does both, see doc/operations.md). Between rounds a fourth node (304) joins:
# it copies the data from one member and subscribes to all, and they to it. Then:
#   - no apply or sync error on any node (pg_stat_subscription_stats), no conflict in any log
#     but the update_missing and delete_missing PostgreSQL 18 logs for sno's own tables (the
#     other nodes' updates of rows that were kept out);
#   - every node holds every row, and the same rows;
#   - each node's sno_internal tables hold its own rows only (the other nodes' grants, pool and
#     leases were kept out on arrival);
#   - zero duplicates over every ID any node made and every ID stamped under a lease.
# Then a fifth node joins with n2's sno.partition: it is refused within a minute, before its
# first ID, n2 goes on, and the HINT as printed gives it a partition of its own.
# Not here: backfills and leases on several members at once (issue 42, open); a member failed
# over to its standby (member_failover.sh).
#
# Usage: active_active.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own servers)
set -euo pipefail
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup active_active "$3" $(($2 + 501)) $(($2 + 599))
((CL_MAJOR >= 16)) || die "origin = none needs PostgreSQL 16 or later (this is $CL_MAJOR)"
q() { node_sql "$@"; } # q NODE SQL...: one -c each, database postgres
SCHEMA="CREATE TABLE events (id sno PRIMARY KEY DEFAULT sno_generate(1), node int NOT NULL, n int);
CREATE TABLE history (id sno PRIMARY KEY, n int);
CREATE TABLE stamped (id sno PRIMARY KEY, lease int8);"

declare -A part
start_node() { # start_node N [PARTITION]: node nN with sno.partition PARTITION (300+N), sno and the schema
    part[$1]="${2:-$((300 + $1))}"
    node_new "n$1"
    node_clock_mode "n$1" none
    node_initdb "n$1"
    node_cmdline "n$1" wal_level=logical shared_preload_libraries=sno \
        max_worker_processes=32 max_logical_replication_workers=16 max_replication_slots=16 max_wal_senders=16
    # In postgresql.conf, not on the command line, which ALTER SYSTEM (a HINT) cannot outrank.
    node_conf "n$1" "sno.partition = ${part[$1]}"
    node_start "n$1"
    q "n$1" "CREATE EXTENSION sno" "$SCHEMA" "CREATE PUBLICATION grp FOR ALL TABLES"
}
# subscribe TO FROM COPY: nTO subscribes to nFROM's publication, origin = none.
subscribe() {
    q "n$1" "CREATE SUBSCRIPTION n$1_from_n$2 CONNECTION '$(node_conninfo "n$2")' PUBLICATION grp WITH (origin = none, copy_data = $3)" 2>&1 |
        grep -v -E '^(NOTICE|WARNING|DETAIL|HINT):' || true
}
# round NODES...: each node inserts 1,000 rows in 10 transactions at once; n1 also backfills
# and leases (a holder stamping its slice in one unit of its window).
rounds=0
round() {
    local n
    rounds=$((rounds + 1))
    for n in "$@"; do
        (for i in $(seq 10); do q "n$n" "INSERT INTO events (node, n) SELECT $n, g FROM generate_series(1, 100) g" >/dev/null; done) &
    done
    q n1 "INSERT INTO history SELECT sno_generate_at(2, timestamptz '2020-01-01+00' + g * interval '1 ms'), g FROM generate_series(1, 500) g" >/dev/null &
    (
        l="$(q n1 "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'svc', ttl => '2 min', sequences => 256)")"
        q n1 "INSERT INTO stamped SELECT sno_from_parts(not_before, 3, partition, s), lease FROM sno_leases, generate_series(sequence_min, sequence_max) s WHERE lease = ${l%%|*}" >/dev/null
        q n1 "SELECT lease FROM sno_lease_renew(lease => ${l%%|*}, token => '${l#*|}', ttl => '3 min')" >/dev/null
        q n1 "SELECT sno_lease_release(lease => ${l%%|*}, token => '${l#*|}')" >/dev/null
    ) &
    wait
}
# settle NODES...: until every node has every row the others made (up to 120 s).
settle() {
    local want=0 expect="" got i n
    for n in "$@"; do want=$((want + $(q "n$n" "SELECT count(*) FROM events WHERE node = $n"))); done
    for n in "$@"; do expect+="$want|"; done
    for ((i = 0; i < 1200; i++)); do
        got=""
        for n in "$@"; do got+="$(q "n$n" "SELECT count(*) FROM events")|"; done
        [[ "$got" == "$expect" ]] && break
        sleep 0.1
    done
    check "every node holds all $want rows" "$got" "$expect"
}

for n in 1 2 3; do start_node "$n"; done
for a in 1 2 3; do for b in 1 2 3; do ((a != b)) && subscribe "$a" "$b" false; done; done
round 1 2 3
round 1 2 3
settle 1 2 3

# A fourth node joins between rounds: the data copied from n1 (which has everything), then
# subscriptions both ways with every member.
start_node 4
subscribe 4 1 true
for b in 2 3; do subscribe 4 "$b" false; done
for a in 1 2 3; do subscribe "$a" 4 false; done
for ((i = 0; i < 1200; i++)); do
    [[ "$(q n4 "SELECT count(*) FILTER (WHERE srsubstate NOT IN ('r', 's')) FROM pg_subscription_rel")" == 0 ]] && break
    sleep 0.1
done
round 1 2 3 4
round 1 2 3 4
settle 1 2 3 4

# A fifth node joins the same way, misconfigured with n2's partition (302), and makes no ID
# until told. The `sno member check` workers compare partitions over the new subscriptions: n5 is
# refused within a minute (n2 came first: it made IDs with 302), and n2 goes on. The HINT, run
# as printed, gives n5 a partition of its own; then it takes part in the rounds.
start_node 5 302
subscribe 5 1 true
for b in 2 3 4; do subscribe 5 "$b" false; done
for a in 1 2 3 4; do subscribe "$a" 5 false; done
for ((i = 0; i < 600; i++)); do
    grep -q 'partition 302 is refused here' "$(node_log n5)" && break
    sleep 0.1
done
check "n5 (sno.partition 302, as n2) is refused within 60 s of joining (waited $((i / 10)) s)" "$((i < 600))" 1
err="$(q n5 "SELECT sno_generate(1)" 2>&1 || true)"
check "n5: sno_generate names the conflict" \
    "$(grep -c "^ERROR:  sno partition 302 is also used by the server with system identifier $(q n2 "SELECT system_identifier FROM pg_control_system()")" <<<"$err")" 1
check "n5: sno_generate_at and leases are refused too" \
    "$(q n5 "SELECT sno_generate_at(1, now())" 2>&1 | grep -c '^ERROR:  sno partition 302')$(q n5 "SELECT * FROM sno_lease_acquire(holder => 'svc', ttl => '1 min')" 2>&1 | grep -c '^ERROR:  sno partition 302')" 11
check "n2, there first, goes on" "$(q n2 "INSERT INTO events (node, n) VALUES (2, 0) RETURNING sno_partition(id)")" 302
hint="$(sed -n 's/^HINT:  .*as a superuser, run \(ALTER SYSTEM .*\)$/\1/p' <<<"$err")"
re='^(ALTER SYSTEM SET sno\.partition = ([0-9]+);) then (SELECT pg_reload_conf\(\);) then, once SHOW sno\.partition says [0-9]+ \(the reload takes a moment\), compare it with every member before any ID is made with it: (SELECT \* FROM sno_member_check\(\);)$'
[[ "$hint" =~ $re ]] || die "n5: the HINT does not give the statements to run: $err"
part[5]="${BASH_REMATCH[2]}"
node_psql n5 -c "${BASH_REMATCH[1]}" -c "${BASH_REMATCH[3]}" >/dev/null
for ((i = 0; i < 100; i++)); do
    [[ "$(q n5 "SHOW sno.partition")" == "${part[5]}" ]] && break
    sleep 0.1
done
check "n5: the HINT's check finds no member first with ${part[5]}" \
    "$(q n5 "${BASH_REMATCH[4]%;}" | cut -d'|' -f5 | sort -u | tr '\n' ' ')" "apart "
for ((i = 0; i < 1200; i++)); do
    [[ "$(q n5 "SELECT count(*) FILTER (WHERE srsubstate NOT IN ('r', 's')) FROM pg_subscription_rel")" == 0 ]] && break
    sleep 0.1
done
check "n5: the HINT's partition ${part[5]} is no member's" "$(printf '%s\n' "${part[@]}" | sort | uniq -d | wc -l)" 0
round 1 2 3 4 5
settle 1 2 3 4 5

for n in 1 2 3 4 5; do
    check "n$n: no apply or sync error" \
        "$(q "n$n" "SELECT coalesce(sum(apply_error_count + sync_error_count), 0) FROM pg_stat_subscription_stats")" 0
    # PostgreSQL 18 logs an UPDATE or DELETE whose row is missing as a conflict, and skips it:
    # the publisher's updates of its own sno_internal rows, which never arrived here. No other.
    log="$(node_log "n$n")"
    check "n$n: no duplicate key, failed worker, or conflict but sno's own rows' update_missing or delete_missing" \
        "$(grep -E 'duplicate key|conflict|exited with exit code [1-9]' "$log" |
            grep -c -v -E 'conflict detected on relation "sno_internal\.[a-z_]+": conflict=(update|delete)_missing' || true)" 0
    check "n$n: the same rows as n1 (events, history, stamped)" \
        "$(q "n$n" "SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM (SELECT id FROM events UNION ALL SELECT id FROM history UNION ALL SELECT id FROM stamped) x")" \
        "$(q n1 "SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM (SELECT id FROM events UNION ALL SELECT id FROM history UNION ALL SELECT id FROM stamped) x")"
    check "n$n: its events carry its own partition" \
        "$(q "n$n" "SELECT count(*) FROM events WHERE node = $n AND sno_partition(id) <> ${part[$n]}")" 0
done
check "n1's sno_internal tables: its own grants, pool and leases" \
    "$(q n1 "SELECT (SELECT count(*) > 0 FROM sno_internal.reserved_grants) AND (SELECT count(*) = $rounds FROM sno_internal.leases)")" t
for n in 2 3 4 5; do
    check "n$n's sno_internal tables: none of n1's rows (kept out on arrival)" \
        "$(q "n$n" "SELECT (SELECT count(*) FROM sno_internal.reserved_grants) + (SELECT count(*) FROM sno_internal.lease_partitions) + (SELECT count(*) FROM sno_internal.leases) + (SELECT count(*) FROM sno_internal.lease_ledger)")" 0
done
ids="$(q n1 "SELECT id FROM events UNION ALL SELECT id FROM history UNION ALL SELECT id FROM stamped")"
total="$(wc -l <<<"$ids")"
check "zero duplicates over all $total IDs the group made and its holders stamped" "$(sort <<<"$ids" | uniq -d | wc -l)" 0
exit "$fail"
