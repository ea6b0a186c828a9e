-- .ci/bench, section convert: run with psql -f, its \echo and \timing lines read by the section.
-- The offline peer: the tool's end state (sno_id the primary key with sno_generate_at IDs of
-- created_at, in created_at order, sno_generate(1) its default; the old key unique; the child's
-- legacy_sno_id filled, NOT NULL, indexed, both foreign keys validated, a trigger filling it for
-- writers that set only legacy_id) in one transaction under ACCESS EXCLUSIVE on both tables.
-- legacy is rewritten by ALTER COLUMN ... TYPE with USING (its indexes built again by the same
-- rewrite): the key column itself cannot be retyped in place, as its values change and the child's
-- bigint foreign key references it, so the new column is added empty (catalog only) and the
-- rewrite fills it. The child cannot be rewritten from another table's values (USING allows no
-- subquery): one UPDATE.
\timing on
\echo @ BEGIN; LOCK TABLE orders, legacy IN ACCESS EXCLUSIVE MODE
BEGIN;
LOCK TABLE orders, legacy IN ACCESS EXCLUSIVE MODE;
\echo @ orders: DROP CONSTRAINT orders_legacy_id_fkey
ALTER TABLE orders DROP CONSTRAINT orders_legacy_id_fkey;
\echo @ legacy: ADD COLUMN sno_id sno
ALTER TABLE legacy ADD COLUMN sno_id sno;
\echo @ legacy: the rewrite: ALTER COLUMN sno_id TYPE sno USING sno_generate_at(1, created_at), NOT NULL, DEFAULT; the primary key on sno_id, id UNIQUE
ALTER TABLE legacy
    ALTER COLUMN sno_id TYPE sno USING sno_generate_at(1, created_at),
    ALTER COLUMN sno_id SET NOT NULL,
    ALTER COLUMN sno_id SET DEFAULT sno_generate(1),
    DROP CONSTRAINT legacy_pkey,
    ADD CONSTRAINT legacy_id_key UNIQUE (id),
    ADD CONSTRAINT legacy_sno_pkey PRIMARY KEY (sno_id);
\echo @ legacy: RENAME CONSTRAINT legacy_sno_pkey TO legacy_pkey
ALTER TABLE legacy RENAME CONSTRAINT legacy_sno_pkey TO legacy_pkey;
\echo @ orders: ADD COLUMN legacy_sno_id sno
ALTER TABLE orders ADD COLUMN legacy_sno_id sno;
\echo @ orders: UPDATE ... SET legacy_sno_id FROM legacy
UPDATE orders o SET legacy_sno_id = l.sno_id FROM legacy l WHERE l.id = o.legacy_id;
\echo @ orders: SET NOT NULL, both foreign keys
ALTER TABLE orders ALTER COLUMN legacy_sno_id SET NOT NULL,
    ADD CONSTRAINT orders_legacy_sno_id_fkey FOREIGN KEY (legacy_sno_id) REFERENCES legacy (sno_id),
    ADD CONSTRAINT orders_legacy_id_fkey FOREIGN KEY (legacy_id) REFERENCES legacy (id);
\echo @ orders: CREATE INDEX ON orders (legacy_sno_id)
CREATE INDEX orders_legacy_sno_id_idx ON orders (legacy_sno_id);
\echo @ orders: the trigger filling legacy_sno_id
CREATE FUNCTION orders_legacy_sno_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NEW.legacy_sno_id IS NULL OR TG_OP = 'UPDATE' AND NEW.legacy_id IS DISTINCT FROM OLD.legacy_id THEN
        NEW.legacy_sno_id := (SELECT l.sno_id FROM legacy l WHERE l.id = NEW.legacy_id);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER orders_legacy_sno_sync BEFORE INSERT OR UPDATE OF legacy_id ON orders
    FOR EACH ROW EXECUTE FUNCTION orders_legacy_sno_sync();
\echo @ COMMIT
COMMIT;
