-- Objects another role plants in sno's schema (public) before an update or a CREATE EXTENSION,
-- for tests/upgrade/update_paths.sh: run as an unprivileged role with CREATE on public (as on
-- clusters created before PostgreSQL 15). Each one is an exact match for an expression of the
-- install and update scripts whose best match in pg_catalog is polymorphic or needs a coercion
-- (so it would be chosen if sno's schema were on the search_path when the expression is
-- evaluated), or has the very signature of the pg_catalog function a script calls. Each does
-- what the real one does, so that nothing fails, and first records that it ran, as whom and in
-- which statement, in public.intruder_log (owned by the planting role).
CREATE TABLE public.intruder_log (
    what text NOT NULL,
    who name NOT NULL DEFAULT current_user,
    query text DEFAULT pg_catalog.current_query()
);
GRANT INSERT ON public.intruder_log TO PUBLIC;
CREATE FUNCTION public.intruder_ran(what text) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO public.intruder_log (what) VALUES (what) $$;

-- The 0.1.0 -> 0.2.0 DO block: views || funcs (the hole of 0.4.0 and before), unnest(views).
CREATE FUNCTION public.intruder_cat(a oid[], b oid[]) RETURNS oid[] LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('||(oid[],oid[])'); RETURN pg_catalog.array_cat(a, b); END $$;
CREATE OPERATOR public.|| (LEFTARG = oid[], RIGHTARG = oid[], FUNCTION = public.intruder_cat);
CREATE FUNCTION public.unnest(a oid[]) RETURNS SETOF oid LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('unnest(oid[])'); RETURN QUERY SELECT pg_catalog.unnest(a); END $$;
-- d.classid = 'pg_rewrite'::regclass, i.classoid = obj.cls.
CREATE FUNCTION public.intruder_eq(a oid, b regclass) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('=(oid,regclass)'); RETURN a OPERATOR(pg_catalog.=) b::oid; END $$;
CREATE OPERATOR public.= (LEFTARG = oid, RIGHTARG = regclass, FUNCTION = public.intruder_eq);
-- 'TABLE ' || c.oid::regclass.
CREATE FUNCTION public.intruder_textcat(a text, b regclass) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('||(text,regclass)'); RETURN a OPERATOR(pg_catalog.||) b::text; END $$;
CREATE OPERATOR public.|| (LEFTARG = text, RIGHTARG = regclass, FUNCTION = public.intruder_textcat);
-- ARRAY(...) IS DISTINCT FROM ARRAY(...) over text[].
CREATE FUNCTION public.intruder_arrayeq(a text[], b text[]) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('=(text[],text[])'); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR public.= (LEFTARG = text[], RIGHTARG = text[], FUNCTION = public.intruder_arrayeq);
-- format(...) with the argument types the scripts give it (pg_catalog's is VARIADIC "any").
CREATE FUNCTION public.format(f text, a text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('format(text,text)'); RETURN pg_catalog.format(f, a); END $$;
CREATE FUNCTION public.format(f text, a text, b text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('format(text,text,text)'); RETURN pg_catalog.format(f, a, b); END $$;
CREATE FUNCTION public.format(f text, a text, b regclass) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('format(text,text,regclass)'); RETURN pg_catalog.format(f, a, b); END $$;
CREATE FUNCTION public.format(f text, a text, b regprocedure) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('format(text,text,regprocedure)'); RETURN pg_catalog.format(f, a, b); END $$;
CREATE FUNCTION public.format(f text, a name, b regclass) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('format(text,name,regclass)'); RETURN pg_catalog.format(f, a, b); END $$;
CREATE FUNCTION public.format(f text, a text, b text, c text, d text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('format(text,text,text,text,text)'); RETURN pg_catalog.format(f, a, b, c, d); END $$;
CREATE FUNCTION public.concat_ws(s text, a text, b text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('concat_ws(text,text,text)'); RETURN pg_catalog.concat_ws(s, a, b); END $$;
CREATE FUNCTION public.pg_describe_object(c regclass, o oid, s integer) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('pg_describe_object(regclass,oid,integer)'); RETURN pg_catalog.pg_describe_object(c, o, s); END $$;
CREATE FUNCTION public.acldefault(k text, o oid) RETURNS aclitem[] LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('acldefault(text,oid)'); RETURN pg_catalog.acldefault(k::"char", o); END $$;
-- The very signatures of pg_catalog functions the scripts call unqualified or qualified.
CREATE FUNCTION public.current_setting(n text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('current_setting(text)'); RETURN pg_catalog.current_setting(n); END $$;
CREATE FUNCTION public.set_config(n text, v text, l boolean) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('set_config(text,text,boolean)'); RETURN pg_catalog.set_config(n, v, l); END $$;
CREATE FUNCTION public.string_agg_step(s text, v text, d text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('string_agg(text,text)');
      RETURN CASE WHEN s IS NULL THEN v ELSE s OPERATOR(pg_catalog.||) d OPERATOR(pg_catalog.||) v END; END $$;
CREATE AGGREGATE public.string_agg(text, text) (SFUNC = public.string_agg_step, STYPE = text);
