#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=18 server=no cpu=1 estimate=50
# A member of an active-active group fails over to its standby mid-run (PostgreSQL 17+:
# failover slots). Three nodes with sno.partition 301, 302 and 303 replicate both ways
# (origin = none, FOR ALL TABLES); n2 has a synchronous streaming standby, n2s, which keeps the
# logical slots n1 and n3 read n2 through (subscriptions WITH (failover = true),
# sync_replication_slots on n2s, synchronized_standby_slots on n2). While all three insert with
# sno_generate, n2 is stopped at once (immediate), n2s is promoted, and n1 and n3 point their
# subscriptions at it. Then:
#   - n2s keeps n2's place: it makes IDs with 302, no member refuses it or is refused, and a
#     member check on every node finds no conflict;
#   - n2s never makes an ID n2 made: every ID the old n2 holds (read from its data directory,
#     started afterwards with no replication) and every ID any node holds, zero duplicates;
#   - no apply or sync error on any node but the subscriptions to n2 losing their connection
#     when it goes down, no duplicate key, every node holds every row.
#
# Usage: member_failover.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own servers)
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
harness_setup member_failover "$3" $(($2 + 501)) $(($2 + 599))
((CL_MAJOR >= 17)) || die "failover slots need PostgreSQL 17 or later (this is $CL_MAJOR)"
q() { node_sql "$@"; } # q NODE SQL...: one -c each, database postgres
SCHEMA="CREATE TABLE events (id sno PRIMARY KEY DEFAULT sno_generate(1), node text NOT NULL, n int);"
SETTINGS=(wal_level=logical shared_preload_libraries=sno max_worker_processes=32
    max_logical_replication_workers=16 max_replication_slots=16 max_wal_senders=16)

start_node() { # start_node N: node nN with sno.partition 300+N, sno and the schema
    node_new "n$1"
    node_clock_mode "n$1" none
    node_initdb "n$1"
    node_cmdline "n$1" "${SETTINGS[@]}"
    node_conf "n$1" "sno.partition = $((300 + $1))"
    node_start "n$1"
    q "n$1" "CREATE EXTENSION sno" "$SCHEMA" "CREATE PUBLICATION grp FOR ALL TABLES"
}
# subscribe TO FROM: nTO subscribes to FROM's publication, origin = none; a subscription to n2
# is a failover one (its slot on n2 is kept on n2s).
subscribe() {
    local failover=false
    [[ "$2" == n2 ]] && failover=true
    q "n$1" "CREATE SUBSCRIPTION n$1_from_$2 CONNECTION '$(node_conninfo "$2")' PUBLICATION grp WITH (origin = none, copy_data = false, failover = $failover)" 2>&1 |
        grep -v -E '^(NOTICE|WARNING|DETAIL|HINT):' || true
}
# insert NODE ROUNDS: NODE inserts 100 rows a transaction, ROUNDS times; stops at an error
# (a node going down).
insert() {
    local i
    for ((i = 0; i < $2; i++)); do
        q "$1" "INSERT INTO events (node, n) SELECT '$1', g FROM generate_series(1, 100) g" >/dev/null 2>&1 || return 0
    done
}
# settle NODES...: until every node has as many rows as the first (up to 120 s), and that many
# are the sum of what each node made.
settle() {
    local want expect="" got i n
    for ((i = 0; i < 1200; i++)); do
        want="$(q "$1" "SELECT count(*) FROM events")"
        expect="" got=""
        for n in "$@"; do
            expect+="$want|"
            got+="$(q "$n" "SELECT count(*) FROM events")|"
        done
        [[ "$got" == "$expect" ]] && break
        sleep 0.1
    done
    check "every node holds the same $want rows" "$got" "$expect"
}

for n in 1 2 3; do start_node "$n"; done
# n2's standby: a physical slot on n2, which its logical slots wait for; slots synced from it.
q n2 "SELECT pg_create_physical_replication_slot('n2s')" >/dev/null
node_basebackup n2 n2s standby
node_auto_conf n2s primary_slot_name n2s
node_cmdline n2s "${SETTINGS[@]}" hot_standby_feedback=on sync_replication_slots=on
node_start n2s
q n2 "ALTER SYSTEM SET synchronized_standby_slots = 'n2s'" "SELECT pg_reload_conf()" >/dev/null
node_make_sync n2
check "n2s is n2's synchronous standby" "$(q n2 "SELECT sync_state FROM pg_stat_replication")" sync

for a in 1 2 3; do for b in 1 2 3; do ((a != b)) && subscribe "$a" "n$b"; done; done
insert n1 5 & insert n2 5 & insert n3 5 & wait
settle n1 n2 n3

# The slots n1 and n3 read n2 through are on n2s too, ready for a failover.
for ((i = 0; i < 600; i++)); do
    [[ "$(q n2s "SELECT count(*) FROM pg_replication_slots WHERE synced AND NOT temporary AND slot_name LIKE 'n%_from_n2'")" == 2 ]] && break
    sleep 0.1
done
check "n2s holds n1's and n3's failover slots (waited $((i / 10)) s)" "$((i < 600))" 1

# Mid-run: all three insert; n2 goes down at once and n2s takes over.
insert n1 20 & p1=$!
insert n3 20 & p3=$!
insert n2 1000 & p2=$!
sleep 2
node_stop n2 immediate
wait "$p2" || true
node_promote n2s
# doc/operations.md's statement (fenced ```sql member-failover), as printed but for the
# standby's connection string, and on n3 its own subscription's name.
doc="$(awk '$0 == "```sql member-failover" { b = 1; next } b && $0 == "```" { exit } b' "$(dirname "${BASH_SOURCE[0]}")/../../doc/operations.md")"
[[ "$doc" == *"ALTER SUBSCRIPTION n1_from_n2 CONNECTION 'host=n2-standby dbname=postgres';"* ]] ||
    die "doc/operations.md's member-failover block is not the statement this test runs: $doc"
stmt="${doc//host=n2-standby dbname=postgres/$(node_conninfo n2s)}"
q n1 "$stmt" >/dev/null
q n3 "${stmt//n1_from_n2/n3_from_n2}" >/dev/null
insert n2s 10
wait "$p1" "$p3"
insert n1 5 & insert n2s 5 & insert n3 5 & wait
settle n1 n2s n3

check "n2s, promoted, makes IDs with n2's partition" "$(q n2s "SELECT DISTINCT sno_partition(id) FROM events WHERE node = 'n2s'")" 302
for n in n1 n2s n3; do
    check "$n: a member check finds no conflict" \
        "$(q "$n" "SELECT count(*) FROM sno_member_check() WHERE this_server NOT IN ('apart', 'goes on')")" 0
    check "$n: no server was refused" "$(grep -c 'is refused here' "$(node_log "$n")" || true)" 0
    # The subscriptions to n2 log one error each when it goes away (their connection ends, and
    # the next one fails before the ALTER SUBSCRIPTION): counted, and no other.
    check "$n: no apply or sync error but the subscription to n2 losing its connection" \
        "$(q "$n" "SELECT coalesce(sum(apply_error_count + sync_error_count) FILTER (WHERE subname NOT LIKE '%_from_n2'), 0) || ' ' || coalesce(sum(sync_error_count), 0) FROM pg_stat_subscription_stats")" "0 0"
    # n2s's walreceiver and slot sync worker lose n2 too, before the promotion.
    check "$n: no error in the log but the connection to n2 lost" \
        "$(grep -E '^[0-9-]+ [0-9:.]+ UTC \[[0-9]+\] (ERROR|FATAL):' "$(node_log "$n")" |
            grep -c -v -E 'could not receive data from WAL stream: server closed the connection unexpectedly|subscription "n[13]_from_n2" could not connect to the publisher|could not connect to the primary server|could not fetch failover logical slots info from the primary server' || true)" 0
    check "$n: no duplicate key" "$(grep -c 'duplicate key' "$(node_log "$n")" || true)" 0
done

# Every ID the old n2 made, from its own data directory: started alone (no replication, no
# ID made), read, stopped.
node_cmdline n2 "${SETTINGS[@]}" max_logical_replication_workers=0
node_start n2
old="$(q n2 "SELECT id || ' n2' FROM events WHERE node = 'n2'")"
node_stop n2 immediate
check "n2 made IDs before it went down" "$(($(wc -l <<<"$old") > 500))" 1
# Each ID with the node that made it: the group's rows (n1 holds every node's), and the old
# n2's, some of which reached the group and some not. An ID made by two nodes is a duplicate.
made="$(q n1 "SELECT id || ' ' || node FROM events")"
check "zero duplicates over the group's $(wc -l <<<"$made") IDs and the old n2's $(wc -l <<<"$old")" \
    "$(sort -u <<<"$made"$'\n'"$old" | cut -d' ' -f1 | uniq -d | wc -l)" 0
check "n2s made IDs after n2 went down" "$(($(grep -c ' n2s$' <<<"$made") >= 1000))" 1
exit "$fail"
