#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=0 estimate=60
# The reserved partition space (61440-65535) and sno_generate_at(meta, at), on real servers:
#  1. Privilege: a role without EXECUTE is refused (42501), then granted it. Per-role limit:
#     with ALTER ROLE r SET sno.reserved_limit = 1 the role's second session is refused (53400);
#     the statement its HINT gives is run as printed (as superuser), and a new session of the
#     role is granted. The role cannot SET the limit itself. The limit holds when a role's
#     sessions roll back their call (q1) and when they call at once (q2). An unprivileged role's objects in
#     public (a table sno_reserved_grants, a function now() that fails), with search_path
#     public first, change nothing sno_generate_at writes (the extension lives in its own
#     schema in that database) and do not make it fail.
#  2. Bad input: meta -1/256 (22003), a time before 2010, after 2079-09-07 or infinite (22008),
#     NULL in NULL out; none of them consumes a grant, nor does a call refused in a READ ONLY
#     transaction (the grant's row cannot be written there).
#  3. 4 sessions x 20,000 sno_generate_at calls with random, repeated and current times (and a
#     run of non-decreasing ones), beside sessions calling sno_generate(0..2), all into one
#     primary key: no conflict; every sno_generate_at ID has a reserved partition and its time
#     floored to 4 ms; within a session and meta, calls with non-decreasing `at` give increasing
#     IDs (window functions over the call order). A session making 70,000 IDs in one unit for
#     one meta moves to a new grant with a higher partition, its IDs still increasing.
#  4. A grant's row rolled back (ROLLBACK, ROLLBACK TO SAVEPOINT) is written again by the
#     session's next call.
#  5. Durability: a grant whose transaction is still open when the server stops (immediate);
#     after the restart the next grant is above it; the sno_reserved view agrees with the
#     sno_reserved_grants rows of every database (and the grants whose rows were rolled back);
#     the state file's granted= line names them.
#  6. A synchronous streaming standby refuses sno_generate_at (25006), replays grants (its view
#     shows the primary's count, its state file the same grants); promoted right after one more
#     grant on the primary (no wait: a synchronous standby has its WAL), its first
#     grant is above every grant of the old primary.
#  7. A clone (pg_basebackup, started on its own) makes IDs with sno_generate but refuses to
#     grant (55000); its HINT followed (its original stopped for good, then take_over as
#     printed): it grants, above its original's grants.
#  8. An explicit sno.partition in the reserved range is refused (55000); the HINT's first
#     proposal is set (ALTER SYSTEM, reload) and IDs come with it, none a duplicate; a
#     partition the allocator granted is refused as sno.partition too.
#  9. pg_dump of a database with sno_generate_at rows (the server's first grants, 61440-61442:
#     those a fresh server would grant first), pg_restore into a fresh cluster: its
#     first grants avoid every partition the restored sno_reserved_grants names, and new IDs
#     for the same times meet the restored ones in one primary key without a conflict.
#
# Usage: SNO_PG_MAJOR=15 reserved_space.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: own
# clusters on ports PORT+600 .. PORT+699). Any other SNO_PG_MAJOR: skipped (the adoption work
# is tested on PostgreSQL 15).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped reserved_space.sh: the reserved space is tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
harness_setup reserved_space "$3" $(($2 + 600)) $(($2 + 699))
T0=$SECONDS
FIRST=61440
export PGTZ=UTC

# q NODE SQL...: as postgres on database postgres, one session.
q() { node_sql "$@"; }
# qd NODE DB SQL...: as postgres on DB, one session.
qd() {
    local n="$1" db="$2" a=() s
    shift 2
    for s in "$@"; do a+=(-c "$s"); done
    qu "$n" "$db" postgres "${a[@]}"
}


# gt A B: 1 when A and B are numbers and A > B, else 0 (never an arithmetic error).
gt() { [[ "$1" =~ ^[0-9]+$ && "$2" =~ ^[0-9]+$ ]] && (($1 > $2)) && echo 1 || echo 0; }

# part TITLE: a part's heading, with the seconds since the start.
part() { echo "--- $* ($((SECONDS - T0)) s)"; }

# ranges_expand TEXT: "61440-61442,61500" as one partition a line.
ranges_expand() {
    local r
    tr ',' '\n' <<<"$1" | while read -r r; do
        [[ -n "$r" ]] || continue
        if [[ "$r" == *-* ]]; then seq "${r%-*}" "${r#*-}"; else echo "$r"; fi
    done
}
# state_granted NODE: the partitions the state file's granted= line names, one a line, sorted.
state_granted() { ranges_expand "$(sed -n 's/^granted=//p' "$(node_state_file "$1")")" | sort -n; }
# max_line: the largest number of its input (0 for none).
max_line() { sort -n | tail -n 1 | grep . || echo 0; }

# view NODE [DB]: "granted|used_by_live|remaining|may_grant" of the sno_reserved view.
view() { qd "$1" "${2:-postgres}" "SELECT concat_ws('|', granted, used_by_live, remaining, may_grant) FROM sno_reserved"; }
# rows NODE: every partition the sno_reserved_grants tables of NODE's databases name, sorted.
rows() {
    local db
    for db in $(q "$1" "SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1"); do
        qd "$1" "$db" "SELECT e.extnamespace::regnamespace FROM pg_extension e WHERE e.extname = 'sno'" |
            while read -r s; do qd "$1" "$db" "SELECT partition FROM $s.sno_reserved_grants"; done
    done | sort -n
}
# grant_one NODE [DB]: a new session's first sno_generate_at (committed): its partition.
grant_one() { qd "$1" "${2:-postgres}" "SELECT sno_partition(sno_generate_at(1, now()))"; }

# ---------------------------------------------------------------------------------------------
node_init a
node_clock_mode a none
node_cmdline a shared_preload_libraries=sno
node_start a || die "a did not start"
q a "CREATE EXTENSION sno" \
    "ALTER ROLE postgres SET sno.reserved_limit = 4096" \
    "CREATE TABLE ids (id sno PRIMARY KEY, kind text NOT NULL, sess text NOT NULL, ord int NOT NULL,
                       meta int NOT NULL, at timestamptz)" >/dev/null
check "a fresh server: nothing granted, every reserved partition left, may grant" "$(view a)" "0|0|4096|t"

part "9a. a database with sno_generate_at rows (the server's first grants), dumped"
q a "CREATE DATABASE legacy" >/dev/null
qd a legacy "CREATE EXTENSION sno" "CREATE TABLE legacy (id sno PRIMARY KEY, at timestamptz, origin text)" >/dev/null
for k in 1 2 3; do
    qd a legacy "INSERT INTO legacy SELECT sno_generate_at(1, t), t, 'old$k'
        FROM (SELECT timestamptz '2020-01-01 00:00:00+00' + (g % 50) * interval '4 ms' t FROM generate_series(1, 2000) g) s"
done
legacy_grants="$(qd a legacy "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM sno_reserved_grants")"
# The first grants of this server: those a fresh server would grant first too.
check "three sessions, the server's first three grants in legacy's table" "$legacy_grants" "61440,61441,61442"
node_client a pg_dump -d legacy -Fc -f "$CL_WORK/legacy.dump" || bad "pg_dump of legacy"

part "1. privilege, per-role limit, objects of an unprivileged role"
# Database sec: the extension in a schema of its own, public writable by an unprivileged role
# (as before PostgreSQL 15).
q a "CREATE DATABASE sec" "CREATE ROLE r LOGIN" "CREATE ROLE evil LOGIN" >/dev/null
qd a sec "CREATE SCHEMA snox" "CREATE EXTENSION sno SCHEMA snox" \
    "GRANT USAGE ON SCHEMA snox TO r, evil" "GRANT CREATE ON SCHEMA public TO evil" >/dev/null
SP="SET search_path = snox, public"
g0="$(view a | cut -d'|' -f1)"
expect_state "r without EXECUTE: permission denied" 42501 a sec r "$SP" "SELECT sno_generate_at(1, now())"
check "  the message names the function" "$(grep -c 'permission denied for function sno_generate_at' <<<"$SAID")" 1
check "  PUBLIC has no EXECUTE on sno_generate_at" \
    "$(qd a sec "SELECT has_function_privilege('evil', 'snox.sno_generate_at(int, timestamptz)', 'EXECUTE')")" f
check "  the refused call consumed no grant" "$(view a | cut -d'|' -f1)" "$g0"
qd a sec "GRANT EXECUTE ON FUNCTION snox.sno_generate_at(int, timestamptz) TO r" \
    "ALTER ROLE r SET sno.reserved_limit = 1" >/dev/null
r1="$(qu a sec r -c "$SP" -c "SELECT sno_partition(snox.sno_generate_at(1, now()))" 2>&1 || true)"
check "after GRANT EXECUTE, r is granted a reserved partition" "$(gt "$r1" $((FIRST - 1)))" 1
expect_state "r's second session, over its limit of 1" 53400 a sec r "$SP" "SELECT sno_generate_at(1, now())"
hint="$(msg_field HINT "$SAID")"
stmt="$(grep -o 'ALTER ROLE [^;]*;' <<<"$hint" || true)"
check "  the HINT gives the statement to raise the limit" "$stmt" 'ALTER ROLE "r" SET sno.reserved_limit = 2;'
check "  the refused session consumed no grant" "$(view a | cut -d'|' -f1)" "$((g0 + 1))"
expect_state "r cannot SET sno.reserved_limit itself" 42501 a sec r "SET sno.reserved_limit = 100"
expect_state "nor ALTER ROLE r SET it" 42501 a sec r "ALTER ROLE r SET sno.reserved_limit = 100"
# The HINT followed: its statement as superuser, then a new session of r.
qd a sec "$stmt" >/dev/null
r2="$(qu a sec r -c "$SP" -c "SELECT sno_partition(snox.sno_generate_at(1, now()))" 2>&1 || true)"
check "after the HINT's statement, a new session of r is granted (a new partition)" "$(gt "$r2" "$r1")" 1
expect_state "r's third session is over the new limit of 2" 53400 a sec r "$SP" "SELECT sno_generate_at(1, now())"

# The limit holds however the role's sessions end, and when they run at once: q1 (limit 1)
# rolls back each session's call; q2's three sessions (limit 1) call at once and commit. Each
# session is either granted or refused by the limit (53400).
q a "CREATE ROLE q1 LOGIN" "CREATE ROLE q2 LOGIN" >/dev/null
qd a sec "GRANT USAGE ON SCHEMA snox TO q1, q2" \
    "GRANT EXECUTE ON FUNCTION snox.sno_generate_at(int, timestamptz) TO q1, q2" \
    "ALTER ROLE q1 SET sno.reserved_limit = 1" "ALTER ROLE q2 SET sno.reserved_limit = 1" >/dev/null
before="$(view a | cut -d'|' -f1)"
states=""
# Grants whose row never committed (rolled back): no sno_reserved_grants names them.
LOST=()
for _ in 1 2 3; do
    try a sec q1 "BEGIN" "SELECT snox.sno_partition(snox.sno_generate_at(1, now()))" "ROLLBACK"
    states+="$STATE "
    [[ "$STATE" == ok ]] && LOST+=("$(grep -xE '6[0-9]{4}' <<<"$SAID" || true)")
done
check "q1 (limit 1), three sessions rolling back their call ($states): at most one grant" \
    "$(gt $(($(view a | cut -d'|' -f1) - before)) 1)|$(grep -cvE '^(ok|53400|)$' <<<"${states// /$'\n'}")" "0|0"
before="$(view a | cut -d'|' -f1)"
pids=()
for k in 1 2 3; do
    qu a sec q2 -v VERBOSITY=verbose -c "BEGIN" -c "SELECT snox.sno_generate_at(1, now())" -c "SELECT pg_sleep(0.5)" \
        -c "COMMIT" >"$CL_WORK/q2.$k" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
check "q2 (limit 1), three sessions at once: at most one grant, one row, the others refused by the limit" \
    "$(gt $(($(view a | cut -d'|' -f1) - before)) 1)|$(qd a sec "SELECT count(*) FROM snox.sno_reserved_grants WHERE grantee = 'q2'")|$(cat "$CL_WORK"/q2.? | grep -c 'ERROR:  53400')" \
    "0|1|2"

# evil: EXECUTE, objects in public, search_path public (and pg_catalog) first.
qd a sec "GRANT EXECUTE ON FUNCTION snox.sno_generate_at(int, timestamptz) TO evil" >/dev/null
qu a sec evil -c "CREATE TABLE public.sno_reserved_grants (partition int, granted_at timestamptz, grantee name)" \
    -c "INSERT INTO public.sno_reserved_grants SELECT p, now(), 'evil' FROM generate_series($FIRST, 65535) p" \
    -c "CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS
        \$\$BEGIN RAISE EXCEPTION 'evil now() was called'; END\$\$" >/dev/null
before="$(view a | cut -d'|' -f1)"
EP="SET search_path = public, pg_catalog, snox"
out="$(qu a sec evil -c "$EP" -c "SELECT sno_partition(sno_generate_at(1, '2020-01-01')) || '|' || sno_time(sno_generate_at(1, '2020-01-01 00:00:00.0075+00'))" 2>&1 || true)"
pe="${out%%|*}"
check "evil's objects first in its search_path: sno_generate_at works, with the time given" \
    "${out#*|}" "2020-01-01 00:00:00.004+00"
check "  evil's grant is a new reserved partition" "$(gt "$pe" "$r2")" 1
check "  exactly one more grant (evil's table, naming every reserved partition, was not read)" \
    "$(view a | cut -d'|' -f1)" "$((before + 1))"
check "  evil's table is unchanged (4096 rows, none written by sno)" \
    "$(qd a sec "SELECT count(*), count(*) FILTER (WHERE grantee <> 'evil') FROM public.sno_reserved_grants")" "4096|0"
check "  the grant's row is in the extension's table, with the real time, grantee evil" \
    "$(qd a sec "SELECT concat_ws('|', grantee, abs(extract(epoch from pg_catalog.now() - granted_at)) < 60) FROM snox.sno_reserved_grants WHERE partition = $pe")" "evil|t"
# The same objects in the search_path of another role that may use the function (r, limit 3).
qd a sec "ALTER ROLE r SET sno.reserved_limit = 3" >/dev/null
out="$(qu a sec r -c "$EP" -c "SELECT sno_partition(sno_generate_at(2, '2020-01-01'))" 2>&1 || true)"
check "r with evil's objects first in its search_path is granted too" "$(gt "$out" "$pe")" 1
check "  and its row names r with the real time" \
    "$(qd a sec "SELECT concat_ws('|', grantee, abs(extract(epoch from pg_catalog.now() - granted_at)) < 60) FROM snox.sno_reserved_grants WHERE partition = ${out:-0}")" "r|t"

part "2. bad input"
g_before="$(view a)" rows_before="$(rows a | wc -l)"
for c in "-1|now()|22003" "256|now()|22003" "1|'2009-12-31 23:59:59.999+00'|22008" \
    "1|'2079-09-08'|22008" "1|'infinity'|22008" "1|'-infinity'|22008"; do
    IFS='|' read -r m t st <<<"$c"
    expect_state "sno_generate_at($m, $t)" "$st" a postgres postgres "SELECT sno_generate_at($m, $t)"
done
check "the last time in range is accepted: 2079-09-07 15:47:35.551999+00" \
    "$(q a "SELECT sno_time(sno_generate_at(1, '2079-09-07 15:47:35.551999+00'))")" "2079-09-07 15:47:35.548+00"
g_before2="$(view a)"
check "sno_generate_at(NULL, now()), (1, NULL), (NULL, NULL) are NULL" \
    "$(q a "SELECT sno_generate_at(NULL, now()) IS NULL AND sno_generate_at(1, NULL) IS NULL AND sno_generate_at(NULL, NULL) IS NULL")" t
check "the refused and NULL calls consumed no grant (the accepted one did: one)" \
    "$(view a | cut -d'|' -f1)|$(rows a | wc -l)" "$((${g_before%%|*} + 1))|$((rows_before + 1))"
check "  the NULL calls alone none" "$(view a)" "$g_before2"
# A read-only transaction: the grant's row cannot be written; no grant may be spent on it.
states=""
for _ in 1 2; do
    try a postgres postgres "BEGIN READ ONLY" "SELECT sno_generate_at(1, now())"
    states+="$STATE "
done
oks="$(grep -o ok <<<"$states" | wc -l || true)"
SPENT=$(($(view a | cut -d'|' -f1) - ${g_before2%%|*} - oks))
check "two sessions calling in a READ ONLY transaction ($states): no grant spent without an ID" "$SPENT" 0

part "3. concurrent sessions: uniqueness, time, order"
# Four sessions x 20,000 sno_generate_at calls, in call order (ord): metas 0-2; 30% at the
# current time (units sno_generate uses too), 35% in 20 units of one second (half exactly on
# a unit's start, so equal), 35% anywhere in 2010-2078; the last 5,000 a non-decreasing run
# (1 ms apart: four to a unit).
gen_at() {
    q a "INSERT INTO ids (id, kind, sess, ord, meta, at)
         SELECT sno_generate_at(m, t), 'at', 'at$1', g, m, t FROM (
           SELECT g, m, CASE WHEN g > 15000 THEN timestamptz '2015-03-01 00:00:00+00' + (g - 15000) * interval '1 ms'
                             WHEN r < 0.30 THEN clock_timestamp()
                             WHEN r < 0.475 THEN timestamptz '2021-06-01 12:00:00+00' + floor(random() * 20) * interval '4 ms'
                             WHEN r < 0.65 THEN timestamptz '2021-06-01 12:00:00+00' + floor(random() * 20) * interval '4 ms'
                                                + random() * interval '3.999 ms'
                             ELSE to_timestamp(1262304000 + random() * 2175000000) END AS t
           FROM (SELECT g, random() AS r, floor(random() * 3)::int AS m FROM generate_series(1, 20000) g) s0) s
         ON CONFLICT (id) DO NOTHING"
}
gen_live() {
    local i
    for i in $(seq 10); do
        q a "INSERT INTO ids (id, kind, sess, ord, meta)
             SELECT sno_generate(g % 3), 'gen', 'gen$1', g + $i * 100000, g % 3 FROM generate_series(1, 2000) g
             ON CONFLICT (id) DO NOTHING"
    done
}
# One session, one meta, one unit, 70,000 IDs: past the 65,536 sequence numbers of a unit.
gen_big() {
    q a "INSERT INTO ids (id, kind, sess, ord, meta, at)
         SELECT sno_generate_at(5, timestamptz '2020-02-02 02:02:02.0021+00'), 'at', 'big', g, 5,
                timestamptz '2020-02-02 02:02:02.0021+00'
         FROM generate_series(1, 70000) g ON CONFLICT (id) DO NOTHING"
}
t3=$SECONDS
pids=()
gen_live 1 & pids+=($!)
gen_live 2 & pids+=($!)
for k in 1 2 3 4; do gen_at "$k" & pids+=($!); done
gen_big & pids+=($!)
for p in "${pids[@]}"; do wait "$p" || bad "a session of part 3 failed"; done
echo "    (part 3's sessions took $((SECONDS - t3)) s)"
check "every call's ID went into the primary key (no conflict): 4 x 20,000 + 70,000 sno_generate_at, 2 x 20,000 sno_generate" \
    "$(q a "SELECT string_agg(sess || '=' || n, ' ' ORDER BY sess) FROM (SELECT sess, count(*) n FROM ids GROUP BY sess) s")" \
    "at1=20000 at2=20000 at3=20000 at4=20000 big=70000 gen1=20000 gen2=20000"
check "every sno_generate_at ID: a reserved partition, the meta given, its time floored to 4 ms" \
    "$(q a "SELECT count(*) FILTER (WHERE sno_partition(id) < $FIRST OR sno_meta(id) <> meta
                OR extract(epoch FROM sno_time(id)) * 1000000 <> div(extract(epoch FROM at) * 1000000, 4000) * 4000)
            FROM ids WHERE kind = 'at'")" 0
check "every sno_generate ID: a partition below the reserved range" \
    "$(q a "SELECT count(*) FROM ids WHERE kind = 'gen' AND sno_partition(id) >= $FIRST")" 0
check "the sessions had distinct partitions (one grant each, the big one two)" \
    "$(q a "SELECT count(DISTINCT sno_partition(id)) FROM ids WHERE kind = 'at'")" 6
check "sno_generate_at IDs at the current time shared 4 ms units with sno_generate's (a test of the test)" \
    "$(q a "SELECT count(*) > 10 FROM (SELECT DISTINCT sno_time(id) FROM ids WHERE kind = 'at' AND sess <> 'big'
            INTERSECT SELECT DISTINCT sno_time(id) FROM ids WHERE kind = 'gen') s")" t
check "many IDs of one session and meta in one unit (a test of the test: some unit holds 50 or more)" \
    "$(q a "SELECT max(n) >= 50 FROM (SELECT count(*) n FROM ids WHERE kind = 'at' AND sess <> 'big'
            GROUP BY sess, meta, sno_time(id)) s")" t
# Order: consecutive calls of one session and meta with non-decreasing at.
r="$(q a "SELECT count(*) FILTER (WHERE at >= pat), count(*) FILTER (WHERE at >= pat AND id <= pid)
          FROM (SELECT at, id, lag(at) OVER w AS pat, lag(id) OVER w AS pid FROM ids
                WHERE kind = 'at' WINDOW w AS (PARTITION BY sess, meta ORDER BY ord)) s")"
check "consecutive calls (session, meta) with non-decreasing at: increasing IDs (of ${r%|*} pairs)" "${r#*|}" 0
check "  (a test of the test: more than 40,000 such pairs)" "$(gt "${r%|*}" 40000)" 1
# And any two calls of one session and meta in one unit, whatever came between them.
r="$(q a "SELECT count(*), count(*) FILTER (WHERE id <= pid)
          FROM (SELECT id, lag(id) OVER (PARTITION BY sess, meta, sno_time(id) ORDER BY ord) AS pid
                FROM ids WHERE kind = 'at') s WHERE pid IS NOT NULL")"
check "calls of one session and meta in one unit, in call order: increasing IDs (of ${r%|*} pairs)" "${r#*|}" 0
check "the 70,000 IDs in one unit: two grants, the second partition higher, a new grant from the 65,537th" \
    "$(q a "SELECT count(DISTINCT sno_partition(id)),
                   max(sno_partition(id)) FILTER (WHERE ord <= 65536) < min(sno_partition(id)) FILTER (WHERE ord > 65536),
                   max(sno_sequence(id)) FILTER (WHERE ord <= 65536), min(sno_sequence(id)) FILTER (WHERE ord > 65536),
                   count(DISTINCT sno_partition(id)) FILTER (WHERE ord > 65536)
            FROM ids WHERE sess = 'big'")" "2|t|65535|0|1"
check "  and they increase in call order" \
    "$(q a "SELECT count(*) FROM (SELECT id, lag(id) OVER (ORDER BY ord) pid FROM ids WHERE sess = 'big') s WHERE id <= pid")" 0

part "4. a grant's row rolled back is written again"
# psql scripts (\gset keeps the partition of the session's grant).
out="$(q a <<'EOF' || true
BEGIN;
SELECT sno_partition(sno_generate_at(1, '2012-01-01')) AS p \gset
ROLLBACK;
SELECT :p;
SELECT count(*) FROM sno_reserved_grants WHERE partition = :p;
SELECT sno_partition(sno_generate_at(1, '2012-01-01'));
EOF
)"
p4="$(sed -n 1p <<<"$out")"
check "ROLLBACK: the grant's row is gone, the next call keeps the grant ($p4)" \
    "$(sed -n 2,3p <<<"$out" | xargs)" "0 $p4"
check "  and writes its row again (committed)" "$(q a "SELECT count(*) FROM sno_reserved_grants WHERE partition = ${p4:-0}")" 1
out="$(q a <<'EOF' || true
BEGIN;
SAVEPOINT s;
SELECT sno_partition(sno_generate_at(1, '2012-01-01')) AS p \gset
SELECT count(*) FROM sno_reserved_grants WHERE partition = :p;
ROLLBACK TO SAVEPOINT s;
SELECT :p;
SELECT count(*) FROM sno_reserved_grants WHERE partition = :p;
SELECT sno_partition(sno_generate_at(1, '2012-01-01'));
SELECT count(*) FROM sno_reserved_grants WHERE partition = :p;
COMMIT;
EOF
)"
p4s="$(sed -n 2p <<<"$out")"
check "ROLLBACK TO SAVEPOINT: the row written, rolled back, written again by the next call ($p4s)" \
    "$(xargs <<<"$out")" "1 $p4s 0 $p4s 1"
check "  committed" "$(q a "SELECT count(*) FROM sno_reserved_grants WHERE partition = ${p4s:-0}")" 1
# A savepoint rolled back, the transaction committed without another call: the next
# transaction's call writes the row.
out="$(q a <<'EOF' || true
BEGIN;
SAVEPOINT s;
SELECT sno_partition(sno_generate_at(1, '2012-01-01')) AS p \gset
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT :p;
SELECT count(*) FROM sno_reserved_grants WHERE partition = :p;
SELECT sno_partition(sno_generate_at(1, '2012-01-01'));
SELECT count(*) FROM sno_reserved_grants WHERE partition = :p;
EOF
)"
p4c="$(sed -n 1p <<<"$out")"
check "a savepoint's row lost at COMMIT: the next transaction's call writes it ($p4c)" \
    "$(xargs <<<"$out")" "$p4c 0 $p4c 1"
check "  three sessions, three grants" "$(gt "$p4c" "$p4s")$(gt "$p4s" "$p4")" 11

part "5. durability: an open grant at an immediate stop"
coproc_out="$CL_WORK/open.out"
qu a postgres postgres -c "BEGIN" -c "SELECT sno_partition(sno_generate_at(1, now()))" -c "SELECT pg_sleep(120)" \
    >"$coproc_out" 2>&1 &
open_pid=$!
for _ in $(seq 100); do grep -qs '^6[0-9]*$' "$coproc_out" && break; sleep 0.1; done
p_open="$(grep -s '^6[0-9]*$' "$coproc_out" | head -n 1 || true)"
check "a session granted $p_open, its transaction open" "$(gt "$p_open" $((FIRST - 1)))" 1
before_crash="$(state_granted a)"
node_stop a immediate
wait "$open_pid" 2>/dev/null || true
node_start a || die "a did not restart"
check "after the restart, the open grant's row is gone" \
    "$(q a "SELECT count(*) FROM sno_reserved_grants WHERE partition = $p_open")" 0
p5="$(grant_one a || true)"
check "the next grant ($p5) is above every grant before the stop (the highest $p_open)" \
    "$(gt "$p5" "$(max_line <<<"$before_crash")")|$(gt "$p5" "$p_open")" "1|1"
# shellcheck disable=SC2086 # lists
check_distinct "  and none granted before" "$p5" $before_crash
allrows="$(rows a)"
nrows="$(wc -l <<<"$allrows")"
LOST+=("$p_open")
nlost=${#LOST[@]}
# SPENT: grants part 2 saw spent without an ID (0 unless it failed): no partition known.
want=$((nrows + nlost + SPENT))
check "the view: granted = the rows of every database's sno_reserved_grants + the $nlost rolled back (by q1, by the stop) + $SPENT spent; none live; the rest remaining" \
    "$(view a)" "$want|0|$((4096 - want))|t"
(echo "$allrows"; printf '%s\n' "${LOST[@]}") | sort -n >"$CL_WORK/want.granted"
state_granted a >"$CL_WORK/state.granted"
check "the state file's granted= line names exactly those partitions (and $SPENT more)" \
    "$(comm -23 "$CL_WORK/want.granted" "$CL_WORK/state.granted" | xargs)|$(wc -l <"$CL_WORK/state.granted")" "|$want"

part "6. a synchronous standby, then its promotion"
node_basebackup a b standby
node_clock_mode b none
node_cmdline b shared_preload_libraries=sno
node_start b || die "b did not start"
node_make_sync a
check "b is a synchronous standby" "$(q a "SELECT sync_state FROM pg_stat_replication")" sync
expect_state "sno_generate_at on the standby" 25006 b postgres postgres "SELECT sno_generate_at(1, now())"
check "  the standby's view: may not grant" "$(view b | cut -d'|' -f4)" f
for _ in 1 2 3; do grant_one a >/dev/null; done
node_wait_catchup b a
check "the standby's view shows the primary's grants (WAL replayed)" "$(view b | cut -d'|' -f1)" "$(view a | cut -d'|' -f1)"
check "  and its state file names them" "$(state_granted b | xargs)" "$(state_granted a | xargs)"
p6="$(grant_one a || true)"
node_promote b
a_granted="$(state_granted a)"
check "a's last grant $p6 was right before the promotion" "$(max_line <<<"$a_granted")" "$p6"
pb="$(grant_one b || true)"
check "the promoted standby's first grant ($pb) is above every grant of the old primary" "$(gt "$pb" "$p6")" 1
# shellcheck disable=SC2086 # lists
check_distinct "  and none of them" "$pb" $a_granted
node_stop a immediate

part "7. a clone beside its original"
grant_one b >/dev/null
q b "INSERT INTO ids (id, kind, sess, ord, meta) SELECT sno_generate(1), 'gen', 'b', g, 1 FROM generate_series(1, 1000) g"
pbl="$(q b "SELECT DISTINCT sno_partition(id) FROM ids WHERE sess = 'b'")"
node_basebackup b c
node_clock_mode c none
node_cmdline c shared_preload_libraries=sno
node_start c || die "c did not start"
b_granted="$(state_granted b)"
n7="$(q c "INSERT INTO ids (id, kind, sess, ord, meta) SELECT sno_generate(1), 'gen', 'c', g, 1
           FROM generate_series(1, 1000) g ON CONFLICT (id) DO NOTHING RETURNING sno_partition(id)" | sort | uniq -c | xargs || true)"
pc="${n7#* }"
check "the clone makes IDs with sno_generate (1,000, none a duplicate), with a derived partition of its own ($pc, the original's $pbl)" \
    "${n7%% *}|$(gt $FIRST "$pc")|$([[ "$pc" != "$pbl" ]] && echo own)" "1000|1|own"
check "  its view: may not grant" "$(view c | cut -d'|' -f4)" f
expect_state "the clone refuses sno_generate_at" 55000 c postgres postgres "SELECT sno_generate_at(1, now())"
check "  as a copy" "$(msg_field ERROR "$SAID" | grep -c 'this server is a copy of another and grants no reserved sno partition')" 1
hint="$(msg_field HINT "$SAID")"
stmt="$(hint_sql "$hint" 1 || true)"
check "  its HINT's statement" "$stmt" "SELECT sno_generator_initialize(take_over => true);"
# The HINT's condition: the original and its standbys never make IDs again.
grep -q "that server and its standbys will never make IDs again" <<<"$hint" || bad "the HINT's condition changed: $hint"
node_stop b immediate
check "take_over as printed" "$(q c "$stmt")" t
check "  its view: may grant" "$(view c | cut -d'|' -f4)" t
pc2="$(grant_one c || true)"
check "then the clone grants ($pc2), above every grant of its original" "$(gt "$pc2" "$(max_line <<<"$b_granted")")" 1
# shellcheck disable=SC2086 # lists
check_distinct "  and none of them" "$pc2" $b_granted

part "8. an explicit sno.partition in the reserved range"
node_alter c sno.partition 63000
node_reload c sno.partition 63000
expect_state "sno.partition 63000: sno_generate refuses" 55000 c postgres postgres "SELECT sno_generate(1)"
check "  the message" "$(msg_field ERROR "$SAID")" "sno.partition 63000 is in the reserved range 61440-65535"
hint="$(msg_field HINT "$SAID")"
# The HINT's list (A + B * k, k from X down to Y): the first that no server here used.
read -r ha hb hx hy < <(sed -n 's/.*(\([0-9]*\) + \([0-9]*\) \* k, k from \([0-9]*\) down to \([0-9]*\)).*/\1 \2 \3 \4/p' <<<"$hint") ||
    bad "no list of partitions in the HINT: $hint"
used_live="$(q c "SELECT DISTINCT sno_partition(id) FROM ids WHERE kind = 'gen'" | xargs) $pc"
newp=""
for ((k = ${hx:-0}; k >= ${hy:-1}; k--)); do
    cand=$((ha + hb * k))
    [[ " $used_live " == *" $cand "* ]] || { newp=$cand; break; }
done
check "  the HINT proposes partitions below 61440, the first free $newp" "$(gt $FIRST "${newp:-$FIRST}")" 1
node_alter c sno.partition "$newp"
node_reload c sno.partition "$newp"
n8="$(q c "INSERT INTO ids (id, kind, sess, ord, meta) SELECT sno_generate(1), 'gen', 'c8', g, 1
           FROM generate_series(1, 20000) g ON CONFLICT (id) DO NOTHING RETURNING sno_partition(id)" | sort | uniq -c | xargs || true)"
check "with the HINT's partition: 20,000 IDs with it, none a duplicate of the $(q c "SELECT count(*) - 20000 FROM ids") earlier ones" \
    "$n8" "20000 $newp"
node_alter c sno.partition "$pc2"
node_reload c sno.partition "$pc2"
expect_state "sno.partition $pc2 (granted to sno_generate_at): refused" 55000 c postgres postgres "SELECT sno_generate(1)"
check "  as granted" "$(msg_field DETAIL "$SAID" | grep -c "Partition $pc2 was granted to sno_generate_at")" 1
node_stop c

part "9b. the dump restored into a fresh cluster"
node_init f
node_clock_mode f none
node_cmdline f shared_preload_libraries=sno
node_start f || die "f did not start"
q f "CREATE DATABASE legacy" >/dev/null
node_client f pg_restore -d legacy "$CL_WORK/legacy.dump" 2>&1 | grep -v '^$' || true
check "the restored sno_reserved_grants names the original's grants" \
    "$(qd f legacy "SELECT string_agg(partition::text, ',' ORDER BY partition) FROM sno_reserved_grants")" "$legacy_grants"
check "  and legacy's 6,000 rows" "$(qd f legacy "SELECT count(*) FROM legacy")" 6000
# The table's trigger recorded each restored row in the server's lineage as pg_restore loaded
# it: before any grant here, the view counts them, and its state file names them.
check "  before any grant its view counts the 3 restored grants (the table's trigger)" "$(view f legacy)" "3|0|4093|t"
check "  and its state file names them" \
    "$(sed -n 's/^granted=//p' "$(node_data f)/sno_generator.state")" "$(qd f legacy "SELECT min(partition) || '-' || max(partition) FROM sno_reserved_grants")"
# A second database of the fresh server, never restored: its first grant avoids them too.
q f "CREATE DATABASE other" >/dev/null
qd f other "CREATE EXTENSION sno" >/dev/null
og="$(qd f other "SELECT sno_partition(sno_generate_at(1, '2020-01-01 00:00:00+00'))")"
# shellcheck disable=SC2086 # a list
check_distinct "another database of the fresh server: a grant none of the restored rows names" "$og" ${legacy_grants//,/ }
newg=()
for k in 1 2 3; do
    newg+=("$(qd f legacy "INSERT INTO legacy SELECT sno_generate_at(1, t), t, 'new$k'
        FROM (SELECT timestamptz '2020-01-01 00:00:00+00' + (g % 50) * interval '4 ms' t FROM generate_series(1, 2000) g) s
        ON CONFLICT (id) DO NOTHING RETURNING sno_partition(id)" | sort -u | xargs || true)")
done
check "the fresh cluster's view: the 3 restored grants, the other database's and its 3 new ones" "$(view f legacy)" "7|0|4089|t"
for k in 0 1 2; do
    # shellcheck disable=SC2086 # a list
    check_distinct "fresh cluster, session $((k + 1)): a grant none of the restored rows names" "${newg[$k]}" ${legacy_grants//,/ }
done
check "the new IDs for the same times met the restored ones in one primary key: no conflict" \
    "$(qd f legacy "SELECT count(*) FILTER (WHERE origin LIKE 'old%') || '|' || count(*) FILTER (WHERE origin LIKE 'new%') FROM legacy")" \
    "6000|6000"
node_stop f

# ---------------------------------------------------------------------------------------------
part "10. the grants table's trigger, a prepared transaction, a lost state file"
node_init l
node_clock_mode l none
node_cmdline l shared_preload_libraries=sno max_prepared_transactions=2
node_start l || die "l did not start"
q l "CREATE EXTENSION sno" "CREATE ROLE eve LOGIN" "CREATE DATABASE second" >/dev/null
qd l second "CREATE EXTENSION sno" >/dev/null
# Another role attaching sno's trigger function to a table of its own: refused (no EXECUTE),
# and the function refuses any other table even where a superuser attaches it.
expect_state "another role cannot attach the grants trigger to its own table" 42501 l postgres eve \
    "CREATE TEMP TABLE t (partition int)" \
    "CREATE TRIGGER x AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION sno_reserved_grants_noted()"
expect_state "attached to another table by a superuser, it refuses to act" 39P01 l postgres postgres \
    "CREATE TEMP TABLE t (partition int)" \
    "CREATE TRIGGER x AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION sno_reserved_grants_noted()" \
    "INSERT INTO t VALUES (65000)"
check "  and nothing was recorded" "$(view l | cut -d'|' -f1)" 0
# A prepared transaction holding the grant's row: the session's next call takes a new grant
# instead of waiting for it.
try l postgres postgres "SET statement_timeout = '5s'" "BEGIN" "SELECT sno_generate_at(1, now())" \
    "PREPARE TRANSACTION 'p1'" "SELECT sno_partition(sno_generate_at(1, now()))"
check "after PREPARE TRANSACTION the session's next call does not wait" "$STATE" ok
q l "COMMIT PREPARED 'p1'" >/dev/null
# Grants in two databases, then the state file lost: grants are refused (the server no longer
# knows them) until the HINT is followed: every database read back, then take_over.
g1="$(grant_one l)"
g2="$(grant_one l second)"
node_stop l
rm -f "$(node_state_file l)"
node_start l || die "l did not restart"
q l "SELECT sno_generate(1)" >/dev/null || bad "sno_generate after the lost file"
expect_state "after a lost state file, sno_generate_at is refused" 55000 l second postgres \
    "SELECT sno_generate_at(1, now())"
hint="$(msg_field HINT "$SAID")"
relearn="$(hint_sql "$hint" 2 || true)"
takeover="$(hint_sql "$hint" 1 || true)"
check "  its HINT: read every database back" "$relearn" "SELECT sno_reserved_relearn();"
check "  then take_over" "$takeover" "SELECT sno_generator_initialize(take_over => true);"
check "  relearn in database postgres, as printed" "$(q l "$relearn")" "$(q l "SELECT count(*) FROM sno_reserved_grants")"
check "  relearn in database second, as printed" "$(qd l second "$relearn")" "$(qd l second "SELECT count(*) FROM sno_reserved_grants")"
check "  take_over, as printed" "$(q l "$takeover")" t
g3="$(grant_one l second || true)"
# shellcheck disable=SC2086 # lists
check_distinct "then the server grants ($g3), none it granted before the loss" "$g3" $(q l "SELECT partition FROM sno_reserved_grants WHERE partition <> $g3") $(qd l second "SELECT partition FROM sno_reserved_grants WHERE partition <> $g3")
check "  (the earlier grants were $g1 and $g2)" "$(q l "SELECT count(*) FROM sno_reserved_grants WHERE partition IN ($g1, $g2)")$(qd l second "SELECT count(*) FROM sno_reserved_grants WHERE partition IN ($g1, $g2)")" "11"
node_stop l

echo "reserved_space: $((SECONDS - T0)) s"
exit "$fail"
