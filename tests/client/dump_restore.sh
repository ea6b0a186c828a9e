#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=all server=yes cpu=0 estimate=20
# pg_dump / pg_restore round trip of a table with sno columns, a sno[] column and btree,
# hash and BRIN indexes on sno, in custom and plain formats; the restored data must be
# identical and the restored btree index must pass amcheck.
#
# Usage: dump_restore.sh SOCKET_DIR PORT BINDIR   (run by .ci/test against a live cluster)
set -euo pipefail
host="$1" port="$2" bindir="$3"
export PGHOST="$host" PGPORT="$port" PGUSER=postgres
psql() { "$bindir/psql" -X -q -v ON_ERROR_STOP=1 "$@"; }
# shellcheck source=lib.bash
source "$(dirname "${BASH_SOURCE[0]}")/lib.bash"
harness_setup dump_restore "$bindir" # the work directory only: no server of its own
work="$CL_WORK"

for db in sno_dump_src sno_dump_custom sno_dump_plain; do
    psql -d postgres -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
done

psql -d sno_dump_src <<'SQL'
CREATE EXTENSION sno;
CREATE TABLE events (
    id sno PRIMARY KEY,
    parent sno,
    tags sno[],
    note text
);
INSERT INTO events
SELECT sno_from_parts(timestamptz '2024-01-01+00' + g * interval '3 ms', g % 256, 7, g % 65536),
       CASE WHEN g % 3 = 0 THEN NULL ELSE sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)) END,
       ARRAY[sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)), NULL],
       'row ' || g
FROM generate_series(1, 20000) g;
CREATE INDEX events_parent_hash ON events USING hash (parent);
CREATE INDEX events_id_brin ON events USING brin (id);
CREATE TABLE by_hash (id sno PRIMARY KEY) PARTITION BY HASH (id);
CREATE TABLE by_hash_0 PARTITION OF by_hash FOR VALUES WITH (MODULUS 2, REMAINDER 0);
CREATE TABLE by_hash_1 PARTITION OF by_hash FOR VALUES WITH (MODULUS 2, REMAINDER 1);
INSERT INTO by_hash SELECT id FROM events;
SQL

"$bindir/pg_dump" -d sno_dump_src -Fc -f "$work/dump.custom"
"$bindir/pg_restore" -d sno_dump_custom --exit-on-error "$work/dump.custom"
"$bindir/pg_dump" -d sno_dump_src -Fp -f "$work/dump.sql"
psql -d sno_dump_plain -f "$work/dump.sql" >/dev/null

digest="SELECT md5(string_agg(format('%s|%s|%s|%s', id, parent, tags, note), ',' ORDER BY id)) FROM events"
parts="SELECT string_agg(tableoid::regclass || ':' || n, ',' ORDER BY tableoid::regclass::text) FROM (SELECT tableoid, count(*) AS n FROM by_hash GROUP BY 1) s"
src="$(psql -d sno_dump_src -At -c "$digest")"
src_parts="$(psql -d sno_dump_src -At -c "$parts")"
fail=0
for db in sno_dump_custom sno_dump_plain; do
    got="$(psql -d "$db" -At -c "$digest")"
    got_parts="$(psql -d "$db" -At -c "$parts")"
    if [[ "$got" != "$src" || "$got_parts" != "$src_parts" ]]; then
        echo "FAIL: $db differs from the source ($got vs $src; $got_parts vs $src_parts)"
        fail=1
    fi
    psql -d "$db" -c "CREATE EXTENSION amcheck" \
        -c "SELECT bt_index_parent_check('events_pkey', heapallindexed => true)" >/dev/null
    n="$(psql -d "$db" -At -c "SELECT count(*) FROM pg_indexes WHERE tablename = 'events'")"
    if [[ "$n" != 3 ]]; then
        echo "FAIL: $db has $n indexes on events, expected 3"
        fail=1
    fi
done
[[ -n "$src" && "$src_parts" == *by_hash_0* && "$src_parts" == *by_hash_1* ]] || { echo "FAIL: empty source"; fail=1; }
((fail == 0)) && echo "ok: pg_dump/pg_restore (custom and plain) round-trip 20000 rows, indexes and hash partitions"
exit "$fail"
