-- .ci/bench, section text: the table, 200,000 of its keys as text, and lookups_ns (psql
-- -v rows=N).
CREATE UNLOGGED TABLE t_text (id sno PRIMARY KEY, v int);
INSERT INTO t_text SELECT sno_from_parts(timestamptz '2026-01-01+00' + g * interval '1 ms', 1, 42, g % 65536), g
    FROM generate_series(1, :rows) g;
VACUUM ANALYZE t_text;
CREATE TABLE t_keys AS SELECT id::text AS t FROM t_text ORDER BY random() LIMIT 200000;
-- lookups_ns(kind): one run, ns per lookup, with the key typed 'varchar' or 'sno'; checks that
-- the lookups found the keys' rows.
CREATE FUNCTION lookups_ns(kind text) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE keys varchar[]; k sno; r int; total bigint := 0; t0 timestamptz;
BEGIN
    SELECT array_agg(t) INTO keys FROM t_keys;
    t0 := clock_timestamp();
    IF kind = 'varchar' THEN
        FOR i IN 1..array_length(keys, 1) LOOP
            SELECT v INTO r FROM t_text WHERE id = keys[i];
            total := total + r;
        END LOOP;
    ELSE
        FOR i IN 1..array_length(keys, 1) LOOP
            k := keys[i]::sno;
            SELECT v INTO r FROM t_text WHERE id = k;
            total := total + r;
        END LOOP;
    END IF;
    IF total <> (SELECT sum(v) FROM t_text JOIN t_keys ON t_text.id = t_keys.t::sno) THEN
        RAISE EXCEPTION 'the % lookups found other rows', kind;
    END IF;
    RETURN round(extract(epoch FROM clock_timestamp() - t0) * 1e9 / array_length(keys, 1));
END $$;
