#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=ends server=no cpu=1 estimate=20
# sno through PgBouncer (Debian's package, 1.18 on bookworm), on a server of its own: one
# PgBouncer with a transaction-mode database (tx, 4 server connections per user), a
# statement-mode one (st, 2) and a session-mode one (se, 1), all in front of one PostgreSQL.
# (1) sno_generate: INSERT ... DEFAULT sno_generate(1) from 16 pgbench clients through tx (and 8
# with the extended protocol), 8 through st and se: every row in, each pool on at most its size
# of server backends. (2) sno_generate_at: four client sessions pin tx's four server connections
# (an open transaction each), so each is granted a reserved partition; one client session whose
# two statements are made to land on two of them gets, for the same time, a second ID lower than
# its first (the in-order promise is a server session's, not a client's); 400 client connections
# (pgbench -C) backfill 20,000 rows through the same pool and take no grant more (4 in all); st
# takes at most 2, se exactly 1 for 100 client connections each, and a client session of se
# keeps its order. PgBouncer's RECONNECT (what server_lifetime and server_idle_timeout do in
# time) replaces the server connections: the replacements take 4 more; a client gone inside a
# transaction makes PgBouncer close its server connection, and the one opened next takes 1 more.
# On a fresh server connection a first call in a READ ONLY transaction is refused (25006) and
# works once that connection has a committed grant. (3) HINTs through the pooler, each followed
# as printed: a role at its sno.reserved_limit (53400) and one at its sno.lease_limit (53400)
# print an ALTER ROLE that "counts from the next call"; run by the DBA, the next client session's
# call works, on the same pooled server connection, whose session predates the ALTER ROLE (0.9.0
# reads the role's settings from the catalog at each check). A limit lowered binds a pooled
# server session opened before it too. A TTL over sno.lease_max_ttl (22023): the TTL the HINT
# proposes works at once. (4) Leases: acquire, renew and release as autocommit
# statements from three client sessions on two server connections; an acquire inside BEGIN ...
# ROLLBACK on tx is kept (0.8.1: not refused); 8 pgbench clients x 40 new connections acquire,
# renew and release 320 leases; on st single statements work and BEGIN is refused by PgBouncer
# itself; the leases take one pool partition per role whatever the server connections. (5) Every
# ID made: each pgbench, client and pinned session's in one table with a primary key, each
# lease's IDs (three units of its window x its whole slice, stamped as a holder would) beside
# them: zero duplicates, and no two leases overlap.
#
# Usage: pgbouncer.sh SOCKET_DIR PORT BINDIR (only PORT and BINDIR are used: its own server on
# PORT+501, PgBouncer on PORT+599).
set -euo pipefail
# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
harness_setup pgbouncer "$3" $(($2 + 501)) $(($2 + 598))
T0=$SECONDS
export PGTZ=UTC
debian_packages "$CL_WORK/apt.log" pgbouncer
PGB=/usr/sbin/pgbouncer
[[ -x "$PGB" ]] || die "no $PGB after installing the Debian package pgbouncer"
PGB_PORT=$(($2 + 599))
PGB_INI="$CL_WORK/pgbouncer.ini"
PGB_PIDFILE="$CL_WORK/pgbouncer.pid"
PGB_LOG="$CL_WORK/pgbouncer.log"
part() { echo "--- $* ($((SECONDS - T0)) s)"; }

# PgBouncer as a pseudo node "pgb" for qu/try/expect_state (cluster.bash): a port and a bindir
# only; it is not in CL_NODES, so harness_cleanup leaves it alone and pgb_stop stops it.
# shellcheck disable=SC2034 # read by qu (cluster.bash)
CL_PORT["pgb"]=$PGB_PORT
# shellcheck disable=SC2034
CL_BIN["pgb"]=$CL_BINDIR
bq() { qu pgb "$@"; }                                 # bq DB USER PSQL-ARGS...
# PgBouncer's console, as Debian's set-up allows it: user pgbouncer, over the Unix socket, from
# the OS user PgBouncer runs as (no admin_users needed).
admin() {
    as_pg "$CL_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$CL_WORK" -p "$PGB_PORT" -U pgbouncer -d pgbouncer -c "$1"
}
q() { node_sql a "$@"; }                              # the server itself, as postgres

# Client sessions that stay open: psql reading a fifo, through PgBouncer.
declare -A SIN=() SOUT=() SPID=()
# sess_open NAME DB USER
sess_open() {
    local f="$CL_WORK/sess.$1" fdi fdo
    mkfifo "$f.in" "$f.out" || die "session $1: no fifos"
    # (Without the other sessions' fifo ends: each session ends when its own input closes.)
    (
        for fd in "${SIN[@]}" "${SOUT[@]}"; do eval "exec $fd>&-"; done
        exec "$CL_BINDIR/psql" -X -q -At -v VERBOSITY=verbose -h "$CL_WORK" -p "$PGB_PORT" -U "$3" -d "$2" \
            <"$f.in" >"$f.out" 2>&1
    ) &
    SPID[$1]=$!
    exec {fdi}>"$f.in"
    exec {fdo}<"$f.out"
    SIN[$1]=$fdi
    SOUT[$1]=$fdo
}
# sess NAME SQL: runs SQL in the session; prints what psql said (rows, errors). 30 s at most.
sess() {
    local l out=()
    kill -0 "${SPID[$1]}" 2>/dev/null || die "session $1 has ended"
    printf '%s\n\\echo @@done\n' "$2" >&"${SIN[$1]}"
    while IFS= read -r -t 30 l <&"${SOUT[$1]}"; do
        if [[ "$l" == @@done ]]; then
            ((${#out[@]} == 0)) || printf '%s\n' "${out[@]}"
            return 0
        fi
        out+=("$l")
    done
    die "session $1: no answer in 30 s to: $2"
}
sess_close() {
    local fdi="${SIN[$1]}" fdo="${SOUT[$1]}"
    printf '\\q\n' >&"$fdi"
    exec {fdi}>&-
    wait "${SPID[$1]}" 2>/dev/null || true
    exec {fdo}<&-
    rm -f "$CL_WORK/sess.$1.in" "$CL_WORK/sess.$1.out"
    unset "SIN[$1]" "SOUT[$1]" "SPID[$1]"
}

# shellcheck disable=SC2317 # called by the EXIT trap
pgb_stop() {
    local pid
    [[ -f "$PGB_PIDFILE" ]] || return 0
    pid="$(cat "$PGB_PIDFILE")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 0
    kill -TERM "$pid" 2>/dev/null || return 0 # SIGTERM: immediate shutdown (SIGINT would wait for clients)
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}
# shellcheck disable=SC2317 # the EXIT trap
cleanup() {
    local rc=$? s
    set +e
    for s in "${!SPID[@]}"; do kill "${SPID[$s]}" 2>/dev/null; done
    if ((rc != 0 || fail != 0)) && [[ -f "$PGB_LOG" ]]; then
        echo "--- last lines of PgBouncer's log"
        tail -n 15 "$PGB_LOG"
    fi
    pgb_stop
    (exit "$rc")
    harness_cleanup
}
trap cleanup EXIT

# bench NAME DB USER PGBENCH-OPTIONS...: pgbench through PgBouncer with the script
# $CL_WORK/NAME.sql; prints the transactions done, or, after any error or aborted client, what
# pgbench said (so that the caller's check fails and shows it).
bench() {
    local name="$1" db="$2" u="$3" rc=0
    shift 3
    "$CL_BINDIR/pgbench" -n -h "$CL_WORK" -p "$PGB_PORT" -U "$u" -f "$CL_WORK/$name.sql" "$@" "$db" \
        >"$CL_WORK/$name.out" 2>&1 || rc=$?
    if ((rc != 0)) || grep -qE "ERROR|aborted" "$CL_WORK/$name.out"; then
        echo "pgbench exited $rc: $(grep -E "ERROR|aborted|HINT|DETAIL" "$CL_WORK/$name.out" | head -n 5)"
        return 0
    fi
    sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$CL_WORK/$name.out"
}
grants() { q "SELECT count(*) FROM sno_reserved_grants WHERE grantee = '$1'"; }
hint_alter() { msg_field HINT "$SAID" | grep -oE 'ALTER ROLE [^;]*;' | head -n 1; }
first_line() { head -n 1 <<<"$SAID"; }

part "set-up: PostgreSQL $CL_MAJOR with sno, $("$PGB" --version | head -n 1)"
node_new a
node_clock_mode a none
node_initdb a
node_cmdline a shared_preload_libraries=sno max_connections=100 fsync=off
node_start a || die "the server did not start"
GRANT_LEASES="GRANT EXECUTE ON FUNCTION sno_lease_acquire(text, interval, int4),
    sno_lease_renew(bigint, uuid, interval), sno_lease_release(bigint, uuid) TO"
q "CREATE EXTENSION sno" \
    "CREATE TABLE ids (id sno PRIMARY KEY DEFAULT sno_generate(1), who text NOT NULL,
                       pid int NOT NULL DEFAULT pg_backend_pid())" \
    "GRANT SELECT, INSERT ON ids TO PUBLIC" \
    "CREATE TABLE stamped (id sno NOT NULL, lease bigint NOT NULL)" \
    "CREATE ROLE app LOGIN" "CREATE ROLE backfill LOGIN" "CREATE ROLE bulk LOGIN" \
    "CREATE ROLE svc LOGIN" "CREATE ROLE tight LOGIN" \
    "GRANT EXECUTE ON FUNCTION sno_generate_at(int, timestamptz) TO backfill, bulk" \
    "ALTER ROLE bulk SET sno.reserved_limit = 2" \
    "$GRANT_LEASES svc, tight" \
    "ALTER ROLE svc SET sno.lease_limit = 1000" \
    "ALTER ROLE tight SET sno.lease_limit = 2" >/dev/null

cat >"$PGB_INI" <<EOF
[databases]
tx = host=$CL_WORK port=$(node_port a) dbname=postgres pool_size=4
st = host=$CL_WORK port=$(node_port a) dbname=postgres pool_size=2 pool_mode=statement
se = host=$CL_WORK port=$(node_port a) dbname=postgres pool_size=1 pool_mode=session

[pgbouncer]
unix_socket_dir = $CL_WORK
listen_port = $PGB_PORT
pool_mode = transaction
default_pool_size = 4
max_client_conn = 500
auth_type = trust
auth_file = $CL_WORK/userlist.txt
logfile = $PGB_LOG
pidfile = $PGB_PIDFILE
server_lifetime = 3600
server_idle_timeout = 600
EOF
printf '"%s" ""\n' app backfill bulk svc tight >"$CL_WORK/userlist.txt"
as_pg "$PGB" -d "$PGB_INI" >"$CL_WORK/pgbouncer.start" 2>&1 ||
    { cat "$CL_WORK/pgbouncer.start"; die "PgBouncer did not start"; }
for _ in $(seq 100); do admin "SHOW VERSION" >/dev/null 2>&1 && break; sleep 0.1; done
admin "SHOW VERSION" >/dev/null || die "PgBouncer does not answer on port $PGB_PORT"

# ---------------------------------------------------------------------------------------------
part "1. sno_generate through the pooler"
echo "INSERT INTO ids (who) SELECT 'gen-tx' FROM generate_series(1, 10);" >"$CL_WORK/gen-tx.sql"
echo "INSERT INTO ids (who) VALUES ('gen-st');" >"$CL_WORK/gen-st.sql"
echo "INSERT INTO ids (who) VALUES ('gen-se');" >"$CL_WORK/gen-se.sql"
check "transaction mode: 16 pgbench clients x 100 transactions of 10 rows" \
    "$(bench gen-tx tx app -c 16 -j 2 -t 100)" 1600
cp "$CL_WORK/gen-tx.sql" "$CL_WORK/gen-tx-ext.sql"
check "  and 8 x 50 with the extended protocol (unnamed statements, as most drivers send)" \
    "$(bench gen-tx-ext tx app -M extended -c 8 -j 2 -t 50)" 400
check "statement mode: 8 clients x 100" "$(bench gen-st st app -c 8 -j 2 -t 100)" 800
check "session mode: 8 clients x 50" "$(bench gen-se se app -c 8 -j 2 -t 50)" 400
check "every row in, each pool on at most its size of server backends" \
    "$(q "SELECT string_agg(who || ':' || n || ':' || (b <= CASE who WHEN 'gen-tx' THEN 4 WHEN 'gen-st' THEN 2 ELSE 1 END), ' ' ORDER BY who)
          FROM (SELECT who, count(*) n, count(DISTINCT pid) b FROM ids GROUP BY who) s")" \
    "gen-se:400:true gen-st:800:true gen-tx:20000:true"

# ---------------------------------------------------------------------------------------------
part "2. sno_generate_at through the pooler: what a backfill costs"
PIN="INSERT INTO ids (id, who) VALUES (sno_generate_at(1, '2021-01-01 00:00:00+00'), 'bf-pin')
     RETURNING pid || '|' || sno_partition(id);"
declare -A PID_OF=() PART_OF=()
for s in p1 p2 p3 p4; do
    sess_open "$s" tx backfill
    r="$(sess "$s" "BEGIN; $PIN")"
    [[ "$r" =~ ^[0-9]+\|[0-9]+$ ]] || die "pinned session $s: $r"
    PID_OF[$s]="${r%|*}" PART_OF[$s]="${r#*|}"
done
old_pids="${PID_OF[p1]},${PID_OF[p2]},${PID_OF[p3]},${PID_OF[p4]}"
check "four client sessions in a transaction each: four server backends" \
    "$(tr ',' '\n' <<<"$old_pids" | sort -u | wc -l)" 4
hi="$(for s in p1 p2 p3 p4; do echo "${PART_OF[$s]} $s"; done | sort -n | tail -n 1 | cut -d' ' -f2)"
lo="$(for s in p1 p2 p3 p4; do echo "${PART_OF[$s]} $s"; done | sort -n | head -n 1 | cut -d' ' -f2)"
# One client session, two statements for the same time; each lands on the only free server
# connection: first the one with the highest partition, then the one with the lowest.
sess_open c tx backfill
AT1="INSERT INTO ids (id, who) VALUES (sno_generate_at(1, '2021-06-01 12:00:00+00'), 'bf-c')
     RETURNING pid || '|' || id;"
sess "$hi" "COMMIT;" >/dev/null
r1="$(sess c "$AT1")"
check "  the client's first statement ran on the server connection $hi released" "${r1%|*}" "${PID_OF[$hi]}"
check "  $hi takes it back" "$(sess "$hi" "BEGIN; SELECT pg_backend_pid();")" "${PID_OF[$hi]}"
sess "$lo" "COMMIT;" >/dev/null
r2="$(sess c "$AT1")"
check "  the client's second statement ran on the one $lo released" "${r2%|*}" "${PID_OF[$lo]}"
check "  for the same time, the second ID sorts before the first (order holds per server session only)" \
    "$(q "SELECT '${r2#*|}'::sno < '${r1#*|}'::sno")" t
for s in p1 p2 p3 p4; do
    [[ "$s" == "$lo" ]] || sess "$s" "COMMIT;" >/dev/null
    sess_close "$s"
done
sess_close c
check "grants to backfill: one per server connection of tx's pool" "$(grants backfill)" 4

cat >"$CL_WORK/bf-tx.sql" <<'EOF'
INSERT INTO ids (id, who) SELECT sno_generate_at(1, timestamptz '2020-01-01 00:00:00+00' + random() * interval '1000 days'), 'bf-tx' FROM generate_series(1, 40);
INSERT INTO ids (id, who) SELECT sno_generate_at(2, timestamptz '2022-02-02 00:00:00+00'), 'bf-tx' FROM generate_series(1, 10);
EOF
check "a backfill by 400 client connections (pgbench -C, 8 clients x 50), 2 statements each" \
    "$(bench bf-tx tx backfill -C -c 8 -j 2 -t 50)" 400
check "  20,000 rows, on tx's 4 server connections, with their 4 partitions" \
    "$(q "SELECT count(*), count(DISTINCT pid) <= 4, bool_and(sno_partition(id) IN (${PART_OF[p1]}, ${PART_OF[p2]}, ${PART_OF[p3]}, ${PART_OF[p4]}))
          FROM ids WHERE who = 'bf-tx'" | tr '|' ' ')" "20000 t t"
check "  no grant more: still 4" "$(grants backfill)" 4
sed 's/bf-tx/bf-st/; 2d' "$CL_WORK/bf-tx.sql" >"$CL_WORK/bf-st.sql"
sed 's/bf-tx/bf-se/; 2d' "$CL_WORK/bf-tx.sql" >"$CL_WORK/bf-se.sql"
check "statement mode: 100 client connections (4 x 25)" "$(bench bf-st st backfill -C -c 4 -j 2 -t 25)" 100
check "session mode: 100 client connections (4 x 25)" "$(bench bf-se se backfill -C -c 4 -j 2 -t 25)" 100
g_st="$(q "SELECT count(DISTINCT sno_partition(id)) FROM ids WHERE who = 'bf-st'")"
g_se="$(q "SELECT count(DISTINCT sno_partition(id)) FROM ids WHERE who = 'bf-se'")"
check "  st took at most its pool's size of grants (2; here $g_st)" "$( ((g_st >= 1 && g_st <= 2)) && echo yes)" yes
check "  se took one, its pool's size" "$g_se" 1
SE="INSERT INTO ids (id, who) VALUES (sno_generate_at(1, '2021-06-01 12:00:00+00'), 'bf-se') RETURNING id"
two="$(bq se backfill -c "$SE" -c "$SE")"
check "  one client session of se, two calls for one time: the second ID is the higher (one server session)" \
    "$(q "SELECT '$(sed -n 2p <<<"$two")'::sno > '$(sed -n 1p <<<"$two")'::sno")" t
check "  the role's grants: 4 + st's + se's" "$(grants backfill)" "$((4 + g_st + g_se))"
g1="$(grants backfill)"

admin "RECONNECT tx" >/dev/null
# RECONNECT closes each server connection of tx once released: the idle ones at once.
for _ in $(seq 100); do
    [[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid IN ($old_pids)")" == 0 ]] && break
    sleep 0.1
done
check "RECONNECT tx closed the pool's server connections" \
    "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid IN ($old_pids)")" 0
# One client session (psql without ON_ERROR_STOP: an error leaves its transaction to ROLLBACK,
# so that PgBouncer keeps the server connection), alone on tx's only server connection now.
sess_open ro tx backfill
RO="SELECT sno_generate_at(1, '2023-03-03 00:00:00+00');"
r="$(sess ro "BEGIN READ ONLY; SELECT pg_backend_pid(); $RO")"
sess ro "ROLLBACK;" >/dev/null
ro_pid="$(head -n 1 <<<"$r")"
check "a READ ONLY transaction's first call on a fresh server connection: refused (25006)" \
    "$(msg_field ERROR "$r")" "25006: cannot execute sno_generate_at() in a read-only transaction"
r="$(sess ro "INSERT INTO ids (id, who) VALUES (sno_generate_at(1, '2023-03-03 00:00:00+00'), 'bf-ro') RETURNING pid;")"
check "  a read-write call works, on the same server connection" "$r" "$ro_pid"
r="$(sess ro "BEGIN READ ONLY; SELECT pg_backend_pid(); $RO COMMIT;")"
check "  then the same READ ONLY transaction works there" "$(head -n 1 <<<"$r")" "$ro_pid"
q "INSERT INTO ids (id, who, pid) VALUES ('$(sed -n 2p <<<"$r")', 'bf-ro', $ro_pid)" >/dev/null
sess_close ro
new_pids=""
for s in r1 r2 r3 r4; do
    sess_open "$s" tx backfill
    r="$(sess "$s" "BEGIN; $PIN")"
    new_pids+="${r%|*} "
done
check "four sessions pinned again: four new server backends" \
    "$(tr ' ' '\n' <<<"$new_pids" | grep -v '^$' | sort -u | grep -cvxF -f <(tr ',' '\n' <<<"$old_pids"))" 4
sess r4 "COMMIT;" >/dev/null
# A client that disconnects inside a transaction: PgBouncer closes its server connection, and the
# next call that needs one (the other three held) opens another, which is granted another.
gone="$(sess r4 "BEGIN; SELECT pg_backend_pid();")"
sess_close r4
for _ in $(seq 100); do
    [[ "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid = $gone")" == 0 ]] && break
    sleep 0.1
done
check "a client gone inside a transaction: its server connection closed" \
    "$(q "SELECT count(*) FROM pg_stat_activity WHERE pid = $gone")" 0
r="$(bq tx backfill -c "INSERT INTO ids (id, who) VALUES (sno_generate_at(1, '2021-01-01 00:00:00+00'), 'bf-pin') RETURNING pid")"
check "  the next call ran on a new one" "$(grep -cwF "$r" <<<"$new_pids $old_pids")" 0
for s in r1 r2 r3; do sess "$s" "COMMIT;" >/dev/null; sess_close "$s"; done
check "the replacements took 4 grants more, the connection after the disconnect 1 more ($g1 before)" \
    "$(grants backfill)" "$((g1 + 5))"

# ---------------------------------------------------------------------------------------------
part "3. HINTs through the pooler, followed as printed"
sess_open b1 tx bulk
sess_open b2 tx bulk
sess b1 "BEGIN; INSERT INTO ids (id, who) VALUES (sno_generate_at(1, now()), 'bulk');" >/dev/null
sess b2 "BEGIN; INSERT INTO ids (id, who) VALUES (sno_generate_at(1, now()), 'bulk');" >/dev/null
BULK="INSERT INTO ids (id, who) VALUES (sno_generate_at(1, now()), 'bulk')"
expect_state "bulk (sno.reserved_limit = 2), a third server connection's call" 53400 pgb tx bulk "SELECT pg_backend_pid()" "$BULK"
bulk_pid="$(first_line)"
echo "  HINT: $(msg_field HINT "$SAID")"
stmt="$(hint_alter)"
check "  its HINT's statement" "$stmt" "ALTER ROLE \"bulk\" SET sno.reserved_limit = 4;"
check "  the HINT says it counts from the next call" "$(msg_field HINT "$SAID" | grep -c "counts from the role's next call")" 1
q "$stmt" >/dev/null
expect_state "  run by the DBA; a new client session: works" ok pgb tx bulk "SELECT pg_backend_pid()" "$BULK"
check "  on the same server connection, whose session started before the ALTER ROLE" "$(first_line)" "$bulk_pid"
for s in b1 b2; do sess "$s" "COMMIT;" >/dev/null; sess_close "$s"; done
check "  bulk's grants: 3" "$(grants bulk)" 3
# A limit lowered binds a pooled server session too: one opened with the limit at 4 and no grant
# yet (while b3 holds another), then the DBA lowers the limit to 3.
admin "RECONNECT tx" >/dev/null # fresh server connections, none granted yet
sess_open b3 tx bulk
sess b3 "BEGIN; SELECT 1;" >/dev/null
low_pid="$(bq tx bulk -c "SELECT pg_backend_pid()")"
q "ALTER ROLE bulk SET sno.reserved_limit = 3" >/dev/null
expect_state "bulk's limit lowered to 3 (3 granted): a new session of its own is refused" 53400 a postgres bulk "$BULK"
expect_state "  a pooled server session opened before: refused too" 53400 pgb tx bulk "SELECT pg_backend_pid()" "$BULK"
check "  (that session)" "$(first_line)" "$low_pid"
check "  bulk's grants: 3, its limit" "$(grants bulk)" 3
sess b3 "COMMIT;" >/dev/null
sess_close b3

ACQ="SELECT concat_ws('|', lease, token, partition, sequence_min, sequence_max) FROM sno_lease_acquire"
bq tx tight -c "$ACQ(holder => 'tight-1', ttl => '60 s')" -c "$ACQ(holder => 'tight-2', ttl => '60 s')" >/dev/null
expect_state "tight (sno.lease_limit = 2), a third lease" 53400 pgb tx tight "SELECT pg_backend_pid()" "$ACQ(holder => 'tight-3', ttl => '60 s')"
tight_pid="$(first_line)"
echo "  HINT: $(msg_field HINT "$SAID")"
stmt="$(hint_alter)"
check "  its HINT's statement" "$stmt" "ALTER ROLE \"tight\" SET sno.lease_limit = 4;"
q "$stmt" >/dev/null
expect_state "  run by the DBA; a new client session: granted" ok pgb tx tight "SELECT pg_backend_pid()" "$ACQ(holder => 'tight-3', ttl => '60 s')"
check "  on the same server connection" "$(first_line)" "$tight_pid"

expect_state "svc asks for a 1 hour TTL (sno.lease_max_ttl 10 min)" 22023 pgb tx svc "$ACQ(holder => 'long', ttl => '1 hour')"
echo "  HINT: $(msg_field HINT "$SAID")"
ttl="$(msg_field HINT "$SAID" | grep -oE "ttl => '[^']*'" | head -n 1)"
check "  its HINT proposes" "$ttl" "ttl => '600 s'"
expect_state "  which works at once through the pooler" ok pgb tx svc "$ACQ(holder => 'long', $ttl)"

# ---------------------------------------------------------------------------------------------
part "4. leases through the pooler"
L="$(bq tx svc -c "SELECT pg_backend_pid() || '|' || lease || '|' || token FROM sno_lease_acquire(holder => 'pooled', ttl => '60 s')")"
IFS='|' read -r lpid lid ltok <<<"$L"
sess_open h tx svc
check "acquired (autocommit); an open transaction then takes that server connection" \
    "$(sess h "BEGIN; SELECT pg_backend_pid();")" "$lpid"
r="$(bq tx svc -c "SELECT pg_backend_pid() || '|' || lease FROM sno_lease_renew(lease => $lid, token => '$ltok', ttl => '60 s')")"
check "renewed from another client session, on another server connection" "$( ((${r%|*} != lpid)) && echo "${r#*|}")" "$lid"
bq tx svc -c "SELECT sno_lease_release(lease => $lid, token => '$ltok')" >/dev/null
check "released from a third client session" "$(q "SELECT state FROM sno_leases WHERE lease = $lid")" released
sess h "SELECT count(*) FROM sno_lease_acquire(holder => 'rolled-back', ttl => '60 s');" >/dev/null
sess h "ROLLBACK;" >/dev/null
sess_close h
check "acquired in BEGIN ... ROLLBACK through tx: kept (the registry commits it in its own transaction)" \
    "$(q "SELECT state FROM sno_leases WHERE holder = 'rolled-back'")" active

cat >"$CL_WORK/lease.sql" <<'EOF'
SELECT lease, token FROM sno_lease_acquire(holder => 'bench-' || :client_id, ttl => '60 s', sequences => 64) \gset
SELECT lease FROM sno_lease_renew(lease => :lease, token => ':token', ttl => '60 s');
SELECT sno_lease_release(lease => :lease, token => ':token');
EOF
check "8 pgbench clients x 40 new connections: acquire, renew, release (3 statements each)" \
    "$(bench lease tx svc -C -c 8 -j 2 -t 40)" 320
check "  320 leases, all released" \
    "$(q "SELECT count(*), bool_and(state = 'released') FROM sno_leases WHERE holder LIKE 'bench-%'" | tr '|' ' ')" "320 t"
S="$(bq st svc -c "SELECT lease || '|' || token FROM sno_lease_acquire(holder => 'statement-mode', ttl => '60 s')")"
IFS='|' read -r sid stok <<<"$S"
bq st svc -c "SELECT 1 FROM sno_lease_renew(lease => $sid, token => '$stok', ttl => '60 s')" \
    -c "SELECT sno_lease_release(lease => $sid, token => '$stok')" >/dev/null
check "statement mode: acquire, renew, release" "$(q "SELECT state FROM sno_leases WHERE lease = $sid")" released
said="$(bq st svc -c "BEGIN" 2>&1 || true)"
check "statement mode: BEGIN refused by PgBouncer" \
    "$(grep -c "transaction blocks not allowed in statement pooling mode" <<<"$said")" 1
check "one pool partition per leasing role (svc, tight), whatever the server connections" \
    "$(q "SELECT string_agg(grantee || ':' || n, ' ' ORDER BY grantee) FROM
          (SELECT grantee, count(DISTINCT partition) n FROM sno_leases GROUP BY grantee) s")" "svc:1 tight:1"
q "SELECT 'sno_lease_space: ' || row_to_json(s) FROM sno_lease_space s"

# ---------------------------------------------------------------------------------------------
part "5. every ID"
# What each holder may stamp: its whole slice in three units of its window (first, middle, last).
q "INSERT INTO stamped (id, lease)
   SELECT sno_from_parts(u, 1, partition, seq), lease
   FROM sno_leases,
        LATERAL (VALUES (not_before), (not_before + (expires_at - not_before) / 2),
                        (expires_at - interval '4 ms')) t(u),
        generate_series(sequence_min, sequence_max) seq" >/dev/null
check "no two leases could stamp one ID" \
    "$(q "SELECT count(*) FROM sno_internal.leases a JOIN sno_internal.leases b
          ON a.lease < b.lease AND a.partition = b.partition
         AND a.sequence_min <= b.sequence_max AND b.sequence_min <= a.sequence_max
         AND a.not_before < b.expires_at AND b.not_before < a.expires_at")" 0
r="$(q "SELECT (SELECT count(*) FROM ids), (SELECT count(*) FROM stamped), (SELECT count(*) FROM sno_leases),
               count(*) - count(DISTINCT id) FROM (SELECT id FROM ids UNION ALL SELECT id FROM stamped) s")"
IFS='|' read -r n_ids n_st n_leases dups <<<"$r"
check "no ID twice among $n_ids made in the database and $n_st stamped from $n_leases leases" "$dups" 0
echo "summary: IDs by origin (rows, server backends, partitions):"
q "SELECT who, count(*), count(DISTINCT pid), string_agg(DISTINCT sno_partition(id)::text, ',' ORDER BY sno_partition(id)::text)
   FROM ids GROUP BY who ORDER BY who" |
    awk -F'|' '{ p = $4; if (length(p) > 40) p = substr(p, 1, 37) "..."; printf "  %-7s %6d rows  %2d backends  partitions %s\n", $1, $2, $3, p }'
echo "  grants: $(q "SELECT string_agg(grantee || ' ' || n, ', ' ORDER BY grantee) FROM
                       (SELECT grantee, count(*) n FROM sno_reserved_grants GROUP BY grantee) s");" \
    "sno_reserved: $(q "SELECT 'granted ' || granted || ', remaining ' || remaining FROM sno_reserved")"
echo "  $n_ids IDs made in the database, $n_st stamped from leases, $((SECONDS - T0)) s"
exit "$fail"
