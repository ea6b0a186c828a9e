-- sno 0.3.0 -> 0.4.0: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.4.0').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.4.0 (tested by
-- tests/upgrade/update_paths.sh, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh). Nothing is dropped or changed: only new objects.
-- * new: comparisons between sno and text (= <> < <= > >=, both ways, with their functions
--   sno_*_text and text_*_sno), in sno's btree operator family, so that a text or varchar
--   parameter compares with a sno column and uses its index (what ORMs send);
-- * new: assignment casts text -> sno and varchar -> sno, so that an INSERT or UPDATE of a sno
--   column takes a text or varchar value.
-- Every C symbol of 0.3.0 keeps its shape: a database still at 0.3.0 works with this library.

-- Security (0.4.1): this script evaluates no expression. Every statement is DDL that looks up
-- the names it uses by their exact signatures, pg_catalog first (during the update the
-- search_path is sno's schema then pg_temp, with pg_catalog searched before them); an overload
-- another role put in sno's schema makes a CREATE fail or a view's function call "not unique",
-- never runs (tests/upgrade/update_paths.sh plants them).

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

-- Comparisons with text (0.4.0) ---------------------------------------------------------------
-- ORMs send a string ID as a text or varchar parameter (SQLAlchemy writes %(id)s::VARCHAR,
-- others bind text): `id = $1::varchar` and `INSERT ... VALUES ($1::varchar)` work
-- and use the index, with no cast written by the user. The text side is read with the type's
-- input rules: a string that is not an ID is the 22P02 input error, as '...'::sno is (so these
-- are not LEAKPROOF). varchar (and char) coerce to text for free, so (sno, text) covers them.
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

-- An INSERT or UPDATE of a sno column takes a text or varchar value (a column, or a parameter
-- typed so), read with the input rules: assignment casts, like bytea's. Not implicit.
CREATE CAST (text AS sno) WITH INOUT AS ASSIGNMENT;
CREATE CAST (varchar AS sno) WITH INOUT AS ASSIGNMENT;
