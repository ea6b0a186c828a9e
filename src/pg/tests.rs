//! In-database tests (`cargo pgrx test`): the type inside a real server, through every path a
//! value can take. Error messages and SQLSTATEs are checked by the SQL golden files in
//! `pgrx-tests/`; these tests check properties that need loops, random data or plans.

#[pgrx::pg_schema]
mod tests {
    use crate::id::encoding::encode;
    use crate::id::layout::Sno;
    use pgrx::prelude::*;

    fn one<T: pgrx::IntoDatum + pgrx::FromDatum>(q: &str) -> T {
        Spi::get_one::<T>(q)
            .unwrap_or_else(|e| panic!("{q}: {e}"))
            .unwrap_or_else(|| panic!("{q}: NULL"))
    }

    fn run(q: &str) {
        Spi::run(q).unwrap_or_else(|e| panic!("{q}: {e}"));
    }

    #[pg_test]
    fn ids_for_random_past_times_never_meet_live_ids_and_keep_the_session_order() {
        // Random times, a third of them the current unit (where sno_generate writes too), in
        // random order, for three meta bytes; then live IDs for now.
        run("CREATE TABLE t_at AS SELECT g, m, t, sno_generate_at(m, t) AS id FROM (
                SELECT g, g % 3 AS m,
                       CASE WHEN g % 3 = 0 THEN clock_timestamp()
                            ELSE timestamptz '2011-01-01+00' + random() * interval '20 years' END AS t
                FROM generate_series(1, 30000) g) s");
        run("INSERT INTO t_at SELECT g, g % 3, clock_timestamp(), sno_generate(g % 3) FROM generate_series(30001, 60000) g");
        assert_eq!(one::<i64>("SELECT count(DISTINCT id) FROM t_at"), 60_000);
        // Never a live partition, never one of theirs.
        assert_eq!(
            one::<i64>(
                "SELECT count(*) FROM t_at a JOIN t_at b ON sno_partition(a.id) = sno_partition(b.id)
                 WHERE a.g <= 30000 AND b.g > 30000"
            ),
            0
        );
        // Within one unit and meta, in call order: strictly increasing (a unit given again after
        // later ones takes numbers past every one given).
        assert!(one::<bool>(
            "SELECT coalesce(bool_and(id > prev), true) FROM (
                SELECT id, lag(id) OVER (PARTITION BY m ORDER BY date_bin('4 ms', t, '2010-01-01+00'), g) AS prev
                FROM t_at WHERE g <= 30000) s WHERE prev IS NOT NULL AND sno_time(id) = sno_time(prev)"
        ));
    }

    #[pg_test]
    fn catalog_says_fixed_10_bytes_by_reference() {
        let row: String = one(
            "SELECT format('%s %s %s %s', typlen, typbyval, typalign, typstorage) FROM pg_type WHERE typname = 'sno'",
        );
        assert_eq!(row, "10 f c p");
        assert_eq!(
            one::<i32>("SELECT pg_column_size('brpk4q72xwf2m63l'::sno)"),
            10
        );
        run("CREATE TABLE t_size AS SELECT sno_from_parts(now(), 1, 2, g) AS id FROM generate_series(1, 1000) g");
        // Plain storage, no varlena header: 1000 values take 10,000 bytes of data.
        assert_eq!(
            one::<i64>("SELECT sum(pg_column_size(id))::int8 FROM t_size"),
            10_000
        );
    }

    #[pg_test]
    fn every_go_vector_reads_back_the_same_fields() {
        let csv = include_str!("../../tests/data/ids.csv");
        for row in csv.lines().skip(1).filter(|l| !l.is_empty()) {
            let f: Vec<&str> = row.split(',').collect();
            let q = format!(
                "SELECT format('%s,%s,%s,%s,%s,%s,%s', encode(bytea(v), 'hex'), v,
                    (extract(epoch FROM sno_time(v)) * 1000)::int8, sno_tick(v), sno_meta(v),
                    sno_partition(v), sno_sequence(v))
                 FROM (SELECT '{}'::sno AS v) s",
                f[1].to_uppercase()
            );
            assert_eq!(one::<String>(&q), row);
            let hex_in = format!("SELECT sno(decode('{}', 'hex'))::text", f[0]);
            assert_eq!(one::<String>(&hex_in), f[1]);
        }
    }

    #[pg_test]
    fn from_parts_round_trips_fields() {
        let q = "SELECT bool_and((extract(epoch FROM sno_time(v)) * 1000000)::int8 = ((extract(epoch FROM t) * 1000000)::int8 / 4000) * 4000
                     AND sno_meta(v) = m AND sno_partition(v) = p AND sno_sequence(v) = s AND sno_tick(v) = k)
                 FROM (SELECT t, m, p, s, k, sno_from_parts(t, m, p, s, k) AS v
                       FROM (SELECT timestamptz '2010-01-01 00:00:00+00' + random() * interval '69 years' AS t,
                                    (random() * 255)::int AS m, (random() * 65535)::int AS p,
                                    (random() * 65535)::int AS s, (random() > 0.5)::int AS k
                             FROM generate_series(1, 20000)) r) x";
        assert!(one::<bool>(q));
        assert!(one::<bool>(
            "SELECT sno_time(sno_from_parts('2031-05-08 23:03:34.976+00', 255, 39434, 4147)) = '2031-05-08 23:03:34.976+00'
                AND sno_from_parts('2031-05-08 23:03:34.976+00', 255, 39434, 4147) = 'brpk4q72xwf2m63l'"
        ));
    }

    #[pg_test]
    fn order_by_is_byte_order_and_text_order() {
        run("CREATE TABLE t_ord AS SELECT sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)) AS id
             FROM generate_series(1, 20000)");
        assert!(one::<bool>(
            "SELECT (SELECT array_agg(id ORDER BY id) FROM t_ord)::text[]
                  = (SELECT array_agg(id::text ORDER BY id::text COLLATE \"C\") FROM t_ord)"
        ));
        assert!(one::<bool>(
            "SELECT (SELECT array_agg(id ORDER BY id) FROM t_ord)
                  = (SELECT array_agg(id ORDER BY bytea(id)) FROM t_ord)"
        ));
        // The same through an index scan and through sort support with abbreviated keys.
        run("CREATE INDEX ON t_ord (id)");
        run("SET enable_seqscan = off");
        assert!(one::<bool>(
            "SELECT (SELECT array_agg(id) FROM (SELECT id FROM t_ord ORDER BY id) s)
                  = (SELECT array_agg(id ORDER BY bytea(id)) FROM t_ord)"
        ));
        // Descending and comparison operators agree with sno_cmp.
        assert!(one::<bool>(
            "SELECT bool_and((a < b) = (sno_cmp(a, b) < 0) AND (a <= b) = (sno_cmp(a, b) <= 0)
                         AND (a = b) = (sno_cmp(a, b) = 0) AND (a <> b) = (sno_cmp(a, b) <> 0)
                         AND (a >= b) = (sno_cmp(a, b) >= 0) AND (a > b) = (sno_cmp(a, b) > 0)
                         AND (a < b) = (bytea(a) < bytea(b)))
             FROM (SELECT id AS a, lead(id) OVER (ORDER BY random()) AS b FROM t_ord) s WHERE b IS NOT NULL"
        ));
        assert_eq!(
            one::<String>("SELECT format('%s %s', min(id), max(id)) FROM t_ord"),
            one::<String>("SELECT format('%s %s', (SELECT id FROM t_ord ORDER BY bytea(id) LIMIT 1), (SELECT id FROM t_ord ORDER BY bytea(id) DESC LIMIT 1))")
        );
    }

    #[pg_test]
    fn text_comparisons_agree_with_sno_ones_by_scan_and_by_index() {
        run("CREATE TABLE t_txt AS SELECT sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)) AS id
             FROM generate_series(1, 20000)");
        // Random pairs, the text side in lower and upper case, varchar and text, both ways.
        assert!(one::<bool>(
            "SELECT bool_and(sno_cmp_text(a, bt) = sno_cmp(a, b) AND text_cmp_sno(at, b) = sno_cmp(a, b)
                         AND (a = bt) = (a = b) AND (a <> bt::varchar) = (a <> b) AND (a < upper(bt)) = (a < b)
                         AND (a <= bt) = (a <= b) AND (a > bt) = (a > b) AND (a >= bt) = (a >= b)
                         AND (at = b) = (a = b) AND (at <> b) = (a <> b) AND (upper(at)::varchar < b) = (a < b)
                         AND (at <= b) = (a <= b) AND (at > b) = (a > b) AND (at >= b) = (a >= b))
             FROM (SELECT id AS a, id::text AS at, lead(id) OVER (ORDER BY random()) AS b,
                          (lead(id) OVER (ORDER BY random()))::text AS bt FROM t_txt) s WHERE b IS NOT NULL"
        ));
        // Through the btree index: the same rows for each of 200 random bounds.
        run("CREATE INDEX ON t_txt (id)");
        run("SET enable_seqscan = off");
        run("SET enable_bitmapscan = off");
        assert!(one::<bool>(
            "SELECT bool_and((SELECT count(*) FROM t_txt WHERE id > x::varchar) = (SELECT count(*) FROM t_txt WHERE id::text > x COLLATE \"C\")
                         AND (SELECT count(*) FROM t_txt WHERE id = x) = 1
                         AND (SELECT count(*) FROM t_txt WHERE x >= id) = (SELECT count(*) FROM t_txt WHERE id::text <= x COLLATE \"C\"))
             FROM (SELECT id::text AS x FROM t_txt ORDER BY random() LIMIT 200) s"
        ));
    }

    #[pg_test]
    fn range_by_time_uses_the_index() {
        run("CREATE TABLE t_rng (id sno PRIMARY KEY, n int)");
        run("INSERT INTO t_rng SELECT sno_from_parts(timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second', 1, 7, 0), g
             FROM generate_series(1, 50000) g");
        run("ANALYZE t_rng");
        let q = "SELECT count(*) FROM t_rng WHERE id BETWEEN sno_min('2024-01-01 01:00:00+00') AND sno_max('2024-01-01 01:59:59+00')";
        let explain = Spi::connect(|c| {
            c.select(&format!("EXPLAIN (COSTS OFF) {q}"), None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        });
        assert!(
            explain.contains("Index Only Scan") || explain.contains("Index Scan"),
            "{explain}"
        );
        assert_eq!(one::<i64>(q), 3600);
        // sno_min/sno_max bound exactly the 4 ms unit.
        assert!(one::<bool>(
            "SELECT sno_min('2024-01-01 00:00:00.005+00') = sno_from_parts('2024-01-01 00:00:00.004+00', 0, 0, 0, 0)
                AND sno_max('2024-01-01 00:00:00.007999+00') = sno_from_parts('2024-01-01 00:00:00.004+00', 255, 65535, 65535, 1)
                AND sno_max('2024-01-01 00:00:00.003+00') < sno_min('2024-01-01 00:00:00.004+00')"
        ));
    }

    #[pg_test]
    fn time_predicates_scan_the_key_and_answer_as_a_seqscan() {
        run("CREATE TABLE t_tp (id sno PRIMARY KEY, n int)");
        run("INSERT INTO t_tp SELECT sno_from_parts(timestamptz '2024-01-01 00:00:00+00' + g * interval '1 ms', g % 256, 7, g % 65536, g % 2), g
             FROM generate_series(1, 50000) g");
        run("ANALYZE t_tp");
        let w = "sno_time(id) >= '2024-01-01 00:00:10.002+00' AND sno_time(id) < '2024-01-01 00:00:20+00'";
        let explain = Spi::connect(|c| {
            c.select(
                &format!("EXPLAIN (COSTS OFF) SELECT count(*) FROM t_tp WHERE {w}"),
                None,
                &[],
            )
            .unwrap()
            .map(|r| r.get::<String>(1).unwrap().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n")
        });
        assert!(
            explain.contains("Index Cond: ((id >= '")
                && explain.contains("Filter: ((sno_time(id) >="),
            "{explain}"
        );
        // The unit holding 10.002 starts at 10.000: the bound takes it, the filter drops it.
        assert_eq!(
            one::<i64>(&format!("SELECT count(*) FROM t_tp WHERE {w}")),
            9996
        );
        assert_eq!(
            one::<i64>(&format!(
                "SELECT count(*) FROM (SELECT id FROM t_tp OFFSET 0) s WHERE {w}"
            )),
            9996
        );
        assert!(one::<bool>(
            "SELECT sno_lower_bound('-infinity') = '2222222222222222'::sno
                AND sno_upper_bound('infinity') = 'xxxxxxxxxxxxxxxx'::sno
                AND sno_lower_bound('2024-01-01 00:00:00.005+00') = sno_min('2024-01-01 00:00:00.005+00')"
        ));
    }

    #[pg_test]
    fn the_generator_view_shows_the_whole_pool_by_default() {
        assert_eq!(
            one::<String>(
                "SELECT format('%s %s %s', sequence_min, sequence_max, ids_per_unit) FROM sno_generator"
            ),
            "0 65535 65536"
        );
    }

    #[pg_test]
    fn btree_index_of_random_values_passes_amcheck() {
        run("CREATE EXTENSION IF NOT EXISTS amcheck");
        run("CREATE EXTENSION IF NOT EXISTS pageinspect");
        run("CREATE TABLE t_chk AS SELECT sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)) AS id
             FROM generate_series(1, 100000)");
        run("INSERT INTO t_chk SELECT id FROM t_chk LIMIT 5000"); // duplicates exercise deduplication
        run("CREATE INDEX t_chk_idx ON t_chk (id)");
        run("SELECT bt_index_parent_check('t_chk_idx', heapallindexed => true)");
        // Deduplication is allowed (btequalimage) and used.
        assert!(one::<bool>(
            "SELECT (SELECT allequalimage FROM bt_metap('t_chk_idx')) IS NOT FALSE"
        ));
        assert_eq!(one::<i64>("SELECT count(DISTINCT id) FROM t_chk"), 100_000);
    }

    #[pg_test]
    fn hash_index_hash_join_hash_aggregate_and_hash_partitions() {
        run("CREATE TABLE t_h AS SELECT sno_from_parts(timestamptz '2024-06-01+00' + g * interval '1 ms', g % 256, 1, g % 65536) AS id, g
             FROM generate_series(1, 40000) g");
        run("CREATE INDEX t_h_hash ON t_h USING hash (id)");
        run("SET enable_seqscan = off");
        assert_eq!(
            one::<i64>("SELECT g::int8 FROM t_h WHERE id = sno_from_parts(timestamptz '2024-06-01+00' + 1234 * interval '1 ms', 1234 % 256, 1, 1234)"),
            1234
        );
        run("RESET enable_seqscan");
        run("SET enable_mergejoin = off; SET enable_nestloop = off; SET enable_sort = off");
        assert_eq!(
            one::<i64>("SELECT count(*) FROM t_h a JOIN t_h b USING (id)"),
            40_000
        );
        assert_eq!(
            one::<i64>("SELECT count(*) FROM (SELECT id FROM t_h GROUP BY id) s"),
            40_000
        );
        run("CREATE TABLE t_part (id sno PRIMARY KEY) PARTITION BY HASH (id)");
        for i in 0..4 {
            run(&format!(
                "CREATE TABLE t_part_{i} PARTITION OF t_part FOR VALUES WITH (MODULUS 4, REMAINDER {i})"
            ));
        }
        run("INSERT INTO t_part SELECT id FROM t_h");
        // Every partition gets a fair share (expected 10,000 each).
        assert!(one::<bool>(
            "SELECT min(n) > 9000 AND max(n) < 11000 FROM (SELECT count(*) AS n FROM t_part GROUP BY tableoid) s"
        ));
        // The hash values are PostgreSQL's byte hash of the 10 bytes, stable forever: for
        // bytes that happen to be ASCII they equal what core's text hash gives the same bytes.
        assert!(one::<bool>(
            "SELECT sno_hash(sno('\\x30313233343536373839'::bytea)) = hashtext('0123456789')
                AND sno_hash_extended(sno('\\x30313233343536373839'::bytea), 0) = hashtextextended('0123456789', 0)
                AND sno_hash_extended(sno('\\x30313233343536373839'::bytea), 42) = hashtextextended('0123456789', 42)"
        ));
    }

    #[pg_test]
    fn brin_minmax_finds_time_ranges() {
        run("CREATE TABLE t_brin AS SELECT sno_from_parts(timestamptz '2024-01-01+00' + g * interval '10 ms', 0, 1, 0) AS id
             FROM generate_series(1, 100000) g");
        run("CREATE INDEX t_brin_idx ON t_brin USING brin (id) WITH (pages_per_range = 8)");
        run("SET enable_seqscan = off");
        let q = "SELECT count(*) FROM t_brin WHERE id BETWEEN sno_min('2024-01-01 00:01:00+00') AND sno_max('2024-01-01 00:01:59.999+00')";
        let plan = Spi::connect(|c| {
            c.select(&format!("EXPLAIN (COSTS OFF) {q}"), None, &[])
                .unwrap()
                .map(|r| r.get::<String>(1).unwrap().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        });
        assert!(plan.contains("Bitmap Index Scan on t_brin_idx"), "{plan}");
        assert_eq!(one::<i64>(q), 6000);
    }

    #[pg_test]
    fn copy_text_and_binary_round_trip_with_arrays() {
        run("CREATE TABLE t_copy (id sno, ids sno[])");
        run("INSERT INTO t_copy SELECT sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)),
                    ARRAY[sno(substring(uuid_send(gen_random_uuid()) FROM 1 FOR 10)), NULL, 'xxxxxxxxxxxxxxxx']
             FROM generate_series(1, 2000)");
        run("INSERT INTO t_copy VALUES (NULL, '{}'), ('2222222222222222', NULL)");
        // The files go to the test cluster's data directory and are removed at once (this
        // test runs inside the backend, so it can).
        let dir: String = one("SELECT current_setting('data_directory')");
        let pid: i32 = one("SELECT pg_backend_pid()");
        for format in ["text", "binary", "csv"] {
            let path = format!("{dir}/sno_copy_{pid}.{format}");
            run(&format!("COPY t_copy TO '{path}' (FORMAT {format})"));
            run(&format!("CREATE TABLE t_copy_{format} (LIKE t_copy)"));
            run(&format!(
                "COPY t_copy_{format} FROM '{path}' (FORMAT {format})"
            ));
            std::fs::remove_file(&path).expect("the COPY file is removed");
            assert_eq!(
                one::<i64>(&format!(
                    "SELECT count(*) FROM (SELECT * FROM t_copy EXCEPT ALL SELECT * FROM t_copy_{format}) d"
                )),
                0,
                "{format}"
            );
            assert_eq!(
                one::<i64>(&format!("SELECT count(*) FROM t_copy_{format}")),
                2002
            );
        }
        // The binary form is the 10 raw bytes.
        assert_eq!(
            one::<String>("SELECT encode(sno_send('brpk4q72xwf2m63l'), 'hex')"),
            "4e6f2160a0ff9a0a1033"
        );
        assert_eq!(
            one::<String>("SELECT (ARRAY['brpk4q72xwf2m63l', 'BRPK4Q72XWF2M63M']::sno[])::text"),
            "{brpk4q72xwf2m63l,brpk4q72xwf2m63m}"
        );
    }

    #[pg_test]
    fn bytea_parameter_inserts_into_a_sno_column() {
        run("CREATE TABLE t_go (id sno PRIMARY KEY)");
        // What a Go driver does: a 10-byte bytea parameter, assignment cast to sno.
        run("PREPARE ins(bytea) AS INSERT INTO t_go VALUES ($1)");
        run("EXECUTE ins('\\x4e6f2160a0ff9a0a1033')");
        assert_eq!(
            one::<String>("SELECT id::text FROM t_go"),
            "brpk4q72xwf2m63l"
        );
        assert_eq!(
            one::<String>("SELECT encode(id::bytea, 'hex') FROM t_go"),
            "4e6f2160a0ff9a0a1033"
        );
    }

    #[pg_test]
    fn output_matches_the_pure_encoder() {
        let id = Sno::new(123_456_789, 1, 42, 513, 65000);
        let text = String::from_utf8(encode(&id).to_vec()).unwrap();
        let q = format!("SELECT sno_from_parts(sno_time('{text}'), 42, 513, 65000, 1)::text");
        assert_eq!(one::<String>(&q), text);
    }

    #[pg_test]
    fn generated_ids_are_distinct_increasing_and_carry_their_fields() {
        let ok = Spi::get_one::<bool>(
            "SELECT count(DISTINCT id) = 100000 AND bool_and(id > prev OR prev IS NULL)
                    AND bool_and(sno_meta(id) = 17 AND sno_partition(id) = sno_current_partition())
                    AND bool_and(sno_time(id) BETWEEN now() - interval '1 minute' AND clock_timestamp())
             FROM (SELECT id, lag(id) OVER (ORDER BY g) AS prev
                   FROM (SELECT g, sno_generate(17) AS id FROM generate_series(1, 100000) g) s) t",
        );
        assert_eq!(ok, Ok(Some(true)));
        let issued = Spi::get_one::<i64>(
            "SELECT ids_issued FROM sno_generator_backends WHERE pid = pg_backend_pid()",
        );
        assert!(matches!(issued, Ok(Some(n)) if n >= 100_000), "{issued:?}");
    }

    #[pg_test]
    fn a_full_unit_waits_for_the_next_one_and_is_counted() {
        let s = crate::pg::shmem::shared().expect("sno is preloaded in the test cluster");
        let before: i64 = one("SELECT full_unit_stalls FROM sno_generator");
        // A unit used up, whatever the machine's speed: an ID opens (or takes from) the
        // current unit, the rest of its pool is spent at once, and the next ID must wait for
        // the next unit rather than wrap. (Filling a unit call by call needs 65,536 calls within
        // 4 ms, which a busy machine does not always give.) If the clock reached the next unit
        // between the two, nothing was used up: again, a few microseconds later.
        let mut ids = Vec::new();
        let mut stalls = 0;
        for _ in 0..1000 {
            ids.push(crate::pg::issuer::hot::generate(3));
            s.hot.cursor.spend(crate::generator::cursor::POOL);
            ids.push(crate::pg::issuer::hot::generate(3));
            stalls = one::<i64>("SELECT full_unit_stalls FROM sno_generator") - before;
            if stalls > 0 {
                break;
            }
        }
        assert!(stalls > 0, "no full unit after {} IDs", ids.len());
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "not strictly increasing"
        );
        // The one after the used-up unit is in a later unit.
        let n = ids.len();
        assert!(ids[n - 1].units() > ids[n - 2].units());
        assert!(ids.iter().all(|id| id.meta() == 3));
        let mine: i64 =
            one("SELECT full_unit_stalls FROM sno_generator_backends WHERE pid = pg_backend_pid()");
        assert!(mine >= stalls, "{mine} < {stalls}");
    }

    /// A server-level event noticed under the generator's lock (a takeover, a new derived
    /// partition) is noted, and written to the server log only once the lock is released: a
    /// client that reads slowly never holds up the sessions that generate.
    #[pg_test]
    fn server_events_are_written_after_the_lock_is_released() {
        use crate::pg::errors::{deferred_len, log_later, Problem};
        use crate::pg::shmem;
        let s = shmem::shared().expect("sno is preloaded in the test cluster");
        let (noted, held) = shmem::locked(s, |_| {
            log_later(Problem::TookOver {
                partition: 9,
                by_take_over: false,
            });
            // SAFETY: plain LWLock query.
            (deferred_len(), unsafe { pg_sys::LWLockHeldByMe(s.lock) })
        });
        assert!(held, "the closure ran without the lock");
        assert_eq!(noted, 1, "the event was written while the lock was held");
        assert_eq!(
            deferred_len(),
            0,
            "the event was not written after the lock"
        );
    }

    /// The monitoring functions read under the generator's lock in shared mode: they run
    /// while another reader holds it (here this backend itself, in shared mode), where one
    /// taking it exclusively would wait for it for ever: a regression hangs this test.
    #[pg_test]
    fn monitoring_reads_the_lock_in_shared_mode() {
        use crate::pg::shmem;
        let s = shmem::shared().expect("sno is preloaded in the test cluster");
        run("SELECT sno_generate(1)");
        // SAFETY: plain LWLock use, released below (an error aborts the transaction, which
        // releases every LWLock).
        unsafe { pg_sys::LWLockAcquire(s.lock, pg_sys::LWLockMode::LW_SHARED) };
        let rows = one::<i64>(
            "SELECT (SELECT count(*) FROM sno_generator) + (SELECT count(*) FROM sno_generator_lineage)
                  + (SELECT count(*) FROM sno_generator_backends) + (SELECT count(*) FROM sno_generator_slice())",
        );
        let partition = one::<i32>("SELECT sno_current_partition()");
        // SAFETY: held above.
        unsafe { pg_sys::LWLockRelease(s.lock) };
        assert!(rows >= 4, "{rows} rows");
        assert_eq!(partition, one::<i32>("SELECT partition FROM sno_generator"));
    }

    /// The view tells what the next `sno_generate` does: ready, and the partition it then
    /// writes; told before any ID of this backend and after, without changing anything.
    #[pg_test]
    fn the_status_tells_the_partition_the_next_id_gets() {
        let told = one::<String>(
            "SELECT format('%s %s %s %s', status, status_message IS NULL, partition, sno_current_partition()) FROM sno_generator",
        );
        let made = one::<i32>("SELECT sno_partition(sno_generate(1))");
        assert_eq!(told, format!("ready t {made} {made}"));
        assert_eq!(
            one::<String>("SELECT format('%s %s', status, partition) FROM sno_generator"),
            format!("ready {made}")
        );
        // No failed write on a test server, and no Citus.
        assert_eq!(
            one::<String>(
                "SELECT format('%s %s', state_write_failures, citus_group IS NULL) FROM sno_generator"
            ),
            "0 t"
        );
    }

    /// `sno_generator_lineage` copies some 16 kB: it takes no lock at all (a sequence counter
    /// tells a copy that overlapped a change), so it runs while the generator's lock is held
    /// exclusively (here by this backend itself: a regression hangs this test), and returns
    /// the lineage the locked state holds.
    #[pg_test]
    fn the_lineage_view_takes_no_lock() {
        use crate::pg::shmem;
        let s = shmem::shared().expect("sno is preloaded in the test cluster");
        run("SELECT sno_generate(1)");
        let before = one::<i64>("SELECT count(*) FROM sno_generator_lineage");
        // SAFETY: plain LWLock use, released below (an error aborts the transaction, which
        // releases every LWLock).
        unsafe { pg_sys::LWLockAcquire(s.lock, pg_sys::LWLockMode::LW_EXCLUSIVE) };
        let rows = one::<i64>("SELECT count(*) FROM sno_generator_lineage");
        let mine = one::<i64>("SELECT count(*) FROM sno_generator_lineage WHERE used_here");
        // SAFETY: held above.
        let locked = unsafe { (*s.guarded.get()).lineage };
        // SAFETY: held above.
        unsafe { pg_sys::LWLockRelease(s.lock) };
        assert_eq!(rows, before);
        let want = locked.entries().len() + locked.folded().count();
        assert_eq!(rows as usize, want);
        assert!(
            mine >= 1,
            "this server's own partition is listed as used here"
        );
    }
}
