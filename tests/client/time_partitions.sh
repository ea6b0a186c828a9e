#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=0 estimate=30
# Time-partitioned tables on plain PostgreSQL with pg_cron (Debian's postgresql-15-cron 1.4),
# on a server of its own (shared_preload_libraries = 'pg_cron,sno'):
#  1. doc/time-partitions.md's SQL blocks run as printed (tests/docs/run_sql.py), pg_cron's jobs
#     scheduled by them included.
#  2. The jobs as scheduled by the page run by pg_cron itself (their schedules moved to every
#     minute): the partitioning job makes the partitions missing ahead (two dropped by hand
#     first), the retention job drops partitions older than 90 days (six made for 100 to 95
#     days ago first); cron.job_run_details says succeeded.
#  3. While pg_cron waits for its minute: two sessions calling sno_create_time_partitions at once,
#     30 times each with different end_at, make every partition once, no error.
#  4. Locks: a session holding a lock on the table (a long SELECT's ACCESS SHARE);
#     sno_drop_old_time_partitions fails after its 5 tries with SQLSTATE 55P03, that session's pid
#     in the DETAIL, nothing dropped; inserts meanwhile (pgbench, a transaction each) never wait
#     more than about one lock_timeout (1 s); the HINT followed (the session ends its
#     transaction, the call made again): it drops them. The same for sno_create_time_partitions
#     with a session holding a lock on the default partition (which holds rows of another day):
#     it fails, nothing made, then works, the default partition's rows left in it.
#  5. Every row's partition holds its time; no ID twice (primary key) over all the rows.
#  6. The views wait for no lock: while another role holds ACCESS EXCLUSIVE on its own
#     sno-partitioned table in an open transaction, and another session holds its TEMP one so,
#     sno_time_partitions, sno_time_partitioned_tables and the exporter's query
#     (doc/monitoring/queries.yaml) answer under lock_timeout = 2s, as a third role, with the
#     rows of both tables (the temporary one in sno_time_partitions only).
#  7. A partition left pending detach (a DETACH PARTITION ... CONCURRENTLY cancelled by
#     statement_timeout while another session reads the table): sno_drop_old_time_partitions
#     drops the other old partitions and skips it with a WARNING; its HINT, run as printed,
#     finishes the detach; the next run drops nothing more, and the detached table keeps its
#     rows.
#
# Usage: SNO_PG_MAJOR=15 time_partitions.sh SOCKET_DIR PORT BINDIR (own server on PORT+730).
# Any other SNO_PG_MAJOR: skipped (pg_cron is Debian's package for PostgreSQL 15).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped time_partitions.sh: tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
T0=$SECONDS

# pg_cron from Debian, installed if missing (serialized: two tests may start together).
if ! dpkg-query -W -f='${Status}' postgresql-15-cron 2>/dev/null | grep -q "install ok installed"; then
    (
        flock 9
        if ! dpkg-query -W -f='${Status}' postgresql-15-cron 2>/dev/null | grep -q "install ok installed"; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get install -y -qq postgresql-15-cron >/dev/null 2>&1 ||
                { apt-get update -qq && apt-get install -y -qq postgresql-15-cron >/dev/null; }
        fi
    ) 9>/tmp/sno-apt-cron.lock || { echo "FAIL: could not install postgresql-15-cron"; exit 1; }
fi
[[ -f "$("$3/pg_config" --pkglibdir 2>/dev/null || echo /usr/lib/postgresql/15/lib)/pg_cron.so" ]] ||
    [[ -f /usr/lib/postgresql/15/lib/pg_cron.so ]] || { echo "FAIL: no pg_cron.so for PostgreSQL 15"; exit 1; }

harness_setup time_partitions "$3" $(($2 + 730)) $(($2 + 739))
DB=sno_doc_time_partitions
export PGTZ=UTC

node_init t
node_conf t "cron.database_name = '$DB'" "cron.host = '$CL_WORK'" "max_connections = 40"
node_cmdline t shared_preload_libraries=pg_cron,sno
node_start t || die "t did not start"

# q DB SQL...: psql on database DB of t (unaligned, tuples only, stop at the first error).
q() {
    local db="$1" a=() s
    shift
    for s in "$@"; do a+=(-c "$s"); done
    node_psql_db t "$db" "${a[@]}"
}

# --- 1. the page as printed ------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: doc/time-partitions.md's SQL blocks"
(cd "$ROOT" && PGHOST="$CL_WORK" PGPORT="$(node_port t)" PGUSER=postgres \
    python3 tests/docs/run_sql.py "$CL_BINDIR/psql" 15 doc/time-partitions.md "$DB") ||
    die "doc/time-partitions.md's SQL blocks as printed"
check "the page scheduled its two jobs" \
    "$(q "$DB" "SELECT string_agg(jobname || ' ' || schedule, ',' ORDER BY jobid) FROM cron.job")" \
    "events-partitions 15 * * * *,events-retention 30 3 * * *"

# --- 2. pg_cron runs them -------------------------------------------------------------------------------

# Two future partitions dropped (the job must make them again), six old ones made (the
# retention job must drop them), then both jobs every minute.
q "$DB" "SET client_min_messages = warning" \
    "DO \$\$ DECLARE r record; BEGIN
        FOR r IN SELECT partition FROM sno_time_partitions WHERE parent_table = 'events'::regclass
                 AND NOT is_default ORDER BY from_value DESC LIMIT 2 LOOP
            EXECUTE format('DROP TABLE %s', r.partition);
        END LOOP; END \$\$" >/dev/null
q "$DB" "SELECT sno_create_time_partitions('events', '1 day', now() - interval '95 days', now() - interval '100 days')" >/dev/null
check "before pg_cron's runs: 7 current partitions and 6 of 100 to 95 days ago" \
    "$(q "$DB" "SELECT count(*) FILTER (WHERE to_time > now() - interval '90 days') || ' ' || count(*) FILTER (WHERE to_time <= now() - interval '90 days')
               FROM sno_time_partitions WHERE parent_table = 'events'::regclass AND NOT is_default")" "7 6"
q "$DB" "SELECT cron.alter_job(jobid, schedule => '* * * * *') FROM cron.job" >/dev/null
CRON_SINCE="$(q "$DB" "SELECT now()")"
echo "    jobs moved to every minute at $CRON_SINCE; the lock tests run meanwhile"

# --- 3. two sessions at once ------------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: two sessions calling sno_create_time_partitions at once"
q postgres "CREATE DATABASE conc" >/dev/null
q conc "CREATE EXTENSION sno" \
    "CREATE TABLE c (id sno PRIMARY KEY DEFAULT sno_generate(3), v int) PARTITION BY RANGE (id)" >/dev/null
for s in 1 2; do
    (
        for ((i = 1; i <= 30; i++)); do
            q conc "SET client_min_messages = warning" \
                "SELECT sno_create_time_partitions('c', '1 hour', timestamptz '2026-01-01 00:00+00' + $i * interval '2 hours' + $s * interval '1 hour', '2026-01-01 00:00+00')" \
                >/dev/null 2>>"$CL_WORK/conc_$s.err" || echo "call $i failed" >>"$CL_WORK/conc_$s.err"
        done
    ) &
done
wait
check "no call failed in either session" "$(cat "$CL_WORK"/conc_*.err 2>/dev/null)" ""
check "every hour of 2026-01-01 00:00 to 2026-01-03 14:00 has one partition, no other" \
    "$(q conc "SELECT count(*) || ' ' || count(DISTINCT from_value) || ' ' || min(from_time) || ' ' || max(to_time)
               FROM sno_time_partitions WHERE parent_table = 'c'::regclass")" \
    "62 62 2026-01-01 00:00:00+00 2026-01-03 14:00:00+00"
check "and they follow each other without a gap" \
    "$(q conc "SELECT count(*) FROM sno_time_partitions a JOIN sno_time_partitions b ON b.parent_table = a.parent_table AND b.from_value = a.to_value
               WHERE a.parent_table = 'c'::regclass")" 61

# --- 4. locks: inserts wait at most one lock_timeout; the HINT followed ---------------------------------

# insert_start SECONDS: pgbench inserting one row a transaction into t.c for SECONDS, in the
# background; its per-transaction log under $CL_WORK/pgb.
insert_start() {
    rm -rf "$CL_WORK/pgb" && mkdir "$CL_WORK/pgb" && chown postgres: "$CL_WORK/pgb"
    echo "INSERT INTO c (v) VALUES (1);" >"$CL_WORK/pgb/ins.sql"
    (cd "$CL_WORK/pgb" && as_pg "$CL_BINDIR/pgbench" -n -h "$CL_WORK" -p "$(node_port t)" -U postgres \
        -f ins.sql -T "$1" -c 1 -l --log-prefix=lat conc >pgbench.out 2>&1) &
    PGB=$!
}
# insert_wait: waits for the last run. insert_stats: its longest insert in ms, and how many ran.
insert_wait() { wait "$PGB" || { sed 's/^/    /' "$CL_WORK/pgb/pgbench.out"; bad "pgbench"; }; }
insert_stats() { cat "$CL_WORK"/pgb/lat.* | awk '{ n++; if ($3 > m) m = $3 } END { printf "%d %d\n", m / 1000, n }'; }

echo "--- $((SECONDS - T0)) s: a long reader holds the table: sno_drop_old_time_partitions gives up"
q conc "SET client_min_messages = warning" \
    "SELECT sno_create_time_partitions('c', '1 hour', now() + interval '2 hours', now() - interval '1 hour')" >/dev/null
# Routing needs today's partitions: the inserts make IDs of now.
node_psql_db t conc -c "BEGIN" -c "SELECT count(*) FROM c" -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
READER=$!
for _ in $(seq 50); do
    r="$(q conc "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")"
    [[ -n "$r" ]] && break
    sleep 0.1
done
[[ -n "$r" ]] || die "the reader did not start"
insert_start 10
sleep 0.5
t1=$SECONDS
out="$(node_psql_db t conc -c "CALL sno_drop_old_time_partitions('c', '2026-01-02 00:00+00')" 2>&1 || true)"
took=$((SECONDS - t1))
insert_wait
read -r max_ms n_ins <<<"$(insert_stats)"
check "the drop fails with SQLSTATE 55P03's message after its tries" "$(msg_field ERROR "$out")" \
    "sno_drop_old_time_partitions: could not lock table public.c and its old partitions after 5 tries of lock_timeout 1s"
check "its DETAIL names the reader's pid" "$(msg_field DETAIL "$out")" "Sessions holding locks on them: $r."
check "its HINT" "$(msg_field HINT "$out")" "Call it again when those sessions have ended their transactions."
check "it tried for 5 lock_timeouts and 4 sleeps (about 8 s): $took s" "$((took >= 7 && took <= 12))" 1
check "nothing dropped" "$(q conc "SELECT count(*) FROM sno_time_partitions WHERE parent_table = 'c'::regclass AND to_time <= '2026-01-02 00:00+00'")" 24
check "inserts went on: $n_ins in 10 s, the longest $max_ms ms (at most one lock_timeout and a little)" \
    "$((n_ins > 50 && max_ms < 1500))" 1
# The HINT followed: the reader's transaction ends, the call is made again.
q conc "SELECT pg_cancel_backend($r)" >/dev/null
wait "$READER" 2>/dev/null || true
q conc "CALL sno_drop_old_time_partitions('c', '2026-01-02 00:00+00')" >/dev/null 2>&1 || bad "the drop after the HINT"
check "after the HINT: the 24 partitions of 2026-01-01 dropped" \
    "$(q conc "SELECT count(*) FROM sno_time_partitions WHERE parent_table = 'c'::regclass AND to_time <= '2026-01-02 00:00+00'")" 0

echo "--- $((SECONDS - T0)) s: a reader of the default partition: sno_create_time_partitions gives up"
q conc "CREATE TABLE c_default PARTITION OF c DEFAULT" \
    "INSERT INTO c (id, v) SELECT sno_generate_at(3, timestamptz '2026-02-05 00:00+00' + g * interval '10 minutes'), 2 FROM generate_series(0, 11) g" >/dev/null
node_psql_db t conc -c "BEGIN" -c "SELECT count(*) FROM c_default" -c "SELECT pg_sleep(30)" >/dev/null 2>&1 &
READER=$!
for _ in $(seq 50); do
    r="$(q conc "SELECT pid FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'")"
    [[ -n "$r" ]] && break
    sleep 0.1
done
[[ -n "$r" ]] || die "the reader did not start"
insert_start 10
sleep 0.5
out="$(node_psql_db t conc -c "SELECT sno_create_time_partitions('c', '1 hour', '2026-02-01 02:00+00', '2026-02-01 00:00+00')" 2>&1 || true)"
insert_wait
read -r max_ms n_ins <<<"$(insert_stats)"
check "the create fails with SQLSTATE 55P03's message after its tries" "$(msg_field ERROR "$out")" \
    "sno_create_time_partitions: could not lock table public.c and its default partition public.c_default after 5 tries of lock_timeout 1s"
check "its DETAIL names the reader's pid" "$(msg_field DETAIL "$out")" "Sessions holding locks on them: $r."
check "nothing made, the rows still in the default partition" \
    "$(q conc "SELECT count(*) FROM sno_time_partitions WHERE parent_table = 'c'::regclass AND from_time >= '2026-02-01+00' AND from_time < '2026-02-02+00'" \
        "SELECT count(*) FROM c_default")" "$(printf '0\n12')"
check "inserts went on: $n_ins in 10 s, the longest $max_ms ms" "$((n_ins > 50 && max_ms < 1500))" 1
q conc "SELECT pg_cancel_backend($r)" >/dev/null
wait "$READER" 2>/dev/null || true
check "after the HINT: the two hours made, the default partition's 12 rows (of 2026-02-05) left in it" \
    "$(q conc "SET client_min_messages = warning" \
        "SELECT sno_create_time_partitions('c', '1 hour', '2026-02-01 02:00+00', '2026-02-01 00:00+00')" \
        "SELECT count(*) FROM c_default")" "$(printf 't\n12')"

# --- 5. every row in the partition of its time ----------------------------------------------------------

for db in conc "$DB"; do
    t="$([[ "$db" == conc ]] && echo c || echo events)"
    check "$db: every row of $t is in the partition of its time, IDs distinct" \
        "$(q "$db" "SELECT count(*) FILTER (WHERE NOT (sno_time(x.id) >= p.from_time AND sno_time(x.id) < p.to_time))
                     || ' ' || (count(*) - count(DISTINCT x.id))
                     FROM $t x JOIN sno_time_partitions p ON p.partition = x.tableoid WHERE NOT p.is_default")" "0 0"
done

# --- 6. the views wait for no lock ------------------------------------------------------------------------

# bg_wait_sleeping DB QUERY: the pid of the session of DB running QUERY (a pg_sleep), once it
# runs (waits up to 10 s; empty if it never does).
bg_wait_sleeping() {
    local pid=""
    for _ in $(seq 100); do
        pid="$(q "$1" "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = '$2' AND state = 'active'")"
        [[ -n "$pid" ]] && break
        sleep 0.1
    done
    echo "$pid"
}
# as_role ROLE DB SQL...: psql as ROLE (a login role) on database DB of t.
as_role() {
    local role="$1" db="$2" a=() s
    shift 2
    for s in "$@"; do a+=(-c "$s"); done
    "$CL_BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$CL_WORK" -p "$(node_port t)" -U "$role" -d "$db" "${a[@]}"
}

echo "--- $((SECONDS - T0)) s: another role's table and another session's temporary table locked: the views answer"
q postgres "CREATE DATABASE watch" >/dev/null
q watch "CREATE EXTENSION sno" "CREATE ROLE tp_owner LOGIN" "CREATE ROLE tp_watch LOGIN" \
    "GRANT CREATE ON SCHEMA public TO tp_owner" >/dev/null
as_role tp_owner watch "SET client_min_messages = warning" \
    "CREATE TABLE theirs (id sno PRIMARY KEY DEFAULT sno_generate(6)) PARTITION BY RANGE (id)" \
    "SELECT sno_create_time_partitions('theirs', '1 day', now() + interval '3 days', now() - interval '1 day')" >/dev/null
# The owner's transaction holds ACCESS EXCLUSIVE on its table and (LOCK TABLE recurses) on every
# partition; another session creates a temporary sno-partitioned table and holds it locked.
as_role tp_owner watch "BEGIN" "LOCK TABLE theirs IN ACCESS EXCLUSIVE MODE" "SELECT pg_sleep(60)" >/dev/null 2>&1 &
LOCKER=$!
as_role tp_watch watch "CREATE TEMP TABLE mytemp (id sno) PARTITION BY RANGE (id)" \
    "CREATE TEMP TABLE mytemp_a PARTITION OF mytemp FOR VALUES FROM (MINVALUE) TO (sno_min('2026-01-01+00'))" \
    "CREATE TEMP TABLE mytemp_b PARTITION OF mytemp FOR VALUES FROM (sno_min('2026-01-01+00')) TO (sno_min('2026-01-02+00'))" \
    "BEGIN" "LOCK TABLE mytemp IN ACCESS EXCLUSIVE MODE" "SELECT pg_sleep(61)" >/dev/null 2>&1 &
TEMPER=$!
lp="$(bg_wait_sleeping watch "SELECT pg_sleep(60)")"
tp="$(bg_wait_sleeping watch "SELECT pg_sleep(61)")"
[[ -n "$lp" && -n "$tp" ]] || die "the sessions holding the locks did not start"
check "the owner's session holds ACCESS EXCLUSIVE on theirs and its 5 partitions, the other its temporary table and 2 partitions" \
    "$(q watch "SELECT count(*) FILTER (WHERE pid = $lp) || ' ' || count(*) FILTER (WHERE pid = $tp) FROM pg_locks
                WHERE locktype = 'relation' AND mode = 'AccessExclusiveLock' AND granted AND relation IN (SELECT oid FROM pg_class
                      WHERE relkind IN ('p', 'r') AND (relname = 'theirs' OR relname LIKE 'theirs\_p%' OR relname LIKE 'mytemp%'))")" "6 3"
# A third role reads them, lock_timeout 2 s: a wait is an error, not a hang.
out="$(as_role tp_watch watch "SET lock_timeout = '2s'" \
    "SELECT regexp_replace(parent_table::text, '^pg_temp_[0-9]+[.]', 'pg_temp.') || ' ' || count(*)
            || ' ' || count(*) FILTER (WHERE from_value IS NULL) || ' ' || count(*) FILTER (WHERE to_value IS NULL)
            || ' ' || bool_and(from_value IS NULL OR to_time - from_time = interval '1 day')
     FROM sno_time_partitions WHERE parent_table::text = 'theirs' OR parent_table::text LIKE 'pg\_temp\_%.mytemp'
     GROUP BY parent_table ORDER BY 1" 2>&1 || true)"
check "sno_time_partitions: the temporary table's 2 partitions (one from MINVALUE), theirs' 5 daily ones" \
    "$out" "$(printf 'pg_temp.mytemp 2 1 0 true\ntheirs 5 0 0 true')"
check "sno_time_partitions: theirs' bounds are sno_min of each day's start, one after the other" \
    "$(as_role tp_watch watch "SET lock_timeout = '2s'" \
        "SELECT bool_and(from_value = sno_min(from_time) AND to_value = sno_min(to_time))
                || ' ' || (SELECT count(*) FROM sno_time_partitions a JOIN sno_time_partitions b ON b.parent_table = a.parent_table AND b.from_value = a.to_value
                           WHERE a.parent_table = 'theirs'::regclass)
         FROM sno_time_partitions WHERE parent_table = 'theirs'::regclass" 2>&1)" "true 4"
check "sno_time_partitioned_tables: theirs (5 partitions, no default, covered to its last partition's end), not the temporary table" \
    "$(as_role tp_watch watch "SET lock_timeout = '2s'" \
        "SELECT string_agg(parent_table::text || ' ' || partitions || ' ' || has_default || ' '
                           || (covered_until = (SELECT max(to_time) FROM sno_time_partitions WHERE parent_table = 'theirs'::regclass)), ',')
         FROM sno_time_partitioned_tables" 2>&1)" "theirs 5 false true"
EXPORTER_QUERY="$(/usr/bin/python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["sno_time_partitions"]["query"])' \
    "$ROOT/doc/monitoring/queries.yaml")" || die "no query sno_time_partitions in doc/monitoring/queries.yaml"
check "the exporter's query (doc/monitoring/queries.yaml): theirs, 5 partitions, no default, more than 2 days ahead, 1-day periods" \
    "$(as_role tp_watch watch "SET lock_timeout = '2s'" \
        "SELECT string_agg(\"table\" || ' ' || partitions || ' ' || has_default || ' ' || (ahead_seconds > 2 * 86400) || ' ' || period_seconds, ',')
         FROM ($EXPORTER_QUERY) x" 2>&1)" "theirs 5 0 true 86400"
check "the locks are still held: both sessions sleep" \
    "$(q watch "SELECT count(*) FROM pg_stat_activity WHERE pid IN ($lp, $tp) AND state = 'active'")" 2
q watch "SELECT pg_cancel_backend($lp), pg_cancel_backend($tp)" >/dev/null
wait "$LOCKER" "$TEMPER" 2>/dev/null || true

# --- 7. a partition left pending detach ----------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: a partition left pending detach: sno_drop_old_time_partitions skips it, drops the others"
q postgres "CREATE DATABASE pend" >/dev/null
q pend "SET client_min_messages = warning" "CREATE EXTENSION sno" \
    "CREATE TABLE r (id sno PRIMARY KEY DEFAULT sno_generate(7), v int) PARTITION BY RANGE (id)" \
    "SELECT sno_create_time_partitions('r', '1 day', '2026-01-06+00', '2026-01-01+00')" \
    "INSERT INTO r (id, v) SELECT sno_generate_at(7, timestamptz '2026-01-01 00:30+00' + g * interval '1 hour'), g FROM generate_series(0, 119) g" \
    >/dev/null
# A session reads the table and stays in its transaction: the second step of DETACH ... CONCURRENTLY
# waits for it, and statement_timeout cancels it there, the partition left pending detach.
node_psql_db t pend -c "BEGIN" -c "SELECT count(*) FROM r" -c "SELECT pg_sleep(62)" >/dev/null 2>&1 &
READER=$!
r="$(bg_wait_sleeping pend "SELECT pg_sleep(62)")"
[[ -n "$r" ]] || die "the reader did not start"
out="$(q pend "SET statement_timeout = '5s'" "ALTER TABLE r DETACH PARTITION r_p2026_01_02 CONCURRENTLY" 2>&1 || true)"
check "the DETACH ... CONCURRENTLY is cancelled while it waits" "$(msg_field ERROR "$out")" "canceling statement due to statement timeout"
q pend "SELECT pg_cancel_backend($r)" >/dev/null
wait "$READER" 2>/dev/null || true
check "r_p2026_01_02 is left pending detach" \
    "$(q pend "SELECT string_agg(partition::text, ',') FROM sno_time_partitions WHERE parent_table = 'r'::regclass AND detach_pending")" \
    r_p2026_01_02
# Retention up to 2026-01-04: 01-01, 01-02 (pending) and 01-03 are old.
out="$(q pend "CALL sno_drop_old_time_partitions('r', '2026-01-04+00')" 2>&1)" || bad "the retention call failed: $out"
check "retention: a WARNING for the pending partition" "$(msg_field WARNING "$out")" \
    "sno_drop_old_time_partitions: partition public.r_p2026_01_02 (from 2026-01-02 00:00:00+00 to 2026-01-03 00:00:00+00) is being detached: not dropped"
check "retention: the other old partitions dropped, the pending one and the newer ones kept" \
    "$(q pend "SELECT string_agg(partition::text || CASE WHEN detach_pending THEN ' (pending)' ELSE '' END, ',' ORDER BY from_value)
               FROM sno_time_partitions WHERE parent_table = 'r'::regclass")" \
    "r_p2026_01_02 (pending),r_p2026_01_04,r_p2026_01_05"
hint="$(msg_field HINT "$out")"
stmt="$(grep -o 'ALTER TABLE [^;]*;' <<<"$hint" || true)"
check "the HINT finishes the detach" "$hint" "Finish its detach: ALTER TABLE public.r DETACH PARTITION public.r_p2026_01_02 FINALIZE;"
if [[ -z "$stmt" ]] || ! q pend "$stmt" >/dev/null; then bad "the HINT's statement as printed: '$stmt'"; fi
out="$(q pend "CALL sno_drop_old_time_partitions('r', '2026-01-04+00')" 2>&1)" || bad "the second retention call failed: $out"
check "retention again: nothing said, nothing left to drop" "$out" ""
check "after the HINT: r_p2026_01_02 is no partition of r; r_p2026_01_04 and r_p2026_01_05 are, with their 48 rows" \
    "$(q pend "SELECT string_agg(partition::text, ',' ORDER BY from_value) FROM sno_time_partitions WHERE parent_table = 'r'::regclass" \
        "SELECT count(*) FROM r")" "$(printf 'r_p2026_01_04,r_p2026_01_05\n48')"
check "the detached r_p2026_01_02 is a table of its own with its 24 rows; r_p2026_01_01 and r_p2026_01_03 are gone" \
    "$(q pend "SELECT relispartition FROM pg_class WHERE oid = 'r_p2026_01_02'::regclass" "SELECT count(*) FROM r_p2026_01_02" \
        "SELECT count(*) FROM pg_class WHERE relname IN ('r_p2026_01_01', 'r_p2026_01_03')")" "$(printf 'f\n24\n0')"

# --- 2 (end). pg_cron's runs ------------------------------------------------------------------------------

echo "--- $((SECONDS - T0)) s: waiting for pg_cron's runs (at most 75 s after the jobs were moved)"
for _ in $(seq 150); do
    done_runs="$(q "$DB" "SELECT count(DISTINCT jobid) FROM cron.job_run_details WHERE start_time >= '$CRON_SINCE' AND status IN ('succeeded', 'failed')")"
    [[ "$done_runs" == 2 ]] && break
    [[ "$(q "$DB" "SELECT now() - '$CRON_SINCE' > interval '80 seconds'")" == t ]] && break
    sleep 0.5
done
check "pg_cron ran both jobs, both succeeded" \
    "$(q "$DB" "SELECT string_agg(j.jobname || ' ' || d.status, ',' ORDER BY j.jobid)
                FROM cron.job j JOIN LATERAL (SELECT status FROM cron.job_run_details r WHERE r.jobid = j.jobid
                     AND r.start_time >= '$CRON_SINCE' ORDER BY r.start_time LIMIT 1) d ON true")" \
    "events-partitions succeeded,events-retention succeeded"
q "$DB" "SELECT j.jobname, d.status, d.return_message FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE d.start_time >= '$CRON_SINCE'" |
    sed 's/^/    /'
check "after them: the 8 current partitions again, none older than 90 days" \
    "$(q "$DB" "SELECT count(*) FILTER (WHERE to_time > now() - interval '90 days') || ' ' || count(*) FILTER (WHERE to_time <= now() - interval '90 days')
               FROM sno_time_partitions WHERE parent_table = 'events'::regclass AND NOT is_default")" "8 0"
q "$DB" "SELECT cron.unschedule(jobid) FROM cron.job" >/dev/null
echo "    $((SECONDS - T0)) s"
exit "$fail"
