#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=0 estimate=30
# Partition leases on real servers (the registry; the clients have tests of their own:
# lease_go.sh, lease_python.sh, rust_drivers.sh, and the fleet trial lease_fleet.sh):
#  1. Privilege and misuse: a role without EXECUTE is refused (42501); each bad argument gets
#     its SQLSTATE and a message naming the value; every HINT is followed as printed and the
#     call then works (a TTL over sno.lease_max_ttl: the ALTER ROLE it prints; a slice size:
#     the size it proposes; a holder over 256 bytes: a shorter one; the role's limit: the ALTER
#     ROLE it prints; a renewal of a released lease: a new acquire). The role cannot raise its
#     own limit or maximum TTL. A wrong token renews and releases nothing.
#  1b. Nothing a caller does after its call takes a lease back (0.8.1: the registry commits in
#     its own worker's transaction): a procedure acquiring in a PL/pgSQL FOR loop, then ROLLBACK,
#     returning the lease as INOUT; one renewing with OPEN/FETCH, then ROLLBACK; a DO block that
#     shows its lease in a NOTICE and fails; BEGIN ... ROLLBACK. After each, a second holder's
#     acquires: the registry holds exactly what the caller was shown, and nothing overlaps it.
#  1c. No caller holds the registry: while one role's statement acquires and then runs for 600 s,
#     and one role's transaction stays open after a call, another role's acquire, renew and
#     release answer (statement_timeout 10 s; the whole in at most 30 s).
#  1d. Fair and bounded: a role limited to 4 leases, acquiring and releasing for 6 s, never has
#     more than 4 rows in the registry; a role holding whole partitions up to its
#     sno.reserved_limit makes no other role's acquire fail, and the other's limit is its own
#     (its refusal's HINT followed).
#  1e. No background worker slot for the registry (max_worker_processes = 2): 53400, and its
#     HINT (ALTER SYSTEM SET max_worker_processes = 3; then a restart) followed: granted. Then
#     another role's parallel workers on both dynamic slots: 53400 after 5 s, its HINT
#     (max_parallel_workers one lower, a reload) followed: granted beside a new parallel query.
#     A database that allows no connections: 55000 at once, the other databases go on.
#  1f. A superuser's ACCESS EXCLUSIVE lock held on the registry's table: four queued calls all
#     get 55P03 within 15 s, the HINT's query names the holder; a database owner's ANALYZE held
#     open holds up no call; 17 databases calling without pause and an 18th: answered.
#  1b also: SELECT (sno_lease_acquire(...)).* grants one lease and shows it.
#  2. Hostile objects: another role's function pg_temp/public sha256, an operator = on
#     (bigint, bigint) and a type sno_lease in a schema first in the caller's search_path
#     change nothing: the calls work and return sno's type.
#  3. 6 sessions acquiring, renewing and releasing leases of random sizes at once: no two
#     leases ever granted share a (partition, sequence number) with overlapping windows.
#  4. An asynchronous standby refuses (25006; its HINT: the primary, where the call works);
#     then the standby stops receiving, the primary grants more leases (the lost tail) and is
#     killed, the standby is promoted: the old primary's leases it knows are 'inherited', their
#     renewal is refused (55000) and the HINT (a new acquire) works, on a partition none of the
#     old primary's leases (lost ones included) used.
#  5. A clone of the promoted server started beside it refuses (55000); the HINT followed (its
#     original stopped for good, take_over) it grants, on a partition of its own.
#  6. pg_dump of the registry's database restored into another database of the same server:
#     it grants at once, on new partitions; into a fresh cluster: refused (55000) until the
#     HINT's sno_lease_take_over(), then granted on partitions the dump does not name.
#  6b. A data-only restore (--disable-triggers) of the registry's own database, its tables
#     emptied first, with a lease granted after the dump: 70 leases after the restore, none
#     overlapping it (the ledger's floor, said in the server log); the lost lease's renewal and a
#     restored lease's renewal refused, and their HINTs followed.
#
# Usage: SNO_PG_MAJOR=15 leases.sh SOCKET_DIR PORT BINDIR (own clusters on ports PORT+700 ..
# PORT+720). Any other SNO_PG_MAJOR: skipped (leases are tested on PostgreSQL 15 only).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped leases.sh: leases are tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
harness_setup leases "$3" $(($2 + 700)) $(($2 + 720))
T0=$SECONDS
export PGTZ=UTC

q() { node_sql "$@"; }
# as NODE USER SQL...: one session per statement list, on database postgres.
as() {
    local n="$1" u="$2" a=() s
    shift 2
    for s in "$@"; do a+=(-c "$s"); done
    qu "$n" postgres "$u" "${a[@]}"
}
part() { echo "--- $* ($((SECONDS - T0)) s)"; }
# hint_stmt N: the Nth SQL statement of the last error's HINT (SELECT ... ; or ALTER ... ;).
hint_stmt() { msg_field HINT "$SAID" | grep -oE "(SELECT|ALTER ROLE|SET SESSION) [^;]*;" | sed -n "${1}p"; }
ACQ="SELECT concat_ws('|', lease, token, partition, sequence_min, sequence_max) FROM sno_lease_acquire"
GRANTS="GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4), sno_lease_renew(int8, uuid, interval), sno_lease_release(int8, uuid) TO"
# conflicts NODE DB: pairs of leases of DB that could stamp one ID (0 expected).
conflicts() {
    qu "$1" "$2" postgres -c "SELECT count(*) FROM sno_internal.leases a JOIN sno_internal.leases b
        ON a.lease < b.lease AND a.partition = b.partition
       AND a.sequence_min <= b.sequence_max AND b.sequence_min <= a.sequence_max
       AND a.not_before < b.expires_at AND b.not_before < a.expires_at"
}

node_init a
node_clock_mode a none
node_cmdline a shared_preload_libraries=sno
node_start a || die "a did not start"
q a "CREATE EXTENSION sno" "CREATE ROLE svc LOGIN" "CREATE ROLE other LOGIN"

part "1. privilege and misuse"
expect_state "a role without EXECUTE" 42501 a postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
q a "$GRANTS svc" >/dev/null
l1="$(as a svc "$ACQ(holder => 'one', ttl => '1 min')")"
check "granted: partition in the reserved range, 1024 numbers" \
    "$(IFS='|' read -r _ _ p mi ma <<<"$l1"; echo "$((p >= 61440 && p <= 65535))|$((ma - mi + 1))")" "1|1024"
expect_state "ttl NULL" 22004 a postgres svc "$ACQ(holder => 'x', ttl => NULL)"
expect_state "ttl 0" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '0')"
check "  names the value" "$(msg_field ERROR "$SAID" | grep -c 'lease TTL 00:00:00 is out of range')" 1
expect_state "ttl -1 min" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '-1 min')"
expect_state "ttl 500 ms" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '500 ms')"
expect_state "ttl 1 hour, over sno.lease_max_ttl (600 s)" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '1 hour')"
stmt="$(hint_stmt 1)"
check "  its HINT's statement" "$stmt" "ALTER ROLE \"svc\" SET sno.lease_max_ttl = '3600s';"
expect_state "  the role cannot run it itself" 42501 a postgres svc "$stmt"
expect_state "  nor SET the maximum in its session" 42501 a postgres svc "SET sno.lease_max_ttl = 3600"
q a "$stmt" >/dev/null
expect_state "  after the superuser ran it, the hour asked for works in a new session of the role" ok a postgres svc "$ACQ(holder => 'x', ttl => '1 hour')"
expect_state "sequences 12" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '1 min', sequences => 12)"
hs="$(msg_field HINT "$SAID" | grep -oE 'sequences => [0-9]+')"
check "  its HINT proposes" "$hs" "sequences => 16"
expect_state "  which works" ok a postgres svc "$ACQ(holder => 'x', ttl => '1 min', $hs)"
expect_state "sequences 4 (muyo/sno needs 6)" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '1 min', sequences => 4)"
expect_state "sequences 131072" 22023 a postgres svc "$ACQ(holder => 'x', ttl => '1 min', sequences => 131072)"
expect_state "holder of 257 bytes" 22001 a postgres svc "$ACQ(holder => repeat('h', 257), ttl => '1 min')"
check "  names the value" "$(msg_field ERROR "$SAID" | grep -c 'sno lease holder "hhhh.*(257 bytes) is too long')" 1
expect_state "  followed (a shorter holder, 256 bytes)" ok a postgres svc "$ACQ(holder => repeat('h', 256), ttl => '1 min')"
expect_state "an empty holder" 22023 a postgres svc "$ACQ(holder => '', ttl => '1 min')"
expect_state "at REPEATABLE READ: works (the registry decides in a transaction of its own)" ok a postgres svc \
    "SET default_transaction_isolation = 'repeatable read'" "$ACQ(holder => 'rr', ttl => '1 min')"
expect_state "in a read-only session" 25006 a postgres svc "SET default_transaction_read_only = on" "$ACQ(holder => 'x', ttl => '1 min')"
q a "ALTER ROLE svc SET sno.lease_limit = 6" >/dev/null
expect_state "the role cannot raise its limit" 42501 a postgres svc "SET sno.lease_limit = 100"
n=0
while [[ "$(as a svc "SELECT count(*) < 6 FROM sno_leases WHERE grantee = 'svc' AND expires_at > now()")" == t ]]; do
    as a svc "$ACQ(holder => 'fill', ttl => '1 min')" >/dev/null
    n=$((n + 1))
done
expect_state "the 7th active lease of a role limited to 6" 53400 a postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(hint_stmt 1)"
check "  its HINT's statement" "$stmt" "ALTER ROLE \"svc\" SET sno.lease_limit = 12;"
q a "$stmt" >/dev/null
expect_state "  after the superuser ran it" ok a postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
# The role's setting in this database outranks its own: the HINT names it, and works.
q a "ALTER ROLE svc IN DATABASE postgres SET sno.lease_limit = 7" >/dev/null
expect_state "the 8th active lease of a role limited to 7 in this database" 53400 a postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(hint_stmt 1)"
check "  its HINT's statement names the database" "$stmt" "ALTER ROLE \"svc\" IN DATABASE \"postgres\" SET sno.lease_limit = 14;"
q a "$stmt" >/dev/null
expect_state "  after the superuser ran it" ok a postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
q a "ALTER ROLE svc IN DATABASE postgres RESET sno.lease_limit" "ALTER ROLE svc SET sno.lease_limit = 1000" >/dev/null
# The limit counted is the calling role's (current_user), whoever logged in: a member of svc with
# a limit of its own far above gets svc's under SET ROLE svc, and the HINT names svc.
held="$(q a "SELECT count(*) FROM sno_leases WHERE grantee = 'svc' AND expires_at > now()")"
q a "ALTER ROLE svc SET sno.lease_limit = $held" "CREATE ROLE svc_member LOGIN" "GRANT svc TO svc_member" \
    "ALTER ROLE svc_member SET sno.lease_limit = 1000" >/dev/null
expect_state "a member of svc, under SET ROLE svc, at svc's limit of $held" 53400 a postgres svc_member "SET ROLE svc" "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(hint_stmt 1)"
check "  its HINT's statement names svc" "$stmt" "ALTER ROLE \"svc\" SET sno.lease_limit = $((2 * held));"
q a "$stmt" >/dev/null
expect_state "  after the superuser ran it" ok a postgres svc_member "SET ROLE svc" "$ACQ(holder => 'x', ttl => '1 min')"
check "  the lease is svc's" "$(q a "SELECT grantee FROM sno_leases ORDER BY lease DESC LIMIT 1")" svc
q a "ALTER ROLE svc SET sno.lease_limit = 1000" >/dev/null
IFS='|' read -r id tok _ <<<"$l1"
expect_state "renew with a wrong token" 42501 a postgres svc "SELECT sno_lease_renew(lease => $id, token => gen_random_uuid(), ttl => '1 min')"
expect_state "release with a wrong token" 42501 a postgres svc "SELECT sno_lease_release(lease => $id, token => gen_random_uuid())"
check "  released nothing" "$(q a "SELECT state FROM sno_leases WHERE lease = $id")" active
before="$(q a "SELECT expires_at FROM sno_leases WHERE lease = $id")"
r="$(as a svc "SELECT concat_ws('|', lease, partition, sequence_min, expires_at > '$before') FROM sno_lease_renew(lease => $id, token => '$tok', ttl => '5 min')")"
check "renewed: same lease, partition and slice, a later end" "$r" "$id|$(cut -d'|' -f3 <<<"$l1")|$(cut -d'|' -f4 <<<"$l1")|t"
as a svc "SELECT sno_lease_release(lease => $id, token => '$tok')" "SELECT sno_lease_release(lease => $id, token => '$tok')" >/dev/null
check "released (twice: no error), its window not over" "$(q a "SELECT state FROM sno_leases WHERE lease = $id")" released
expect_state "renewal of a released lease" 55000 a postgres svc "SELECT sno_lease_renew(lease => $id, token => '$tok', ttl => '1 min')"
expect_state "  its HINT's statement, as the role" ok a postgres svc "$(hint_stmt 1 | sed "s/holder => \.\.\., ttl => \.\.\./holder => 'again', ttl => '1 min'/")"
check "the role's own leases only: sno_lease_take_over refused" \
    "$(try a postgres svc "SELECT sno_lease_take_over()"; echo "$STATE")" 42501

part "1b. nothing a caller does after its call takes a lease back"
# shown NAME LEASE PARTITION MIN MAX NOT_BEFORE EXPIRES: what a caller was shown is the registry's
# record of that lease, and no other lease of the registry can stamp an ID inside it.
shown() {
    local d="$1" id="$2" p="$3" mi="$4" ma="$5" nb="$6" ex="$7"
    check "$d: the registry holds what the caller was shown" \
        "$(q a "SELECT count(*) FROM sno_internal.leases WHERE lease = $id AND partition = $p AND sequence_min = $mi
                AND sequence_max = $ma AND not_before = '$nb' AND expires_at = '$ex'")" 1
    check "$d: no other lease overlaps it" \
        "$(q a "SELECT count(*) FROM sno_internal.leases WHERE lease <> $id AND partition = $p
                AND sequence_min <= $ma AND $mi <= sequence_max AND not_before < '$ex' AND '$nb' < expires_at")" 0
}
# Each case, then a second holder's acquires (of the same size, as many as the partition has
# slices): none overlaps what the first caller was shown.
second_holder() {
    local i
    for i in $(seq "$2"); do as a other "$ACQ(holder => 'second', ttl => '1 min', sequences => $1)" >/dev/null; done
}
q a "$GRANTS other" "ALTER ROLE other SET sno.lease_limit = 200" >/dev/null
q a "CREATE PROCEDURE public.acquire_then_roll_back(INOUT lease int8 DEFAULT NULL, INOUT token uuid DEFAULT NULL,
        INOUT part int4 DEFAULT NULL, INOUT smin int4 DEFAULT NULL, INOUT smax int4 DEFAULT NULL,
        INOUT nb timestamptz DEFAULT NULL, INOUT ex timestamptz DEFAULT NULL)
    LANGUAGE plpgsql AS \$\$
    DECLARE r record;
    BEGIN
        FOR r IN SELECT * FROM sno_lease_acquire(holder => 'procedure', ttl => '1 min', sequences => 8192) LOOP
            lease := r.lease; token := r.token; part := r.partition; smin := r.sequence_min;
            smax := r.sequence_max; nb := r.not_before; ex := r.expires_at;
        END LOOP;
        ROLLBACK;
    END \$\$" \
    "CREATE PROCEDURE public.renew_then_roll_back(l int8, t uuid, INOUT ex timestamptz DEFAULT NULL)
    LANGUAGE plpgsql AS \$\$
    DECLARE c refcursor; r record;
    BEGIN
        OPEN c FOR SELECT * FROM sno_lease_renew(lease => l, token => t, ttl => '5 min');
        FETCH c INTO r;
        ex := r.expires_at;
        CLOSE c;
        ROLLBACK;
    END \$\$" \
    "GRANT EXECUTE ON PROCEDURE public.acquire_then_roll_back, public.renew_then_roll_back TO svc" >/dev/null
got="$(as a svc "CALL acquire_then_roll_back()")"
IFS='|' read -r pl pt pp pmi pma pnb pex <<<"$got"
check "a procedure acquiring in a FOR loop, then ROLLBACK: its caller got a lease" "$((pma - pmi + 1))" 8192
second_holder 8192 8
shown "  after a second holder's 8 acquires" "$pl" "$pp" "$pmi" "$pma" "$pnb" "$pex"
rex="$(as a svc "CALL renew_then_roll_back($pl, '$pt')")"
check "a procedure renewing with OPEN/FETCH, then ROLLBACK: a later end" "$(q a "SELECT '$rex'::timestamptz > '$pex'")" t
second_holder 8192 8
shown "  after a second holder's 8 more acquires" "$pl" "$pp" "$pmi" "$pma" "$pnb" "$rex"
try a postgres svc "DO \$\$DECLARE r record; BEGIN
        SELECT * INTO r FROM sno_lease_acquire(holder => 'do', ttl => '1 min', sequences => 8192);
        RAISE NOTICE 'lease %', concat_ws('|', r.lease, r.token, r.partition, r.sequence_min, r.sequence_max, r.not_before, r.expires_at);
        PERFORM 1 / 0;
    END\$\$"
check "a DO block that shows its lease in a NOTICE, then fails (22012)" "$STATE" 22012
IFS='|' read -r dl dt dp dmi dma dnb dex <<<"$(sed -n 's/^.*NOTICE:  \(00000: \)\{0,1\}lease //p' <<<"$SAID" | head -1)"
second_holder 8192 8
shown "  after a second holder's 8 acquires" "$dl" "$dp" "$dmi" "$dma" "$dnb" "$dex"
check "  the token it showed renews it" \
    "$(as a svc "SELECT lease FROM sno_lease_renew(lease => $dl, token => '$dt', ttl => '1 min')")" "$dl"
before_star="$(q a "SELECT count(*) FROM sno_internal.leases")"
star="$(as a svc "SELECT (sno_lease_acquire(holder => 'star', ttl => '1 min', sequences => 8)).*")"
IFS='|' read -r sl _ sp smi sma snb sex _ <<<"$star"
check "SELECT (sno_lease_acquire(...)).*: one lease granted, not one per column" \
    "$(q a "SELECT count(*) - $before_star FROM sno_internal.leases")" 1
shown "  its row" "$sl" "$sp" "$smi" "$sma" "$snb" "$sex"
check "a lease acquired in BEGIN ... ROLLBACK is kept" \
    "$(as a svc "BEGIN" "$ACQ(holder => 'rolled-back', ttl => '1 min')" "ROLLBACK" >/dev/null;
       q a "SELECT state FROM sno_leases WHERE holder = 'rolled-back'")" active
check "  none of the leases granted so far can stamp an ID another can" "$(conflicts a postgres)" 0

part "1c. no caller holds the registry"
# A statement that acquires and then runs on, and a transaction left open after a call, of one
# role; another role's acquire, renew and release each answer within 10 s (the bound: the calls
# queued before it, at most one per session, each a few milliseconds, and a worker start).
as a svc "SELECT l.lease, pg_sleep(600) FROM sno_lease_acquire(holder => 'slow', ttl => '1 min') l" >/dev/null 2>&1 &
slow=$!
as a svc "BEGIN" "$ACQ(holder => 'open', ttl => '1 min')" "SELECT pg_sleep(600)" >/dev/null 2>&1 &
open=$!
until [[ "$(q a "SELECT count(*) FROM sno_leases WHERE holder IN ('slow', 'open')")" == 2 ]]; do sleep 0.2; done
t1=$SECONDS
o="$(as a other "SET statement_timeout = '10s'" "$ACQ(holder => 'beside', ttl => '1 min')")"
IFS='|' read -r ol ot _ <<<"$o"
expect_state "  another role's renewal, under statement_timeout 10 s" ok a postgres other \
    "SET statement_timeout = '10s'" "SELECT sno_lease_renew(lease => $ol, token => '$ot', ttl => '1 min')"
expect_state "  another role's release, under statement_timeout 10 s" ok a postgres other \
    "SET statement_timeout = '10s'" "SELECT sno_lease_release(lease => $ol, token => '$ot')"
check "  another role's acquire, renewal and release while one runs for 600 s and one is left open: done in $((SECONDS - t1)) s" \
    "$( ((SECONDS - t1 <= 30)) && echo in-time)" in-time
q a "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'svc' AND query LIKE '%pg_sleep(600)%'" >/dev/null
wait "$slow" "$open" 2>/dev/null || true
check "  the two callers' leases stay, though their statements were ended" \
    "$(q a "SELECT count(*) FROM sno_leases WHERE holder IN ('slow', 'open') AND state = 'active'")" 2

part "1d. fair and bounded"
q a "CREATE ROLE churn LOGIN" "$GRANTS churn" "ALTER ROLE churn SET sno.lease_limit = 4" >/dev/null
most=0
t1=$SECONDS
while ((SECONDS - t1 < 6)); do
    l="$(as a churn "$ACQ(holder => repeat('c', 256), ttl => '1 s')" 2>/dev/null)" || { sleep 0.2; continue; }
    IFS='|' read -r lid ltok _ <<<"$l"
    as a churn "SELECT sno_lease_release(lease => $lid, token => '$ltok')" >/dev/null
    n="$(q a "SELECT count(*) FROM sno_internal.leases WHERE grantee = 'churn'")"
    ((n > most)) && most=$n
done
check "a role limited to 4 leases, acquiring and releasing 1 s leases for 6 s: at most 4 rows of it in the registry" \
    "$((most <= 4))|$(q a "SELECT count(*) <= 4 AND coalesce(sum(length(holder)), 0) <= 4 * 256 FROM sno_internal.leases WHERE grantee = 'churn'")" "1|t"
q a "CREATE ROLE greedy LOGIN" "CREATE ROLE modest LOGIN" "$GRANTS greedy" "$GRANTS modest" \
    "ALTER ROLE greedy SET sno.reserved_limit = 2" "ALTER ROLE modest SET sno.reserved_limit = 1" >/dev/null
g1="$(as a greedy "$ACQ(holder => 'g1', ttl => '1 min', sequences => 65536)")"
g2="$(as a greedy "$ACQ(holder => 'g2', ttl => '1 min', sequences => 65536)")"
expect_state "a role with sno.reserved_limit 2 holding two whole partitions: a third" 53400 a postgres greedy \
    "$ACQ(holder => 'g3', ttl => '1 min', sequences => 65536)"
expect_state "  nor 8 numbers more (its partitions are full)" 53400 a postgres greedy "$ACQ(holder => 'g4', ttl => '1 min', sequences => 8)"
m1="$(as a modest "$ACQ(holder => 'm1', ttl => '1 min', sequences => 8)")"
# shellcheck disable=SC2086 # a list
check_distinct "another role with sno.reserved_limit 1 gets 8 numbers, on a partition of its own" \
    "$(cut -d'|' -f3 <<<"$m1")" "$(cut -d'|' -f3 <<<"$g1")" "$(cut -d'|' -f3 <<<"$g2")"
as a modest "$ACQ(holder => 'm2', ttl => '1 min', sequences => 1024)" >/dev/null
expect_state "  its limit of 1 is its own: a whole partition more is refused" 53400 a postgres modest \
    "$ACQ(holder => 'm3', ttl => '1 min', sequences => 65536)"
check "  the refusal names its own limit" "$(msg_field ERROR "$SAID")" 'role "modest" has caused its limit of 1 reserved sno partitions to be granted'
stmt="$(hint_stmt 1)"
check "  its HINT's statement" "$stmt" 'ALTER ROLE "modest" SET sno.reserved_limit = 2;'
q a "$stmt" >/dev/null
expect_state "  followed: the whole partition is granted" ok a postgres modest "$ACQ(holder => 'm3', ttl => '1 min', sequences => 65536)"
check "  none of the leases granted so far can stamp an ID another can" "$(conflicts a postgres)" 0

part "1e. the registry's worker and max_worker_processes"
node_init e
node_clock_mode e none
node_cmdline e shared_preload_libraries=sno
node_auto_conf e max_worker_processes 2
node_start e || die "e did not start"
q e "CREATE EXTENSION sno" >/dev/null
expect_state "every background worker slot taken (the sno lineage worker and the logical replication launcher)" 53400 \
    e postgres postgres "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(msg_field HINT "$SAID" | grep -oE 'ALTER SYSTEM SET max_worker_processes = [0-9]+;')"
check "  its HINT's statement" "$stmt" "ALTER SYSTEM SET max_worker_processes = 3;"
q e "$stmt" >/dev/null
node_restart e
expect_state "  followed, and the server restarted as it says: granted" ok e postgres postgres "$ACQ(holder => 'x', ttl => '1 min')"
# Parallel workers (any role may start them) on every free slot: the call waits 5 s for one,
# then its HINT keeps one free of them, which a new parallel query then leaves free.
PAR="SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; SET min_parallel_table_scan_size = 0;
     SET max_parallel_workers_per_gather = 8;
     SELECT count(*) FROM pg_attribute WHERE pg_sleep(0.01) IS NOT NULL"
q e "ALTER SYSTEM SET max_worker_processes = 4" "CREATE ROLE par LOGIN" >/dev/null
node_restart e
e_sleep_in_parallel() { qu e postgres par -c "$PAR" >/dev/null 2>&1 & }
e_sleep_in_parallel
par=$!
until [[ "$(q e "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'")" == 2 ]]; do sleep 0.1; done
expect_state "both dynamic slots taken by another role's parallel workers" 53400 e postgres postgres "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(msg_field HINT "$SAID" | grep -oE 'ALTER SYSTEM SET max_parallel_workers = [0-9]+; SELECT pg_reload_conf\(\);')"
check "  its HINT's statements" "$stmt" "ALTER SYSTEM SET max_parallel_workers = 1; SELECT pg_reload_conf();"
q e "${stmt%% SELECT*}" "SELECT pg_reload_conf()" \
    "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'par' AND backend_type = 'client backend'" >/dev/null
wait "$par" || true
e_sleep_in_parallel
par=$!
until [[ "$(q e "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'parallel worker'")" -ge 1 ]]; do sleep 0.1; done
expect_state "  followed: a new parallel query beside the call leaves a slot, granted" ok e postgres postgres "$ACQ(holder => 'y', ttl => '1 min')"
q e "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE usename = 'par' AND backend_type = 'client backend'" >/dev/null
wait "$par" || true
# A database that allows no connections: its worker cannot start; the call says so at once.
q e "CREATE DATABASE closed" >/dev/null
qu e closed postgres -c "CREATE EXTENSION sno" >/dev/null
# A session connected before the database was closed calls (its worker would connect after).
(qu e closed postgres -v VERBOSITY=verbose -c "SELECT pg_sleep(2)" -c "$ACQ(holder => 'x', ttl => '1 min')" \
    >"$CL_WORK/closed.out" 2>&1 || true) &
cl=$!
sleep 1
q e "ALTER DATABASE closed ALLOW_CONNECTIONS false" >/dev/null
t1=$SECONDS
wait "$cl"
SAID="$(sed 's/^\(ERROR\|WARNING\):  [0-9A-Z]\{5\}: /\1:  /' "$CL_WORK/closed.out")"
check "a database that allows no connections: 55000 at once ($((SECONDS - t1)) s), the reason in its HINT" \
    "$(grep -oE 'ERROR:  [0-9A-Z]{5}' "$CL_WORK/closed.out" | head -1)|$( ((SECONDS - t1 < 10)) && echo soon)|$(msg_field HINT "$SAID" | grep -c 'ALLOW_CONNECTIONS false')" "ERROR:  55000|soon|1"
expect_state "  and the other databases' calls go on" ok e postgres postgres "$ACQ(holder => 'z', ttl => '1 min')"
node_stop e fast

part "1f. a role cannot hold up the registry of others"
# A superuser's ACCESS EXCLUSIVE lock on the registry's table, held: the calls queued meanwhile all
# fail after the worker's lock timeout (5 s), not one after another; the HINT's query names the
# holder, which ended, the calls work.
q a "CREATE ROLE locker LOGIN SUPERUSER" >/dev/null
qu a postgres locker -c "BEGIN" -c "LOCK TABLE sno_internal.leases IN ACCESS EXCLUSIVE MODE" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
lk=$!
until [[ "$(q a "SELECT count(*) FROM pg_locks WHERE relation = 'sno_internal.leases'::regclass AND mode = 'AccessExclusiveLock' AND granted")" == 1 ]]; do sleep 0.1; done
t1=$SECONDS
for i in 1 2 3 4; do (try a postgres other "$ACQ(holder => 'queued$i', ttl => '1 min')"; echo "$STATE" >"$CL_WORK/queued$i") & done
wait $(jobs -p | grep -v "^$lk\$") 2>/dev/null || true
check "4 calls queued behind the lock: all 55P03, within 15 s in all ($((SECONDS - t1)) s)" \
    "$(cat "$CL_WORK"/queued? | sort | uniq -c | awk '{ print $1 " " $2 }')|$( ((SECONDS - t1 <= 15)) && echo in-time)" "4 55P03|in-time"
try a postgres other "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(msg_field HINT "$SAID" | grep -oE 'SELECT l.pid[^;]*;')"
check "  the HINT's query names the session holding the lock" "$(q a "$stmt" | cut -d'|' -f1-2 | sort -u)" "$(q a "SELECT pid FROM pg_stat_activity WHERE usename = 'locker'")|AccessExclusiveLock"
q a "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'locker'" >/dev/null
wait "$lk" 2>/dev/null || true
expect_state "  that session ended, the call works" ok a postgres other "$ACQ(holder => 'x', ttl => '1 min')"
# A database owner's ANALYZE left in an open transaction (it holds SHARE UPDATE EXCLUSIVE on the
# registry's tables): nothing waits for it.
q a "CREATE ROLE dbo LOGIN" "CREATE DATABASE owned OWNER dbo" >/dev/null
qu a owned postgres -c "CREATE EXTENSION sno" -c "$GRANTS other" >/dev/null
qu a owned dbo -c "BEGIN" -c "ANALYZE" -c "SELECT pg_sleep(60)" >/dev/null 2>&1 &
an=$!
until [[ "$(q a "SELECT count(*) FROM pg_stat_activity WHERE usename = 'dbo' AND query LIKE '%pg_sleep%'")" == 1 ]]; do sleep 0.1; done
expect_state "a database owner's ANALYZE held in an open transaction: another role's call works (statement_timeout 5 s)" ok a owned other \
    "SET statement_timeout = '5s'" "$ACQ(holder => 'beside-analyze', ttl => '1 min')"
q a "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'dbo'" >/dev/null
wait "$an" 2>/dev/null || true
# More databases calling at once than the registry has workers (16): every caller is answered,
# one database's steady calls never starve another's.
for i in $(seq 18); do
    q a "CREATE DATABASE many$i" >/dev/null
    qu a "many$i" postgres -c "CREATE EXTENSION sno" -c "$GRANTS other" >/dev/null
done
for i in $(seq 17); do
    (end=$((SECONDS + 12)); while ((SECONDS < end)); do qu a "many$i" other -c "SELECT sno_lease_renew(1, gen_random_uuid(), '1 min')" >/dev/null 2>&1 || true; done) &
done
sleep 3
t1=$SECONDS
expect_state "17 databases calling without pause, an 18th: answered (statement_timeout 20 s)" ok a many18 other \
    "SET statement_timeout = '20s'" "$ACQ(holder => 'eighteenth', ttl => '1 min')"
echo "    answered in $((SECONDS - t1)) s"
wait

part "2. hostile objects"
q a "CREATE SCHEMA evil AUTHORIZATION other" "GRANT USAGE ON SCHEMA evil TO svc" "GRANT CREATE ON SCHEMA public TO other" >/dev/null
as a other "CREATE FUNCTION evil.sha256(bytea) RETURNS bytea LANGUAGE sql AS \$\$SELECT 1/0; SELECT '\\x00'::bytea\$\$" \
    "CREATE FUNCTION public.sha256(bytea) RETURNS bytea LANGUAGE sql AS \$\$SELECT 1/0; SELECT '\\x00'::bytea\$\$" \
    "CREATE FUNCTION evil.ieq(bigint, bigint) RETURNS bool LANGUAGE sql AS 'SELECT 1/0 = 1'" \
    "CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.ieq)" \
    "CREATE TYPE evil.sno_lease AS (x int)" >/dev/null
check "  the hostile objects fail when used" "$(try a postgres svc "SET search_path = evil, pg_catalog, public" "SELECT sha256('x'::bytea)"; echo "$STATE")" 22012
l2="$(as a svc "SET search_path = evil, pg_catalog, public" "$ACQ(holder => 'hostile', ttl => '1 min')")"
IFS='|' read -r id2 tok2 _ <<<"$l2"
check "with another role's objects first in search_path: acquire, renew, release work" \
    "$(as a svc "SET search_path = evil, pg_catalog, public" \
        "SELECT pg_typeof(sno_lease_renew(lease => $id2, token => '$tok2', ttl => '1 min'))::text" \
        "SELECT count(*) FROM (SELECT sno_lease_release(lease => $id2, token => '$tok2')) r" "SELECT state FROM sno_leases WHERE lease = $id2")" "$(printf 'public.sno_lease\n1\nreleased')"

part "3. six sessions at once"
q a "ALTER ROLE postgres SET sno.lease_limit = 65536" >/dev/null
pids=()
for s in 1 2 3 4 5 6; do
    (for i in $(seq 25); do
        l="$(as a postgres "$ACQ(holder => 'c$s', ttl => '$((1 + i % 3)) s', sequences => $((8 << (3 * ((s + i) % 5)))))")"
        IFS='|' read -r lid ltok _ <<<"$l"
        if ((i % 3 == 0)); then as a postgres "SELECT sno_lease_renew(lease => $lid, token => '$ltok', ttl => '2 s')" >/dev/null; fi
        if ((i % 4 == 0)); then as a postgres "SELECT sno_lease_release(lease => $lid, token => '$ltok')" >/dev/null; fi
        if ((i % 10 == 0)); then sleep 1; fi
    done) &
    pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" || ok=1; done
check "every call of the six sessions worked" "$ok" 0
check "  $(q a "SELECT count(*) FROM sno_internal.leases") leases: none could stamp an ID another can" "$(conflicts a postgres)" 0

part "4. an asynchronous standby, a failover with a lost tail"
node_basebackup a b standby
node_clock_mode b none
node_cmdline b shared_preload_libraries=sno
node_start b || die "b did not start"
node_wait_catchup b a
expect_state "acquire on the standby" 25006 b postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
check "  HINT" "$(msg_field HINT "$SAID")" "Connect to the primary server and call it there."
seen="$(as a svc "$ACQ(holder => 'known', ttl => '5 min')")"
node_wait_catchup b a
node_stop b fast
lost=()
for i in 1 2 3; do lost+=("$(as a svc "$ACQ(holder => 'lost$i', ttl => '5 min', sequences => 65536)")"); done
old_parts="$(q a "SELECT string_agg(DISTINCT partition::text, ' ') FROM sno_internal.leases")"
node_kill a
node_start b || die "b did not restart"
node_promote b
IFS='|' read -r sid stok _ <<<"$seen"
check "the promoted standby knows the lease it received, as inherited; not the lost ones" \
    "$(q b "SELECT state FROM sno_leases WHERE lease = $sid")|$(q b "SELECT count(*) FROM sno_leases WHERE holder LIKE 'lost%'")" "inherited|0"
expect_state "renewal of an inherited lease" 55000 b postgres svc "SELECT sno_lease_renew(lease => $sid, token => '$stok', ttl => '1 min')"
check "  says why" "$(msg_field ERROR "$SAID" | grep -c 'granted before a failover, copy or restore')" 1
new="$(as b svc "$(hint_stmt 1 | sed "s/holder => \.\.\., ttl => \.\.\./holder => 'after', ttl => '2 s', sequences => 65536/")")"
np="$(cut -d'|' -f3 <<<"$new")"
# shellcheck disable=SC2086 # a list
check_distinct "  the HINT's acquire works, on partition $np, none of the old primary's (lost tail included)" "$np" $old_parts

part "5. a clone beside its original"
node_basebackup b c
node_clock_mode c none
node_cmdline c shared_preload_libraries=sno
node_start c || die "c did not start"
expect_state "acquire on a clone" 55000 c postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
check "  its HINT's statements" "$(hint_stmt 1)|$(hint_stmt 2)" \
    "SELECT max(expires_at) FROM sno_leases WHERE state IN ('active', 'released');|SELECT sno_generator_initialize(take_over => true);"
# Followed: on the original, before it stops, when its leases end; then it stops, the time
# passes, and the statement runs on the clone.
until_t="$(q b "$(hint_stmt 1)")"
stmt="$(hint_stmt 2)"
node_stop b immediate
while [[ "$(q c "SELECT now() < '$until_t'::timestamptz")" == t ]]; do sleep 0.2; done
q c "$stmt" >/dev/null
cl="$(as c svc "$ACQ(holder => 'clone', ttl => '1 min', sequences => 65536)")"
# shellcheck disable=SC2086 # a list
check_distinct "  after its original stopped and the statement ran: granted, on a partition of its own" \
    "$(cut -d'|' -f3 <<<"$cl")" "$np" $old_parts

part "6. pg_dump and restore"
dump="$CL_WORK/leases.dump"
as_pg "${CL_BIN[c]}/pg_dump" -h "$CL_WORK" -p "${CL_PORT[c]}" -U postgres -Fc -f "$dump" postgres
dumped="$(q c "SELECT string_agg(partition::text, ' ') FROM sno_internal.lease_partitions")"
q c "CREATE DATABASE copy" >/dev/null
as_pg "${CL_BIN[c]}/pg_restore" -h "$CL_WORK" -p "${CL_PORT[c]}" -U postgres -d copy "$dump"
same="$(qu c copy svc -c "$ACQ(holder => 'copy', ttl => '1 min', sequences => 65536)")"
# shellcheck disable=SC2086 # a list
check_distinct "restored into another database of the same server: granted at once, on a new partition" \
    "$(cut -d'|' -f3 <<<"$same")" $dumped "$(cut -d'|' -f3 <<<"$cl")"
node_init d
node_clock_mode d none
node_cmdline d shared_preload_libraries=sno
node_start d || die "d did not start"
q d "CREATE ROLE svc LOGIN" "CREATE ROLE other LOGIN" "CREATE ROLE churn" "CREATE ROLE greedy" "CREATE ROLE modest" >/dev/null
as_pg "${CL_BIN[d]}/pg_restore" -h "$CL_WORK" -p "${CL_PORT[d]}" -U postgres -d postgres "$dump" 2>"$CL_WORK/restore.log" ||
    grep -v "evil\|already exists" "$CL_WORK/restore.log" | head
expect_state "restored into a fresh cluster: acquire" 55000 d postgres svc "$ACQ(holder => 'x', ttl => '1 min')"
stmt="$(hint_stmt 1)"
check "  its HINT's statement" "$stmt" "SELECT sno_lease_take_over();"
check "  sno_leases shows the restored leases" "$(q d "SELECT count(*) > 0 FROM sno_leases")" t
q d "$stmt" >/dev/null
fresh="$(as d svc "$ACQ(holder => 'fresh', ttl => '1 min', sequences => 65536)")"
# shellcheck disable=SC2086 # a list
check_distinct "  after it ran: granted, on a partition the dump does not name" "$(cut -d'|' -f3 <<<"$fresh")" $dumped

afterdump="$(as c svc "$ACQ(holder => 'after-dump', ttl => '1 min', sequences => 65536)")"
as_pg "${CL_BIN[c]}/pg_restore" -h "$CL_WORK" -p "${CL_PORT[c]}" -U postgres --clean --if-exists -d postgres "$dump" \
    2>"$CL_WORK/restore-clean.log" || true
check "pg_restore --clean into the registry's own database: the lease taken after the dump is forgotten" \
    "$(q c "SELECT count(*) FROM sno_leases WHERE holder = 'after-dump'")" 0
again="$(as c svc "$ACQ(holder => 'after-restore', ttl => '1 min', sequences => 65536)")"
# shellcheck disable=SC2086 # a list
check_distinct "  the next lease is on a new partition, not the forgotten lease's" "$(cut -d'|' -f3 <<<"$again")" \
    "$(cut -d'|' -f3 <<<"$afterdump")" $dumped
check "  the restored pool is shown as inherited" "$(q c "SELECT count(*) FROM sno_leases WHERE state NOT IN ('inherited', 'expired', 'ended') AND holder <> 'after-restore'")" 0

part "6b. a data-only restore of the registry's own database (triggers disabled)"
q c "CREATE DATABASE reg" >/dev/null
qu c reg postgres -c "CREATE EXTENSION sno" -c "$GRANTS svc" -c "$GRANTS other" -c "ALTER ROLE other SET sno.lease_limit = 200" >/dev/null
bd="$(qu c reg svc -c "$ACQ(holder => 'before-dump', ttl => '5 min')")"
rdump="$CL_WORK/reg.dump"
as_pg "${CL_BIN[c]}/pg_dump" -h "$CL_WORK" -p "${CL_PORT[c]}" -U postgres -Fc -f "$rdump" reg
ad="$(qu c reg svc -c "SELECT concat_ws('|', lease, token, partition, sequence_min, sequence_max, not_before, expires_at)
                        FROM sno_lease_acquire(holder => 'after-dump', ttl => '5 min')")"
IFS='|' read -r al at ap ami ama anb aex <<<"$ad"
mark="$(node_log_mark c)"
qu c reg postgres -c "TRUNCATE sno_internal.leases, sno_internal.lease_partitions" >/dev/null
as_pg "${CL_BIN[c]}/pg_restore" -h "$CL_WORK" -p "${CL_PORT[c]}" -U postgres --data-only --disable-triggers -d reg "$rdump"
check "the restore brought back the dump's rows, without the lease granted after it" \
    "$(qu c reg postgres -c "SELECT count(*) FILTER (WHERE holder = 'before-dump')||'|'||count(*) FILTER (WHERE holder = 'after-dump') FROM sno_leases")" "1|0"
for i in $(seq 70); do qu c reg svc -c "$ACQ(holder => 'next', ttl => '1 min')" >/dev/null; done
check "  70 leases of 1024 numbers granted after it: none overlaps the lease granted after the dump" \
    "$(qu c reg postgres -c "SELECT count(*) FROM sno_internal.leases WHERE partition = $ap
        AND sequence_min <= $ama AND $ami <= sequence_max AND not_before < '$aex' AND '$anb' < expires_at")" 0
check "  the server log says why" "$(node_log_since c "$mark" | grep -c "lease pool partition $ap: its rows are older than the registry's ledger")" 1
expect_state "  the lost lease's renewal" 42501 c reg svc "SELECT sno_lease_renew(lease => $al, token => '$at', ttl => '5 min')"
expect_state "  its HINT's statement, as the role" ok c reg svc "$(hint_stmt 1 | sed "s/holder => \.\.\., ttl => \.\.\./holder => 'again', ttl => '1 min'/")"
IFS='|' read -r bl bt _ <<<"$bd"
expect_state "  a restored lease's renewal (its slice may have been handed on since the dump)" 55000 c reg svc \
    "SELECT sno_lease_renew(lease => $bl, token => '$bt', ttl => '5 min')"
check "  says why" "$(msg_field ERROR "$SAID" | grep -c 'its slice was granted again after its end')" 1
expect_state "  its HINT's statement, as the role" ok c reg svc "$(hint_stmt 1 | sed "s/holder => \.\.\., ttl => \.\.\./holder => 'anew', ttl => '1 min'/")"
check "  no two leases of the database can stamp one ID" "$(conflicts c reg)" 0

echo "leases.sh: $((SECONDS - T0)) s"
exit "$fail"
