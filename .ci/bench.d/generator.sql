-- .ci/bench, section generator: the tables of generator_table.sql and of pgbench.
CREATE TABLE ins_sno (id sno PRIMARY KEY DEFAULT sno_generate(1), v int);
CREATE TABLE ins_big (id bigserial PRIMARY KEY, v int);
CREATE TABLE pgb_sno (id sno PRIMARY KEY DEFAULT sno_generate(1), v int);
CREATE TABLE pgb_big (id bigserial PRIMARY KEY, v int);
