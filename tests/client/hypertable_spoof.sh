#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=all server=no cpu=0 estimate=5
# The planner hook trusts TimescaleDB's catalog only when it is the extension's own (finding 8
# of the 0.8.0 review, fixed in 0.8.1). Where a setting of TimescaleDB's versioned library
# exists (timescaledb.enable_chunk_append, which the hook takes as "TimescaleDB is loaded"), the
# hook looked up `_timescaledb_catalog.hypertable` and `.dimension` by name, as the superuser
# planning the query: a role with CREATE on a database without TimescaleDB could make a schema
# of that name with views there calling its own function, and the superuser's next query with a
# sno predicate ran it (NOTICE: attacker code running as postgres).
#
# On a server of its own (sno preloaded, no TimescaleDB anywhere, the real clock), a role
# mallory, and a table t (id sno, 10 rows an hour apart) the superuser made, in two databases:
#   app1  owned by mallory, who sets the placeholder on it (ALTER DATABASE app1 SET
#         timescaledb.enable_chunk_append = on: a placeholder needs SET on the parameter for a
#         non-superuser, GRANT SET ON PARAMETER, on PostgreSQL 15 to 18 alike);
#   app2  owned by postgres, mallory has CREATE on it only; the setting is the cluster's
#         (a line in postgresql.conf, as a server tuned for TimescaleDB can carry).
# In each, mallory's schema _timescaledb_catalog with views hypertable and dimension (which name
# t as a hypertable cut by sno_time(id)) calling mallory's function, which records current_user
# in mallory's table (in that schema) and raises that NOTICE. The superuser plans and runs, each in a session of
# its own (the hook caches per backend), id > constant, EXPLAIN of id > sno_min(now() - ...),
# the same query run, and a generic plan of id <= $1: the answers are right, no added
# sno_time(id) >= sno_time(...) clause shows in the plan, no NOTICE came and the record table is
# empty. The record works: mallory reading its own views is recorded first (then emptied).
# A few seconds. Fails on sno 0.8.0 (the record holds postgres, the NOTICE is printed).
#
# Usage: hypertable_spoof.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR: a server of its own
# on PORT+770 .. PORT+779)
set -euo pipefail
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup hypertable_spoof "$3" $(($2 + 770)) $(($2 + 779))
t0=$SECONDS

node_new a
node_clock_mode a none
node_initdb a
node_cmdline a shared_preload_libraries=sno fsync=off
node_start a || exit 1

# as DB USER: psql as USER on database DB, the script on stdin; everything psql says (NOTICEs
# included) printed; never fails (an error is part of what is printed).
as() { "${CL_BIN[a]}/psql" -X -q -At -h "$CL_WORK" -p "$(node_port a)" -U "$2" -d "$1" -f - 2>&1 || true; }

node_sql a "CREATE ROLE mallory LOGIN" "CREATE DATABASE app1 OWNER mallory" "CREATE DATABASE app2" \
    "GRANT CREATE ON DATABASE app2 TO mallory" \
    "GRANT SET ON PARAMETER timescaledb.enable_chunk_append TO mallory" >/dev/null

# attack DB: mallory's schema in DB, then the superuser's queries there (above).
attack() {
    local db="$1" setup made x5 got said=""
    echo "--- database $db ($((SECONDS - t0)) s)"
    setup="$(as "$db" postgres <<'SQL'
\set ON_ERROR_STOP 1
CREATE EXTENSION sno;
CREATE TABLE t (id sno PRIMARY KEY, v int);
INSERT INTO t SELECT sno_generate_at(1, now() - v * interval '1 hour'), v FROM generate_series(1, 10) v;
ANALYZE t;
SQL
)"
    check "$db: sno and the superuser's table t" "$setup" ""
    # All of mallory's objects in the schema mallory made (app2's public schema is not mallory's).
    made="$(as "$db" mallory <<'SQL'
\set ON_ERROR_STOP 1
CREATE SCHEMA _timescaledb_catalog;
CREATE TABLE _timescaledb_catalog.seen (who name);
CREATE FUNCTION _timescaledb_catalog.spy() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO _timescaledb_catalog.seen VALUES (current_user);
    RAISE NOTICE 'attacker code running as %', current_user;
    RETURN true;
END $$;
CREATE VIEW _timescaledb_catalog.hypertable AS
    SELECT 1 AS id, 'public'::name AS schema_name, 't'::name AS table_name
    WHERE _timescaledb_catalog.spy();
CREATE VIEW _timescaledb_catalog.dimension AS
    SELECT 1 AS hypertable_id, 'id'::name AS column_name, 'sno_time'::name AS partitioning_func,
           'public'::name AS partitioning_func_schema
    WHERE _timescaledb_catalog.spy();
SELECT count(*) FROM _timescaledb_catalog.hypertable;
SQL
)"
    check "$db: mallory's schema _timescaledb_catalog, its views record who reads them" \
        "$(grep -c 'NOTICE:  attacker code running as mallory' <<<"$made" || true) $(tail -n 1 <<<"$made")" "1 1"
    check "$db: ... in mallory's table" "$(as "$db" mallory <<<"SELECT string_agg(who, ',') FROM _timescaledb_catalog.seen; TRUNCATE _timescaledb_catalog.seen;")" mallory
    check "$db: the superuser's sessions have the setting" \
        "$(as "$db" postgres <<<"SHOW timescaledb.enable_chunk_append")" on

    x5="$(as "$db" postgres <<<"SELECT id FROM t WHERE v = 5")"
    # The answers are the last line of what psql said (any NOTICE comes before).
    got="$(as "$db" postgres <<<"SELECT string_agg(v::text, ',' ORDER BY v) FROM t WHERE id > '$x5'::sno")"
    said+="$got"$'\n'
    check "$db: id > a row's ID (a constant): right" "$(tail -n 1 <<<"$got")" 1,2,3,4
    got="$(as "$db" postgres <<'SQL'
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE id > sno_min(now() - interval '270 minutes');
SELECT string_agg(v::text, ',' ORDER BY v) FROM t WHERE id > sno_min(now() - interval '270 minutes');
SQL
)"
    said+="$got"$'\n'
    check "$db: EXPLAIN of id > sno_min(now() - ...): no sno_time comparison added (t is no hypertable)" \
        "$(grep -c 'sno_time(id) >=' <<<"$got" || true)" 0
    check "$db: ... and its rows" "$(tail -n 1 <<<"$got")" 1,2,3,4
    got="$(as "$db" postgres <<SQL
SET plan_cache_mode = force_generic_plan;
PREPARE upto(sno) AS SELECT string_agg(v::text, ',' ORDER BY v) FROM t WHERE id <= \$1;
EXECUTE upto('$x5');
SQL
)"
    said+="$got"$'\n'
    check "$db: a generic plan of id <= \$1: right" "$(tail -n 1 <<<"$got")" 5,6,7,8,9,10
    check "$db: no NOTICE from mallory's code in the superuser's sessions" \
        "$(grep -c attacker <<<"$said" || true)" 0
    check "$db: nothing recorded in mallory's table" \
        "$(as "$db" mallory <<<"SELECT coalesce(string_agg(who, ','), 'nothing') FROM _timescaledb_catalog.seen")" nothing
}

check "mallory sets the placeholder on the database it owns" \
    "$(as app1 mallory <<<"ALTER DATABASE app1 SET timescaledb.enable_chunk_append = on")" ""
attack app1
# The cluster-wide setting, read by new sessions once the server reloaded its configuration.
node_conf a "timescaledb.enable_chunk_append = on"
node_sql a "SELECT pg_reload_conf()" >/dev/null
for _ in $(seq 50); do
    [[ "$(node_sql a "SELECT current_setting('timescaledb.enable_chunk_append', true)")" == on ]] && break
    sleep 0.1
done
attack app2

echo "--- hypertable_spoof.sh: $((SECONDS - t0)) s"
exit "$fail"
