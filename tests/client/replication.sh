#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=1 estimate=60
# Logical replication between two servers with sno (0.9.0: sno's own tables are kept out on the
# receiving side). A publisher (sno.partition 1) and a subscriber (sno.partition 2) each use
# sno_generate, sno_generate_at and leases BEFORE they are connected, so that both have rows in
# sno_internal's tables (reserved grants, lease pool, leases, ledger) with the same keys. Then:
#   1. A FOR ALL TABLES publication (sno's tables included) into one database of the subscriber,
#      and a table-list publication into another: both finish their initial sync; while both
#      servers go on inserting, acquiring, renewing and releasing leases and backfilling, no
#      apply or sync error (pg_stat_subscription_stats), no conflict in the log; every row of
#      the publisher's tables arrives; sno columns compare equal on both sides.
#   2. The subscriber's sno_internal tables hold only its own rows (the publisher's leases and
#      pool are not there); its leases keep working (no "restored from another server" 55000);
#      the reserved partitions the publisher granted arrive noted as granted: a new
#      sno_generate_at session on the subscriber is granted none of them.
#   3. Zero duplicates over every ID either server made, and the IDs that replicated are the
#      publisher's, bit for bit. A subscriber trigger calling sno_generate_at while the apply
#      worker applies: its grant rows are recorded (sno's own rows pass the arrival trigger).
# What it does not cover (issue 42's fleet rule, open): two servers that grant reserved
# partitions or lease slices before they ever replicate may grant the same ones; the backfills
# here use distinct times on each server for that reason.
#
# Usage: replication.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR are used: own servers);
# SNO_PUBLISHER_BINDIR=BINDIR of another major runs the publisher on that major (.ci/plan.py's
# replication/15-18 job: PostgreSQL 15 publishing to 18).
set -euo pipefail
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup replication "$3" $(($2 + 501)) $(($2 + 599))
q() { # q NODE DB SQL...: one -c each
    local n="$1" db="$2" a=() s
    shift 2
    for s in "$@"; do a+=(-c "$s"); done
    node_psql_db "$n" "$db" "${a[@]}"
}
# wait_for DESCRIPTION NODE DB SQL WANT: polls (up to 120 s) until SQL prints WANT.
wait_for() {
    local got="" i
    for ((i = 0; i < 1200; i++)); do
        got="$(q "$2" "$3" "$4" 2>/dev/null || true)"
        [[ "$got" == "$5" ]] && break
        sleep 0.1
    done
    check "$1" "$got" "$5"
}

SCHEMA="CREATE TABLE events (id sno PRIMARY KEY DEFAULT sno_generate(1), server int NOT NULL, n int);
CREATE TABLE pub_backfill (id sno PRIMARY KEY, n int);
CREATE TABLE sub_backfill (id sno PRIMARY KEY, n int);
CREATE TABLE leased (server int, lease int8, partition int, sequence_min int, sequence_max int,
                     not_before timestamptz, expires_at timestamptz);"

# The publisher may be an older major (the job replication/15-18: SNO_PUBLISHER_BINDIR).
node_new pub "${SNO_PUBLISHER_BINDIR:-}"
node_new sub
for n in pub sub; do
    node_clock_mode "$n" none
    node_initdb "$n"
    part=1
    [[ "$n" == sub ]] && part=2
    node_cmdline "$n" wal_level=logical shared_preload_libraries=sno "sno.partition=$part" \
        max_worker_processes=32 max_logical_replication_workers=8 max_sync_workers_per_subscription=4
    node_start "$n"
done
q pub postgres "CREATE EXTENSION sno" "$SCHEMA"
for db in s_all s_list; do
    q sub postgres "CREATE DATABASE $db"
    q sub "$db" "CREATE EXTENSION sno" "$SCHEMA"
done

# activity NODE DB SERVER ROUND: inserts, a backfill on its own table and its own times, a lease
# acquired, renewed and one released, each lease kept in `leased` (not replicated back).
activity() {
    local n="$1" db="$2" s="$3" r="$4" table="pub_backfill" base="2021-01-01" tok
    [[ "$s" == 2 ]] && table="sub_backfill" base="2022-01-01"
    q "$n" "$db" "INSERT INTO events (server, n) SELECT $s, g FROM generate_series(1, 500) g" \
        "INSERT INTO $table SELECT sno_generate_at(3, timestamptz '$base+00' + (g % 7) * interval '1 s'), $r * 1000 + g FROM generate_series(1, 300) g" >/dev/null
    tok="$(q "$n" "$db" "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'srv$s-$db-$r', ttl => '2 min', sequences => 1024)")"
    q "$n" "$db" "SELECT lease FROM sno_lease_renew(lease => ${tok%%|*}, token => '${tok#*|}', ttl => '3 min')" >/dev/null
    q "$n" "$db" "INSERT INTO leased SELECT $s, lease, partition, sequence_min, sequence_max, not_before, expires_at FROM sno_leases WHERE lease = ${tok%%|*}"
    tok="$(q "$n" "$db" "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'srv$s-$db-$r-short', ttl => '1 min', sequences => 8)")"
    q "$n" "$db" "SELECT sno_lease_release(lease => ${tok%%|*}, token => '${tok#*|}')" >/dev/null
}

# --- before they are connected: rows with the same keys on both sides -----------------------
activity pub postgres 1 0
# More sessions on the publisher: its grants then include the subscriber's next one.
for i in 1 2 3 4 5 6 7 8; do
    q pub postgres "INSERT INTO pub_backfill SELECT sno_generate_at(3, timestamptz '2020-01-01+00' + g * interval '1 s'), -$i FROM generate_series(1, 10) g"
done
for db in s_all s_list; do activity sub "$db" 2 0; done
check "both have sno_internal rows before subscribing" \
    "$(q pub postgres "SELECT (SELECT count(*) FROM sno_internal.reserved_grants) > 0 AND (SELECT count(*) FROM sno_internal.leases) > 0")|$(q sub s_all "SELECT (SELECT count(*) FROM sno_internal.reserved_grants) > 0 AND (SELECT count(*) FROM sno_internal.leases) > 0")" "t|t"
check "the two servers' lease pools share partition numbers (the keys collide on replication)" \
    "$(q pub postgres "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM sno_internal.lease_partitions")" \
    "$(q sub s_all "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM sno_internal.lease_partitions")"
# A subscriber's own trigger that calls sno_generate_at while the apply worker applies the
# publisher's rows: sno's own grant row goes through (it is this server's, not the publisher's).
q sub s_all "CREATE TABLE derived (id sno PRIMARY KEY, src sno)" \
    "CREATE FUNCTION derive() RETURNS trigger LANGUAGE plpgsql SET search_path = public, pg_catalog AS \$\$ BEGIN
         INSERT INTO derived VALUES (sno_generate_at(4, sno_time(NEW.id)), NEW.id); RETURN NULL; END \$\$" \
    "CREATE TRIGGER derive AFTER INSERT ON events FOR EACH ROW WHEN (NEW.server = 1) EXECUTE FUNCTION derive()" \
    "ALTER TABLE events ENABLE ALWAYS TRIGGER derive"
sub_own_lease="$(q sub s_all "SELECT lease || ' ' || holder || ' ' || expires_at FROM sno_internal.leases WHERE holder = 'srv2-s_all-0'")"

q pub postgres "CREATE PUBLICATION every_table FOR ALL TABLES" "CREATE PUBLICATION listed FOR TABLE events, pub_backfill"
check "the FOR ALL TABLES publication includes sno's own tables" \
    "$(q pub postgres "SELECT count(*) FROM pg_publication_tables WHERE pubname = 'every_table' AND schemaname = 'sno_internal'")" 4
q sub s_all "CREATE SUBSCRIPTION from_all CONNECTION '$(node_conninfo pub)' PUBLICATION every_table"
q sub s_list "CREATE SUBSCRIPTION from_list CONNECTION '$(node_conninfo pub)' PUBLICATION listed"
for db in s_all s_list; do
    wait_for "$db: every table synchronized" sub "$db" \
        "SELECT count(*) FILTER (WHERE srsubstate NOT IN ('r', 's')) FROM pg_subscription_rel" 0
done

# --- connected: both go on, concurrently ------------------------------------------------------
for r in 1 2 3; do
    activity pub postgres 1 "$r" &
    activity sub s_all 2 "$r" &
    activity sub s_list 2 "$r" &
    wait
done
q pub postgres "UPDATE events SET n = -n WHERE n % 10 = 0" "DELETE FROM events WHERE n % 10 = 5"
pub_lsn="$(q pub postgres "SELECT pg_current_wal_lsn()")"
for s in from_all from_list; do
    wait_for "$s caught up with the publisher" pub postgres \
        "SELECT bool_and(confirmed_flush_lsn >= '$pub_lsn') FROM pg_replication_slots WHERE slot_name = '$s'" t
done

# --- 1. no error, every row ---------------------------------------------------------------------
for db in s_all s_list; do
    check "$db: no apply or sync error" \
        "$(q sub "$db" "SELECT coalesce(sum(apply_error_count + sync_error_count), -1) FROM pg_stat_subscription_stats")" 0
done
# PostgreSQL 18 logs an UPDATE or DELETE whose row is missing as a conflict, and skips it: the
# publisher's updates of its own sno_internal rows, which were kept out here. No other.
check "no duplicate key, failed worker, or conflict in the subscriber's log but sno's own rows' update_missing or delete_missing" \
    "$(grep -E 'duplicate key|conflict|exited with exit code [1-9]' "$(node_log sub)" |
        grep -c -v -E 'conflict detected on relation "sno_internal\.[a-z_]+": conflict=(update|delete)_missing' || true)" 0
pub_events="$(q pub postgres "SELECT count(*) || '|' || md5(string_agg(id::text || ':' || n, ',' ORDER BY id)) FROM events WHERE server = 1")"
pub_fill="$(q pub postgres "SELECT count(*) || '|' || md5(string_agg(id::text, ',' ORDER BY id)) FROM pub_backfill")"
for db in s_all s_list; do
    check "$db: the publisher's events arrived, bit for bit" \
        "$(q sub "$db" "SELECT count(*) || '|' || md5(string_agg(id::text || ':' || n, ',' ORDER BY id)) FROM events WHERE server = 1")" "$pub_events"
    check "$db: the publisher's backfill arrived" \
        "$(q sub "$db" "SELECT count(*) || '|' || md5(string_agg(id::text, ',' ORDER BY id)) FROM pub_backfill")" "$pub_fill"
    check "$db: sno's binary form is the publisher's (ids compare equal as bytes)" \
        "$(q sub "$db" "SELECT count(*) FILTER (WHERE sno_partition(id) <> 1) FROM events WHERE server = 1")" 0
done

# --- 2. sno's state stays each server's own ---------------------------------------------------
check "s_all: its leases are its own only (none of the publisher's)" \
    "$(q sub s_all "SELECT count(*) FROM sno_internal.leases WHERE holder LIKE 'srv1-%'")" 0
check "s_all: its first lease is still there, as it was" \
    "$(q sub s_all "SELECT lease || ' ' || holder || ' ' || expires_at FROM sno_internal.leases WHERE holder = 'srv2-s_all-0'")" "$sub_own_lease"
check "s_all: no pool partition marked restored from another server" \
    "$(q sub s_all "SELECT count(*) FROM sno_internal.lease_partitions WHERE restored")" 0
tok="$(q sub s_all "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'after', ttl => '1 min')" 2>&1)"
check "s_all: a lease is acquired after the sync" "$(grep -c '^[0-9]*|' <<<"$tok")" 1
pub_grants="$(q pub postgres "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM (SELECT partition FROM sno_internal.reserved_grants UNION SELECT partition FROM sno_internal.lease_partitions) g")"
# A new session on the subscriber (s_all learned the publisher's grants): its grant is none of
# them, though the lowest partition the subscriber itself has not granted is one of them.
sub_grants="$(q sub s_all "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM (SELECT partition FROM sno_internal.reserved_grants UNION SELECT partition FROM sno_internal.lease_partitions) g")"
sub_grants="$sub_grants,$(q sub s_list "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM sno_internal.reserved_grants")"
next_free=61440
while tr ',' '\n' <<<"$sub_grants" | grep -q -x "$next_free"; do next_free=$((next_free + 1)); done
check "the subscriber's lowest ungranted partition ($next_free) is one the publisher granted" \
    "$(tr ',' '\n' <<<"$pub_grants" | grep -c -x "$next_free" || true)" 1
new_grant="$(q sub s_all "SELECT sno_partition(sno_generate_at(3, timestamptz '2023-01-01+00'))")"
check "s_all: a new sno_generate_at grant is none the publisher granted ($pub_grants)" \
    "$(tr ',' '\n' <<<"$pub_grants" | grep -c -x "$new_grant" || true)" 0

check "s_all: the grants its trigger took while applying are recorded (sno_reserved_grants)" \
    "$(q sub s_all "SELECT count(*) > 0 AND bool_and(sno_partition(id) IN (SELECT partition FROM sno_reserved_grants)) FROM derived")" t

# --- 3. zero duplicates over every ID ---------------------------------------------------------
all_ids() { # every ID a server made, one per line
    q pub postgres "SELECT id FROM events WHERE server = 1 UNION ALL SELECT id FROM pub_backfill"
    for db in s_all s_list; do q sub "$db" "SELECT id FROM events WHERE server = 2 UNION ALL SELECT id FROM sub_backfill"; done
    q sub s_all "SELECT id FROM derived"
}
ids="$(all_ids)"
total="$(wc -l <<<"$ids")"
check "zero duplicates over all $total IDs the two servers made" "$(sort <<<"$ids" | uniq -d | wc -l)" 0
echo "IDs made: $total; publisher grants: $pub_grants; subscriber's new grant: $new_grant"
exit "$fail"
