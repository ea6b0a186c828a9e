-- sno 0.4.0 -> 0.4.1: ALTER EXTENSION sno UPDATE (or UPDATE TO '0.4.1').
--
-- Leaves a database's catalog identical to a fresh CREATE EXTENSION sno at 0.4.1 (tested by
-- tests/upgrade/update_paths.sh, from every earlier release, with another role's
-- operators and functions planted in sno's schema, and from 0.1.0 through every script by
-- tests/upgrade/extension_update.sh). Nothing is dropped or changed: only new objects.
-- * new: comparisons between sno and bpchar (char(n)) and name (= <> < <= > >=, both ways, with
--   their functions sno_*_bpchar, bpchar_*_sno, ...), in sno's btree family as the text ones, so
--   that `id = $1::bpchar` (or name) resolves to an operator of sno's schema by exact match:
--   before, it took (sno, text) through a coercion, and an exact operator made by another role
--   in any schema of the caller's search_path won over it. Not varchar: PostgreSQL has no
--   (varchar, varchar) operators, so one with a varchar argument would be the exact match of
--   every `varchar_column = 'literal'` in the database (see sql/sno_type.sql).
-- Every C symbol of 0.4.0 keeps its shape: a database still at 0.4.0 works with this library.
--
-- Security: the first statement pins search_path to pg_catalog and pg_temp, so that nothing
-- below can resolve to an object another role put in sno's schema (during the update the path
-- is that schema, then pg_temp); every object of sno's is named through @extschema@, and
-- everything else is pg_catalog's. A statement added here must keep to that: an unqualified
-- name it creates would land in pg_catalog (tests/upgrade/catalog.sql counts members outside
-- sno's schema).

\echo Use "ALTER EXTENSION sno UPDATE" to load this file. \quit

SELECT pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);

-- Comparisons with char and name (as sql/sno_type.sql) ------------------------------------------
-- bpchar: trailing spaces are padding (as in every bpchar comparison, and as 0.4.0 compared them through
-- bpchar::text). name: the string up to its NUL. Not LEAKPROOF: a bad string is an error.

-- bpchar
CREATE FUNCTION @extschema@.sno_cmp_bpchar(@extschema@.sno, bpchar) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_eq_bpchar(@extschema@.sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_eq_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_ne_bpchar(@extschema@.sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ne_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_lt_bpchar(@extschema@.sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_lt_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_le_bpchar(@extschema@.sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_le_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_gt_bpchar(@extschema@.sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_gt_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_ge_bpchar(@extschema@.sno, bpchar) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ge_bpchar' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_cmp_bpchars(bpchar, bpchar) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_bpchars' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_cmp_sno(bpchar, @extschema@.sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'bpchar_cmp_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_eq_sno(bpchar, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_eq_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_ne_sno(bpchar, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_ne_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_lt_sno(bpchar, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_lt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_le_sno(bpchar, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_le_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_gt_sno(bpchar, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_gt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.bpchar_ge_sno(bpchar, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'bpchar_ge_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR @extschema@.= (
    LEFTARG = @extschema@.sno, RIGHTARG = bpchar, FUNCTION = @extschema@.sno_eq_bpchar,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>), RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = @extschema@.sno, RIGHTARG = bpchar, FUNCTION = @extschema@.sno_ne_bpchar,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=), RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR @extschema@.< (
    LEFTARG = @extschema@.sno, RIGHTARG = bpchar, FUNCTION = @extschema@.sno_lt_bpchar,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=), RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = @extschema@.sno, RIGHTARG = bpchar, FUNCTION = @extschema@.sno_le_bpchar,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>), RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR @extschema@.> (
    LEFTARG = @extschema@.sno, RIGHTARG = bpchar, FUNCTION = @extschema@.sno_gt_bpchar,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=), RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = @extschema@.sno, RIGHTARG = bpchar, FUNCTION = @extschema@.sno_ge_bpchar,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<), RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR @extschema@.= (
    LEFTARG = bpchar, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.bpchar_eq_sno,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>), RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = bpchar, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.bpchar_ne_sno,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=), RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR @extschema@.< (
    LEFTARG = bpchar, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.bpchar_lt_sno,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=), RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = bpchar, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.bpchar_le_sno,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>), RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR @extschema@.> (
    LEFTARG = bpchar, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.bpchar_gt_sno,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=), RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = bpchar, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.bpchar_ge_sno,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<), RESTRICT = scalargesel, JOIN = scalargejoinsel
);
ALTER OPERATOR FAMILY @extschema@.sno_ops USING btree ADD
    OPERATOR 1 @extschema@.< (@extschema@.sno, bpchar),
    OPERATOR 2 @extschema@.<= (@extschema@.sno, bpchar),
    OPERATOR 3 @extschema@.= (@extschema@.sno, bpchar),
    OPERATOR 4 @extschema@.>= (@extschema@.sno, bpchar),
    OPERATOR 5 @extschema@.> (@extschema@.sno, bpchar),
    FUNCTION 1 @extschema@.sno_cmp_bpchar(@extschema@.sno, bpchar),
    OPERATOR 1 @extschema@.< (bpchar, @extschema@.sno),
    OPERATOR 2 @extschema@.<= (bpchar, @extschema@.sno),
    OPERATOR 3 @extschema@.= (bpchar, @extschema@.sno),
    OPERATOR 4 @extschema@.>= (bpchar, @extschema@.sno),
    OPERATOR 5 @extschema@.> (bpchar, @extschema@.sno),
    FUNCTION 1 @extschema@.bpchar_cmp_sno(bpchar, @extschema@.sno),
    FUNCTION 1 @extschema@.sno_cmp_bpchars(bpchar, bpchar);

-- name
CREATE FUNCTION @extschema@.sno_cmp_name(@extschema@.sno, name) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_eq_name(@extschema@.sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_eq_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_ne_name(@extschema@.sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ne_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_lt_name(@extschema@.sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_lt_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_le_name(@extschema@.sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_le_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_gt_name(@extschema@.sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_gt_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_ge_name(@extschema@.sno, name) RETURNS bool
    AS 'MODULE_PATHNAME', 'sno_ge_name' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.sno_cmp_names(name, name) RETURNS int4
    AS 'MODULE_PATHNAME', 'sno_cmp_names' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_cmp_sno(name, @extschema@.sno) RETURNS int4
    AS 'MODULE_PATHNAME', 'name_cmp_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_eq_sno(name, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_eq_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_ne_sno(name, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_ne_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_lt_sno(name, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_lt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_le_sno(name, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_le_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_gt_sno(name, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_gt_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.name_ge_sno(name, @extschema@.sno) RETURNS bool
    AS 'MODULE_PATHNAME', 'name_ge_sno' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OPERATOR @extschema@.= (
    LEFTARG = @extschema@.sno, RIGHTARG = name, FUNCTION = @extschema@.sno_eq_name,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>), RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = @extschema@.sno, RIGHTARG = name, FUNCTION = @extschema@.sno_ne_name,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=), RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR @extschema@.< (
    LEFTARG = @extschema@.sno, RIGHTARG = name, FUNCTION = @extschema@.sno_lt_name,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=), RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = @extschema@.sno, RIGHTARG = name, FUNCTION = @extschema@.sno_le_name,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>), RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR @extschema@.> (
    LEFTARG = @extschema@.sno, RIGHTARG = name, FUNCTION = @extschema@.sno_gt_name,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=), RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = @extschema@.sno, RIGHTARG = name, FUNCTION = @extschema@.sno_ge_name,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<), RESTRICT = scalargesel, JOIN = scalargejoinsel
);
CREATE OPERATOR @extschema@.= (
    LEFTARG = name, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.name_eq_sno,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>), RESTRICT = eqsel, JOIN = eqjoinsel
);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = name, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.name_ne_sno,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=), RESTRICT = neqsel, JOIN = neqjoinsel
);
CREATE OPERATOR @extschema@.< (
    LEFTARG = name, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.name_lt_sno,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=), RESTRICT = scalarltsel, JOIN = scalarltjoinsel
);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = name, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.name_le_sno,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>), RESTRICT = scalarlesel, JOIN = scalarlejoinsel
);
CREATE OPERATOR @extschema@.> (
    LEFTARG = name, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.name_gt_sno,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=), RESTRICT = scalargtsel, JOIN = scalargtjoinsel
);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = name, RIGHTARG = @extschema@.sno, FUNCTION = @extschema@.name_ge_sno,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<), RESTRICT = scalargesel, JOIN = scalargejoinsel
);
ALTER OPERATOR FAMILY @extschema@.sno_ops USING btree ADD
    OPERATOR 1 @extschema@.< (@extschema@.sno, name),
    OPERATOR 2 @extschema@.<= (@extschema@.sno, name),
    OPERATOR 3 @extschema@.= (@extschema@.sno, name),
    OPERATOR 4 @extschema@.>= (@extschema@.sno, name),
    OPERATOR 5 @extschema@.> (@extschema@.sno, name),
    FUNCTION 1 @extschema@.sno_cmp_name(@extschema@.sno, name),
    OPERATOR 1 @extschema@.< (name, @extschema@.sno),
    OPERATOR 2 @extschema@.<= (name, @extschema@.sno),
    OPERATOR 3 @extschema@.= (name, @extschema@.sno),
    OPERATOR 4 @extschema@.>= (name, @extschema@.sno),
    OPERATOR 5 @extschema@.> (name, @extschema@.sno),
    FUNCTION 1 @extschema@.name_cmp_sno(name, @extschema@.sno),
    FUNCTION 1 @extschema@.sno_cmp_names(name, name);
