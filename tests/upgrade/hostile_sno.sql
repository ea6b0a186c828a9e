-- More of another role's objects (tests/upgrade/hostile.sql), once the type sno exists: other
-- overloads of the names the 0.4.0 -> 0.4.1 script creates and refers to.
CREATE FUNCTION public.sno_eq_bpchar(a sno, b text) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('sno_eq_bpchar(sno,text)'); RETURN a OPERATOR(public.=) b; END $$;
CREATE FUNCTION public.sno_cmp_bpchar(a sno, b text) RETURNS int4 LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('sno_cmp_bpchar(sno,text)'); RETURN public.sno_cmp_text(a, b); END $$;
CREATE FUNCTION public.bpchar_eq_sno(a text, b sno) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN PERFORM public.intruder_ran('bpchar_eq_sno(text,sno)'); RETURN a OPERATOR(public.=) b; END $$;
