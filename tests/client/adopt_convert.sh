#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# ci: majors=15 server=no cpu=1 estimate=60
# Converting existing tables to sno keys online (issue 30) with python -m sno_pg.convert, on a
# server of its own (sno preloaded, the real clock):
#   legacy  100,000 rows keyed by bigserial with a created_at column (20,000 of them in one 4 ms
#           unit, 2,000 spread over the next 40 s: the units the clients' sno_generate uses while
#           the conversion runs; keys in an order unrelated to time), two children (orders, NOT
#           NULL bigint foreign key, indexed; notes, nullable integer foreign key);
#   ev7     20,000 rows keyed by UUIDv7 without a time column, one child;
#   ul      10,000 rows keyed by text ULIDs.
# Three clients insert, update and read all of them throughout, timing every statement and
# recording every sno ID they are given. Phase 1: legacy converted twice at once (two runs of
# the tool on the same table) and ev7 beside them; an immediate shutdown while a batch of one of
# them is open (the tool's hidden --test-sleep-in-batch holds it open 0.3 s); restart; phase 2:
# the same three commands again resume and finish, then ul. Then: every row has one ID, every
# ID differs from every other and from every ID a client was given, a client's ID is the one its
# row keeps, sno_time(new key) is the old time floored to 4 ms (decoded independently for UUIDv7
# and ULID keys by adopt_convert.py), the children's new columns match their parents, every
# foreign key is validated, the new primary keys are in place, the old keys unique, no INVALID
# or work index is left, and no client statement took longer than --lock-timeout (1 s) plus
# a margin (CLIENT_MARGIN, 1.5 s: a batch's row locks plus the scheduling of a 2-core machine
# running three clients, three conversions and the server). Also: a table with a NULL time is
# reported and left before NOT NULL, and following the printed instruction literally finishes
# it; --dry-run changes nothing; a partitioned table, a composite key, a published table
# keyed by its replica identity and a numeric key are refused before any change.
#
# psycopg 3 comes from the venv drivers_python.sh fills (${SNO_WORK}/venv-drivers, from
# tests/drivers/python/requirements.txt), made here too when missing. About 40 s.
# PostgreSQL 15 only (a client program; the server side is sno's own code, the same on every
# major).
#
# Usage: adopt_convert.sh SOCKET_DIR PORT BINDIR  (only PORT and BINDIR are used: own server)
set -euo pipefail
if [[ "${SNO_PG_MAJOR:-}" != 15 ]]; then
    echo "ok: skipped adopt_convert.sh: it runs on PostgreSQL 15 only (SNO_PG_MAJOR=${SNO_PG_MAJOR:-unset})"
    exit 0
fi
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/tests/client"
# shellcheck source=lib.bash
source "$here/lib.bash"
t0=$SECONDS
LOCK_TIMEOUT_MS=1000
CLIENT_MARGIN_MS="${CLIENT_MARGIN_MS:-1500}"

# The venv with psycopg 3, as drivers_python.sh fills it (same lock, same requirements).
venv="$SNO_WORK/venv-drivers"
req="$root/tests/drivers/python/requirements.txt"
mkdir -p "$SNO_WORK"
exec 9>"$SNO_WORK/venv-drivers.lock"
flock 9
if [[ ! -x "$venv/bin/python" ]] || ! cmp -s "$req" "$venv/sno-requirements.txt"; then
    echo "(installing the Python drivers into $venv)"
    { [[ -x "$venv/bin/python" ]] || "${SNO_PYTHON:-python3}" -m venv "$venv"; } ||
        die "could not make a venv with ${SNO_PYTHON:-python3} -m venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" ||
        die "pip install -r tests/drivers/python/requirements.txt failed"
    cp "$req" "$venv/sno-requirements.txt"
fi
flock -u 9
export PYTHONPATH="$root/python" PYTHONDONTWRITEBYTECODE=1

harness_setup adopt_convert "$3" $(($2 + 760)) $(($2 + 769))
node_new a
node_clock_mode a none
node_initdb a
node_cmdline a shared_preload_libraries=sno fsync=off
node_start a || exit 1
dsn="host=$CL_WORK port=$(node_port a) user=postgres dbname=adopt"
sql() { node_psql_db a adopt -c "$1"; }
node_sql a "CREATE DATABASE adopt" >/dev/null

# --- the data -------------------------------------------------------------------------------
node_psql_db a adopt >/dev/null <<'EOF'
SET client_min_messages = error;
CREATE EXTENSION sno;
-- every run of the tool that gives rows IDs takes one reserved partition of its role for good
ALTER ROLE postgres SET sno.reserved_limit = 64;
CREATE TABLE legacy (id bigserial PRIMARY KEY, created_at timestamptz, payload text);
INSERT INTO legacy (created_at, payload)
SELECT CASE WHEN g <= 20000 THEN timestamptz '2024-02-29 12:00:00.000+00' + (g % 3999) * interval '1 microsecond'
            WHEN g <= 22000 THEN now() + (g - 20000) * interval '20 milliseconds'
            ELSE now() - interval '365 days' * random() END, 'p' || g
FROM generate_series(1, 100000) g ORDER BY random();
CREATE TABLE orders (oid bigserial PRIMARY KEY, legacy_id bigint NOT NULL REFERENCES legacy ON DELETE CASCADE, amount int);
CREATE INDEX ON orders (legacy_id);
INSERT INTO orders (legacy_id, amount) SELECT 1 + (g * 7919) % 100000, g FROM generate_series(1, 50000) g;
CREATE TABLE notes (nid serial PRIMARY KEY, legacy_id int REFERENCES legacy, note text);
INSERT INTO notes (legacy_id, note) SELECT CASE WHEN g % 5 = 0 THEN NULL ELSE 1 + (g * 31) % 100000 END, 'n'
FROM generate_series(1, 20000) g;

CREATE TABLE ev7 (id uuid PRIMARY KEY, payload text);
INSERT INTO ev7
SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) || '-' || substr(r, 7, 12))::uuid, 'e'
FROM (SELECT lpad(to_hex((extract(epoch FROM now() - interval '30 days' * random()) * 1000)::bigint), 12, '0') h,
             md5(random()::text) r FROM generate_series(1, 20000)) s;
CREATE TABLE ev7_child (ev uuid NOT NULL REFERENCES ev7, n int);
INSERT INTO ev7_child SELECT id, 1 FROM ev7 WHERE random() < 0.25;

CREATE TABLE ul (id text PRIMARY KEY, payload text);
INSERT INTO ul
SELECT (SELECT string_agg(substr('0123456789ABCDEFGHJKMNPQRSTVWXYZ', ((ms >> (5 * (9 - i))) & 31)::int + 1, 1), '' ORDER BY i)
        FROM generate_series(0, 9) i) || upper(substr(md5(random()::text), 1, 16)), 'u'
FROM (SELECT (extract(epoch FROM now() - interval '30 days' * random()) * 1000)::bigint ms, g FROM generate_series(1, 10000) g) s;

CREATE TABLE nt (id int PRIMARY KEY, created_at timestamptz);
INSERT INTO nt SELECT g, '2020-01-01'::timestamptz + g * interval '1 minute' FROM generate_series(1, 1000) g;
UPDATE nt SET created_at = NULL WHERE id = 500;

CREATE TABLE r_part (id bigint PRIMARY KEY, t timestamptz) PARTITION BY RANGE (id);
CREATE TABLE r_part_1 PARTITION OF r_part FOR VALUES FROM (0) TO (1000);
CREATE TABLE r_comp (a int, b int, PRIMARY KEY (a, b));
CREATE TABLE r_pub (id bigint PRIMARY KEY);
CREATE PUBLICATION r_pub_p FOR TABLE r_pub;
CREATE TABLE r_num (id numeric PRIMARY KEY);
EOF
sql "VACUUM ANALYZE" >/dev/null
echo "    data: $(sql "SELECT (SELECT count(*) FROM legacy) || ' legacy, ' || (SELECT count(*) FROM orders) || ' orders, '
    || (SELECT count(*) FROM notes) || ' notes, ' || (SELECT count(*) FROM ev7) || ' ev7, ' || (SELECT count(*) FROM ul) || ' ul'") rows ($((SECONDS - t0)) s)"

# convert OUT ARGS...: the tool, its output in $CL_WORK/OUT.out, its exit code returned.
convert() {
    local out="$CL_WORK/$1.out"
    shift
    "$venv/bin/python" -m sno_pg.convert --dsn "$dsn" --lock-timeout "${LOCK_TIMEOUT_MS}ms" "$@" >"$out" 2>&1
}
show() { sed 's/^/      | /' "$CL_WORK/$1.out" | tail -n "${2:-8}"; }
no_column() { sql "SELECT count(*) FROM pg_attribute WHERE attrelid = '$1'::regclass AND attname = 'sno_id' AND NOT attisdropped"; }

# --- refused before any change, and --dry-run ----------------------------------------------------
for r in "r_part|partitioned table" "r_comp|composite primary key" "r_pub|in publication(s) r_pub_p" "r_num|numeric"; do
    t="${r%%|*}" want="${r#*|}" rc=0
    convert "refuse_$t" "$t" --meta 9 || rc=$?
    check "refused: $t: exit 2, says '$want', no column added" \
        "$rc $(grep -c "refused: .*$want" "$CL_WORK/refuse_$t.out") $(no_column "$t")" "2 1 0"
done
rc=0
convert dry legacy --meta 1 --time-column created_at --dry-run || rc=$?
check "--dry-run: exit 0, the plan names both children, nothing changed" \
    "$rc $(grep -c 'child public\.\(orders\|notes\)' "$CL_WORK/dry.out") $(no_column legacy)" "0 2 0"

# --- clients ---------------------------------------------------------------------------------
stop="$CL_WORK/clients.stop"
clients=()
for i in 1 2 3; do
    "$venv/bin/python" "$here/adopt_convert.py" client "$dsn" "$CL_WORK/client$i" "$stop" "$i" &
    clients+=($!)
done
sleep 2

# --- phase 1: three conversions at once, then an immediate shutdown inside a batch ---------------
legacy_args=(legacy --meta 1 --time-column created_at)
convert p1_a "${legacy_args[@]}" --batch-size 2000 --test-sleep-in-batch 0.3 &
pa=$!
convert p1_b "${legacy_args[@]}" --batch-size 3000 &
pb=$!
convert p1_c ev7 --meta 2 --batch-size 2000 --test-sleep-in-batch 0.3 &
pc=$!
for _ in $(seq 600); do
    (($(grep -c '(test: sleeping' "$CL_WORK/p1_a.out" 2>/dev/null || true) >= 3)) && break
    sleep 0.05
done
(($(grep -c '(test: sleeping' "$CL_WORK/p1_a.out") >= 3)) || { show p1_a 20; die "the first run never reached its third batch"; }
node_stop a immediate
echo "    immediate shutdown during a batch of run A, $((SECONDS - t0)) s"
ra=0 rb=0 rcc=0
wait "$pa" || ra=$?
wait "$pb" || rb=$?
wait "$pc" || rcc=$?
check "phase 1: run A lost its connection inside a batch (its last step line): exit 4, says so" \
    "$ra $(grep '^\[' "$CL_WORK/p1_a.out" | tail -n 1 | grep -c '(test: sleeping') $(grep -c '^connection lost' "$CL_WORK/p1_a.out")" "4 1 1"
bc="no: B $rb, C $rcc"
if ((rb == 4 || rb == 0)) && ((rcc == 4 || rcc == 0)); then bc=yes; fi
check "phase 1: runs B and C ended with the server (exit 4, or 0 when done)" "$bc" yes
[[ "$ra $bc" == "4 yes" ]] || { show p1_a 12; show p1_b 12; show p1_c 12; }
node_start a || exit 1
done_before="$(sql "SELECT count(sno_id) FROM legacy WHERE id <= 100000")"
echo "    restarted; legacy rows with an ID after the crash: $done_before of 100000"

# --- phase 2: the same commands again resume, two on legacy at once, ev7 beside them -----------
convert p2_a "${legacy_args[@]}" --batch-size 2000 &
pa=$!
convert p2_b "${legacy_args[@]}" --batch-size 3000 &
pb=$!
convert p2_c ev7 --meta 2 --batch-size 2000 &
pc=$!
ra=0 rb=0 rcc=0
wait "$pa" || ra=$?
wait "$pb" || rb=$?
wait "$pc" || rcc=$?
check "phase 2: the three runs resumed and finished (exit codes)" "$ra $rb $rcc" "0 0 0"
((ra == 0 && rb == 0 && rcc == 0)) || { show p2_a 25; show p2_b 25; show p2_c 25; }
todo="$(sed -n 's/.*step 4: \([0-9]*\) rows to give IDs.*/\1/p' "$CL_WORK"/p2_[ab].out | sort -n | tr '\n' ' ')"
check "phase 2: the runs on legacy resumed where the crash left them (fewer than 100000 rows to do: ${todo% })" \
    "$(for n in $todo; do ((n < 100000)) || echo "$n"; done; [[ -n "$todo" && "$done_before" -gt 0 ]] || echo none)" ""
grep -h 'converted in\|rows converted by this run\|step 9: the swap.*done in' "$CL_WORK"/p2_*.out | sed 's/^/      | /'

rc=0
convert ul ul --meta 3 || rc=$?
check "ul (ULID keys): converted (exit 0)" "$rc" 0
((rc == 0)) || show ul 20

# --- a NULL time: reported, stopped before NOT NULL; the printed instruction finishes it --------
rc=0
convert nt1 nt --meta 4 --time-column created_at || rc=$?
check "nt: a NULL time: exit 3, the row named, stopped before NOT NULL and the swap" \
    "$rc $(grep -c '1 row(s) cannot be converted.*id=500 (created_at=NULL)' "$CL_WORK/nt1.out") $(sql "SELECT a.attnotnull FROM pg_attribute a
        WHERE a.attrelid = 'nt'::regclass AND a.attname = 'sno_id'") $(sql "SELECT a.attname FROM pg_constraint c
        JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] WHERE c.conrelid = 'nt'::regclass AND c.contype = 'p'")" \
    "3 1 f id"
cmd="$(sed -n 's/^  run: //p' "$CL_WORK/nt1.out")"
echo "    following the instruction: $cmd"
rc=0
[[ "$cmd" == "python -m sno_pg.convert "* ]] || bad "nt: no instruction to run printed"
before="$(sql "SELECT now()")"
PATH="$venv/bin:$PATH" bash -c "$cmd" >"$CL_WORK/nt2.out" 2>&1 || rc=$?
check "nt: the printed command finishes it (exit 0; primary key sno_id)" "$rc $(sql "SELECT a.attname FROM pg_constraint c
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] WHERE c.conrelid = 'nt'::regclass AND c.contype = 'p'")" "0 sno_id"
((rc == 0)) || show nt2 20
check "nt: the row without a time got the conversion's time, the others their own" \
    "$(sql "SELECT count(*) FILTER (WHERE id = 500 AND sno_time(sno_id) >= sno_time(sno_min('$before'))),
                   count(*) FILTER (WHERE id <> 500 AND sno_time(sno_id) = sno_time(sno_min(created_at))) FROM nt")" "1|999"

# --- the clients stop -----------------------------------------------------------------------------
touch "$stop"
for p in "${clients[@]}"; do wait "$p" || bad "a client exited with an error"; done

# --- checks ---------------------------------------------------------------------------------------
sql "CREATE TABLE given (tbl text, k text, id text)" >/dev/null
for i in 1 2 3; do
    node_psql_db a adopt -c "COPY given FROM STDIN" <"$CL_WORK/client$i.ids"
done
echo "    the clients were given: $(sql "SELECT string_agg(tbl || ' ' || n, ', ' ORDER BY tbl) FROM (SELECT tbl, count(*) n FROM given
    WHERE id <> '' GROUP BY tbl) s") sno IDs; they inserted $(sql "SELECT count(*) FROM given WHERE tbl <> 'generate'") rows"
check "the clients were given IDs by the new defaults of legacy, ev7 and ul" \
    "$(sql "SELECT count(DISTINCT tbl) FROM given WHERE id <> '' AND tbl <> 'generate'")" 3
for t in legacy ev7 ul nt; do
    check "$t: every row has one ID" "$(sql "SELECT count(*) = count(sno_id) AND count(*) = count(DISTINCT sno_id) FROM $t")" t
done
check "no ID twice among every row of the four tables and every ID sno_generate gave a client" \
    "$(sql "SELECT count(*) - count(DISTINCT id) FROM (SELECT sno_id id FROM legacy UNION ALL SELECT sno_id FROM ev7
            UNION ALL SELECT sno_id FROM ul UNION ALL SELECT sno_id FROM nt
            UNION ALL SELECT id::sno FROM given WHERE tbl = 'generate') s")" 0
check "every ID a client was given at insert is the one its row keeps" \
    "$(sql "SELECT count(*) FILTER (WHERE x IS DISTINCT FROM id::sno) FROM (
            SELECT g.id, l.sno_id x FROM given g LEFT JOIN legacy l ON l.id = g.k::bigint WHERE g.tbl = 'legacy' AND g.id <> ''
            UNION ALL SELECT g.id, e.sno_id FROM given g LEFT JOIN ev7 e ON e.id = g.k::uuid WHERE g.tbl = 'ev7' AND g.id <> ''
            UNION ALL SELECT g.id, u.sno_id FROM given g LEFT JOIN ul u ON u.id = g.k WHERE g.tbl = 'ul' AND g.id <> '') s")" 0
check "legacy: the 100,000 old rows have reserved-space IDs whose time is created_at floored to 4 ms" \
    "$(sql "SELECT count(*) FILTER (WHERE sno_partition(sno_id) >= 61440 AND sno_time(sno_id) = sno_time(sno_min(created_at)))
            FROM legacy WHERE id <= 100000")" 100000
check "legacy: rows clients inserted before the conversion began were converted from their created_at too" \
    "$(sql "SELECT count(*) FILTER (WHERE sno_partition(sno_id) >= 61440 AND sno_time(sno_id) <> sno_time(sno_min(created_at))) FROM legacy")" 0
# A run's IDs (one reserved partition each) increase in (created_at, id) order, but for rows a
# client held locked when a batch passed them: done in a later pass, each can break the order of
# its 4 ms unit on both sides.
later="$(sed -n 's/.*step 4: .* \([0-9]*\) rows in later passes.*/\1/p' "$CL_WORK"/p2_[ab].out | awk '{ s += $1 } END { print s + 0 }')"
inversions="$(sql "SELECT count(*) FROM (SELECT sno_id, lag(sno_id) OVER (PARTITION BY sno_partition(sno_id) ORDER BY created_at, id) prev
            FROM legacy WHERE sno_partition(sno_id) >= 61440) s WHERE prev >= sno_id")"
check "legacy: each run's IDs increase in (created_at, id) order ($inversions inversions; $later rows in later passes)" \
    "$((inversions <= 2 * later))" 1
for tk in "ev7 uuid7 20000" "ul ulid 10000"; do
    read -r t kind n <<<"$tk"
    got="$("$venv/bin/python" "$here/adopt_convert.py" times "$dsn" "$t" "$kind")"
    check "$t: sno_time of every converted row is its key's own time floored to 4 ms (decoded in Python)" \
        "$(awk '{ print ($2 >= '"$n"') " " $4 }' <<<"$got")" "1 0"
done
check "children: the new columns match their parents' new keys (also rows clients wrote meanwhile)" \
    "$(sql "SELECT (SELECT count(*) FROM orders o LEFT JOIN legacy l ON l.id = o.legacy_id WHERE o.legacy_sno_id IS DISTINCT FROM l.sno_id)
         + (SELECT count(*) FROM notes o LEFT JOIN legacy l ON l.id = o.legacy_id WHERE o.legacy_sno_id IS DISTINCT FROM l.sno_id)
         + (SELECT count(*) FROM ev7_child o LEFT JOIN ev7 l ON l.id = o.ev WHERE o.ev_sno IS DISTINCT FROM l.sno_id)")" 0
check "foreign keys: old and new, all validated (legacy 4, ev7 2)" \
    "$(sql "SELECT string_agg(confrelid::regclass || ' ' || n || ' ' || v, ', ' ORDER BY confrelid::regclass::text) FROM (
            SELECT confrelid, count(*) n, bool_and(convalidated) v FROM pg_constraint WHERE contype = 'f'
            AND confrelid IN ('legacy'::regclass, 'ev7'::regclass) GROUP BY confrelid) s")" "ev7 2 true, legacy 4 true"
check "primary keys: sno_id; the old keys: a unique constraint each" \
    "$(sql "SELECT string_agg(c.conrelid::regclass || ' ' || c.contype::text || ' ' || a.attname, ', ' ORDER BY c.conrelid::regclass::text, c.contype)
            FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
            WHERE c.conrelid IN ('legacy'::regclass, 'ev7'::regclass, 'ul'::regclass, 'nt'::regclass) AND c.contype IN ('p', 'u')")" \
    "ev7 p sno_id, ev7 u id, legacy p sno_id, legacy u id, nt p sno_id, nt u id, ul p sno_id, ul u id"
check "the children's NOT NULL foreign keys' new columns are NOT NULL" \
    "$(sql "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || attnotnull, ', ' ORDER BY attrelid::regclass::text)
            FROM pg_attribute WHERE attname IN ('legacy_sno_id', 'ev_sno') AND attrelid IN ('orders'::regclass, 'notes'::regclass, 'ev7_child'::regclass)")" \
    "ev7_child.ev_sno true, notes.legacy_sno_id false, orders.legacy_sno_id true"
check "no INVALID index, no work index, no check constraint left" \
    "$(sql "SELECT (SELECT count(*) FROM pg_index WHERE NOT indisvalid) || ' ' || (SELECT count(*) FROM pg_class WHERE relname LIKE '%sno_todo')
            || ' ' || (SELECT count(*) FROM pg_constraint WHERE conname LIKE '%not_null')")" "0 0 0"
sql "SELECT 'reserved partitions granted: ' || granted || ', left: ' || remaining FROM sno_reserved" | sed 's/^/    /'

# The clients: no error but the crash's, and no statement longer than the documented bound.
bound=$((LOCK_TIMEOUT_MS + CLIENT_MARGIN_MS))
for i in 1 2 3; do
    read -r n max op slow conn other < <("$venv/bin/python" -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(s["statements"], int(s["max"] * 1000), s["max_op"] or "-", s["over_half_second"], s["conn_errors"], len(s["other_errors"]))
for e in s["other_errors"]:
    print("   ", e, file=sys.stderr)' "$CL_WORK/client$i.stats")
    echo "    client $i: $n statements, the slowest $max ms ($op), $slow over 0.5 s, $conn failed with the crash"
    check "client $i: no error other than the crash's" "$other" 0
    check "client $i: no statement waited longer than lock_timeout + ${CLIENT_MARGIN_MS} ms ($bound ms)" \
        "$((max <= bound))" 1
done
echo "(adopt_convert: $((SECONDS - t0)) s)"
exit "$fail"
