#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=1 estimate=60
# SQLsmith (Debian's sqlsmith: random SQL made from the catalog) as an unprivileged role, on a
# server of its own with sno preloaded, over sno objects the role owns: tables with sno columns
# (sno_generate defaults, btree, hash, BRIN and expression indexes), sno[] arrays (GIN), a
# domain over sno, a table range-partitioned and one hash-partitioned by a sno key, views
# over them (sno's field functions, casts, unnest), and sno's own monitoring views. A fixed
# seed and a cap on the number of queries (about a minute on 2 cores) make the run bounded
# and the same stream of queries every time (the schema is the same).
#
# Fails if the server log holds a crash ("terminated by signal", PANIC, a backend that
# exited with a non-zero code other than a FATAL's 1, a TRAP of an assertion), if the
# server is not up afterwards or sno_generate no longer works, if SQLsmith stopped before its
# cap or reached the server less than it says, if too few of its queries succeeded or sno's
# functions were hardly called (the run cannot silently do nothing), or if amcheck finds a
# btree index inconsistent with its heap (sno's btree opclass; SQLsmith rolls back its
# inserts, updates and deletes, but their index entries stay).
#
# Errors of the random queries themselves (type mismatches, permission denied, division by
# zero, sno's own 22P02/22003...) are expected: they are counted and the most frequent
# printed. A crash prints the query the server was running ("Failed process was running").
#
# Usage: sqlsmith.sh SOCKET_DIR PORT BINDIR (only PORT and BINDIR: a server of its own, port
# PORT+740..749), with SNO_PG_MAJOR=15 (any other major: skipped). SNO_SQLSMITH_QUERIES: the
# cap (default 10000; measured on this 2-core machine with a debug build: 8,000 in 47 s,
# 10,000 in 97 s and 12,000 in 93 s while other builds shared the cores), SNO_SQLSMITH_SEED:
# the seed (default 26).
set -euo pipefail

if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped sqlsmith.sh: SQLsmith runs on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi
command -v sqlsmith >/dev/null || { echo "FAIL: sqlsmith is not installed (Debian: sqlsmith)"; exit 1; }

# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup sqlsmith "$3" $(($2 + 740)) $(($2 + 749))

QUERIES="${SNO_SQLSMITH_QUERIES:-10000}"
SEED="${SNO_SQLSMITH_SEED:-26}"
# SQLsmith's own statement_timeout is 1 s, so the cap bounds the run; past this many seconds
# the run counts as hung.
HARD_LIMIT=$((60 + QUERIES / 20))
ROLE=smith
DB=smith

node_new s
node_clock_mode s none
node_initdb s -E UTF8 --locale=C
# track_functions: how often the random queries called sno's functions. Statements that fail
# are not logged (tens of thousands of them), their errors are.
node_cmdline s shared_preload_libraries=sno track_functions=all log_min_error_statement=panic \
    fsync=off max_parallel_workers_per_gather=2
node_start s || die "the server did not start"
psql() { node_psql_db s "$DB" "$@"; }
as_role() { "$(node_bindir s)/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$CL_WORK" -p "$(node_port s)" -U "$ROLE" -d "$DB" "$@"; }

# --- the role and its objects -------------------------------------------------------------
# The role: LOGIN and nothing else (no superuser, CREATEDB, CREATEROLE, REPLICATION,
# BYPASSRLS). The database: CONNECT only for it (no CREATE, no TEMP). Its objects are made by
# postgres in a schema it may only use, then handed to it: it owns them without being able
# to create anything.
node_psql s -c "CREATE ROLE $ROLE LOGIN" -c "CREATE DATABASE $DB"
psql <<SQL
REVOKE ALL ON DATABASE $DB FROM PUBLIC;
GRANT CONNECT ON DATABASE $DB TO $ROLE;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE EXTENSION sno;
CREATE EXTENSION amcheck;
CREATE SCHEMA fuzz;
GRANT USAGE ON SCHEMA fuzz TO $ROLE;
SET search_path = fuzz, public;

CREATE DOMAIN fuzz.sno_ref AS sno CHECK (sno_meta(VALUE) < 200);

CREATE TABLE fuzz.events (
    id sno PRIMARY KEY DEFAULT sno_generate(7),
    parent sno,
    ref fuzz.sno_ref,
    kind text NOT NULL DEFAULT 'event',
    amount numeric,
    at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_parent_hash ON fuzz.events USING hash (parent);
CREATE INDEX events_id_brin ON fuzz.events USING brin (id) WITH (pages_per_range = 4);
CREATE INDEX events_time ON fuzz.events (sno_time(id));
CREATE INDEX events_kind_parent ON fuzz.events (kind, parent DESC NULLS FIRST);
CREATE UNIQUE INDEX events_ref ON fuzz.events (ref) WHERE ref IS NOT NULL;

CREATE TABLE fuzz.batches (
    batch_id sno PRIMARY KEY DEFAULT sno_generate(),
    members sno[] NOT NULL DEFAULT '{}',
    grid sno[][],
    labels text[],
    raw bytea
);
CREATE INDEX batches_members ON fuzz.batches USING gin (members);
CREATE INDEX batches_first ON fuzz.batches ((members[1]));

-- Range-partitioned by the ID (by time: the bounds are sno_lower_bound of dates).
CREATE TABLE fuzz.ledger (
    id sno NOT NULL DEFAULT sno_generate(3),
    account int NOT NULL,
    delta bigint,
    memo text
) PARTITION BY RANGE (id);
CREATE TABLE fuzz.ledger_old PARTITION OF fuzz.ledger
    FOR VALUES FROM (MINVALUE) TO (sno_lower_bound(date '2020-01-01'));
CREATE TABLE fuzz.ledger_2020s PARTITION OF fuzz.ledger
    FOR VALUES FROM (sno_lower_bound(date '2020-01-01')) TO (sno_lower_bound(date '2030-01-01'));
CREATE TABLE fuzz.ledger_new PARTITION OF fuzz.ledger
    FOR VALUES FROM (sno_lower_bound(date '2030-01-01')) TO (MAXVALUE);
CREATE INDEX ledger_id ON fuzz.ledger (id);
CREATE INDEX ledger_account ON fuzz.ledger (account, id);

-- Hash-partitioned by the ID (sno_hash_extended picks the partition).
CREATE TABLE fuzz.shards (
    id sno PRIMARY KEY,
    owner sno,
    payload jsonb
) PARTITION BY HASH (id);
CREATE TABLE fuzz.shards_0 PARTITION OF fuzz.shards FOR VALUES WITH (MODULUS 3, REMAINDER 0);
CREATE TABLE fuzz.shards_1 PARTITION OF fuzz.shards FOR VALUES WITH (MODULUS 3, REMAINDER 1);
CREATE TABLE fuzz.shards_2 PARTITION OF fuzz.shards FOR VALUES WITH (MODULUS 3, REMAINDER 2);
CREATE INDEX shards_owner ON fuzz.shards USING hash (owner);

-- Rows: fresh IDs, and IDs from their fields across the format's range (2010 to 2079),
-- every meta, partitions and sequences up to 65535, both ticks; edge values sno_min/sno_max.
INSERT INTO fuzz.events (parent, ref, kind, amount)
SELECT CASE WHEN g % 5 <> 0 THEN sno_from_parts(timestamptz '2024-01-01+00' + g * interval '1 s', g % 256, g % 7, g)
       END,
       CASE WHEN g % 3 = 0 THEN sno_from_parts(timestamptz '2010-01-01+00' + g * interval '16 days', g % 200, 65535 - g, g % 65536, g % 2) END,
       (ARRAY['a', 'b', 'c', ''])[1 + g % 4], g * 1.5
FROM generate_series(1, 1500) g;
INSERT INTO fuzz.events (id, parent, kind)
SELECT sno_from_parts(timestamptz '2010-01-01+00' + g * interval '23 days', g % 256, g * 61 % 65536, g * 127 % 65536, g % 2),
       sno_min(timestamptz '2010-01-01+00' + g * interval '1 day'), 'parts'
FROM generate_series(1, 1000) g;
INSERT INTO fuzz.events (id, kind) VALUES
    (sno_min(timestamptz '2010-01-01+00'), 'min'), (sno_max(timestamptz '2079-01-01+00'), 'max'),
    ('2222222222222229', 'text'), ('xxxxxxxxxxxxxxxx', 'text');
INSERT INTO fuzz.batches (members, grid, labels, raw)
SELECT ARRAY(SELECT id FROM fuzz.events ORDER BY md5(id::text || g) LIMIT g % 9),
       CASE WHEN g % 4 = 0 THEN ARRAY[[sno_generate(1), sno_generate(2)], [sno_min(now()), sno_max(now())]] END,
       ARRAY['x' || g, NULL],
       CASE WHEN g % 2 = 0 THEN sno_generate(g % 256)::bytea END
FROM generate_series(1, 300) g;
INSERT INTO fuzz.ledger (id, account, delta, memo)
SELECT sno_from_parts(timestamptz '2012-01-01+00' + g * interval '9 days', 0, g % 11, g), g % 17, g * 100 - 5000, 'from parts'
FROM generate_series(1, 2000) g;
INSERT INTO fuzz.ledger (account, delta) SELECT g % 17, g FROM generate_series(1, 500) g;
INSERT INTO fuzz.shards (id, owner, payload)
SELECT sno_generate(g % 256), CASE WHEN g % 2 = 0 THEN sno_generate() END, jsonb_build_object('n', g)
FROM generate_series(1, 1500) g;

CREATE VIEW fuzz.event_fields AS
    SELECT id, sno_time(id) AS made, sno_meta(id) AS meta, sno_partition(id) AS part,
           sno_sequence(id) AS seq, sno_tick(id) AS tick, id::text AS txt, id::bytea AS raw, parent, kind
    FROM fuzz.events;
CREATE VIEW fuzz.batch_members AS
    SELECT b.batch_id, m.member, m.ord, e.kind
    FROM fuzz.batches b CROSS JOIN LATERAL unnest(b.members) WITH ORDINALITY AS m(member, ord)
    LEFT JOIN fuzz.events e ON e.id = m.member;
CREATE VIEW fuzz.ledger_by_day AS
    SELECT account, date_trunc('day', sno_time(id)) AS day, count(*) AS n, min(id) AS first_id,
           max(id) AS last_id, sum(delta) AS total
    FROM fuzz.ledger GROUP BY 1, 2;
CREATE VIEW fuzz.recent AS
    SELECT id, account, delta FROM fuzz.ledger WHERE sno_time(id) >= timestamptz '2020-01-01+00'
    UNION ALL
    SELECT id, NULL, NULL FROM fuzz.shards WHERE id > sno_lower_bound(date '2020-01-01');
CREATE VIEW fuzz.parent_text AS
    SELECT e.id, e.parent::text AS parent_text, s.payload
    FROM fuzz.events e LEFT JOIN fuzz.shards s ON s.id = e.parent OR s.owner = e.id;

ALTER DOMAIN fuzz.sno_ref OWNER TO $ROLE;
ALTER TABLE fuzz.events OWNER TO $ROLE;
ALTER TABLE fuzz.batches OWNER TO $ROLE;
ALTER TABLE fuzz.ledger OWNER TO $ROLE;
ALTER TABLE fuzz.ledger_old OWNER TO $ROLE;
ALTER TABLE fuzz.ledger_2020s OWNER TO $ROLE;
ALTER TABLE fuzz.ledger_new OWNER TO $ROLE;
ALTER TABLE fuzz.shards OWNER TO $ROLE;
ALTER TABLE fuzz.shards_0 OWNER TO $ROLE;
ALTER TABLE fuzz.shards_1 OWNER TO $ROLE;
ALTER TABLE fuzz.shards_2 OWNER TO $ROLE;
ALTER VIEW fuzz.event_fields OWNER TO $ROLE;
ALTER VIEW fuzz.batch_members OWNER TO $ROLE;
ALTER VIEW fuzz.ledger_by_day OWNER TO $ROLE;
ALTER VIEW fuzz.recent OWNER TO $ROLE;
ALTER VIEW fuzz.parent_text OWNER TO $ROLE;
ANALYZE;
SQL

check "the role is unprivileged (superuser, createdb, createrole, replication, bypassrls; CREATE on the database, public, fuzz; TEMP)" \
    "$(psql -c "SELECT rolsuper, rolcreatedb, rolcreaterole, rolreplication, rolbypassrls,
                       has_database_privilege('$ROLE', '$DB', 'CREATE'), has_schema_privilege('$ROLE', 'public', 'CREATE'),
                       has_schema_privilege('$ROLE', 'fuzz', 'CREATE'), has_database_privilege('$ROLE', '$DB', 'TEMP')
                FROM pg_roles WHERE rolname = '$ROLE'")" "f|f|f|f|f|f|f|f|f"
check "the role owns the 10 tables (2 partitioned, 6 partitions), the 5 views and the domain" \
    "$(psql -c "SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = 'fuzz'::regnamespace AND relkind IN ('r', 'p')
                        AND pg_get_userbyid(relowner) = '$ROLE') || ' ' ||
                       (SELECT count(*) FROM pg_class WHERE relnamespace = 'fuzz'::regnamespace AND relkind = 'v'
                        AND pg_get_userbyid(relowner) = '$ROLE') || ' ' ||
                       (SELECT count(*) FROM pg_type WHERE typnamespace = 'fuzz'::regnamespace AND typtype = 'd'
                        AND pg_get_userbyid(typowner) = '$ROLE')")" "10 5 1"
rows0="$(as_role -c "SELECT (SELECT count(*) FROM fuzz.events) + (SELECT count(*) FROM fuzz.batches)
                          + (SELECT count(*) FROM fuzz.ledger) + (SELECT count(*) FROM fuzz.shards)")"
echo "    rows in the role's tables: $rows0"
check "the role can read its tables and views and make IDs" \
    "$(as_role -c "SELECT count(*) > 0 FROM fuzz.event_fields" -c "SELECT sno_generate(5) IS NOT NULL")" "t
t"

# crash_check WHAT OFFSET: no crash in the server log from byte OFFSET on: a process
# terminated by a signal, a PANIC, an assertion's TRAP, a backend that exited with a code
# other than 0 and a FATAL's 1, the postmaster resetting the others after one of these.
crash_check() {
    local re='terminated by signal|\] PANIC: |^TRAP: |server process \(PID [0-9]+\) exited with exit code|terminating any other active server processes|was terminated by exception'
    local found
    found="$(tail -c +"$(($2 + 1))" "$(node_log s)" | grep -E "$re" || true)"
    check "no crash in the server log during $1 (lines: terminated by signal, PANIC, TRAP, abnormal exit, reset)" \
        "$(grep -c . <<<"$found" || true)" 0
    if [[ -n "$found" ]]; then
        head -n 20 <<<"$found"
        tail -c +"$(($2 + 1))" "$(node_log s)" | grep -A 3 'Failed process was running' | head -n 40
    fi
    return 0
}

# --- the run -----------------------------------------------------------------------------
xacts() { psql -c "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = '$DB'"; }
psql -c "SELECT pg_stat_reset()" >/dev/null
x0="$(xacts)"
log_start="$(stat -c %s "$(node_log s)")"
t0=$SECONDS
rc=0
timeout "$HARD_LIMIT" sqlsmith --target="host=$CL_WORK port=$(node_port s) dbname=$DB user=$ROLE" \
    --seed="$SEED" --max-queries="$QUERIES" --exclude-catalog --verbose \
    >"$CL_WORK/sqlsmith.out" 2>"$CL_WORK/sqlsmith.err" || rc=$?
secs=$((SECONDS - t0))
ran="$(sed -n 's/^queries: \([0-9]*\)$/\1/p' "$CL_WORK/sqlsmith.err" | tail -1)"
rate="$(sed -n 's/^error rate: \([0-9.e-]*\)$/\1/p' "$CL_WORK/sqlsmith.err" | tail -1)"
ran="${ran:-0}" rate="${rate:-1}"
errors="$(awk -v n="$ran" -v r="$rate" 'BEGIN { printf "%d", n * r + 0.5 }')"
echo "    sqlsmith --seed=$SEED --max-queries=$QUERIES: $ran queries in $secs s, $errors errors (rate $rate), exit $rc"
echo "    its most frequent errors (its last report: the lines from the last \"queries:\" on):"
awk '/^queries: / { r = "" } { r = r $0 "\n" } END { printf "%s", r }' "$CL_WORK/sqlsmith.err" |
    grep -E $'^[0-9]+\t' | sort -t$'\t' -k1,1nr | head -n 8 | cut -c1-150 | sed 's/^/      /' || true
check "sqlsmith ran its $QUERIES queries and exited 0 (within $HARD_LIMIT s)" "$ran $rc" "$QUERIES 0"
((rc == 0)) || tail -n 5 "$CL_WORK/sqlsmith.err"
oks=$((ran - errors))
check "at least a fifth of the queries succeeded ($oks)" "$((oks * 5 >= QUERIES))" 1

log_mid="$(stat -c %s "$(node_log s)")"
logged="$(tail -c +"$((log_start + 1))" "$(node_log s)" | grep -c ' ERROR: ' || true)"
echo "    server log: $logged ERROR lines during the run, $((log_mid - log_start)) bytes"
crash_check "the sqlsmith run" "$log_start"

# --- the server after it --------------------------------------------------------------------
check "the server is still up" "$(node_running s && node_wait_ready s && echo up || echo down)" up
check "the role still makes IDs (sno_generate, a default) and reads its views" \
    "$(as_role -c "SELECT sno_generate(9) IS NOT NULL, sno_meta(sno_generate(9))" \
        -c "INSERT INTO fuzz.events (kind) VALUES ('after') RETURNING sno_meta(id)" \
        -c "SELECT count(*) > 0 FROM fuzz.event_fields WHERE kind = 'after'")" "t|9
7
t"
check "postgres makes 10,000 distinct IDs" \
    "$(psql -c "SELECT count(DISTINCT sno_generate()) FROM generate_series(1, 10000)")" 10000
x1="$(xacts)" || x1=0
check "the server saw at least as many transactions in $DB as sqlsmith ran queries ($((x1 - x0)) >= $ran)" \
    "$((x1 - x0 >= ran))" 1
# sno's functions the random queries called (track_functions = all), operators' included.
calls="$(psql -c "SELECT count(*) || ' ' || coalesce(sum(calls), 0) FROM pg_stat_user_functions f
                  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = f.funcid AND d.deptype = 'e'
                  JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'sno'")" || calls="0 0"
read -r called ncalls <<<"$calls"
total="$(psql -c "SELECT count(*) FROM pg_depend WHERE classid = 'pg_proc'::regclass AND deptype = 'e'
                  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'sno')")" || total=-
echo "    sno functions called by the run: $called of its $total, $ncalls calls; the most called:"
psql -F ' ' -c "SELECT funcname, calls FROM pg_stat_user_functions f
                JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = f.funcid AND d.deptype = 'e'
                JOIN pg_extension x ON x.oid = d.refobjid AND x.extname = 'sno'
                ORDER BY calls DESC LIMIT 6" 2>&1 | tr '\n' ',' | sed 's/,$/\n/; s/,/, /g; s/^/      /'
# (30 of them, fewer when the cap is below 1,500: 1,000 queries call 23)
min_called=$((QUERIES / 50 < 30 ? QUERIES / 50 : 30))
check "the run called at least $min_called of sno's functions" "$((called >= min_called))" 1
rows1="$(as_role -c "SELECT (SELECT count(*) FROM fuzz.events) + (SELECT count(*) FROM fuzz.batches)
                          + (SELECT count(*) FROM fuzz.ledger) + (SELECT count(*) FROM fuzz.shards)")" || rows1=-
echo "    rows in the role's tables: $rows0 before, $rows1 after (sqlsmith rolls back what it modifies)"
# Every btree index on a sno column still orders its heap's tuples (heapallindexed).
btrees="SELECT c.oid FROM pg_class c JOIN pg_am a ON a.oid = c.relam
        WHERE c.relnamespace = 'fuzz'::regnamespace AND a.amname = 'btree' AND c.relkind = 'i'"
check "amcheck: each of the $(psql -c "SELECT count(*) FROM ($btrees) b") btree indexes of the role's tables is consistent with its heap" \
    "$(psql -c "SELECT count(bt_index_check(oid, true)) = count(*) FROM ($btrees) b" 2>&1)" t
crash_check "the checks after it" "$log_mid"
node_stop s
exit "$fail"
