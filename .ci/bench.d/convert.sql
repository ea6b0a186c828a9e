-- .ci/bench, section convert: the template database's contents (psql -d conv_template -v rows=N
-- -v child_rows=N): legacy, rows rows with a bigserial key in created_at order, and orders,
-- child_rows rows with a NOT NULL, indexed foreign key to it in a scattered order.
SET client_min_messages = warning;
CREATE EXTENSION sno;
CREATE TABLE legacy (id bigserial PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(), payload text);
INSERT INTO legacy (created_at, payload)
    SELECT timestamptz '2025-01-01+00' + g * (interval '365 days' / :rows), 'legacy row ' || g
    FROM generate_series(1, :rows) g;
CREATE TABLE orders (oid bigserial PRIMARY KEY, legacy_id bigint NOT NULL, amount int);
INSERT INTO orders (legacy_id, amount)
    SELECT 1 + (g::bigint * 7919) % :rows, g % 100 FROM generate_series(1, :child_rows) g;
ALTER TABLE orders ADD CONSTRAINT orders_legacy_id_fkey FOREIGN KEY (legacy_id) REFERENCES legacy;
CREATE INDEX orders_legacy_id_idx ON orders (legacy_id);
VACUUM ANALYZE;
