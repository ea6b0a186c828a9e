#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=2 timeout=1200 estimate=200
# sno keys as the time dimension of a TimescaleDB 2.28.3 hypertable, on a real server with
# shared_preload_libraries = 'timescaledb,sno', under a fixed clock (libfaketime: now() is
# 2026-03-15 12:00 UTC plus the test's run time, so its golden file holds on any day):
#  1. CREATE TABLE m (id sno PRIMARY KEY DEFAULT sno_generate(1), v int) and create_hypertable
#     by_range('id', interval '1 day', partition_func => 'sno_time'): rows by sno_generate_at
#     (1, at) over ten days (as superuser, and as a role once granted EXECUTE on it: refused
#     before with 42501), rows on both sides of each midnight, rows by sno_generate (now): ten
#     chunks of one day each, every row in the chunk whose range holds sno_time(id); the chunks'
#     CHECK constraints are on sno_time(id), the catalog names public.sno_time as the dimension's
#     partitioning function, no trigger marks the hypertable, and
#     timescaledb_information.chunks has no range_start/range_end for it (range_start_integer,
#     microseconds since 1970, is there). A set of queries answers as an unpartitioned copy.
#  2. Golden (tests/timescaledb/expected/timescaledb.out): for each query shape its rows, how
#     many chunks are planned, how many excluded at executor startup and which days are
#     scanned: sno_time(id) > constant / now() - interval / BETWEEN; id > sno_min(constant /
#     now() - interval); id BETWEEN sno_min(a) AND sno_max(b) (constants and now()); id =
#     constant; generic plans of id = $1 and sno_time(id) >= $1; and the derived clause
#     sno_time(id) >= sno_time(X) (= for =) written by hand next to id > X, id BETWEEN and
#     id = $1. sno's planner hook adds that clause itself on a hypertable when X is known only
#     at execution (now(), a generic plan's parameter): those shapes exclude chunks at startup
#     too; with constants it adds none. Estimated against actual rows printed for some of
#     them (not compared).
#  3. TimescaleDB 2.28.3 answers id >= X and id < X wrongly when X's 4 ms unit begins a chunk
#     and X is not the smallest ID of that unit (it applies sno_time to X and keeps the strict
#     or non-strict operator: the chunk starting there is excluded for <, its rows all
#     returned for >=): the exact differences from the copy checked, for a row's ID and for
#     sno_max(midnight), and the workarounds (id <= X AND id <> X; SET
#     timescaledb.enable_qual_filtering = off for >=; a generic plan).
#  4. drop_chunks('m', older_than => timestamptz) drops exactly the chunks that end before it;
#     add_retention_policy(drop_after => interval) and CALL run_job drop those that end before
#     now() - drop_after; rows checked against the copy.
#  5. Compression: ALTER TABLE m SET (timescaledb.compress, ...) and compress_chunk (answers
#     unchanged; sno's id bounds reach the compressed chunk's min/max metadata; a row inserted
#     into a compressed chunk); add_compression_policy(compress_after => ...) is accepted but
#     its job fails with "case not found" (timescale/timescaledb#6537: the policy casts the lag
#     by the column's type); add_compression_policy(compress_created_before => ...) works:
#     after the clock is moved 8 days on, its job compresses every chunk created before and
#     not a chunk created since.
#  6. A continuous aggregate over time_bucket('1 hour', sno_time(id)) is refused (0A000,
#     timescale/timescaledb#2401); the same query as a plain materialized view works.
#  7. TimescaleDB's scheduler runs a retention policy by itself (the old chunk goes, on a
#     hypertable of its own, on the real clock) but records the run as failed on PostgreSQL
#     15.20: "cannot drop portal "" while it is being set up" (24000: TimescaleDB's job runner
#     drops, after the job committed, a portal it created, which 15.20 refuses); the same on a
#     second server with only timescaledb preloaded and a timestamptz hypertable. The other
#     parts run with the scheduler off (timescaledb.max_background_workers = 0) and run each
#     policy's job with CALL run_job. This part preloads the libraries the other way round
#     (sno,timescaledb), and creates sno before timescaledb in a database of its own (chunks
#     still excluded at startup).
#
# TimescaleDB is built from the shared sources and installed into Debian's PostgreSQL 15 first
# if it is missing (tests/timescaledb/timescaledb.bash: about a minute on 2 cores, once).
# SNO_TIMESCALEDB_GOLDEN=update writes the golden file from this run instead of comparing.
#
# Usage: SNO_PG_MAJOR=15 timescaledb.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: its own
# cluster on ports PORT+700 .. PORT+729). Any other SNO_PG_MAJOR: skipped (TimescaleDB 2.28.3 is
# built for Debian's PostgreSQL 15 only).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped timescaledb.sh: TimescaleDB is tested on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=cluster.bash
source "$HERE/cluster.bash"
# shellcheck source=../timescaledb/timescaledb.bash
source "$HERE/../timescaledb/timescaledb.bash"
GOLDEN="$HERE/../timescaledb/expected/timescaledb.out"

pgc="$3/pg_config"
[[ -x "$pgc" ]] || pgc=/usr/lib/postgresql/15/bin/pg_config
timescaledb_ensure "$pgc" || { echo "FAIL: TimescaleDB $TIMESCALEDB_VERSION could not be installed"; exit 1; }
harness_setup timescaledb "$3" $(($2 + 700)) $(($2 + 729))
T0=$SECONDS
export PGTZ=UTC

# The manual's TimescaleDB SQL (doc/time-partitions.md, blocks fenced ```sql timescaledb): every
# statement of it is one this test runs, word for word (whitespace and a final ; aside).
doc_stmts="$(python3 - "$HERE/../../doc/time-partitions.md" "$HERE/timescaledb.sh" <<'PY'
import re, sys
page, script = open(sys.argv[1]).read(), open(sys.argv[2]).read()
norm = lambda t: re.sub(r"\s+", " ", t).strip()
body = norm(script)
stmts, cur, inb = [], [], False
for line in page.split("\n"):
    if line == "```sql timescaledb":
        inb = True
    elif inb and line == "```":
        inb = False
    elif inb and not line.lstrip().startswith("--") and line.strip():
        cur.append(line)
        if line.rstrip().endswith(";") or line.rstrip().endswith("\\gset"):
            stmts.append(norm(" ".join(cur)))
            cur = []
print(len(stmts))
for st in stmts:
    if st.rstrip(";").rstrip() not in body:   # the script's statements may lack the ;
        print("NOT RUN: " + st)
PY
)"
check "every statement of the manual's TimescaleDB blocks ($(head -n 1 <<<"$doc_stmts")) is one this test runs" \
    "$(tail -n +2 <<<"$doc_stmts")" ""

# part TITLE: a part's heading, with the seconds since the start (after the build).
part() { echo "--- $* ($((SECONDS - T0)) s)"; }
# q SQL...: the statements in one session of database postgres (as postgres), results printed.
q() { node_sql a "$@"; }
# qf: the psql script on stdin, in one session (as postgres), results printed.
qf() { node_psql a -f -; }
# qu USER SQL: one statement as USER; everything psql says printed (never fails).
qu() {
    "${CL_BIN[a]}/psql" -X -q -At -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -h "$CL_WORK" -p "${CL_PORT[a]}" \
        -U "$1" -d postgres -c "$2" 2>&1 || true
}
# err: the psql script on stdin, in one session, expected to fail: ERR is "SQLSTATE message" of
# its first error ("no error" when it ran through), SAID everything psql said.
SAID="" ERR=""
err() {
    if SAID="$(node_psql a -v VERBOSITY=verbose -f - 2>&1)"; then
        ERR="no error"
    else
        ERR="$(sqlstate_of "$SAID")"
    fi
}
# sqlstate_of TEXT: "SQLSTATE message" of the first ERROR line of psql's verbose output.
sqlstate_of() { sed -n 's/^\(psql:[^ ]* \)\{0,1\}ERROR:  \([0-9A-Z]\{5\}\): \(.*\)$/\2 \3/p' <<<"$1" | head -n 1; }

# clock_at TIMESTAMP: the libfaketime offset that makes this machine's clock read TIMESTAMP now.
clock_at() {
    local d
    d=$(($(date -u -d "$1" +%s) - $(date -u +%s)))
    if ((d >= 0)); then echo "+${d}s"; else echo "${d}s"; fi
}

# sno_files_wait: waits (up to 5 minutes) until sno's library and control file are installed:
# a CI run on this machine removes and reinstalls them at times.
sno_files_wait() {
    local i lib share
    lib="$("$pgc" --pkglibdir)" share="$("$pgc" --sharedir)/extension"
    for ((i = 0; i < 300; i++)); do
        [[ -f "$lib/sno.so" && -f "$share/sno.control" && -f "$lib/timescaledb.so" ]] && return 0
        ((i % 30 == 0)) && echo "    (sno's or TimescaleDB's files are not installed in $lib: waiting)"
        sleep 1
    done
    die "no sno.so / sno.control / timescaledb.so in $lib after 5 minutes"
}

# start_a [SCHEDULER]: starts node a with TimescaleDB and sno preloaded, telemetry off, and
# TimescaleDB's scheduler off; with SCHEDULER "scheduler", the scheduler on and the libraries
# preloaded the other way round (sno,timescaledb).
start_a() {
    local s=("shared_preload_libraries=timescaledb,sno" timescaledb.max_background_workers=0)
    [[ "${1:-}" == scheduler ]] && s=("shared_preload_libraries=sno,timescaledb")
    node_cmdline a "${s[@]}" timescaledb.telemetry_level=off
    sno_files_wait
    node_start a || die "the server did not start"
}

# ---------------------------------------------------------------------------------------------
part "1. a hypertable keyed by sno, rows over ten days"
node_init a
# The clock: 2026-03-15 12:00:00 UTC when the server starts (all of the test's times are fixed
# relative to it; moved 8 days on in part 5).
CLOCK="$(clock_at "2026-03-15 12:00:00")"
node_clock a "$CLOCK"
start_a
q "ALTER DATABASE postgres SET timezone = 'UTC'" "CREATE EXTENSION timescaledb" "CREATE EXTENSION sno" >/dev/null
check "the server's clock is the test's (2026-03-15 12:00 UTC and the seconds since)" \
    "$(q "SELECT now() BETWEEN '2026-03-15 12:00+00' AND '2026-03-15 12:05+00'")" t

qf >/dev/null <<'SQL'
CREATE TABLE m (id sno PRIMARY KEY DEFAULT sno_generate(1), v int);
SELECT create_hypertable('m', by_range('id', interval '1 day', partition_func => 'sno_time'));
-- Three rows an hour, at :10, :30 and :50, from 2026-03-06 00:10 to 2026-03-15 10:50.
INSERT INTO m (id, v)
SELECT sno_generate_at(1, t), g
FROM (SELECT g, timestamptz '2026-03-06 00:10+00' + (g / 3) * interval '1 hour' + (g % 3) * interval '20 minutes' AS t
      FROM generate_series(0, 680) g) s;
-- At each midnight from 2026-03-07 to 2026-03-15: a row made for that instant (v = -1), the
-- smallest ID of its 4 ms unit (v = -2), and the largest ID of the unit before (v = -3).
INSERT INTO m (id, v)
SELECT x.id, x.v
FROM generate_series(timestamptz '2026-03-07 00:00+00', '2026-03-15 00:00+00', interval '1 day') d,
     LATERAL (VALUES (sno_generate_at(1, d), -1), (sno_min(d), -2), (sno_max(d - interval '4 ms'), -3)) x(id, v);
-- 100 rows made now.
INSERT INTO m (v) SELECT 1000 + g FROM generate_series(1, 100) g;
CREATE ROLE loader LOGIN;
GRANT INSERT, SELECT ON m TO loader;
SQL

out="$(qu loader "INSERT INTO m (id, v) VALUES (sno_generate_at(1, '2026-03-14 08:00+00'), 7000);")"
check "a role without EXECUTE on sno_generate_at is refused" "$(sqlstate_of "$out")" \
    "42501 permission denied for function sno_generate_at"
q "GRANT EXECUTE ON FUNCTION sno_generate_at(int4, timestamptz) TO loader;" >/dev/null
out="$(qu loader "INSERT INTO m (id, v) VALUES (sno_generate_at(1, '2026-03-14 08:00+00'), 7000);")"
check "granted EXECUTE, the role inserts a row for a past time" "$out" ""

# The unpartitioned copy, and the helpers of the checks.
qf >/dev/null <<'SQL'
CREATE TABLE m_plain AS SELECT * FROM m;
ALTER TABLE m_plain ADD PRIMARY KEY (id);
ANALYZE m;
ANALYZE m_plain;
-- The chunks of m with their ranges (timescaledb_information.chunks has range_start and
-- range_end only for time-typed columns; for a sno column it has range_start_integer).
CREATE VIEW chunk_days AS
SELECT format('%I.%I', chunk_schema, chunk_name)::regclass AS chunk, chunk_name,
       _timescaledb_functions.to_timestamp(range_start_integer) AS range_start,
       _timescaledb_functions.to_timestamp(range_end_integer) AS range_end,
       to_char(_timescaledb_functions.to_timestamp(range_start_integer), 'MM-DD') AS day,
       is_compressed
FROM timescaledb_information.chunks WHERE hypertable_schema = 'public' AND hypertable_name = 'm';
-- The days of m's chunks (those matching the filter), in order.
CREATE FUNCTION days(compressed bool DEFAULT NULL) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(string_agg(day, ' ' ORDER BY day), 'none') FROM chunk_days
    WHERE compressed IS NULL OR is_compressed = compressed
$$;
CREATE FUNCTION count_of(q text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    EXECUTE q INTO n;
    RETURN n;
END
$$;
-- Queries answered by m and by m_plain (%1$s: the table).
CREATE TABLE answers (ord serial, label text, sql text);
INSERT INTO answers (label, sql) VALUES
    ('count, min, max, sum', $q$SELECT count(*) || ' ' || min(id) || ' ' || max(id) || ' ' || sum(v) FROM %1$s$q$),
    ('rows around a midnight', $q$SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM %1$s WHERE sno_time(id) BETWEEN '2026-03-09 23:00+00' AND '2026-03-10 01:00+00'$q$),
    ('rows per day', $q$SELECT string_agg(d || '=' || c, ',' ORDER BY d) FROM (SELECT time_bucket('1 day', sno_time(id)) d, count(*) c FROM %1$s GROUP BY 1) s$q$),
    ('rows per meta', $q$SELECT string_agg(k || '=' || c, ',' ORDER BY k) FROM (SELECT sno_meta(id) k, count(*) c FROM %1$s GROUP BY 1) s$q$),
    ('last 5 by id', $q$SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM (SELECT id FROM %1$s ORDER BY id DESC LIMIT 5) s$q$),
    ('a page before a midnight', $q$SELECT string_agg(id::text, ',' ORDER BY id DESC) FROM (SELECT id FROM %1$s WHERE id < sno_min('2026-03-12 00:00+00') ORDER BY id DESC LIMIT 3) s$q$),
    ('two days by id, half-open', $q$SELECT md5(string_agg(id::text, ',' ORDER BY id)) FROM %1$s WHERE id >= sno_min('2026-03-11 00:00+00') AND id < sno_min('2026-03-13 00:00+00')$q$),
    ('sno_time(id) = a midnight', $q$SELECT count(*) FROM %1$s WHERE sno_time(id) = '2026-03-12 00:00+00'$q$),
    ('sno_time(id) < a midnight', $q$SELECT count(*) FROM %1$s WHERE sno_time(id) < '2026-03-12 00:00+00'$q$),
    ('id <= sno_max(midnight)', $q$SELECT count(*) FROM %1$s WHERE id <= sno_max('2026-03-12 00:00+00')$q$),
    ('id > sno_max(midnight)', $q$SELECT count(*) FROM %1$s WHERE id > sno_max('2026-03-12 00:00+00')$q$),
    ('self-join on the key', $q$SELECT count(*) FROM %1$s a JOIN %1$s b ON b.id = a.id WHERE sno_time(a.id) >= '2026-03-14 00:00+00'$q$),
    ('time_bucket of an hour', $q$SELECT md5(string_agg(b || '=' || c, ',' ORDER BY b)) FROM (SELECT time_bucket('1 hour', sno_time(id)) b, count(*) c FROM %1$s WHERE sno_time(id) > now() - interval '3 days' GROUP BY 1) s$q$);
-- The labels of the queries whose answers differ between m and m_plain ('' when none).
CREATE FUNCTION answers_differ() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    r record;
    a text;
    b text;
    bad text[] := '{}';
BEGIN
    FOR r IN SELECT * FROM answers ORDER BY ord LOOP
        EXECUTE format(r.sql, 'm') INTO a;
        EXECUTE format(r.sql, 'm_plain') INTO b;
        IF a IS DISTINCT FROM b THEN
            bad := bad || format('%s (hypertable %s, copy %s)', r.label, a, b);
        END IF;
    END LOOP;
    RETURN array_to_string(bad, '; ');
END
$$;
SQL

check "ten chunks, one a day" "$(q "SELECT days()")" "03-06 03-07 03-08 03-09 03-10 03-11 03-12 03-13 03-14 03-15"
check "each chunk's range is one day, from midnight UTC" \
    "$(q "SELECT bool_and(range_end - range_start = interval '1 day' AND range_start = date_trunc('day', range_start)) FROM chunk_days")" t
check "every row is in the chunk whose range holds sno_time(id) (rows in range / rows / rows of the copy)" \
    "$(q "SELECT count(*) FILTER (WHERE sno_time(m.id) >= c.range_start AND sno_time(m.id) < c.range_end)
                 || '/' || count(*) || '/' || (SELECT count(*) FROM m_plain)
          FROM m JOIN chunk_days c ON c.chunk = m.tableoid")" "809/809/809"
check "the catalog: the dimension is column id, partitioning function public.sno_time, 1 day" \
    "$(q "SELECT column_name || ' ' || partitioning_func_schema || '.' || partitioning_func || ' ' || interval_length
          FROM _timescaledb_catalog.dimension d JOIN _timescaledb_catalog.hypertable h ON h.id = d.hypertable_id
          WHERE h.table_name = 'm'")" "id public.sno_time 86400000000"
check "a chunk's CHECK constraint is on sno_time(id)" \
    "$(q "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c JOIN chunk_days d ON c.conrelid = d.chunk
          WHERE d.day = '03-10' AND c.contype = 'c'")" \
    "CHECK (((sno_time(id) >= '2026-03-10 00:00:00+00'::timestamp with time zone) AND (sno_time(id) < '2026-03-11 00:00:00+00'::timestamp with time zone)))"
check "no trigger on the hypertable (2.23.0 dropped ts_insert_blocker)" \
    "$(q "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'm'::regclass")" 0
check "timescaledb_information.chunks: range_start and range_end NULL for a sno dimension, range_start_integer set" \
    "$(q "SELECT bool_and(range_start IS NULL AND range_end IS NULL AND range_start_integer IS NOT NULL)
          FROM timescaledb_information.chunks WHERE hypertable_name = 'm'")" t
check "the chunks by timescaledb_information.chunks, ranges from range_start_integer (the first)" "$(qf <<'SQL' | head -n 1
SELECT chunk_name, _timescaledb_functions.to_timestamp(range_start_integer) AS range_start,
       _timescaledb_functions.to_timestamp(range_end_integer) AS range_end
FROM timescaledb_information.chunks WHERE hypertable_name = 'm' ORDER BY range_start;
SQL
)" "_hyper_1_1_chunk|2026-03-06 00:00:00+00|2026-03-07 00:00:00+00"
check "the loader's row is in the chunk of 03-14" \
    "$(q "SELECT d.day FROM m JOIN chunk_days d ON d.chunk = m.tableoid WHERE m.v = 7000")" "03-14"
check "the hypertable answers every query of the set as the copy does" "$(q "SELECT answers_differ()")" ""

# ---------------------------------------------------------------------------------------------
part "2. chunks scanned by each query shape (golden)"
# The midnight row made by sno_generate_at for 2026-03-12 00:00 (not the smallest ID of its
# 4 ms unit: that is the v = -2 row beside it).
X="$(q "SELECT id FROM m WHERE v = -1 AND sno_time(id) = '2026-03-12 00:00+00'")"
golden_out="$CL_WORK/timescaledb.out"
qf >"$golden_out" <<'SQL'
-- scans(q): "ROWS rows | planned P of N chunks, S excluded at startup | scans DAYS" for the
-- query q (a count), from EXPLAIN ANALYZE: the chunks it scans (by day), those ChunkAppend
-- excluded at executor startup, and the rest excluded when it was planned.
CREATE FUNCTION scans(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    l text;
    r text[];
    names text[] := '{}';
    startup int := 0;
    total int;
    scanned text;
BEGIN
    SELECT count(*) INTO total FROM chunk_days;
    FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, SUMMARY OFF, TIMING OFF) ' || q LOOP
        r := regexp_match(l, 'Chunks excluded during startup: (\d+)');
        IF r IS NOT NULL THEN
            startup := startup + r[1]::int;
        END IF;
        FOR r IN SELECT regexp_matches(l, ' on (_hyper_\d+_\d+_chunk)\M', 'g') LOOP
            IF NOT r[1] = ANY (names) THEN
                names := names || r[1];
            END IF;
        END LOOP;
    END LOOP;
    SELECT coalesce(string_agg(day, ' ' ORDER BY day), 'none') INTO scanned FROM chunk_days WHERE chunk_name = ANY (names);
    RETURN format('%s rows | planned %s of %s chunks, %s excluded at startup | scans %s',
                  count_of(q), cardinality(names) + startup, total, startup, scanned);
END
$$;
-- The shapes: label, the query on m, the same on m_plain (NULL: the query with m_plain for m),
-- and whether TimescaleDB 2.28.3 answers it wrongly (part 3).
CREATE TABLE shapes (ord serial, label text, q text, q_plain text, wrong bool DEFAULT false);
INSERT INTO shapes (label, q) SELECT p, 'SELECT count(*) FROM m WHERE ' || p FROM unnest(ARRAY[
    $p$sno_time(id) > '2026-03-12 06:00+00'$p$,
    $p$sno_time(id) > now() - interval '1 hour'$p$,
    $p$sno_time(id) > now() - interval '2 days'$p$,
    $p$sno_time(id) BETWEEN '2026-03-09 12:00+00' AND '2026-03-10 12:00+00'$p$,
    $p$id > sno_min('2026-03-12 06:00+00')$p$,
    $p$id > sno_min(now() - interval '1 hour')$p$,
    $p$id BETWEEN sno_min('2026-03-09 12:00+00') AND sno_max('2026-03-10 12:00+00')$p$,
    $p$id BETWEEN sno_min(now() - interval '2 days') AND sno_max(now() - interval '1 day')$p$,
    $p$id = '9ftgum2222222222'$p$]) WITH ORDINALITY u(p, n) ORDER BY n;
PREPARE by_id(sno) AS SELECT count(*) FROM m WHERE id = $1;
PREPARE since(timestamptz) AS SELECT count(*) FROM m WHERE sno_time(id) >= $1;
PREPARE by_id_derived(sno) AS SELECT count(*) FROM m WHERE id = $1 AND sno_time(id) = sno_time($1);
SET plan_cache_mode = force_generic_plan;
INSERT INTO shapes (label, q, q_plain) VALUES
    ('id = $1, generic plan', $q$EXECUTE by_id('9ftgum2222222222')$q$, $q$SELECT count(*) FROM m_plain WHERE id = '9ftgum2222222222'$q$),
    ('sno_time(id) >= $1, generic plan', $q$EXECUTE since('2026-03-13 12:00+00')$q$, $q$SELECT count(*) FROM m_plain WHERE sno_time(id) >= '2026-03-13 12:00+00'$q$);
-- The derived clause written by hand: what sno's planner hook could add on hypertables.
INSERT INTO shapes (label, q) SELECT 'derived: ' || p, 'SELECT count(*) FROM m WHERE ' || p FROM unnest(ARRAY[
    $p$id > sno_min(now() - interval '1 hour') AND sno_time(id) >= sno_time(sno_min(now() - interval '1 hour'))$p$,
    $p$id BETWEEN sno_min(now() - interval '2 days') AND sno_max(now() - interval '1 day') AND sno_time(id) BETWEEN sno_time(sno_min(now() - interval '2 days')) AND sno_time(sno_max(now() - interval '1 day'))$p$]) WITH ORDINALITY u(p, n) ORDER BY n;
INSERT INTO shapes (label, q, q_plain) VALUES
    ('derived: id = $1 AND sno_time(id) = sno_time($1), generic plan', $q$EXECUTE by_id_derived('9ftgum2222222222')$q$, $q$SELECT count(*) FROM m_plain WHERE id = '9ftgum2222222222'$q$);
-- Wrong answers (part 3), and the workaround of the first.
INSERT INTO shapes (label, q, wrong) SELECT p, 'SELECT count(*) FROM m WHERE ' || p, w FROM (VALUES
    ($p$id < sno_max('2026-03-12 00:00+00')$p$, true),
    ($p$id >= sno_max('2026-03-12 00:00+00')$p$, true),
    ($p$id <= sno_max('2026-03-12 00:00+00') AND id <> sno_max('2026-03-12 00:00+00')$p$, false)) v(p, w);
UPDATE shapes SET q_plain = replace(q, 'FROM m WHERE', 'FROM m_plain WHERE') WHERE q_plain IS NULL;
\echo -- TimescaleDB 2.28.3, hypertable m partitioned by sno_time(id), 1 day chunks; now() = 2026-03-15 12:00 UTC
SELECT '-- chunks: ' || days();
SELECT label || E'\n    ' || scans(q) FROM shapes ORDER BY ord;
SQL
if [[ "${SNO_TIMESCALEDB_GOLDEN:-}" == update ]]; then
    cp "$golden_out" "$GOLDEN"
    echo "ok: golden file written: $GOLDEN"
elif diff -u "$GOLDEN" "$golden_out" >"$CL_WORK/golden.diff"; then
    echo "ok: chunks planned, excluded at startup and scanned per query shape as in $(basename "$GOLDEN")"
else
    bad "chunks scanned per query shape differ from $GOLDEN:"
    cat "$CL_WORK/golden.diff"
fi
# The same session objects again (the prepared statements are per session): the counts of m
# against those of the copy, but for the shapes known to be wrong.
check "every shape but the known wrong ones counts the copy's rows" "$(qf <<'SQL'
PREPARE by_id(sno) AS SELECT count(*) FROM m WHERE id = $1;
PREPARE since(timestamptz) AS SELECT count(*) FROM m WHERE sno_time(id) >= $1;
PREPARE by_id_derived(sno) AS SELECT count(*) FROM m WHERE id = $1 AND sno_time(id) = sno_time($1);
SET plan_cache_mode = force_generic_plan;
SELECT coalesce(string_agg(label, '; '), '') FROM shapes WHERE NOT wrong AND count_of(q) <> count_of(q_plain);
SQL
)" ""

# Row estimates with and without the derived clause (printed, not compared).
echo "    estimated / actual rows (top scan of SELECT * FROM m WHERE ...):"
qf <<'SQL' | sed 's/^/      /'
CREATE FUNCTION estimate(p text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE j json;
BEGIN
    EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) SELECT * FROM m WHERE ' || p INTO j;
    RETURN format('%s / %s', j -> 0 -> 'Plan' ->> 'Plan Rows', j -> 0 -> 'Plan' ->> 'Actual Rows');
END
$$;
SELECT estimate(p) || '  ' || p FROM unnest(ARRAY[
    $p$sno_time(id) > now() - interval '1 hour'$p$,
    $p$id > sno_min(now() - interval '1 hour')$p$,
    $p$id > sno_min(now() - interval '1 hour') AND sno_time(id) >= sno_time(sno_min(now() - interval '1 hour'))$p$,
    $p$id BETWEEN sno_min(now() - interval '2 days') AND sno_max(now() - interval '1 day')$p$,
    $p$id BETWEEN sno_min(now() - interval '2 days') AND sno_max(now() - interval '1 day') AND sno_time(id) BETWEEN sno_time(sno_min(now() - interval '2 days')) AND sno_time(sno_max(now() - interval '1 day'))$p$,
    $p$id BETWEEN sno_min('2026-03-09 12:00+00') AND sno_max('2026-03-10 12:00+00')$p$,
    $p$id BETWEEN sno_min('2026-03-09 12:00+00') AND sno_max('2026-03-10 12:00+00') AND sno_time(id) BETWEEN sno_time(sno_min('2026-03-09 12:00+00')) AND sno_time(sno_max('2026-03-10 12:00+00'))$p$]) WITH ORDINALITY u(p, n) ORDER BY n;
SQL

# ---------------------------------------------------------------------------------------------
part "3. id >= X and id < X when X's 4 ms unit begins a chunk (TimescaleDB 2.28.3)"
# diff_of PREDICATE: the hypertable's count minus the copy's, for rows matching PREDICATE.
diff_of() { q "SELECT (SELECT count(*) FROM m WHERE $1) - (SELECT count(*) FROM m_plain WHERE $1)"; }
check "id < X, X a row's ID of the first 4 ms of 03-12 (keyset paging): the hypertable misses the 1 smaller row of that unit (chunk 03-12 excluded)" \
    "$(diff_of "id < '$X'")" -1
check "id >= X: the hypertable returns 1 row too many (the qual is dropped on chunk 03-12, proven by sno_time)" \
    "$(diff_of "id >= '$X'")" 1
check "id < sno_max('2026-03-12 00:00+00'): 2 rows missing" "$(diff_of "id < sno_max('2026-03-12 00:00+00')")" -2
check "id >= sno_max('2026-03-12 00:00+00'): 2 rows too many" "$(diff_of "id >= sno_max('2026-03-12 00:00+00')")" 2
check "as the manual prints it: id < sno_max(a midnight) misses 2 rows" \
    "$(q "SELECT count(*) FROM m WHERE id < sno_max('2026-03-12 00:00+00');")" \
    "$(q "SELECT count(*) - 2 FROM m_plain WHERE id < sno_max('2026-03-12 00:00+00')")"
check "as the manual prints it: id <= X AND id <> X counts them" \
    "$(q "SELECT count(*) FROM m WHERE id <= sno_max('2026-03-12 00:00+00') AND id <> sno_max('2026-03-12 00:00+00');")" \
    "$(q "SELECT count(*) FROM m_plain WHERE id < sno_max('2026-03-12 00:00+00')")"
check "id > X, id <= X, id = X: right" \
    "$(diff_of "id > '$X'") $(diff_of "id <= '$X'") $(diff_of "id = '$X'")" "0 0 0"
check "workaround for <: id <= X AND id <> X is right" "$(diff_of "id <= '$X' AND id <> '$X'")" 0
check "workaround for >=: SET timescaledb.enable_qual_filtering = off makes id >= X right" \
    "$(q "SET timescaledb.enable_qual_filtering = off" \
         "SELECT (SELECT count(*) FROM m WHERE id >= '$X') - (SELECT count(*) FROM m_plain WHERE id >= '$X')")" 0
check "a generic plan (X a parameter, no plan-time exclusion) is right for < and >=" "$(qf <<SQL | paste -sd ' '
SET plan_cache_mode = force_generic_plan;
PREPARE lt(sno) AS SELECT count(*) FROM m WHERE id < \$1;
PREPARE ge(sno) AS SELECT count(*) FROM m WHERE id >= \$1;
EXECUTE lt('$X');
EXECUTE ge('$X');
SQL
)" "$(q "SELECT (SELECT count(*) FROM m_plain WHERE id < '$X') || ' ' || (SELECT count(*) FROM m_plain WHERE id >= '$X')")"
check "sno's own bounds are safe: sno_time(id) >= / < a midnight right" \
    "$(diff_of "sno_time(id) >= '2026-03-12 00:00+00'") $(diff_of "sno_time(id) < '2026-03-12 00:00+00'")" "0 0"

# ---------------------------------------------------------------------------------------------
part "4. retention: drop_chunks and a retention policy"
check "drop_chunks(older_than => '2026-03-09 00:00+00') drops three chunks" "$(qf <<'SQL' | wc -l
SELECT drop_chunks('m', older_than => timestamptz '2026-03-09 00:00+00');
SQL
)" 3
check "the chunks left: those that end after it" "$(q "SELECT days()")" "03-09 03-10 03-11 03-12 03-13 03-14 03-15"
check "the rows left are the copy's from 2026-03-09 on" \
    "$(q "SELECT count(*) FROM m")" "$(q "SELECT count(*) FROM m_plain WHERE sno_time(id) >= '2026-03-09 00:00+00'")"
check "around that midnight: the last 4 ms unit of 03-08 gone (v = -3), the first of 03-09 kept (v = -2, -1)" \
    "$(q "SELECT string_agg(v::text, ',' ORDER BY id) FROM m WHERE sno_time(id) BETWEEN '2026-03-08 23:59:59+00' AND '2026-03-09 00:00+00'")" \
    "-2,-1"
q "DELETE FROM m_plain WHERE sno_time(id) < '2026-03-09 00:00+00'" >/dev/null
qf >/dev/null <<'SQL'
SELECT add_retention_policy('m', drop_after => interval '4 days');
SELECT job_id FROM timescaledb_information.jobs WHERE proc_name = 'policy_retention' AND hypertable_name = 'm' \gset
CALL run_job(:job_id);
SQL
check "add_retention_policy(drop_after => 4 days) and run_job: the chunks that end before now() - 4 days are gone" \
    "$(q "SELECT days()")" "03-11 03-12 03-13 03-14 03-15"
check "... and the rows left are the copy's from 2026-03-11 on" \
    "$(q "SELECT count(*) FROM m")" "$(q "SELECT count(*) FROM m_plain WHERE sno_time(id) >= '2026-03-11 00:00+00'")"
q "SELECT remove_retention_policy('m')" "DELETE FROM m_plain WHERE sno_time(id) < '2026-03-11 00:00+00'" >/dev/null
check "the hypertable answers every query of the set as the copy does" "$(q "SELECT answers_differ()")" ""

# ---------------------------------------------------------------------------------------------
part "5. compression"
qf >/dev/null <<'SQL'
SET client_min_messages = error;
ALTER TABLE m SET (timescaledb.compress, timescaledb.compress_orderby = 'id');
SELECT compress_chunk(c) FROM show_chunks('m', older_than => timestamptz '2026-03-13 00:00+00') c;
SQL
check "compress_chunk of the chunks before 03-13: those compressed" "$(q "SELECT days(true)")" "03-11 03-12"
check "the hypertable answers every query of the set as the copy does" "$(q "SELECT answers_differ()")" ""
plan="$(q "EXPLAIN (COSTS OFF) SELECT count(*) FROM m WHERE sno_time(id) BETWEEN '2026-03-11 06:00+00' AND '2026-03-11 08:00+00'")"
reach=no
grep -q "(_ts_meta_v2_first_id <= '[^']*'::sno) AND (_ts_meta_v2_last_id >= '[^']*'::sno)" <<<"$plan" && reach=yes
check "sno_time(id) BETWEEN on a compressed chunk: sno's id bounds reach its min/max metadata" "$reach" yes
[[ "$reach" == yes ]] || echo "$plan"
q "INSERT INTO m (id, v) VALUES (sno_generate_at(1, '2026-03-11 12:34+00'), 11)" \
    "INSERT INTO m_plain SELECT * FROM m WHERE v = 11" >/dev/null
check "a row inserted into a compressed chunk: answers as the copy's" "$(q "SELECT answers_differ()")" ""

err <<'SQL'
SELECT add_compression_policy('m', compress_after => interval '2 days');
SELECT job_id FROM timescaledb_information.jobs WHERE proc_name = 'policy_compression' AND hypertable_name = 'm' \gset
CALL run_job(:job_id);
SQL
check "add_compression_policy(compress_after => ...) is accepted, its job fails (timescale/timescaledb#6537)" \
    "$ERR" "20000 case not found"
check "... in the policy's CASE on the column's type" "$(msg_field HINT "$SAID") / $(msg_field CONTEXT "$SAID")" \
    "CASE statement is missing ELSE part. / PL/pgSQL function _timescaledb_functions.policy_compression(integer,jsonb) line 60 at CASE"
q "SELECT remove_compression_policy('m')" >/dev/null

cp_job="$(qf <<'SQL'
SELECT add_compression_policy('m', compress_created_before => interval '7 days');
SQL
)"
q "SET client_min_messages = error" "CALL run_job($cp_job)" >/dev/null
check "add_compression_policy(compress_created_before => 7 days), run at once: nothing more compressed" \
    "$(q "SELECT days(true)")" "03-11 03-12"
node_clock a "$(clock_at "2026-03-23 12:00:00")"
check "the clock moved on 8 days" "$(q "SELECT now() BETWEEN '2026-03-23 12:00+00' AND '2026-03-23 12:05+00'")" t
q "INSERT INTO m (v) VALUES (2000)" "INSERT INTO m_plain SELECT * FROM m WHERE v = 2000" >/dev/null
q "SET client_min_messages = error" "CALL run_job($cp_job)" >/dev/null
check "8 days on, its job compresses every chunk created before, not the new one of 03-23" \
    "$(q "SELECT days(true) || ' / ' || days(false)")" "03-11 03-12 03-13 03-14 03-15 / 03-23"
check "the hypertable answers every query of the set as the copy does" "$(q "SELECT answers_differ()")" ""
q "SELECT remove_compression_policy('m')" >/dev/null

# ---------------------------------------------------------------------------------------------
part "6. continuous aggregates"
err <<'SQL'
CREATE MATERIALIZED VIEW m_hourly WITH (timescaledb.continuous) AS
SELECT time_bucket('1 hour', sno_time(id)) AS bucket, count(*) FROM m GROUP BY 1;
SQL
check "a continuous aggregate over sno_time(id) is refused (timescale/timescaledb#2401)" \
    "$ERR" "0A000 custom partitioning functions not supported with continuous aggregates"
qf >/dev/null <<'SQL'
CREATE MATERIALIZED VIEW m_hourly AS
SELECT time_bucket('1 hour', sno_time(id)) AS bucket, count(*) FROM m GROUP BY 1;
REFRESH MATERIALIZED VIEW m_hourly;
SQL
check "the same query as a plain materialized view works" \
    "$(q "SELECT count(*) || ' ' || sum(count) FROM m_hourly")" \
    "$(q "SELECT count(DISTINCT time_bucket('1 hour', sno_time(id))) || ' ' || count(*) FROM m_plain")"

# ---------------------------------------------------------------------------------------------
part "7. TimescaleDB's scheduler runs a retention policy"
# On the real clock: TimescaleDB's background workers do not all keep libfaketime's offset (the
# scheduler's job saw the real date), so this part runs without it, on a hypertable of its own
# with a row made now and one for 20 days ago.
node_stop a
node_clock_mode a none
start_a scheduler
qf >/dev/null <<'SQL'
CREATE TABLE r (id sno PRIMARY KEY DEFAULT sno_generate(1), v int);
SELECT create_hypertable('r', by_range('id', interval '1 day', partition_func => 'sno_time'));
INSERT INTO r (id, v) VALUES (sno_generate(1), 1), (sno_generate_at(1, now() - interval '20 days'), 2);
SQL
rp_job="$(q "SELECT add_retention_policy('r', drop_after => interval '10 days')")"
ran=no
for _ in $(seq 60); do
    [[ "$(q "SELECT coalesce(max(total_runs), 0) FROM timescaledb_information.job_stats WHERE job_id = $rp_job")" -ge 1 ]] &&
        { ran=yes; break; }
    sleep 0.5
done
check "shared_preload_libraries the other way round: $(q "SHOW shared_preload_libraries")" \
    "$(q "SELECT count(*) FROM r WHERE sno_time(id) > now() - interval '1 hour'")" 1
check "the scheduler ran the policy's job by itself (within 30 s)" "$ran" yes
check "... and dropped the chunk of 20 days ago, not today's" \
    "$(q "SELECT count(*) || ' chunk, rows ' || (SELECT string_agg(v::text, ',') FROM r) FROM show_chunks('r')")" "1 chunk, rows 1"
check "... but the run is recorded as failed on PostgreSQL $(q "SHOW server_version" | cut -d' ' -f1)" \
    "$(q "SELECT s.last_run_status || ': ' || e.sqlerrcode || ' ' || e.err_message
          FROM timescaledb_information.job_stats s JOIN timescaledb_information.job_errors e USING (job_id)
          WHERE job_id = $rp_job ORDER BY e.start_time DESC LIMIT 1")" \
    'Failed: 24000 cannot drop portal "" while it is being set up'
q "SELECT remove_retention_policy('r')" >/dev/null
# The extensions created the other way round (sno first), in a database of their own.
q "CREATE DATABASE sno_first" >/dev/null
plan="$(node_psql_db a sno_first -c "CREATE EXTENSION sno" -c "CREATE EXTENSION timescaledb" \
    -c "CREATE TABLE m (id sno PRIMARY KEY DEFAULT sno_generate(1), v int)" \
    -c "SELECT create_hypertable('m', by_range('id', interval '1 day', partition_func => 'sno_time'))" \
    -c "INSERT INTO m (id, v) SELECT sno_generate_at(1, now() - g * interval '1 day'), g FROM generate_series(0, 4) g" \
    -c "EXPLAIN (COSTS OFF) SELECT * FROM m WHERE sno_time(id) >= now()")"
check "CREATE EXTENSION sno before timescaledb: a hypertable of 5 chunks, 4 excluded at startup" \
    "$(grep -o 'Chunks excluded during startup: [0-9]*' <<<"$plan")" "Chunks excluded during startup: 4"
# The same on a server without sno: not sno's doing.
node_init b
node_clock_mode b none
node_cmdline b shared_preload_libraries=timescaledb timescaledb.telemetry_level=off
node_start b || die "b did not start"
node_sql b "CREATE EXTENSION timescaledb" \
    "CREATE TABLE t (ts timestamptz NOT NULL, v int)" \
    "SELECT create_hypertable('t', by_range('ts'))" \
    "INSERT INTO t VALUES (now(), 1), (now() - interval '20 days', 2)" >/dev/null
t_job="$(node_sql b "SELECT add_retention_policy('t', drop_after => interval '10 days')")"
for _ in $(seq 60); do
    [[ "$(node_sql b "SELECT coalesce(max(total_runs), 0) FROM timescaledb_information.job_stats WHERE job_id = $t_job")" -ge 1 ]] && break
    sleep 0.5
done
check "without sno (a timestamptz hypertable, only timescaledb preloaded): the same, rows left and the failure recorded" \
    "$(node_sql b "SELECT (SELECT string_agg(v::text, ',') FROM t) || ' ' || s.last_run_status || ': ' || e.sqlerrcode || ' ' || e.err_message
          FROM timescaledb_information.job_stats s JOIN timescaledb_information.job_errors e USING (job_id)
          WHERE job_id = $t_job ORDER BY e.start_time DESC LIMIT 1")" \
    '1 Failed: 24000 cannot drop portal "" while it is being set up'

echo "--- timescaledb.sh: $((SECONDS - T0)) s (besides the build of TimescaleDB, if any)"
exit "$fail"
