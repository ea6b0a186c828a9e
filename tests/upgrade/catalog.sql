-- Everything the catalog says of the extension sno in this database, one line per object,
-- sorted, with no OID: two databases with the same lines have the same sno (functions named
-- with their argument types, which another role's overloads of a name cannot make ambiguous). Used by
-- extension_update.sh to compare a database updated with ALTER EXTENSION sno UPDATE to a
-- fresh CREATE EXTENSION sno.
--
-- Functions: their whole definition (pg_get_functiondef: arguments and defaults, result
-- columns, language, C symbol, volatility, strictness, parallel safety, LEAKPROOF, cost,
-- rows), privileges and comment; aggregates: their support functions; the type: its
-- storage, I/O functions and comment; operators: their function, commutator, negator,
-- estimators, hash and merge flags; operator classes and families: every operator and support
-- function in them; casts: function, context and method; views: definition, columns,
-- privileges and comment; and the extension's own row.
WITH m AS (
    SELECT d.classid, d.objid
    FROM pg_depend d JOIN pg_extension e ON e.oid = d.refobjid
    WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e' AND e.extname = 'sno'
), family AS (
    SELECT f.oid,
           (SELECT string_agg(format('op %s %s %s', o.amopstrategy, o.amopopr::regoperator, o.amoppurpose), '; '
                              ORDER BY o.amopstrategy) FROM pg_amop o WHERE o.amopfamily = f.oid) || ' / ' ||
           (SELECT string_agg(format('fn %s %s(%s,%s)', p.amprocnum, p.amproc::regprocedure,
                                     p.amproclefttype::regtype, p.amprocrighttype::regtype), '; '
                              ORDER BY p.amprocnum) FROM pg_amproc p WHERE p.amprocfamily = f.oid) AS members
    FROM pg_opfamily f
)
SELECT pg_describe_object(m.classid, m.objid, 0) || ' | ' || coalesce(CASE m.classid
    WHEN 'pg_proc'::regclass THEN (
        SELECT CASE WHEN p.prokind = 'a'
                    THEN (SELECT format('aggregate sfunc=%s combine=%s sortop=%s stype=%s',
                                        a.aggtransfn::regprocedure, a.aggcombinefn::regprocedure, a.aggsortop::regoperator, a.aggtranstype::regtype)
                          FROM pg_aggregate a WHERE a.aggfnoid = p.oid)
                    ELSE regexp_replace(pg_get_functiondef(p.oid), '\s+', ' ', 'g') END
               || ' owner=' || p.proowner::regrole || ' acl=' || coalesce(p.proacl::text, 'default')
               || ' comment=' || coalesce(obj_description(p.oid, 'pg_proc'), '')
        FROM pg_proc p WHERE p.oid = m.objid)
    WHEN 'pg_type'::regclass THEN (
        SELECT format('len=%s byval=%s align=%s storage=%s in=%s out=%s recv=%s send=%s category=%s acl=%s comment=%s',
                      t.typlen, t.typbyval, t.typalign, t.typstorage, t.typinput::regprocedure, t.typoutput::regprocedure,
                      t.typreceive::regprocedure, t.typsend::regprocedure, t.typcategory, coalesce(t.typacl::text, 'default'),
                      coalesce(obj_description(t.oid, 'pg_type'), ''))
        FROM pg_type t WHERE t.oid = m.objid)
    WHEN 'pg_operator'::regclass THEN (
        SELECT format('code=%s com=%s neg=%s rest=%s join=%s hash=%s merge=%s comment=%s',
                      o.oprcode::regprocedure, o.oprcom::regoperator, o.oprnegate::regoperator, o.oprrest::regprocedure,
                      o.oprjoin::regprocedure,
                      o.oprcanhash, o.oprcanmerge, coalesce(obj_description(o.oid, 'pg_operator'), ''))
        FROM pg_operator o WHERE o.oid = m.objid)
    WHEN 'pg_opclass'::regclass THEN (
        SELECT format('default=%s type=%s key=%s family=%s: %s', c.opcdefault, c.opcintype::regtype,
                      c.opckeytype::regtype, pg_describe_object('pg_opfamily'::regclass, c.opcfamily, 0), f.members)
        FROM pg_opclass c JOIN family f ON f.oid = c.opcfamily WHERE c.oid = m.objid)
    WHEN 'pg_opfamily'::regclass THEN (SELECT f.members FROM family f WHERE f.oid = m.objid)
    WHEN 'pg_cast'::regclass THEN (
        SELECT format('func=%s context=%s method=%s', c.castfunc::regprocedure, c.castcontext, c.castmethod)
        FROM pg_cast c WHERE c.oid = m.objid)
    WHEN 'pg_class'::regclass THEN (
        SELECT format('kind=%s owner=%s columns=%s acl=%s comment=%s def=%s', c.relkind, c.relowner::regrole,
                      (SELECT string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                       FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped),
                      coalesce(c.relacl::text, 'default'), coalesce(obj_description(c.oid, 'pg_class'), ''),
                      regexp_replace(pg_get_viewdef(c.oid), '\s+', ' ', 'g'))
        FROM pg_class c WHERE c.oid = m.objid)
    END, '?')
    -- The privileges CREATE EXTENSION gave (what pg_dump compares the current ones with).
    || coalesce(' init=' || (SELECT i.initprivs::text FROM pg_init_privs i
                             WHERE i.classoid = m.classid AND i.objoid = m.objid AND i.objsubid = 0), '') AS line
FROM m
UNION ALL
SELECT format('extension sno | version=%s relocatable=%s schema=%s config=%s', e.extversion, e.extrelocatable,
              e.extnamespace::regnamespace, e.extconfig::regclass[])
FROM pg_extension e WHERE e.extname = 'sno'
UNION ALL
-- An update script that pins search_path to pg_catalog creates what it does not qualify there.
-- Since 0.6.0 the schema sno_internal holds sno's own table (not the application's): members
-- there are listed, any other schema is counted.
SELECT format('members outside sno''s schema | %s', count(*))
FROM m JOIN pg_extension e ON e.extname = 'sno', LATERAL pg_identify_object(m.classid, m.objid, 0) i
WHERE i.schema IS DISTINCT FROM (SELECT n.nspname FROM pg_namespace n WHERE n.oid = e.extnamespace)
  AND i.schema IS NOT NULL AND i.schema <> 'sno_internal'
UNION ALL
SELECT format('member in sno_internal | %s %s', i.type, i.identity)
FROM m, LATERAL pg_identify_object(m.classid, m.objid, 0) i
WHERE i.schema = 'sno_internal'
ORDER BY 1;
