# Data for the upgrade tests (pg_upgrade.sh, extension_update.sh): sno columns with every
# kind of index and a hash-partitioned table, the rows that fill them, and the checks that they
# are intact. Sourced after tests/client/lib.bash; the caller defines q NODE ARGS... (psql on
# its test database) and, for check_integrity, the array nq (psql on the server to check).

ROWS_MAIN=${ROWS_MAIN:-30000} # t_main rows per batch, 3 IDs each
ROWS_PART=${ROWS_PART:-20000} # t_part rows per batch, 1 ID each
IDS_PER_BATCH=$((3 * ROWS_MAIN + ROWS_PART))

# The schema: btree (primary keys), hash and BRIN indexes on sno columns, a column DEFAULT
# sno_generate(1), a table PARTITION BY HASH (id sno) with 4 partitions.
SNO_DATA_SCHEMA="$(cat <<'SQL'
CREATE TABLE t_main (
    id sno PRIMARY KEY DEFAULT sno_generate(1),
    ref sno NOT NULL,
    seen sno NOT NULL,
    batch int NOT NULL,
    n int NOT NULL,
    note text
);
CREATE INDEX t_main_ref_hash ON t_main USING hash (ref);
CREATE INDEX t_main_seen_brin ON t_main USING brin (seen) WITH (pages_per_range = 4);
CREATE TABLE t_part (id sno PRIMARY KEY, batch int NOT NULL, n int NOT NULL) PARTITION BY HASH (id);
CREATE TABLE t_part_0 PARTITION OF t_part FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TABLE t_part_1 PARTITION OF t_part FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TABLE t_part_2 PARTITION OF t_part FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TABLE t_part_3 PARTITION OF t_part FOR VALUES WITH (MODULUS 4, REMAINDER 3);
SQL
)"

# batch NODE N: rows of batch N, every sno column made by sno_generate (t_main.id by
# its DEFAULT), 30 + 20 rows at a time with a 5 ms pause between: about 6 s during which
# nearly every 4 ms unit gets IDs. Dense, so that a clock set back into that time meets units
# that hold old IDs (bursts with long pauses between them can miss each other).
batch() {
    local per_main=$((ROWS_MAIN / 1000)) per_part=$((ROWS_PART / 1000))
    q "$1" -c "DO \$\$ BEGIN
        FOR c IN 0..999 LOOP
            INSERT INTO t_main (ref, seen, batch, n, note)
                SELECT sno_generate(2), sno_generate(4), $2, g, 'row ' || g
                FROM generate_series(c * $per_main + 1, (c + 1) * $per_main) g;
            INSERT INTO t_part SELECT sno_generate(3), $2, g
                FROM generate_series(c * $per_part + 1, (c + 1) * $per_part) g;
            PERFORM pg_sleep(0.005);
        END LOOP;
    END \$\$" -c "ANALYZE t_main, t_part" >/dev/null
}

# ids_of N: every ID of batch N, as a subquery with column x.
ids_of() {
    echo "(SELECT id FROM t_main WHERE batch = $1 UNION ALL SELECT ref FROM t_main WHERE batch = $1
           UNION ALL SELECT seen FROM t_main WHERE batch = $1 UNION ALL SELECT id FROM t_part WHERE batch = $1) AS ids_$1(x)"
}

ALL_IDS="(SELECT id FROM t_main UNION ALL SELECT ref FROM t_main UNION ALL SELECT seen FROM t_main
          UNION ALL SELECT id FROM t_part) AS all_ids(x)"
DIGEST="SELECT (SELECT md5(string_agg(format('%s|%s|%s|%s|%s|%s', id::bytea, ref::bytea, seen::bytea, batch, n, note), ',' ORDER BY id))
                FROM t_main WHERE batch = 1),
               (SELECT md5(string_agg(format('%s|%s|%s|%s', tableoid::regclass, id::bytea, batch, n), ',' ORDER BY id))
                FROM t_part WHERE batch = 1)"

# shared_units NAME [OLD NEW]: the IDs of batch NEW (2) were made in 4 ms units that IDs of
# batch OLD (1) were made in too (the new server's clock was behind), so only the partition or
# the tick-tock bit sets them apart.
shared_units() {
    local n o="${2:-1}" w="${3:-2}"
    n="$("${nq[@]}" -At -c "SELECT count(*) FROM (SELECT DISTINCT sno_time(x) FROM $(ids_of "$o")) o(t)
        JOIN (SELECT DISTINCT sno_time(x) FROM $(ids_of "$w")) n(t) USING (t)")"
    if [[ "$n" =~ ^[0-9]+$ ]] && ((n > 0)); then
        echo "ok: $1: the new server's clock was behind: $n of the new IDs' 4 ms units hold old IDs too"
    else
        bad "$1: no 4 ms unit holds both old and new IDs ('$n'): the new clock was not among the old IDs"
        "${nq[@]}" -At -c "SELECT 'old', min(sno_time(x)), max(sno_time(x)) FROM $(ids_of "$o")
            UNION ALL SELECT 'new', min(sno_time(x)), max(sno_time(x)) FROM $(ids_of "$w")" | sed 's/^/    /'
    fi
}

# check_integrity NAME DIR: amcheck, the hash and BRIN indexes, hash partition routing (DIR
# holds scratch files).
check_integrity() {
    local name="$1" dir="$2" out plan
    # amcheck: every btree index (catalogs included), every table's heap.
    "${nq[@]}" -c "CREATE EXTENSION amcheck" || bad "$name: CREATE EXTENSION amcheck"
    out="$("${nq[@]}" -At -c "SELECT count(*), count(*) FILTER (WHERE s.nspname = 'public') FROM
        (SELECT c.oid, n.nspname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE a.amname = 'btree' AND c.relkind = 'i' AND c.relpersistence <> 't' OFFSET 0) s,
        LATERAL bt_index_check(s.oid, true)" 2>&1)"
    if [[ "$out" =~ ^[0-9]+\|5$ ]]; then
        echo "ok: $name: bt_index_check(heapallindexed) on every btree index (${out%|*}, 5 on sno)"
    else
        bad "$name: bt_index_check: $out"
    fi
    if [[ "$("${nq[@]}" -At -c "SELECT count(*) FROM pg_proc WHERE proname = 'verify_heapam'")" == 1 ]]; then
        check "$name: verify_heapam finds nothing on every table" \
            "$("${nq[@]}" -At -c "SELECT count(*) FROM (SELECT oid FROM pg_class
                WHERE relkind IN ('r', 'm', 't') AND relpersistence <> 't' OFFSET 0) c, LATERAL verify_heapam(c.oid)" 2>&1)" 0
    else
        echo "note: $name: this amcheck has no verify_heapam"
    fi
    check "$name: every index is valid" \
        "$("${nq[@]}" -At -c "SELECT count(*) FROM pg_index WHERE NOT indisvalid OR NOT indisready")" 0

    # The hash and BRIN indexes give a sequential scan's answers for a sample of lookups
    # (every 97th row of each batch, and values that are in no row).
    local probe="CREATE TEMP TABLE probe AS
        SELECT ref AS r, seen AS s FROM t_main WHERE n % 97 = 0
        UNION ALL SELECT sno_from_parts(timestamptz '2025-01-01 00:00:00+00' + g * interval '1 s', 2, 65000, g),
                         sno_from_parts(timestamptz '2025-01-01 00:00:00+00' + g * interval '1 s', 4, 65000, g)
        FROM generate_series(1, 20) g; ANALYZE probe;"
    local hashq="SELECT md5(string_agg(p.r::text || ':' || c, ',' ORDER BY p.r)) FROM probe p,
        LATERAL (SELECT count(*) AS c FROM t_main t WHERE t.ref = p.r) x"
    local brinq="SELECT md5(string_agg(p.s::text || ':' || c || ':' || rc, ',' ORDER BY p.s)) FROM
        (SELECT s, lead(s) OVER (ORDER BY s) AS nxt FROM probe) p,
        LATERAL (SELECT count(*) FILTER (WHERE t.seen = p.s) AS c,
                        count(*) AS rc FROM t_main t WHERE t.seen >= p.s AND t.seen < p.nxt) x"
    local idx="SET enable_seqscan = off; SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_material = off;"
    local seq="SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off;"
    local plan res_idx res_seq
    plan="$("${nq[@]}" -At -c "$probe" -c "SET enable_bitmapscan = off; $idx" -c "EXPLAIN (COSTS OFF) $hashq")"
    check "$name: the hash index is used for lookups" "$(grep -c 'Index Scan using t_main_ref_hash' <<<"$plan")" 1
    res_idx="$("${nq[@]}" -At -c "$probe" -c "SET enable_bitmapscan = off; $idx" -c "$hashq")"
    res_seq="$("${nq[@]}" -At -c "$probe" -c "$seq" -c "$hashq")"
    if [[ -n "$res_idx" && "$res_idx" == "$res_seq" ]]; then
        echo "ok: $name: hash index lookups = sequential scan ($("${nq[@]}" -At -c "SELECT count(*) FROM t_main WHERE n % 97 = 0") present, 20 absent)"
    else
        bad "$name: hash index lookups '$res_idx', sequential scan '$res_seq'"
    fi
    plan="$("${nq[@]}" -At -c "$probe" -c "SET enable_indexscan = off; SET enable_indexonlyscan = off; $idx" -c "EXPLAIN (COSTS OFF) $brinq")"
    check "$name: the BRIN index is used for lookups" "$(grep -c 'Bitmap Index Scan on t_main_seen_brin' <<<"$plan")" 1
    res_idx="$("${nq[@]}" -At -c "$probe" -c "SET enable_indexscan = off; SET enable_indexonlyscan = off; $idx" -c "$brinq")"
    res_seq="$("${nq[@]}" -At -c "$probe" -c "$seq" -c "$brinq")"
    if [[ -n "$res_idx" && "$res_idx" == "$res_seq" ]]; then
        echo "ok: $name: BRIN index lookups and ranges = sequential scan"
    else
        bad "$name: BRIN index lookups '$res_idx', sequential scan '$res_seq'"
    fi

    # Hash partitioning: every row where its hash routes it; WHERE id = x is pruned to one
    # partition and finds the row, for a sample.
    check "$name: every row is in the partition its hash routes to" \
        "$("${nq[@]}" -At -c "SELECT count(*) FROM t_part
            WHERE NOT satisfies_hash_partition('t_part'::regclass, 4, substr(tableoid::regclass::text, 8)::int, id)")" 0
    check "$name: rows in all 4 partitions" \
        "$("${nq[@]}" -At -c "SELECT count(DISTINCT tableoid) FROM t_part")" 4
    local sample="$dir/lookups.sql" expect
    "${nq[@]}" -At -c "SELECT format('SELECT count(*) FROM t_part WHERE id = %L;', id) FROM t_part WHERE n % 97 = 0" >"$sample"
    "${nq[@]}" -At -c "SELECT format('SELECT count(*) FROM t_part WHERE id = %L;', sno_from_parts(timestamptz '2025-01-01 00:00:00+00' + g * interval '1 s', 3, 65000, g)) FROM generate_series(1, 20) g" >>"$sample"
    expect="$(($(wc -l <"$sample") - 20))"
    check "$name: WHERE id = x finds each of $expect sampled rows and none of 20 absent ones" \
        "$("${nq[@]}" -At -f "$sample" | sort | uniq -c | awk '{printf "%s:%s ", $2, $1}')" "0:20 1:$expect "
    plan="$("${nq[@]}" -At -c "EXPLAIN (COSTS OFF) $(head -1 "$sample")")"
    check "$name: WHERE id = x is pruned to one partition" "$(grep -c 't_part_[0-3]' <<<"$plan")" 1
}
