#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=1 estimate=75
# Servers that replicate with each other and share a partition (0.9.0: the handshake over each
# subscription, src/pg/handshake.rs). One way is enough to find it, and the server that came
# first goes on:
#   1. A publisher (sno.partition 101) made IDs; a new subscriber with sno.partition 101 too
#      subscribes and makes none. Without anyone asking, the subscriber's `sno member check` worker
#      refuses it within 60 s (its log says so); sno_generate, sno_generate_at and
#      sno_lease_acquire each raise 55000 naming partition 101 and the publisher's system
#      identifier; the publisher goes on making IDs. A restart keeps the refusal. Then the HINT
#      is run exactly as printed: every path works again, the record is gone within 30 s, and
#      the IDs both servers made, all in the subscriber's table, have no duplicate. A crash of the
#      subscriber keeps the refusal lifted (the lift is in WAL); a change of its partition to the
#      publisher's is refused before any ID is made with it.
#   2. The other way round: a subscriber that made IDs with 102 subscribes to a new publisher
#      with 102 that made none. The publisher is refused (it learned of the subscriber from the
#      handshake the subscriber's worker made); the subscriber goes on.
#   2b. An older cluster (initdb earlier) that never made an ID subscribes to an established
#      server with its partition: the newcomer is refused, the established server goes on.
#   3. A publisher database without sno, on a server with sno.partition 103: its setting stands
#      in, and a subscriber with 103 is refused.
#   4. sno_member_hello() is refused (42501) to a role with neither REPLICATION nor superuser,
#      sno_member_check() to a non-superuser.
#
# Usage: members.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own servers)
set -euo pipefail
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup members "$3" $(($2 + 501)) $(($2 + 599))
q() { # q NODE SQL...: one -c each, database postgres
    node_sql "$@"
}
start() { # start NAME PARTITION
    node_new "$1"
    node_clock_mode "$1" none
    node_initdb "$1"
    node_cmdline "$1" wal_level=logical shared_preload_libraries=sno
    # In postgresql.conf, not on the command line, which ALTER SYSTEM (the HINT) cannot outrank.
    node_conf "$1" "sno.partition = $2"
    node_start "$1"
}
TABLE="CREATE TABLE t (id sno PRIMARY KEY DEFAULT sno_generate(1), src text)"
# refused_within NODE SECONDS: until NODE's log says its partition is refused (prints the wait).
refused_within() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        grep -q 'is refused here: the server with system identifier' "$(node_log "$1")" && {
            echo "$((i / 10))"
            return 0
        }
        sleep 0.1
    done
    echo never
}
# sqlstate NODE SQL: the SQLSTATE SQL raised on NODE (empty if none).
sqlstate() {
    node_psql "$1" -v VERBOSITY=verbose -c "$2" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | head -1
}

# --- 1. The subscriber is the newcomer ---------------------------------------------------------
start pub 101
start sub 101
q pub "CREATE EXTENSION sno" "$TABLE" "INSERT INTO t (src) SELECT 'pub' FROM generate_series(1, 500)" "CREATE PUBLICATION p FOR TABLE t"
q sub "CREATE EXTENSION sno" "$TABLE"
q sub "CREATE SUBSCRIPTION s CONNECTION '$(node_conninfo pub)' PUBLICATION p" 2>/dev/null
pub_id="$(q pub "SELECT system_identifier FROM pg_control_system()")"
waited="$(refused_within sub 60)"
check "1: the subscriber is refused within 60 s by its worker (waited ${waited} s)" "$([[ "$waited" != never ]] && echo yes)" yes
for call in "SELECT sno_generate(1)" "SELECT sno_generate_at(1, now() - interval '1 day')" \
    "SELECT * FROM sno_lease_acquire(holder => 'svc', ttl => '1 min')"; do
    check "1: $call raises 55000 on the subscriber" "$(sqlstate sub "$call")" 55000
done
err="$(node_try sub "SELECT sno_generate(1)")"
check "1: the error names partition 101 and the publisher" \
    "$(grep -c "sno partition 101 is also used by the server with system identifier $pub_id" <<<"$err")" 1
q pub "INSERT INTO t (src) SELECT 'pub' FROM generate_series(1, 500)"
check "1: the publisher goes on" "$(q pub "SELECT count(*) FROM t")" 1000
node_restart sub
check "1: a restart keeps the refusal" "$(sqlstate sub "SELECT sno_generate(1)")" 55000
hint="$(node_try sub "SELECT sno_generate(1)" | sed -n 's/^HINT:  .*as a superuser, run \(ALTER SYSTEM .*\)$/\1/p')"
re='^(ALTER SYSTEM SET sno\.partition = ([0-9]+);) then (SELECT pg_reload_conf\(\);) then, once SHOW sno\.partition says ([0-9]+) \(the reload takes a moment\), compare it with every member before any ID is made with it: (SELECT \* FROM sno_member_check\(\);)$'
[[ "$hint" =~ $re ]] || die "1: the HINT does not give the statements to run and what to wait for: '$hint'"
new="${BASH_REMATCH[2]}"
check "1: the HINT's partition is another one, and the one to wait for" "$([[ "$new" != 101 ]] && echo yes)|${BASH_REMATCH[4]}" "yes|$new"
# As printed: the two statements, then (the reload is asynchronous) until SHOW says it, then the
# check, whose every row must say apart or goes on.
node_psql sub -c "${BASH_REMATCH[1]}" -c "${BASH_REMATCH[3]}" >/dev/null
for ((i = 0; i < 100; i++)); do
    [[ "$(q sub "SHOW sno.partition")" == "$new" ]] && break
    sleep 0.1
done
check "1: the HINT's check compares the new partition with the publisher" \
    "$(node_psql sub -c "${BASH_REMATCH[5]%;}" | cut -d'|' -f3,5)" "101|apart"
q sub "INSERT INTO t (src) SELECT 'sub' FROM generate_series(1, 500)"
check "1: after the HINT the subscriber makes IDs with partition $new" \
    "$(q sub "SELECT count(*) FILTER (WHERE sno_partition(id) = $new) FROM t WHERE src = 'sub'")" 500
check "1: sno_generate_at works again" "$(sqlstate sub "SELECT sno_generate_at(1, now() - interval '1 day')")" ""
check "1: leases work again" "$(sqlstate sub "SELECT * FROM sno_lease_acquire(holder => 'svc', ttl => '1 min')")" ""
for ((i = 0; i < 300; i++)); do
    [[ -e "$(node_data sub)/sno_generator.member_conflict" ]] || break
    sleep 0.1
done
check "1: the record of the refusal is gone" "$([[ -e "$(node_data sub)/sno_generator.member_conflict" ]] && echo kept || echo gone)" gone
for ((i = 0; i < 300; i++)); do
    [[ "$(q sub "SELECT count(*) FROM t WHERE src = 'pub'")" == 1000 ]] && break
    sleep 0.1
done
check "1: every publisher row arrived (no apply error)" "$(q sub "SELECT count(*) FROM t WHERE src = 'pub'")|$(q sub "SELECT coalesce(sum(apply_error_count + sync_error_count), 0) FROM pg_stat_subscription_stats")" "1000|0"
check "1: zero duplicates over the 1,500 IDs both made" "$(q sub "SELECT count(*) - count(DISTINCT id) FROM t")" 0
check "1: the publisher never refused itself" "$(grep -c 'is refused here' "$(node_log pub)" || true)" 0
# The lift is in WAL after the refusal: a crash and its recovery keep it lifted.
node_restart sub immediate
check "1: after a crash the lifted refusal stays lifted" "$(sqlstate sub "SELECT sno_generate(1)")" ""
# A partition changed to the publisher's while they replicate: refused before its first ID.
node_psql sub -c "ALTER SYSTEM SET sno.partition = 101" >/dev/null
node_psql sub -c "SELECT pg_reload_conf()" >/dev/null
for ((i = 0; i < 100; i++)); do
    [[ "$(q sub "SHOW sno.partition")" == 101 ]] && break
    sleep 0.1
done
check "1: a change to the publisher's partition is refused before any ID is made with it" \
    "$(sqlstate sub "SELECT sno_generate(1)")|$(q sub "SELECT count(*) FROM t WHERE sno_partition(id) = 101 AND src = 'sub'")" "55000|0"
node_psql sub -c "ALTER SYSTEM SET sno.partition = $new" >/dev/null
node_psql sub -c "SELECT pg_reload_conf()" >/dev/null
for ((i = 0; i < 100; i++)); do
    [[ "$(q sub "SHOW sno.partition")" == "$new" ]] && break
    sleep 0.1
done
q sub "SELECT * FROM sno_member_check()" >/dev/null
check "1: back on $new, checked: it makes IDs" "$(sqlstate sub "SELECT sno_generate(1)")" ""

# --- 2. The publisher is the newcomer ----------------------------------------------------------
start old 102
start young 102
q old "CREATE EXTENSION sno" "$TABLE" "INSERT INTO t (src) SELECT 'old' FROM generate_series(1, 100)"
q young "CREATE EXTENSION sno" "$TABLE" "CREATE PUBLICATION p FOR TABLE t"
q old "CREATE SUBSCRIPTION s CONNECTION '$(node_conninfo young)' PUBLICATION p" 2>/dev/null
waited="$(refused_within young 60)"
check "2: the new publisher is refused within 60 s (waited ${waited} s)" "$([[ "$waited" != never ]] && echo yes)" yes
check "2: its sno_generate raises 55000" "$(sqlstate young "SELECT sno_generate(1)")" 55000
check "2: the subscriber that came first goes on" "$(sqlstate old "INSERT INTO t (src) VALUES ('old')")" ""
check "2: the subscriber's check says it goes on" "$(q old "SELECT this_server FROM sno_member_check()")" "goes on"

# --- 2b. An older cluster that never made an ID joins an established one ----------------------
start elder 105
sleep 1.1 # the system identifier's top bits are the initdb time in seconds
start est 105
q elder "CREATE EXTENSION sno" "$TABLE"
q est "CREATE EXTENSION sno" "$TABLE" "INSERT INTO t (src) SELECT 'est' FROM generate_series(1, 100)" "CREATE PUBLICATION p FOR TABLE t"
check "2b: the newcomer's cluster is the older one" \
    "$(($(q elder "SELECT system_identifier >> 32 FROM pg_control_system()") < $(q est "SELECT system_identifier >> 32 FROM pg_control_system()")))" 1
q elder "CREATE SUBSCRIPTION s CONNECTION '$(node_conninfo est)' PUBLICATION p" 2>/dev/null
check "2b: the join check refuses the newcomer, which made no ID (not the established server)" \
    "$(q elder "SELECT this_server FROM sno_member_check()")" refused
check "2b: the established server goes on" "$(sqlstate est "INSERT INTO t (src) VALUES ('est')")" ""

# --- 3. A publisher database without sno -------------------------------------------------------
start plain 103
start late 103
q plain "CREATE DATABASE nosno" >/dev/null
node_psql_db plain nosno -c "CREATE TABLE t (id bytea PRIMARY KEY)" -c "CREATE PUBLICATION p FOR TABLE t" >/dev/null
q late "CREATE EXTENSION sno" "CREATE TABLE t (id bytea PRIMARY KEY)"
q late "CREATE SUBSCRIPTION s CONNECTION '$(node_conninfo plain | sed 's/dbname=postgres/dbname=nosno/')' PUBLICATION p" 2>/dev/null
check "3: sno_member_check() refuses the subscriber at once" "$(q late "SELECT peer_partition || ' ' || this_server FROM sno_member_check()")" "103 refused"
check "3: its sno_generate raises 55000" "$(sqlstate late "SELECT sno_generate(1)")" 55000

# --- 4. Privileges -----------------------------------------------------------------------------
q pub "CREATE ROLE app LOGIN" "CREATE ROLE rep LOGIN REPLICATION"
check "4: sno_member_hello() by a plain role: 42501" \
    "$(node_psql pub -U app -v VERBOSITY=verbose -c "SELECT * FROM sno_member_hello(1, 101, true, '')" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" 42501
check "4: sno_member_hello() by a REPLICATION role answers (and the caller, apart, refuses nothing)" \
    "$(node_psql pub -U rep -c "SELECT partition || ' ' || verdict FROM sno_member_hello(1, 4242, true, '') WHERE verdict <> 'known'")" "101 apart"
check "4: and tells no member it only heard of from a caller (the subscriber called it; a caller's word is not told on)" \
    "$(node_psql pub -U rep -c "SELECT count(*) FROM sno_member_hello(1, 4242, true, '2:4242:1') WHERE verdict = 'known'")" 0
check "4: sno_member_check() by a non-superuser: 42501" \
    "$(node_psql pub -U app -v VERBOSITY=verbose -c "SELECT * FROM sno_member_check()" 2>&1 | sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p')" 42501
check "4: the publisher was never refused" "$(sqlstate pub "SELECT sno_generate(1)")" ""
exit "$fail"
