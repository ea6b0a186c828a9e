-- The sno type as a user sees it: text I/O, errors (with SQLSTATE), casts, field functions,
-- operators and aggregates. Golden output in ../expected/sno_type.out.
CREATE EXTENSION IF NOT EXISTS sno;
SET timezone = 'UTC';

-- err(query): runs a query and shows SQLSTATE, message and detail of the error it raises.
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text; msg text; det text; hnt text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL, hnt = PG_EXCEPTION_HINT;
    RETURN st || ': ' || msg || coalesce(' | DETAIL: ' || nullif(det, ''), '') || coalesce(' | HINT: ' || nullif(hnt, ''), '');
END $$;

-- Text round trip, the format's worked example, upper case accepted, output lower case.
SELECT 'brpk4q72xwf2m63l'::sno, 'BRPK4Q72XWF2M63L'::sno, 'BrPk4Q72xWf2M63l'::sno;
SELECT '2222222222222222'::sno AS zero, 'xxxxxxxxxxxxxxxx'::sno AS max;
SELECT encode(bytea('brpk4q72xwf2m63l'::sno), 'hex');

-- Every bad input of tests/data/decode_bad.csv that a cstring can hold (no NUL), and more.
SELECT input, pg_temp.err(format('SELECT %L::sno', input)) FROM (VALUES
    (''),
    ('0102030405060708'),
    ('brpk4q72xwf2m630'),
    (E'brpk4q72xwf2m63l\n'),
    ('brpk4q72xwf2m63_'),
    ('brpk4q72xwf2m63é'),
    ('brpk4q72xwf2m63:'),
    (':rpk4q72xwf2m63l'),
    ('{rpk4q72xwf2m63l'),
    ('brpk4q72xwf2m63lbrpk4q72xwf2m63l'),
    ('Zrpk4q72xwf2m63l'),
    ('xxxxxxxxxxxxxxx'),
    ('                '),
    ('2222222222'),
    (' rpk4q72xwf2m63l'),
    ('brpk4q72xwf2m63y'),
    ('brpk4q72xwf2m63z'),
    ('brpk4q72xwf2m63Y'),
    ('brpk4q72xwf2m631'),
    (' brpk4q72xwf2m63l'),
    ('brpk4q72xwf2m63l ')
) AS bad(input);
-- An embedded NUL cannot reach sno_in through SQL text; through bytea it is just a byte.
SELECT pg_temp.err($$SELECT sno('\x6272706b34713732007766326d36336c'::bytea)$$);

-- The bytea hex form: \x and exactly 20 hex digits of either case (what pgx and node-postgres
-- send for a byte-array parameter); output stays the 16 characters.
SELECT '\x4e6f2160a0ff9a0a1033'::sno AS lower, '\x4E6F2160A0FF9A0A1033'::sno AS upper,
       '\x4e6f2160a0ff9a0a1033'::sno = 'brpk4q72xwf2m63l' AS same;
SELECT input, pg_temp.err(format('SELECT %L::sno', input)) FROM (VALUES
    ('\x'),
    ('\x4e6f2160a0ff9a0a10'),
    ('\x4e6f2160a0ff9a0a103300'),
    ('\x4e6f2160a0ff9a0a103g'),
    ('\X4e6f2160a0ff9a0a1033'),
    ('\x4e6f 2160a0ff9a0a1033'),
    ('\x4e6f 160a0ff9a0a1033'),
    (' \x4e6f2160a0ff9a0a1033'),
    ('\x4e6f2160a0ff9a0a1033 '),
    ('\\x4e6f2160a0ff9a0a1033'),
    ('\116o!`\240\377\232\012\0203')
) AS bad(input);

-- text casts (automatic I/O conversion) follow the same rules.
SELECT 'brpk4q72xwf2m63l'::text::sno, ('brpk4q72xwf2m63l'::sno)::text;
SELECT pg_temp.err($$SELECT 'nope'::text::sno$$);
SELECT pg_temp.err($$SELECT NULL::sno = 'nope'$$);

-- bytea casts: exactly 10 bytes.
SELECT sno('\x4e6f2160a0ff9a0a1033'::bytea), '\x4e6f2160a0ff9a0a1033'::bytea::sno;
SELECT 'brpk4q72xwf2m63l'::sno::bytea;
SELECT pg_temp.err($$SELECT '\x4e6f2160a0ff9a0a10'::bytea::sno$$);
SELECT pg_temp.err($$SELECT '\x4e6f2160a0ff9a0a103300'::bytea::sno$$);
SELECT pg_temp.err($$SELECT ''::bytea::sno$$);
SELECT pg_temp.err($$SELECT decode(repeat('ab', 100), 'hex')::sno$$);
-- A long bad text input is cut in the message (at a character boundary), with its length.
SELECT pg_temp.err($$SELECT repeat('é', 30)::sno$$);
SELECT pg_temp.err($$SELECT repeat('x', 1000000)::sno$$);
SELECT n, pg_temp.err(format($$SELECT repeat('x', %s)::sno$$, n)) FROM generate_series(40, 44) n;
-- No implicit cast: comparing sno with bytea is an error, not a silent conversion.
SELECT pg_temp.err($$SELECT 'brpk4q72xwf2m63l'::sno = '\x00'::bytea$$);
-- Assignment cast: a bytea goes into a sno column.
CREATE TEMP TABLE go_ids (id sno PRIMARY KEY);
INSERT INTO go_ids VALUES ('\x4e6f2160a0ff9a0a1033'::bytea);
SELECT * FROM go_ids;

-- Fields.
SELECT sno_time(v), sno_tick(v), sno_meta(v), sno_partition(v), sno_sequence(v)
FROM (VALUES ('brpk4q72xwf2m63l'::sno), ('2222222222222222'), ('xxxxxxxxxxxxxxxx'), ('xxxxxxxwxxxxxxxx')) AS t(v);
SELECT pg_typeof(sno_time('brpk4q72xwf2m63l')), pg_typeof(sno_meta('brpk4q72xwf2m63l'));
-- sno_time is exact and does not depend on TimeZone (timestamptz is an instant).
SET timezone = 'America/New_York';
SELECT sno_time('brpk4q72xwf2m63l') = '2031-05-08 23:03:34.976+00' AS same_instant;
SET timezone = 'UTC';

-- Construction from parts, and its errors.
SELECT sno_from_parts('2031-05-08 23:03:34.976+00', 255, 39434, 4147);
SELECT sno_from_parts('2031-05-08 23:03:34.979999+00', 255, 39434, 4147) AS floors_to_unit;
SELECT sno_from_parts("time" => '2010-01-01 00:00:00+00', meta => 0, partition => 0, sequence => 0, tick => 1);
SELECT sno_from_parts('2079-09-07 15:47:35.548+00', 255, 65535, 65535, 1) AS largest;
SELECT sno_from_parts('2024-01-01', 1, 2, 3, NULL) IS NULL AS strict;
SELECT call, pg_temp.err('SELECT ' || call) FROM (VALUES
    ($$sno_from_parts('2009-12-31 23:59:59.999999+00', 0, 0, 0)$$),
    ($$sno_from_parts('2079-09-07 15:47:35.552+00', 0, 0, 0)$$),
    ($$sno_from_parts('infinity', 0, 0, 0)$$),
    ($$sno_from_parts('-infinity', 0, 0, 0)$$),
    ($$sno_from_parts('2024-01-01+00', 256, 0, 0)$$),
    ($$sno_from_parts('2024-01-01+00', -1, 0, 0)$$),
    ($$sno_from_parts('2024-01-01+00', 0, 65536, 0)$$),
    ($$sno_from_parts('2024-01-01+00', 0, -1, 0)$$),
    ($$sno_from_parts('2024-01-01+00', 0, 0, 65536)$$),
    ($$sno_from_parts('2024-01-01+00', 0, 0, -2147483648)$$),
    ($$sno_from_parts('2024-01-01+00', 0, 0, 0, 2)$$),
    ($$sno_from_parts('2024-01-01+00', 0, 0, 0, -1)$$),
    ($$sno_min('1999-01-01+00')$$),
    ($$sno_max('2100-01-01+00')$$),
    ($$sno_min('infinity')$$)
) AS bad(call);

-- Unit bounds.
SELECT sno_min('2031-05-08 23:03:34.977+00'), sno_max('2031-05-08 23:03:34.977+00');
SELECT sno_min(t) <= sno_from_parts(t, m, p, s, k) AND sno_from_parts(t, m, p, s, k) <= sno_max(t) AS inside
FROM (VALUES ('2031-05-08 23:03:34.977+00'::timestamptz, 0, 0, 0, 0), ('2031-05-08 23:03:34.979+00', 255, 65535, 65535, 1)) AS v(t, m, p, s, k);
SELECT sno_max('2031-05-08 23:03:34.975+00') < sno_min('2031-05-08 23:03:34.976+00') AS adjacent_units_ordered;

-- Operators.
SELECT a, b, a = b AS eq, a <> b AS ne, a < b AS lt, a <= b AS le, a > b AS gt, a >= b AS ge, sno_cmp(a, b) AS cmp
FROM (VALUES
    ('brpk4q72xwf2m63l'::sno, 'brpk4q72xwf2m63l'::sno),
    ('brpk4q72xwf2m63l', 'brpk4q72xwf2m63m'),
    ('brpk4q72xwf2m63m', 'brpk4q72xwf2m63l'),
    ('2222222222222222', 'xxxxxxxxxxxxxxxx')
) AS t(a, b);
-- Catalog: commutators, negators, estimators, merge/hash joinability.
SELECT oprname, oprcom::regoperator, oprnegate::regoperator, oprrest, oprjoin, oprcanmerge, oprcanhash
FROM pg_operator WHERE oprleft = 'sno'::regtype AND oprright = 'sno'::regtype ORDER BY oprname;
-- Operator classes and their support functions.
SELECT am.amname, opc.opcname, opc.opcdefault
FROM pg_opclass opc JOIN pg_am am ON am.oid = opc.opcmethod
WHERE opc.opcintype = 'sno'::regtype ORDER BY 1;
SELECT am.amname, p.amprocnum, p.amproc::regprocedure
FROM pg_amproc p JOIN pg_opfamily f ON f.oid = p.amprocfamily JOIN pg_am am ON am.oid = f.opfmethod
WHERE p.amproclefttype = 'sno'::regtype ORDER BY 1, 2, 3::text COLLATE "C";
-- Function labels.
SELECT proname, provolatile, proisstrict, proparallel, proleakproof
FROM pg_proc WHERE pronamespace = (SELECT extnamespace FROM pg_extension WHERE extname = 'sno')
  AND (proname LIKE 'sno%' OR proname IN ('min', 'max', 'bytea'))
  AND pg_get_function_arguments(oid) ~ 'sno|bytea|timestamp|cstring|internal'
ORDER BY proname, pg_get_function_arguments(oid);
-- Casts.
SELECT castsource::regtype, casttarget::regtype, castcontext, castmethod
FROM pg_cast WHERE castsource = 'sno'::regtype OR casttarget = 'sno'::regtype ORDER BY 1, 2;

-- ORDER BY, min, max, DISTINCT, arrays.
SELECT v FROM (VALUES ('xxxxxxxxxxxxxxxx'::sno), ('brpk4q72xwf2m63l'), ('2222222222222222'), ('brpk4q72xwf2m63m'), (NULL)) AS t(v)
ORDER BY v;
SELECT min(v), max(v), count(DISTINCT v)
FROM (VALUES ('xxxxxxxxxxxxxxxx'::sno), ('brpk4q72xwf2m63l'), ('brpk4q72xwf2m63l'), ('2222222222222222')) AS t(v);
SELECT ARRAY['brpk4q72xwf2m63l', 'BRPK4Q72XWF2M63M', NULL]::sno[];
SELECT pg_temp.err($$SELECT '{brpk4q72xwf2m63l,bad}'::sno[]$$);

-- Binary input (sno_recv) accepts exactly 10 bytes: a COPY BINARY file whose field holds 9 or
-- 11 bytes is refused, never truncated or padded.
CREATE TEMP TABLE bin_src (b bytea);
CREATE TEMP TABLE bin_dst (id sno);
INSERT INTO bin_src VALUES ('\x4e6f2160a0ff9a0a10');
COPY bin_src TO '/tmp/sno_regress_9.bin' (FORMAT binary);
TRUNCATE bin_src;
INSERT INTO bin_src VALUES ('\x4e6f2160a0ff9a0a103300');
COPY bin_src TO '/tmp/sno_regress_11.bin' (FORMAT binary);
TRUNCATE bin_src;
INSERT INTO bin_src VALUES ('\x4e6f2160a0ff9a0a1033');
COPY bin_src TO '/tmp/sno_regress_10.bin' (FORMAT binary);
SELECT pg_temp.err($$COPY bin_dst FROM '/tmp/sno_regress_9.bin' (FORMAT binary)$$);
SELECT pg_temp.err($$COPY bin_dst FROM '/tmp/sno_regress_11.bin' (FORMAT binary)$$);
SELECT pg_temp.err($$COPY bin_dst FROM '/tmp/sno_regress_10.bin' (FORMAT binary)$$);
SELECT * FROM bin_dst;

-- The hash support functions are part of the on-disk contract: hash indexes, hash partitions
-- and every Citus table distributed by a sno column (the hash picks each row's shard) depend
-- on these exact values. They are PostgreSQL's hash_bytes / hash_bytes_extended over the 10
-- bytes, and must never change in a release: this output pins them.
SELECT v AS id, sno_hash(v), sno_hash_extended(v, 0), sno_hash_extended(v, 42),
       sno_hash_extended(v, 0) & 4294967295 = sno_hash(v)::int8 & 4294967295 AS low_bits_agree
FROM (VALUES ('2222222222222222'::sno), ('brpk4q72xwf2m63l'), ('xxxxxxxxxxxxxxxx'),
             ('9qc257gq29j8i222'), ('a2c4e6g8i2k4m6o8')) AS t(v);
-- A hash-partitioned table puts each of these in the same partition on every release.
CREATE TEMP TABLE hashed (id sno) PARTITION BY HASH (id);
CREATE TEMP TABLE hashed_0 PARTITION OF hashed FOR VALUES WITH (MODULUS 4, REMAINDER 0);
CREATE TEMP TABLE hashed_1 PARTITION OF hashed FOR VALUES WITH (MODULUS 4, REMAINDER 1);
CREATE TEMP TABLE hashed_2 PARTITION OF hashed FOR VALUES WITH (MODULUS 4, REMAINDER 2);
CREATE TEMP TABLE hashed_3 PARTITION OF hashed FOR VALUES WITH (MODULUS 4, REMAINDER 3);
INSERT INTO hashed VALUES ('2222222222222222'), ('brpk4q72xwf2m63l'), ('xxxxxxxxxxxxxxxx'),
                          ('9qc257gq29j8i222'), ('a2c4e6g8i2k4m6o8');
SELECT tableoid::regclass AS partition, id FROM hashed ORDER BY id;
