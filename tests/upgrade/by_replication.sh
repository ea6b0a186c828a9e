#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# A major upgrade by logical replication, as the manual's Operations page prints it ("Can I
# upgrade a major version by logical replication?"): its blocks are read from the page and run,
# as the postgres OS user, on the new server, with the old server's connection string put in
# their first line (OLD=...).
#   1. The old server (sno.partition 1) makes IDs with sno_generate, backfills with
#      sno_generate_at and leases (a holder stamps IDs under each lease) before the new one
#      (sno.partition 2) exists.
#   2. The page's first block: the schema, the publication, the subscription, the initial sync.
#   3. Both servers insert with sno_generate; the old one still backfills (the same times again,
#      another session) and acquires a lease.
#   4. The page's switch block; then the new server backfills the very times the old one did, and
#      leases; the old server's holders renew and stamp on, at the same units as the new
#      server's holders.
#   5. Every ID either server made, and every ID stamped under any lease: zero duplicates; no
#      apply or sync error; the new server's grants and pool partitions are none of the old's.
# The job upgrade/by-replication-15-18 runs it from PostgreSQL 15 to 18. About 20 s.
#
# Usage (as root): by_replication.sh OLD_BINDIR NEW_BINDIR PORT   (PORT to PORT+9)
set -euo pipefail
# shellcheck source=../client/lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/../client/lib.bash"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DOC="${SNO_OPS_DOC:-$ROOT/doc/operations.md}"
harness_setup by_replication "$2" "$3" $(($3 + 9))

doc_block() { # doc_block MARKER: the first fenced block after the line MARKER
    awk -v m="$1" '$0 == m { f = 1; next } f && !b && /^```/ { b = 1; next } b && /^```$/ { exit } b' "$DOC"
}
SUBSCRIBE="$(doc_block "<!-- upgrade:subscribe -->")"
SWITCH="$(doc_block "<!-- upgrade:switch -->")"
[[ -n "$SUBSCRIBE" && -n "$SWITCH" ]] || die "the upgrade blocks were not found in $DOC"
for b in "$SUBSCRIBE" "$SWITCH"; do
    grep -q "^OLD='" <<<"$(head -1 <<<"$b")" || die "a block of the page does not set OLD= first"
done
# run_on_new BLOCK: the page's block on the new server, its first line (OLD=...) naming the old.
run_on_new() {
    local old
    old="OLD='host=$CL_WORK port=$(node_port old) dbname=app user=postgres'"
    as_pg env PATH="$(node_bindir new):$PATH" PGHOST="$CL_WORK" PGPORT="$(node_port new)" PGUSER=postgres \
        bash -euo pipefail -c "cd /; $old
$(tail -n +2 <<<"$1")" || die "the page's block failed on the new server"
}
q() { # q NODE SQL...: in database app, one -c each
    local n="$1" a=() s
    shift
    for s in "$@"; do a+=(-c "$s"); done
    node_psql_db "$n" app "${a[@]}"
}

SCHEMA="CREATE EXTENSION sno;
CREATE TABLE orders (id sno PRIMARY KEY DEFAULT sno_generate(1), src text NOT NULL, n int);
CREATE TABLE history (id sno PRIMARY KEY, src text NOT NULL, n int);
CREATE TABLE stamped (id sno PRIMARY KEY, src text NOT NULL, lease int8);"
# backfill NODE SRC: 400 rows for the same past times each call (meta 2), in one session.
backfill() {
    q "$1" "INSERT INTO history SELECT sno_generate_at(2, timestamptz '2019-06-01+00' + (g % 40) * interval '5 ms'), '$2', g FROM generate_series(1, 400) g" >/dev/null
}
# acquire NODE: a lease (1024 numbers, 5 min); prints lease|token.
acquire() { q "$1" "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'svc', ttl => '5 min', sequences => 1024)"; }
# stamp NODE SRC LEASE AT: what a holder of LEASE (acquired on NODE) stamps: every number of its
# slice in the 4 ms units AT and the 3 after it, into NODE's table stamped.
stamp() {
    q "$1" "INSERT INTO stamped SELECT sno_from_parts(timestamptz '$4' + u * interval '4 ms', 5, partition, s), '$2', lease
            FROM sno_leases, generate_series(0, 3) u, generate_series(sequence_min, sequence_max) s
            WHERE lease = $3 AND timestamptz '$4' + u * interval '4 ms' < expires_at AND timestamptz '$4' >= not_before" >/dev/null
}

node_new old "$1"
node_new new "$2"
node_initdb old
node_initdb new
node_cmdline old wal_level=logical shared_preload_libraries=sno sno.partition=1
node_cmdline new shared_preload_libraries=sno sno.partition=2
node_start old
node_start new
node_psql old -c "CREATE DATABASE app"
q old "$SCHEMA"

# --- 1. the old server alone ------------------------------------------------------------------
q old "INSERT INTO orders (src, n) SELECT 'old', g FROM generate_series(1, 500) g" >/dev/null
backfill old old
l1="$(acquire old)"

# --- 2. the page's subscription ---------------------------------------------------------------
run_on_new "$SUBSCRIBE"
check "the new server has the old one's rows after the sync" \
    "$(q new "SELECT count(*) FROM orders")|$(q new "SELECT count(*) FROM history")" "500|400"

# --- 3. both make IDs; the old one still backfills and leases ------------------------------------
q old "INSERT INTO orders (src, n) SELECT 'old', g FROM generate_series(501, 1000) g" >/dev/null &
q new "INSERT INTO orders (src, n) SELECT 'new', g FROM generate_series(1, 500) g" >/dev/null &
backfill old old &
wait
l2="$(acquire old)"

# --- 4. the switch, then backfills and leases on the new server ------------------------------------
run_on_new "$SWITCH"
backfill new new
backfill new new
l3="$(acquire new)"
l4="$(acquire new)"
check "the old server's holder renews after the switch" \
    "$(q old "SELECT lease FROM sno_lease_renew(lease => ${l1%%|*}, token => '${l1#*|}', ttl => '5 min')")" "${l1%%|*}"
# Every holder stamps at the same units: the new server's latest lease's first unit.
at="$(q new "SELECT not_before FROM sno_leases WHERE lease = ${l4%%|*}")"
for l in "$l1" "$l2"; do stamp old old "${l%%|*}" "$at"; done
for l in "$l3" "$l4"; do stamp new new "${l%%|*}" "$at"; done
q new "INSERT INTO orders (src, n) SELECT 'new', g FROM generate_series(501, 1000) g" >/dev/null
lsn="$(q old "SELECT pg_current_wal_lsn()")"
for ((i = 0; i < 600; i++)); do
    [[ "$(q old "SELECT confirmed_flush_lsn >= '$lsn' FROM pg_replication_slots WHERE slot_name = 'upgrade'")" == t ]] && break
    sleep 0.1
done

# --- 5. the count ----------------------------------------------------------------------------------
check "no apply or sync error" \
    "$(q new "SELECT coalesce(sum(apply_error_count + sync_error_count), -1) FROM pg_stat_subscription_stats")" 0
check "every holder stamped 4 units of 1024 numbers" \
    "$(q old "SELECT count(*) FROM stamped")|$(q new "SELECT count(*) FROM stamped WHERE src = 'new'")" "8192|8192"
old_parts="$(q old "SELECT partition FROM sno_internal.reserved_grants UNION SELECT partition FROM sno_internal.lease_partitions ORDER BY 1")"
new_parts="$(q new "SELECT partition FROM sno_internal.reserved_grants UNION SELECT partition FROM sno_internal.lease_partitions ORDER BY 1")"
check "the new server granted none of the old server's reserved partitions" \
    "$(comm -12 <(sort <<<"$old_parts") <(sort <<<"$new_parts") | wc -l)" 0
ids="$(
    q old "SELECT id FROM orders UNION ALL SELECT id FROM history UNION ALL SELECT id FROM stamped"
    q new "SELECT id FROM orders WHERE src = 'new' UNION ALL SELECT id FROM history WHERE src = 'new'
           UNION ALL SELECT id FROM stamped WHERE src = 'new'"
)"
total="$(wc -l <<<"$ids")"
check "zero duplicates over all $total IDs the two servers made and their holders stamped" \
    "$(sort <<<"$ids" | uniq -d | wc -l)" 0
check "the new server has every row the old one made" \
    "$(q new "SELECT count(*) FROM orders WHERE src = 'old'")|$(q new "SELECT count(*) FROM history WHERE src = 'old'")|$(q new "SELECT count(*) FROM stamped WHERE src = 'old'")" \
    "$(q old "SELECT count(*) FROM orders")|$(q old "SELECT count(*) FROM history")|$(q old "SELECT count(*) FROM stamped")"
q new "DROP SUBSCRIPTION upgrade" >/dev/null 2>&1 || bad "DROP SUBSCRIPTION upgrade on the new server"
echo "old partitions: $(tr '\n' ' ' <<<"$old_parts"); new: $(tr '\n' ' ' <<<"$new_parts"); $total IDs"
exit "$fail"
