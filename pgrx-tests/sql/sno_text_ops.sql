-- Comparisons between sno and text (0.4.0, varchar through it), char and name (0.4.1), and the assignment
-- casts text -> sno and varchar -> sno (0.4.0): what ORMs send for a string ID. Each answer is
-- compared with the same query written with ::sno; the plans show the index (or partition
-- pruning) in use.
CREATE EXTENSION IF NOT EXISTS sno;
SET timezone = 'UTC';
\set VERBOSITY default

CREATE TABLE tt (id sno PRIMARY KEY, n int NOT NULL);
INSERT INTO tt SELECT sno_from_parts(timestamptz '2026-01-01 00:00:00+00' + g * interval '4 ms', 1, 7, g % 3), g
FROM generate_series(1, 2000) g;
CREATE TABLE tc (id sno PRIMARY KEY, parent sno REFERENCES tt, label text);
INSERT INTO tc SELECT sno_from_parts(timestamptz '2026-01-01 00:00:00+00' + g * interval '4 ms', 2, 7, 0), id, id::text
FROM tt JOIN generate_series(1, 2000, 10) g ON tt.n = g;
ANALYZE tt, tc;

-- Every operator, both ways, agrees with the sno-sno one (and with text order under "C").
SELECT a.op, count(*) AS pairs,
       count(*) FILTER (WHERE a.sno_sno = a.sno_text AND a.sno_sno = a.text_sno AND a.sno_sno = a.c_order) AS agree
FROM (
    SELECT o.op,
           CASE o.op WHEN '=' THEN x.id = y.id WHEN '<>' THEN x.id <> y.id WHEN '<' THEN x.id < y.id
                     WHEN '<=' THEN x.id <= y.id WHEN '>' THEN x.id > y.id ELSE x.id >= y.id END AS sno_sno,
           CASE o.op WHEN '=' THEN x.id = y.id::text WHEN '<>' THEN x.id <> y.id::text WHEN '<' THEN x.id < y.id::text
                     WHEN '<=' THEN x.id <= y.id::text WHEN '>' THEN x.id > y.id::text ELSE x.id >= y.id::text END AS sno_text,
           CASE o.op WHEN '=' THEN x.id::text = y.id WHEN '<>' THEN x.id::text <> y.id WHEN '<' THEN x.id::text < y.id
                     WHEN '<=' THEN x.id::text <= y.id WHEN '>' THEN x.id::text > y.id ELSE x.id::text >= y.id END AS text_sno,
           CASE o.op WHEN '=' THEN x.id::text = y.id::text COLLATE "C" WHEN '<>' THEN x.id::text <> y.id::text COLLATE "C"
                     WHEN '<' THEN x.id::text < y.id::text COLLATE "C" WHEN '<=' THEN x.id::text <= y.id::text COLLATE "C"
                     WHEN '>' THEN x.id::text > y.id::text COLLATE "C" ELSE x.id::text >= y.id::text COLLATE "C" END AS c_order
    FROM (SELECT id FROM tt WHERE n % 97 = 0 UNION ALL SELECT 'xxxxxxxxxxxxxxxx' UNION ALL SELECT '2222222222222222') x,
         (SELECT id FROM tt WHERE n % 89 = 0 UNION ALL SELECT 'xxxxxxxxxxxxxxxx') y,
         (VALUES ('='), ('<>'), ('<'), ('<='), ('>'), ('>=')) o(op)
) a GROUP BY a.op ORDER BY a.op;
-- Upper case and the bytea hex form are read as the input reads them; char(16) and varchar too.
SELECT id = upper(id::text) AS upper, id = ('\x' || encode(id::bytea, 'hex')) AS hex,
       id = id::text::varchar AS varchar, id = id::text::char(16) AS bpchar
FROM tt WHERE n = 1000;
-- A NULL string: NULL, as for any strict operator.
SELECT (SELECT id FROM tt WHERE n = 1) = NULL::text AS is_null;

-- Bad strings: the input error (22P02), naming the value, from either side; never false.
\set VERBOSITY verbose
SELECT count(*) FROM tt WHERE id = 'brpk4q72xwf2m63'::varchar;
SELECT count(*) FROM tt WHERE 'brpk4q72xwf2m63z'::text = id;
SELECT count(*) FROM tt WHERE id > 'brpk4q72xwf2m63!'::varchar;
\set VERBOSITY default
-- ... also when the index compares (the scan key is read before the scan).
SET enable_seqscan = off;
SELECT count(*) FROM tt WHERE id = ''::varchar;
RESET enable_seqscan;

-- Unknown literals still resolve to sno = sno (no ambiguity), and function calls as before.
EXPLAIN (COSTS OFF) SELECT * FROM tt WHERE id = 'brpk4q72xwf2m63l';
SELECT sno_time('brpk4q72xwf2m63l') AS sno_time_of_unknown;

-- The index answers =, >, <=, BETWEEN, IN and = ANY with varchar and text values.
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id = 'ax2ppme7ml2224ee'::varchar;
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE 'ax2ppme7ml2224ee'::text = id;
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id > 'ax2ppme7ml2224ee'::varchar ORDER BY id LIMIT 5;
-- IN of varchar values is an OR of two comparisons on PostgreSQL 15 (a bitmap scan of each) and
-- = ANY of a text array on 18 (one index scan): either way, the index.
CREATE FUNCTION pg_temp.scans(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; seq bool := false; idx bool := false;
BEGIN
    FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        seq := seq OR l ~ 'Seq Scan';
        idx := idx OR l ~ 'Index Scan using tt_pkey|Bitmap Index Scan on tt_pkey';
    END LOOP;
    RETURN CASE WHEN seq THEN 'a sequential scan' WHEN idx THEN 'the primary key' ELSE 'something else' END;
END $$;
SELECT pg_temp.scans($$SELECT n FROM tt WHERE id IN ('ax2ppme7ml2224ee'::varchar, 'ax2ppme7ml2232ee'::varchar)$$) AS in_varchar_scans;
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id = ANY(ARRAY['ax2ppme7ml2224ee', 'ax2ppme7ml2232ee']::varchar[]);
-- The answers equal those of ::sno.
SELECT (SELECT array_agg(n ORDER BY n) FROM tt WHERE id > (SELECT id FROM tt WHERE n = 1990)::text::varchar)
     = (SELECT array_agg(n ORDER BY n) FROM tt WHERE id > (SELECT id FROM tt WHERE n = 1990)) AS gt_same,
       (SELECT array_agg(n ORDER BY n) FROM tt WHERE id BETWEEN (SELECT id::text FROM tt WHERE n = 10) AND (SELECT id::text FROM tt WHERE n = 20))
     = ARRAY(SELECT generate_series(10, 20)) AS between_same,
       (SELECT array_agg(n ORDER BY n) FROM tt WHERE id = ANY(ARRAY(SELECT id::text::varchar FROM tt WHERE n % 500 = 0)))
     = ARRAY[500, 1000, 1500, 2000] AS any_same;

-- Prepared with varchar parameters (what a driver sends), custom and generic plans.
PREPARE byid(varchar) AS SELECT n FROM tt WHERE id = $1;
PREPARE after(varchar) AS SELECT n FROM tt WHERE id > $1 ORDER BY id LIMIT 3;
EXPLAIN (COSTS OFF) EXECUTE byid('ax2ppme7ml2224ee');
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE byid('ax2ppme7ml2224ee');
EXPLAIN (COSTS OFF) EXECUTE after('ax2ppme7ml2224ee');
SELECT id::text AS id1234 FROM tt WHERE n = 1234 \gset
EXECUTE byid(:'id1234');
EXECUTE after(upper(:'id1234'));
-- = ANY of a varchar array through the index (the scan sorts the elements as IDs), and IN.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
PREPARE anyof(varchar[]) AS SELECT n FROM tt WHERE id = ANY($1) ORDER BY n;
EXPLAIN (COSTS OFF) EXECUTE anyof(ARRAY['ax2ppme7ml2224ee']);
SELECT array_agg(n ORDER BY n) FROM tt WHERE id = ANY(ARRAY(SELECT id::text FROM tt WHERE n % 400 = 0 ORDER BY random())::varchar[]);
EXECUTE anyof(ARRAY[:'id1234', upper(:'id1234'), NULL, :'id1234']);
EXECUTE anyof(ARRAY[:'id1234', 'ax2ppme7ml2224e']);
SELECT array_agg(n ORDER BY n) FROM tt WHERE id IN (:'id1234'::varchar, (SELECT id::text FROM tt WHERE n = 7)::varchar);
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET plan_cache_mode;

-- A join against a text column finds rows through the index on the sno column.
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT tt.n FROM tc JOIN tt ON tt.id = tc.label WHERE tc.label < 'ax2ppme7ml2224ee';
SELECT count(*) AS joined, count(*) FILTER (WHERE tt.id = tc.parent) AS same_parent
FROM tc JOIN tt ON tt.id = tc.label;
RESET enable_hashjoin;
RESET enable_mergejoin;

-- Range partitions are pruned by a varchar bound, at plan time and at run time.
CREATE TABLE tpart (id sno NOT NULL, n int) PARTITION BY RANGE (id);
CREATE TABLE tpart_a PARTITION OF tpart FOR VALUES FROM (MINVALUE) TO ('ax2ppme7ml2224ee');
CREATE TABLE tpart_b PARTITION OF tpart FOR VALUES FROM ('ax2ppme7ml2224ee') TO (MAXVALUE);
INSERT INTO tpart SELECT id, n FROM tt;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tpart WHERE id >= 'ax2ppme7ml2224ee'::varchar;
PREPARE part(varchar) AS SELECT count(*) FROM tpart WHERE id < $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE part('ax2ppme7ml2224ee');
RESET plan_cache_mode;

-- INSERT and UPDATE of a sno column take text and varchar values (assignment casts), with the
-- input's rules; INSERT ... SELECT from a text column too. An explicit cast is unchanged.
CREATE TABLE ti (id sno PRIMARY KEY DEFAULT sno_generate(1), ref sno);
PREPARE ins(varchar, text) AS INSERT INTO ti VALUES ($1, $2) RETURNING id, ref;
EXECUTE ins('ax2ppme7ml2224ee', 'AX2PPME7ML2232EE');
INSERT INTO ti (id) SELECT label FROM tc ORDER BY label LIMIT 2;
SELECT count(*) AS from_text_column FROM ti JOIN tc ON tc.label::sno = ti.id;
UPDATE ti SET ref = 'ax2ppme7ml2224ee'::varchar WHERE id = 'ax2ppme7ml2224ee'::varchar RETURNING id, ref;
EXECUTE ins('ax2ppme7ml2224e', NULL);
UPDATE ti SET ref = 'ax2ppme7ml2224ez'::text;
SELECT count(*) AS rows_kept, count(*) FILTER (WHERE ref = 'ax2ppme7ml2224ee') AS refs_kept FROM ti;
SELECT 'ax2ppme7ml2224ee'::varchar::sno AS explicit_varchar, CAST('ax2ppme7ml2224ee'::text AS sno) AS explicit_text;
SELECT castcontext, castmethod FROM pg_cast
WHERE castsource IN ('text'::regtype, 'varchar'::regtype) AND casttarget = 'sno'::regtype ORDER BY castsource;

-- No implicit cast: mixing sno and text where one type must be chosen stays an error, as for
-- uuid; an unknown literal still becomes sno.
SELECT id FROM tt WHERE n = 1 UNION SELECT 'ax2ppme7ml2224ee'::text;
SELECT COALESCE(NULL::sno, 'ax2ppme7ml2224ee'::varchar);
SELECT COALESCE(NULL::sno, 'ax2ppme7ml2224ee') AS coalesce_unknown, pg_typeof(COALESCE(NULL::sno, 'ax2ppme7ml2224ee'));
SELECT pg_typeof(x) FROM (SELECT id FROM tt WHERE n = 1 UNION SELECT 'ax2ppme7ml2224ee') s(x) LIMIT 1;
-- Text functions do not take a sno implicitly.
SELECT length(id) FROM tt WHERE n = 1;

-- The comparisons with text, varchar, char and name are members of sno's btree family only (not
-- hash), each with its support function, and a (T, T) one that orders the elements of an array
-- of T as IDs (no (T, T) operators: the type's own are collation-aware).
SELECT am.amname, amoplefttype::regtype, amoprighttype::regtype, count(*)
FROM pg_amop JOIN pg_am am ON am.oid = amopmethod
WHERE amoplefttype <> amoprighttype AND 'sno'::regtype IN (amoplefttype, amoprighttype)
GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
SELECT amproclefttype::regtype, amprocrighttype::regtype, amprocnum, amproc
FROM pg_amproc WHERE amproclefttype IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype, 'name'::regtype, 'sno'::regtype)
  AND amprocrighttype IN ('text'::regtype, 'varchar'::regtype, 'bpchar'::regtype, 'name'::regtype)
  AND amprocfamily = (SELECT opcfamily FROM pg_opclass WHERE opcname = 'sno_ops' AND opcmethod = (SELECT oid FROM pg_am WHERE amname = 'btree'))
ORDER BY 1, 2;
SELECT proname, proleakproof FROM pg_proc
WHERE proname ~ '^(sno_.*_(text|varchar|bpchar|name)s?|(text|varchar|bpchar|name)_.*_sno)$' AND proleakproof;

-- char(n) and name have operators of their own (0.4.1): `id = $1::bpchar` resolves to sno's
-- (sno, bpchar) operator by exact match, not to (sno, text) through a coercion; varchar has
-- none (it takes (sno, text) through its binary coercion, as every varchar comparison in
-- PostgreSQL takes text's). Every operator of each, both ways, agrees with the sno-sno one.
CREATE FUNCTION pg_temp.agree(t text) RETURNS TABLE (op text, pairs bigint, agree bigint) LANGUAGE plpgsql AS $$
DECLARE o text;
BEGIN
    FOREACH o IN ARRAY ARRAY['=', '<>', '<', '<=', '>', '>='] LOOP
        RETURN QUERY EXECUTE format(
            'SELECT %L, count(*), count(*) FILTER (WHERE (x.id %s y.id) = (x.id %s y.id::text::%s)
                                                    AND (x.id %s y.id) = (x.id::text::%s %s y.id))
             FROM (SELECT id FROM tt WHERE n %% 97 = 0 UNION ALL SELECT %L) x,
                  (SELECT id FROM tt WHERE n %% 89 = 0 UNION ALL SELECT %L) y',
            o, o, o, t, o, t, o, 'xxxxxxxxxxxxxxxx', '2222222222222222');
    END LOOP;
END $$;
SELECT t.t AS type, a.* FROM unnest(ARRAY['varchar', 'char(16)', 'char(20)', 'name']) t(t), pg_temp.agree(t.t) a;
-- No operator of sno's has a varchar argument: PostgreSQL has no (varchar, varchar) operators,
-- so one would be the exact match of every varchar = 'literal' in the database (and read the
-- literal as an ID). Comparisons of the string types with literals and with each other are
-- PostgreSQL's own, as information_schema's queries need.
SELECT 'x'::varchar = 'CHECK' AS varchar_literal, 'CHECK' = 'x'::varchar AS literal_varchar,
       'x'::varchar < 'CHECK' AS varchar_lt, 'x'::char(5) = 'CHECK' AS char_literal,
       'CHECK' = 'x'::name AS literal_name, 'x'::varchar = 'x'::char(3) AS varchar_char,
       'x'::name = 'x'::varchar AS name_varchar;
SELECT count(*) AS check_constraints FROM information_schema.table_constraints
WHERE table_name = 'tt' AND constraint_schema = 'public' AND constraint_type = 'CHECK';
SELECT o.oprleft::regtype, o.oprright::regtype, count(*) AS operators,
       count(*) FILTER (WHERE o.oprnamespace = (SELECT typnamespace FROM pg_type WHERE oid = 'sno'::regtype)) AS in_sno_schema
FROM pg_operator o WHERE 'sno'::regtype IN (o.oprleft, o.oprright) GROUP BY 1, 2 ORDER BY 1, 2;
-- char(n) padding is not part of the ID (as in every bpchar comparison, and as 0.4.0 read it
-- through bpchar::text); a varchar or text keeps its spaces, and a space is not an ID's: the
-- input error (22P02).
SELECT id = id::text::char(20) AS char20, id::text::char(20) = id AS char20_left,
       id = (id::text || '   ')::bpchar AS bpchar_spaces, id = id::text::name AS name,
       id = upper(id::text)::name AS name_upper, id::text::name >= id AS name_left
FROM tt WHERE n = 1000;
SELECT count(*) FROM tt WHERE id = ((SELECT id FROM tt WHERE n = 1)::text || ' ')::varchar;
SELECT count(*) FROM tt WHERE id = (' ' || (SELECT id FROM tt WHERE n = 1)::text)::char(20);
SELECT count(*) FROM tt WHERE 'brpk4q72xwf2m63'::name < id;
SELECT count(*) FROM tt WHERE id = ''::char(4);
SELECT (SELECT id FROM tt WHERE n = 1) = NULL::name AS name_null, NULL::char(16) > (SELECT id FROM tt WHERE n = 1) AS bpchar_null;

-- The index, by each type: the condition keeps the parameter's type (no coercion to text).
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id = 'ax2ppme7ml2224ee'::varchar;
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE 'ax2ppme7ml2224ee'::char(16) = id;
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id <= 'ax2ppme7ml2224ee'::name ORDER BY id DESC LIMIT 2;
PREPARE bychar(char(20)) AS SELECT n FROM tt WHERE id = $1;
PREPARE byname(name) AS SELECT n FROM tt WHERE id > $1 ORDER BY id LIMIT 2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE bychar('ax2ppme7ml2224ee');
EXPLAIN (COSTS OFF) EXECUTE byname('ax2ppme7ml2224ee');
EXECUTE bychar(:'id1234');
EXECUTE byname(upper(:'id1234'));
RESET plan_cache_mode;
-- = ANY of an array of each type through the index (its elements sorted as IDs by the type's
-- own (T, T) order in sno's family), with duplicates, upper case and NULLs.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id = ANY(ARRAY['ax2ppme7ml2224ee', 'ax2ppme7ml2232ee']::char(16)[]);
EXPLAIN (COSTS OFF) SELECT n FROM tt WHERE id = ANY(ARRAY['ax2ppme7ml2224ee', 'ax2ppme7ml2232ee']::name[]);
SELECT 'varchar' AS type, array_agg(n ORDER BY n) FROM tt WHERE id = ANY(ARRAY(SELECT id::text FROM tt WHERE n % 400 = 0 ORDER BY random())::varchar[])
UNION ALL
SELECT 'char(20)', array_agg(n ORDER BY n) FROM tt WHERE id = ANY(ARRAY(SELECT upper(id::text) FROM tt WHERE n % 400 = 0 ORDER BY random())::char(20)[])
UNION ALL
SELECT 'name', array_agg(n ORDER BY n) FROM tt WHERE id = ANY((ARRAY(SELECT id::text FROM tt WHERE n % 400 = 0 ORDER BY random()) || ARRAY[NULL, :'id1234', :'id1234'])::name[]);
RESET enable_seqscan;
RESET enable_bitmapscan;
-- A join against a char(16) column and a name column through the index on the sno column.
CREATE TEMP TABLE tcn AS SELECT label::char(16) AS c, label::name AS nm FROM tc;
ANALYZE tcn;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT tt.n FROM tcn JOIN tt ON tt.id = tcn.c;
SELECT count(*) AS joined_char, (SELECT count(*) FROM tcn JOIN tt ON tcn.nm = tt.id) AS joined_name
FROM tcn JOIN tt ON tt.id = tcn.c;
RESET enable_hashjoin;
RESET enable_mergejoin;
-- Range partitions pruned by a char and a name bound.
CREATE TABLE tpart2 (id sno NOT NULL, n int) PARTITION BY RANGE (id);
CREATE TABLE tpart2_a PARTITION OF tpart2 FOR VALUES FROM (MINVALUE) TO ('ax2ppme7ml2224ee');
CREATE TABLE tpart2_b PARTITION OF tpart2 FOR VALUES FROM ('ax2ppme7ml2224ee') TO (MAXVALUE);
INSERT INTO tpart2 SELECT id, n FROM tt;
EXPLAIN (COSTS OFF) SELECT count(*) FROM tpart2 WHERE id < 'ax2ppme7ml2224ee'::char(16);
PREPARE part2(name) AS SELECT count(*) FROM tpart2 WHERE id >= $1;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE part2('ax2ppme7ml2224ee');
RESET plan_cache_mode;
SELECT (SELECT count(*) FROM tpart2 WHERE id < 'ax2ppme7ml2224ee'::char(16))
     + (SELECT count(*) FROM tpart2 WHERE id >= 'ax2ppme7ml2224ee'::name) AS both_halves;

-- Another role's `=(sno, bpchar)` or `=(sno, name)` in a schema after sno's on the search_path
-- is not chosen: sno's own is the exact match, found first. (Before 0.4.1 it was: sno had only
-- (sno, text).) In a schema before sno's it is, as any operator there would be: the check can
-- tell them apart. (A varchar one would be chosen, as one of (varchar, varchar) would be over
-- text's own: the README says which schemas to trust.)
CREATE ROLE sno_text_ops_other;
CREATE SCHEMA other_ops AUTHORIZATION sno_text_ops_other;
SET ROLE sno_text_ops_other;
CREATE FUNCTION other_ops.capture(sno, bpchar) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'the other role''s =(sno, bpchar) ran'; RETURN true; END $$;
CREATE OPERATOR other_ops.= (LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = other_ops.capture);
CREATE FUNCTION other_ops.capture(sno, name) RETURNS bool LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN RAISE NOTICE 'the other role''s =(sno, name) ran'; RETURN true; END $$;
CREATE OPERATOR other_ops.= (LEFTARG = sno, RIGHTARG = name, FUNCTION = other_ops.capture);
RESET ROLE;
SET search_path = public, other_ops;
SELECT count(*) AS sno_after FROM tt WHERE id = 'ax2ppme7ml2224ee'::varchar OR id = 'ax2ppme7ml2224ee'::char(16)
    OR id = 'ax2ppme7ml2224ee'::name OR id = (SELECT id::text FROM tt WHERE n = 3)::varchar;
PREPARE capture_after(varchar) AS SELECT count(*) FROM tt WHERE id = $1;
EXECUTE capture_after(:'id1234');
SET search_path = other_ops, public;
SELECT count(*) AS other_first FROM tt WHERE id = 'ax2ppme7ml2224ee'::char(16) AND n = 1;
RESET search_path;
DEALLOCATE capture_after;
DROP SCHEMA other_ops CASCADE;
DROP ROLE sno_text_ops_other;

DROP TABLE ti, tpart, tpart2, tc, tt;
