-- The README's query (Installing, "Which schema"): functions, aggregates, procedures and
-- operators in sno's schema that are not sno's own and belong to a role that is neither a
-- superuser nor sno's owner. During ALTER EXTENSION sno UPDATE from 0.1.0 before 0.4.1, one of
-- them could have been called as the superuser running the update. The search_path is set
-- first so that the query itself calls none of them. Run in each database with sno.
SET search_path = pg_catalog, pg_temp;
WITH sno AS (
    SELECT e.oid, e.extnamespace, e.extowner FROM pg_extension e WHERE e.extname = 'sno'
), objects AS (
    SELECT 'pg_proc'::regclass AS catalog, p.oid, p.proowner AS owner
      FROM pg_proc p, sno WHERE p.pronamespace = sno.extnamespace
    UNION ALL
    SELECT 'pg_operator'::regclass, o.oid, o.oprowner
      FROM pg_operator o, sno WHERE o.oprnamespace = sno.extnamespace
)
SELECT pg_describe_object(o.catalog, o.oid, 0) AS object, o.owner::regrole AS owner
  FROM objects o, sno
 WHERE NOT EXISTS (SELECT FROM pg_depend d
                    WHERE d.classid = o.catalog AND d.objid = o.oid AND d.deptype = 'e'
                      AND d.refclassid = 'pg_extension'::regclass AND d.refobjid = sno.oid)
   AND o.owner <> sno.extowner
   AND NOT (SELECT r.rolsuper FROM pg_roles r WHERE r.oid = o.owner)
 ORDER BY 1;
