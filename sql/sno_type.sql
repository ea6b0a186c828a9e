-- The sno type and everything that makes it a first-class PostgreSQL type: I/O, operators,
-- btree/hash/BRIN operator classes, min/max, bytea casts, and the field functions.
--
-- Written by hand rather than generated: pgrx's derives would declare a variable-length,
-- CBOR-encoded type; sno is a fixed 10-byte type like uuid. Every function is a version-1 C
-- function in src/pg/ (the symbol named in AS 'MODULE_PATHNAME', '...'): io.rs, ops.rs,
-- parts.rs. pgrx generates no function of this file.
--
-- Labels: everything here is IMMUTABLE STRICT PARALLEL SAFE, since the result depends only on
-- the arguments (a timestamptz is an absolute instant, so sno_time/sno_min/sno_max do not
-- depend on TimeZone). The sno-sno comparison functions are LEAKPROOF, as uuid's are: they cannot raise
-- an error or reveal anything but their result, so the planner may push them below security
-- barriers. The hash functions are not, as core's uuid_hash is not: a hash reveals something
-- of its argument, and no security-barrier qual calls a hash support function. The sno-text
-- comparisons (at the end) are not LEAKPROOF: a bad string is an error.

CREATE TYPE sno;

CREATE FUNCTION sno_in(cstring) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_in' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_out(sno) RETURNS cstring
    AS 'MODULE_PATHNAME', 'sno_out' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_recv(internal) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_recv' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_send(sno) RETURNS bytea
    AS 'MODULE_PATHNAME', 'sno_send' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE sno (
    INTERNALLENGTH = 10,
    INPUT = sno_in,
    OUTPUT = sno_out,
    RECEIVE = sno_recv,
    SEND = sno_send,
    ALIGNMENT = char,
    STORAGE = plain
);
COMMENT ON TYPE sno IS '10-byte time-sortable unique ID (muyo/sno format): 39-bit time in 4 ms units, tick-tock bit, meta byte, 16-bit partition, 16-bit sequence';

-- Comparison -------------------------------------------------------------------------------

CREATE FUNCTION sno_eq(sno, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_eq' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sno_ne(sno, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ne' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sno_lt(sno, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_lt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sno_le(sno, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_le' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sno_gt(sno, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_gt' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sno_ge(sno, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ge' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
CREATE FUNCTION sno_cmp(sno, sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE LEAKPROOF;
COMMENT ON FUNCTION sno_cmp(sno, sno) IS 'compare two sno IDs: -1, 0 or 1 (byte order, i.e. time order)';
CREATE FUNCTION sno_sortsupport(internal) RETURNS void
    AS 'MODULE_PATHNAME', 'sno_sortsupport' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_hash(sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_hash' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_hash(sno) IS 'hash_any() over the 10 bytes';
CREATE FUNCTION sno_hash_extended(sno, int8) RETURNS int8
    AS 'MODULE_PATHNAME', 'sno_hash_extended' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_hash_extended(sno, int8) IS 'hash_any_extended() over the 10 bytes, with a seed';

CREATE OPERATOR = (
    LEFTARG = sno, RIGHTARG = sno, FUNCTION = sno_eq,
    COMMUTATOR = =, NEGATOR = <>,
    RESTRICT = eqsel, JOIN = eqjoinsel, HASHES, MERGES
);
CREATE OPERATOR <> (
    LEFTARG = sno, RIGHTARG = sno, FUNCTION = sno_ne,
    COMMUTATOR = <>, NEGATOR = =,
    RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = sno, RIGHTARG = sno, FUNCTION = sno_lt,
    COMMUTATOR = >, NEGATOR = >=,
    RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = sno, RIGHTARG = sno, FUNCTION = sno_le,
    COMMUTATOR = >=, NEGATOR = >,
    RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = sno, RIGHTARG = sno, FUNCTION = sno_gt,
    COMMUTATOR = <, NEGATOR = <=,
    RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = sno, RIGHTARG = sno, FUNCTION = sno_ge,
    COMMUTATOR = <=, NEGATOR = <,
    RESTRICT = scalargesel, JOIN = scalargejoinsel
);

-- Operator classes -------------------------------------------------------------------------

-- FUNCTION 4 btequalimage: equal sno values are bytewise identical, so btree deduplication is safe.
CREATE OPERATOR CLASS sno_ops DEFAULT FOR TYPE sno USING btree AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 sno_cmp(sno, sno),
    FUNCTION 2 sno_sortsupport(internal),
    FUNCTION 4 btequalimage(oid);

-- The hash functions are part of the on-disk format of hash indexes and hash partitions: they
-- must never change. They are PostgreSQL's own byte hash, as for every core type.
CREATE OPERATOR CLASS sno_ops DEFAULT FOR TYPE sno USING hash AS
    OPERATOR 1 =,
    FUNCTION 1 sno_hash(sno),
    FUNCTION 2 sno_hash_extended(sno, int8);

CREATE OPERATOR CLASS sno_minmax_ops DEFAULT FOR TYPE sno USING brin AS
    OPERATOR 1 <,
    OPERATOR 2 <=,
    OPERATOR 3 =,
    OPERATOR 4 >=,
    OPERATOR 5 >,
    FUNCTION 1 brin_minmax_opcinfo(internal),
    FUNCTION 2 brin_minmax_add_value(internal, internal, internal, internal),
    FUNCTION 3 brin_minmax_consistent(internal, internal, internal),
    FUNCTION 4 brin_minmax_union(internal, internal, internal);

-- min / max ----------------------------------------------------------------------------------

CREATE FUNCTION sno_smaller(sno, sno) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_smaller' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_larger(sno, sno) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_larger' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
-- SORTOP lets the planner answer min()/max() from a btree index.
CREATE AGGREGATE min(sno) (
    SFUNC = sno_smaller, STYPE = sno, COMBINEFUNC = sno_smaller, SORTOP = <, PARALLEL = SAFE
);
CREATE AGGREGATE max(sno) (
    SFUNC = sno_larger, STYPE = sno, COMBINEFUNC = sno_larger, SORTOP = >, PARALLEL = SAFE
);

-- Casts ---------------------------------------------------------------------------------------
-- sno -> text needs no declaration: PostgreSQL's automatic I/O conversion cast gives sno::text
-- (assignment). text -> sno and varchar -> sno are declared at the end of this file
-- (assignment, with the same strict input rules).
-- bytea -> sno is AS ASSIGNMENT so that a Go client's 10-byte bytea parameter can be inserted
-- into a sno column; sno -> bytea is explicit. No implicit casts: they would make operators
-- such as = ambiguous between sno and bytea.

CREATE FUNCTION sno(bytea) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_from_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno(bytea) IS 'sno ID from its 10 raw bytes';
CREATE FUNCTION bytea(sno) RETURNS bytea
    AS 'MODULE_PATHNAME', 'sno_to_bytea' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION bytea(sno) IS 'the 10 raw bytes of a sno ID';
CREATE CAST (bytea AS sno) WITH FUNCTION sno(bytea) AS ASSIGNMENT;
CREATE CAST (sno AS bytea) WITH FUNCTION bytea(sno);

-- Fields --------------------------------------------------------------------------------------

CREATE FUNCTION sno_time(sno) RETURNS timestamptz
    AS 'MODULE_PATHNAME', 'sno_time' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_time(sno) IS 'start of the 4 ms unit the ID was made in (exact)';
CREATE FUNCTION sno_meta(sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_meta' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_meta(sno) IS 'the metadata byte, 0..255';
CREATE FUNCTION sno_partition(sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_partition' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_partition(sno) IS 'the partition (generating server), 0..65535';
CREATE FUNCTION sno_sequence(sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_sequence' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_sequence(sno) IS 'the sequence number within the 4 ms unit, 0..65535';
CREATE FUNCTION sno_tick(sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_tick' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_tick(sno) IS 'the tick-tock bit, 0 or 1 (flips when the generating clock went backwards)';

CREATE FUNCTION sno_from_parts("time" timestamptz, meta int4, partition int4, sequence int4, tick int4 DEFAULT 0)
    RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_from_parts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_from_parts(timestamptz, int4, int4, int4, int4) IS 'sno ID from its fields; time is floored to its 4 ms unit';
CREATE FUNCTION sno_min(timestamptz) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_min' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_min(timestamptz) IS 'smallest sno ID of the 4 ms unit holding the instant';
CREATE FUNCTION sno_max(timestamptz) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_max' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_max(timestamptz) IS 'largest sno ID of the 4 ms unit holding the instant';
-- sno_min/sno_max for every instant, never an error: the bounds the planner adds next to a
-- sno_time(id) comparison (src/pg/planner.rs), so that it scans the index on id. The date and
-- timestamp forms convert as the comparison does (session time zone; past timestamptz's range
-- as an infinity), hence STABLE. EXECUTE is granted to PUBLIC explicitly: queries that only
-- compare sno_time run them, whatever the default privileges of the role creating sno.
CREATE FUNCTION sno_lower_bound(timestamptz) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_lower_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_lower_bound(timestamptz) IS 'sno_min of the instant, or the smallest/largest ID outside the format''s range: sno_time(id) >= t implies id >= sno_lower_bound(t)';
CREATE FUNCTION sno_upper_bound(timestamptz) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_upper_bound' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_upper_bound(timestamptz) IS 'sno_max of the instant, or the smallest/largest ID outside the format''s range: sno_time(id) <= t implies id <= sno_upper_bound(t)';
CREATE FUNCTION sno_lower_bound(date) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_lower_bound_date' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_lower_bound(date) IS 'sno_time(id) >= d implies id >= sno_lower_bound(d)';
CREATE FUNCTION sno_upper_bound(date) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_upper_bound_date' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_upper_bound(date) IS 'sno_time(id) <= d implies id <= sno_upper_bound(d)';
CREATE FUNCTION sno_lower_bound(timestamp) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_lower_bound_timestamp' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_lower_bound(timestamp) IS 'sno_time(id) >= t implies id >= sno_lower_bound(t)';
CREATE FUNCTION sno_upper_bound(timestamp) RETURNS sno
    AS 'MODULE_PATHNAME', 'sno_upper_bound_timestamp' LANGUAGE C STABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION sno_upper_bound(timestamp) IS 'sno_time(id) <= t implies id <= sno_upper_bound(t)';
GRANT EXECUTE ON FUNCTION sno_lower_bound(timestamptz), sno_upper_bound(timestamptz),
    sno_lower_bound(date), sno_upper_bound(date), sno_lower_bound(timestamp), sno_upper_bound(timestamp)
    TO PUBLIC;

-- Comparisons with text (0.4.0) ---------------------------------------------------------------
-- ORMs send a string ID as a text or varchar parameter (SQLAlchemy writes %(id)s::VARCHAR,
-- others bind text): `id = $1::varchar` and `INSERT ... VALUES ($1::varchar)` work
-- and use the index, with no cast written by the user. The text side is read with the type's
-- input rules: a string that is not an ID is the 22P02 input error, as '...'::sno is (so these
-- are not LEAKPROOF). char and name have operators of their own (0.4.1, below; not varchar, see there).
-- The (sno, text) and (text, sno) operators are members of sno's btree family: btree index
-- scans, ORDER BY ... index scans with a text bound, = ANY($1::varchar[]), nested-loop joins
-- on a text column by index, and range-partition pruning all use them. Not in the hash
-- family (text's hash is not sno's), and no implicit cast: UNION, CASE and COALESCE of sno and
-- text stay errors, as for uuid, and function calls resolve as before.
-- The functions have names of their own (not sno_eq overloads): an unknown literal given to
-- an overloaded function would prefer the text overload.

CREATE FUNCTION sno_cmp_text(sno, text) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_eq_text(sno, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_eq_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_ne_text(sno, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ne_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_lt_text(sno, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_lt_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_le_text(sno, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_le_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_gt_text(sno, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_gt_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_ge_text(sno, text) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ge_text' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_cmp_texts(text, text) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_texts' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_cmp_sno(text, sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'text_cmp_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_eq_sno(text, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'text_eq_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_ne_sno(text, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'text_ne_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_lt_sno(text, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'text_lt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_le_sno(text, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'text_le_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_gt_sno(text, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'text_gt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION text_ge_sno(text, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'text_ge_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR = (
    LEFTARG = sno, RIGHTARG = text, FUNCTION = sno_eq_text,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = sno, RIGHTARG = text, FUNCTION = sno_ne_text,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = sno, RIGHTARG = text, FUNCTION = sno_lt_text,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = sno, RIGHTARG = text, FUNCTION = sno_le_text,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = sno, RIGHTARG = text, FUNCTION = sno_gt_text,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = sno, RIGHTARG = text, FUNCTION = sno_ge_text,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR = (
    LEFTARG = text, RIGHTARG = sno, FUNCTION = text_eq_sno,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = text, RIGHTARG = sno, FUNCTION = text_ne_sno,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = text, RIGHTARG = sno, FUNCTION = text_lt_sno,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = text, RIGHTARG = sno, FUNCTION = text_le_sno,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = text, RIGHTARG = sno, FUNCTION = text_gt_sno,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = text, RIGHTARG = sno, FUNCTION = text_ge_sno,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);

ALTER OPERATOR FAMILY sno_ops USING btree ADD
    OPERATOR 1 < (sno, text),
    OPERATOR 2 <= (sno, text),
    OPERATOR 3 = (sno, text),
    OPERATOR 4 >= (sno, text),
    OPERATOR 5 > (sno, text),
    FUNCTION 1 sno_cmp_text(sno, text),
    OPERATOR 1 < (text, sno),
    OPERATOR 2 <= (text, sno),
    OPERATOR 3 = (text, sno),
    OPERATOR 4 >= (text, sno),
    OPERATOR 5 > (text, sno),
    FUNCTION 1 text_cmp_sno(text, sno),
    -- Two strings compared as IDs: the btree scan sorts the elements of id = ANY($1::text[])
    -- with it. No (text, text) operators: text's own depend on the collation.
    FUNCTION 1 sno_cmp_texts(text, text);

-- Comparisons with char and name (0.4.1) ------------------------------------------------------
-- The same six comparisons, both ways, with char(n) and name, so that `id = $1::bpchar` (and
-- name) resolves to an operator of sno's schema by exact match. With (sno, text) alone these
-- types needed a coercion, and an exact operator another role made in any schema of the
-- caller's search_path, even one after sno's, won over sno's operator.
-- * Not varchar: PostgreSQL has no (varchar, varchar) operators (varchar uses text's through a
--   binary coercion), so an operator with a varchar argument is the exact match for every
--   `varchar_column = 'literal'` in the database, which would then read the literal as a sno ID
--   (0.4.1's first draft did that and broke information_schema queries). `id = $1::varchar`
--   keeps using (sno, text) through the coercion.
-- * bpchar (char(n)): trailing spaces are padding, insignificant as in every bpchar comparison
--   (and as 0.4.0 compared them, through bpchar::text); the rest is read as text is. bpchar has
--   its own (bpchar, bpchar) operators, so `char_column = 'literal'` stays theirs.
-- * name: the string up to its terminating NUL, read as text is; (name, name) exists too.
-- Each is in sno's btree family as text is (index scans, ORDER BY, = ANY of an array with its
-- own (T, T) order, joins, range-partition pruning); none in the hash family; not LEAKPROOF.

-- bpchar
CREATE FUNCTION sno_cmp_bpchar(sno, bpchar) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_eq_bpchar(sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_eq_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_ne_bpchar(sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ne_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_lt_bpchar(sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_lt_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_le_bpchar(sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_le_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_gt_bpchar(sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_gt_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_ge_bpchar(sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ge_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_cmp_bpchars(bpchar, bpchar) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_bpchars' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_cmp_sno(bpchar, sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'bpchar_cmp_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_eq_sno(bpchar, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_eq_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_ne_sno(bpchar, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_ne_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_lt_sno(bpchar, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_lt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_le_sno(bpchar, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_le_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_gt_sno(bpchar, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_gt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION bpchar_ge_sno(bpchar, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_ge_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR = (
    LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = sno_eq_bpchar,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = sno_ne_bpchar,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = sno_lt_bpchar,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = sno_le_bpchar,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = sno_gt_bpchar,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = sno, RIGHTARG = bpchar, FUNCTION = sno_ge_bpchar,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR = (
    LEFTARG = bpchar, RIGHTARG = sno, FUNCTION = bpchar_eq_sno,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = bpchar, RIGHTARG = sno, FUNCTION = bpchar_ne_sno,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = bpchar, RIGHTARG = sno, FUNCTION = bpchar_lt_sno,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = bpchar, RIGHTARG = sno, FUNCTION = bpchar_le_sno,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = bpchar, RIGHTARG = sno, FUNCTION = bpchar_gt_sno,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = bpchar, RIGHTARG = sno, FUNCTION = bpchar_ge_sno,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
ALTER OPERATOR FAMILY sno_ops USING btree ADD
    OPERATOR 1 < (sno, bpchar),
    OPERATOR 2 <= (sno, bpchar),
    OPERATOR 3 = (sno, bpchar),
    OPERATOR 4 >= (sno, bpchar),
    OPERATOR 5 > (sno, bpchar),
    FUNCTION 1 sno_cmp_bpchar(sno, bpchar),
    OPERATOR 1 < (bpchar, sno),
    OPERATOR 2 <= (bpchar, sno),
    OPERATOR 3 = (bpchar, sno),
    OPERATOR 4 >= (bpchar, sno),
    OPERATOR 5 > (bpchar, sno),
    FUNCTION 1 bpchar_cmp_sno(bpchar, sno),
    FUNCTION 1 sno_cmp_bpchars(bpchar, bpchar);

-- name
CREATE FUNCTION sno_cmp_name(sno, name) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_eq_name(sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_eq_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_ne_name(sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ne_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_lt_name(sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_lt_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_le_name(sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_le_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_gt_name(sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_gt_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_ge_name(sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ge_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION sno_cmp_names(name, name) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_names' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_cmp_sno(name, sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'name_cmp_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_eq_sno(name, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_eq_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_ne_sno(name, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_ne_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_lt_sno(name, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_lt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_le_sno(name, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_le_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_gt_sno(name, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_gt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION name_ge_sno(name, sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_ge_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR = (
    LEFTARG = sno, RIGHTARG = name, FUNCTION = sno_eq_name,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = sno, RIGHTARG = name, FUNCTION = sno_ne_name,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = sno, RIGHTARG = name, FUNCTION = sno_lt_name,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = sno, RIGHTARG = name, FUNCTION = sno_le_name,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = sno, RIGHTARG = name, FUNCTION = sno_gt_name,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = sno, RIGHTARG = name, FUNCTION = sno_ge_name,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR = (
    LEFTARG = name, RIGHTARG = sno, FUNCTION = name_eq_sno,
    COMMUTATOR = =, NEGATOR = <>, RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR <> (
    LEFTARG = name, RIGHTARG = sno, FUNCTION = name_ne_sno,
    COMMUTATOR = <>, NEGATOR = =, RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR < (
    LEFTARG = name, RIGHTARG = sno, FUNCTION = name_lt_sno,
    COMMUTATOR = >, NEGATOR = >=, RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR <= (
    LEFTARG = name, RIGHTARG = sno, FUNCTION = name_le_sno,
    COMMUTATOR = >=, NEGATOR = >, RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR > (
    LEFTARG = name, RIGHTARG = sno, FUNCTION = name_gt_sno,
    COMMUTATOR = <, NEGATOR = <=, RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR >= (
    LEFTARG = name, RIGHTARG = sno, FUNCTION = name_ge_sno,
    COMMUTATOR = <=, NEGATOR = <, RESTRICT = scalargesel, JOIN = scalargejoinsel
);
ALTER OPERATOR FAMILY sno_ops USING btree ADD
    OPERATOR 1 < (sno, name),
    OPERATOR 2 <= (sno, name),
    OPERATOR 3 = (sno, name),
    OPERATOR 4 >= (sno, name),
    OPERATOR 5 > (sno, name),
    FUNCTION 1 sno_cmp_name(sno, name),
    OPERATOR 1 < (name, sno),
    OPERATOR 2 <= (name, sno),
    OPERATOR 3 = (name, sno),
    OPERATOR 4 >= (name, sno),
    OPERATOR 5 > (name, sno),
    FUNCTION 1 name_cmp_sno(name, sno),
    FUNCTION 1 sno_cmp_names(name, name);

-- An INSERT or UPDATE of a sno column takes a text or varchar value (a column, or a parameter
-- typed so), read with the input rules: assignment casts, like bytea's. Not implicit.
CREATE CAST (text AS sno) WITH INOUT AS ASSIGNMENT;
CREATE CAST (varchar AS sno) WITH INOUT AS ASSIGNMENT;
