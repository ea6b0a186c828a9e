"""Convert an existing table's key to sno, online: ``python -m sno_pg.convert TABLE --meta N``.

A client program, not a SQL function: ``CREATE INDEX CONCURRENTLY`` cannot run inside a function,
a procedure or a transaction; every DDL statement needs ``lock_timeout`` and retries; the batches
must commit as they go; and an interrupted run must resume. Needs psycopg 3 (sno-pg is not on
PyPI: ``pip install './python[convert]'`` in a clone of the sno repository, or
``pip install 'sno-pg[convert] @ git+<the sno repository>#subdirectory=python'``) and the sno
extension 0.6.0 or later (``sno_generate_at``).

The table keeps its rows, its old key column and its foreign keys; it gains a sno column (``sno_id``
by default) that becomes its primary key, and each table whose foreign key references the old key
gains a sno column referencing the new one. ``python -m sno_pg.convert --help`` lists the steps and
what each one locks. Importable: ``main(["legacy", "--meta", "1", ...])`` returns the exit code.
"""

import argparse
import os
import random
import re
import shlex
import sys
import time

try:
    import psycopg
    from psycopg import sql
except ImportError:  # reported by main()
    psycopg = None
    sql = None

__all__ = ["main", "Converter", "Refused", "Stopped"]

# sno's time range: 2010-01-01T00:00:00Z up to the end of the last 4 ms unit (SPEC.md).
TIME_LO = "2010-01-01 00:00:00+00"
TIME_HI = "2079-09-07 15:47:35.552+00"
ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
INT_TYPES = {"smallint", "integer", "bigint"}
TEXT_TYPES = {"text", "character varying", "character"}
TIME_TYPES = {"timestamp with time zone", "timestamp without time zone", "date"}
# Errors after which a step is tried again (after checking the catalog again): a lock not had
# within lock_timeout, a deadlock, a serialization failure, and what a concurrent run of this tool
# on the same table makes (an object created or dropped under us, an index in use).
RETRY_STATES = {"55P03", "40P01", "40001", "42P07", "42710", "42704", "55006"}
# The first key of the advisory locks this tool takes (the second is the table's oid).
ADVISORY_KEY = 0x736E6F  # "sno"
EXIT_OK, EXIT_ERROR, EXIT_REFUSED, EXIT_STOPPED, EXIT_CONNECTION = 0, 1, 2, 3, 4

EPILOG = """\
steps (each checks the catalog first and is skipped when done, so running the same command again
after an interruption, a crash included, continues where it stopped):
  1. ADD COLUMN <new> sno, then SET DEFAULT sno_generate(meta), in one transaction: ACCESS
     EXCLUSIVE on the table for milliseconds (no default in ADD COLUMN: a volatile one rewrites
     the table). From then on new rows get sno_generate IDs.
  2. each child (a table whose single-column foreign key references the old key): ADD COLUMN
     <fk>_sno / <x>_sno_id, a trigger function and a BEFORE INSERT OR UPDATE trigger that keeps
     it in step with the old foreign key column (both ways): ACCESS EXCLUSIVE on the child, ms.
  3. a work index on the conversion order WHERE <new> IS NULL, built CONCURRENTLY: SHARE UPDATE
     EXCLUSIVE (reads and writes go on; it waits for older transactions).
  4. batches of --batch-size rows, one transaction each, in (time, key) order, each row getting
     sno_generate_at(meta, its time): row locks only (FOR NO KEY UPDATE SKIP LOCKED: foreign
     key checks of clients writing children do not wait for them); WHERE <new> IS NULL, so no
     row ever gets a second ID. A row a client (or another run) held locked is done
     in a later pass: its ID has its time too, but may sort after IDs of its 4 ms unit. Rows
     whose time is NULL or outside 2010-01-01 .. 2079-09-07 are reported and the conversion
     stops here (exit 3) with what to do; nothing below is done before they have IDs.
  5. the work index dropped CONCURRENTLY; then, once every client transaction older than the
     last batch has ended (a session idle in a transaction delays this; printed every 10 s),
     the children's new columns filled in batches of block ranges (row locks, SKIP LOCKED).
  6. NOT NULL on <new>: ADD CONSTRAINT ... CHECK (<new> IS NOT NULL) NOT VALID (ACCESS
     EXCLUSIVE, ms), VALIDATE CONSTRAINT (SHARE UPDATE EXCLUSIVE: a scan, reads and writes go
     on), SET NOT NULL, which uses the check, and DROP CONSTRAINT (ACCESS EXCLUSIVE, ms).
  7. CREATE UNIQUE INDEX CONCURRENTLY on <new>, and on the old key unless it has a unique index
     besides the primary key (SHARE UPDATE EXCLUSIVE; an INVALID index a failed build left is
     dropped CONCURRENTLY and built again).
  8. each child: an index on its new column (CONCURRENTLY) if its old column has one; NOT NULL
     as in 6 if its old column is NOT NULL; FOREIGN KEY (<new fk>) REFERENCES table(<new>)
     NOT VALID (SHARE ROW EXCLUSIVE on child and table, ms), then VALIDATE (SHARE UPDATE
     EXCLUSIVE on the child, ROW SHARE on the table: a scan, reads and writes go on).
  9. the swap, one transaction, ACCESS EXCLUSIVE on the table and its children for
     milliseconds: the old key's unique index becomes a UNIQUE constraint, the old foreign
     keys that depend on the old primary key are dropped, the old primary key is dropped, the
     new unique index becomes the primary key (ADD CONSTRAINT ... PRIMARY KEY USING INDEX, with
     the old constraint's name), the old foreign keys are added again NOT VALID (referencing the
     old key's unique constraint), unless --drop-old-fks.
 10. the old foreign keys validated again (as in 8).

locks: only steps 1, 2, 6, 8 and 9 take a lock that blocks clients (ACCESS EXCLUSIVE or SHARE
ROW EXCLUSIVE), each held for milliseconds. Each such step first takes all its tables' locks in
one LOCK TABLE (children before the parent, the order a client writing a child takes them) with
lock_timeout and statement_timeout set to --lock-timeout, and is tried again with backoff
(--retries) when that runs out; where the role may set deadlock_timeout, it is 100 ms or less in
that transaction, so that in a deadlock with a client the tool is the one that gives up. So a
client statement waits at most --lock-timeout behind the tool plus the milliseconds a lock is
held, or, for a row a batch has locked, one batch's transaction. Everything else is row locks or
SHARE UPDATE EXCLUSIVE, which reads and writes do not wait for. Two runs on one table take their
DDL steps one at a time (an advisory lock) and share the batches.

after: the old key column keeps its values, NOT NULL, its default and a UNIQUE constraint;
each child keeps its old foreign key column, kept in step with the new one by the trigger of
step 2 in both directions (a row written with only one of them gets the other), until you drop
them.

time of each ID: --time-column's value (timestamptz, timestamp, date); without it, a UUIDv7's or
ULID's embedded time, and for other keys (bigint, uuid v4, other text) the conversion's time in
key order. sno_time(<new>) is that time floored to 4 ms. Each run's session takes one of its
role's reserved partitions (sno.reserved_limit) on its first sno_generate_at call.

not handled (refused before anything changes): partitioned or inherited tables and children, a
published table whose replica identity is the old primary key, Citus tables, composite keys or
foreign keys, self-referencing foreign keys, key types other than smallint/integer/bigint, uuid
and text. The batches' UPDATEs fire the table's own UPDATE triggers.

clients: a client that prepared a statement with SELECT * (or RETURNING *) on a table gets
"cached plan must not change result type" after steps 1 and 2 add a column, as after any ADD
COLUMN, until it prepares it again: name the columns, or let the driver re-prepare.

exit codes: 0 done, 1 error, 2 refused or bad arguments, 3 stopped with rows to fix (see the
message), 4 connection lost (run the same command again).
"""


def uuid_at(ms):
    """The smallest UUID whose first 48 bits are the Unix time ms (the UUIDv7 layout)."""
    h = f"{ms:012x}" + "0" * 20
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ulid_at(ms):
    """The 10 characters of a ULID's time ms (a ULID with them sorts at or after this prefix)."""
    return "".join(ULID_ALPHABET[(ms >> (5 * (9 - i))) & 31] for i in range(10))


class Refused(Exception):
    """The tool does not handle this table (nothing was changed)."""


class Stopped(Exception):
    """The conversion stopped before a step it cannot do yet; the message says what to do."""


def pg_name(*parts):
    """A PostgreSQL name made of parts joined by '_', truncated to 63 bytes as the server does."""
    name = "_".join(p for p in parts if p)
    b = name.encode()
    if len(b) <= 63:
        return name
    return b[:63].decode(errors="ignore")


def parse_duration(text):
    """'2s', '500ms', '1.5s', '2000' (milliseconds) -> milliseconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|min)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (examples: 2s, 500ms)")
    value = float(m.group(1)) * {"ms": 1, None: 1, "s": 1000, "min": 60000}[m.group(2)]
    if value <= 0:
        raise argparse.ArgumentTypeError("a duration must be positive")
    return int(value)


def parse_child_column(text):
    """'orders.legacy_id=legacy_sno' -> ('orders.legacy_id', 'legacy_sno')."""
    left, eq, right = text.partition("=")
    if not eq or "." not in left or not right:
        raise argparse.ArgumentTypeError(f"{text!r}: CHILD.FKCOL=NAME")
    return left, right


class Child:
    """A foreign key of another table referencing the old key."""

    def __init__(self, **kw):
        self.__dict__.update(kw)


class Converter:
    def __init__(self, conn, opts, out=None):
        self.conn = conn
        self.o = opts
        self.out = out or sys.stdout
        self.t0 = time.monotonic()
        self.lock_timeout_ms = opts.lock_timeout
        self.retried = 0

    # --- output and plumbing ---------------------------------------------------------------

    def say(self, msg):
        print(f"[{time.monotonic() - self.t0:7.1f} s] {msg}", file=self.out, flush=True)

    def q(self, query, params=None):
        return self.conn.execute(query, params).fetchall()

    def q1(self, query, params=None):
        return self.conn.execute(query, params).fetchone()

    def v(self, query, params=None):
        r = self.q1(query, params)
        return None if r is None else r[0]

    def local_lock_timeout(self):
        self.conn.execute("SELECT set_config('lock_timeout', %s, true)", [f"{self.lock_timeout_ms}ms"])

    def retrying(self, what, fn, also=()):
        """fn() again after a retryable error (lock_timeout, deadlock, a concurrent run), with
        exponential backoff up to 5 s; fn must check the catalog itself."""
        delay = 0.1
        for attempt in range(1, self.o.retries + 1):
            try:
                return fn()
            except psycopg.Error as e:
                state = getattr(e, "sqlstate", None)
                catalog_race = state == "23505" and (e.diag.table_name or "").startswith("pg_")
                if (state not in RETRY_STATES and state not in also and not catalog_race) or attempt == self.o.retries:
                    raise
                self.retried += 1
                first = str(e).strip().splitlines()[0]
                self.say(f"  {what}: {first} [{state}]; try {attempt + 1} in {delay:.1f} s")
                time.sleep(delay * random.uniform(0.8, 1.2))
                delay = min(delay * 2, 5.0)

    def timed(self, what, fn):
        t = time.monotonic()
        self.say(f"{what} ...")
        r = fn()
        self.say(f"{what}: done in {time.monotonic() - t:.2f} s")
        return r

    def ddl_tx(self, what, lock_sql, check, action):
        """One transaction: lock_sql (a LOCK TABLE of every table the DDL needs, children before
        the parent, as a client writing a child takes them) under statement_timeout = lock_timeout,
        so that the whole wait for all its locks is bounded by --lock-timeout; then check() under
        the locks (True: nothing to do), then action(). Retried with backoff. Where this role may,
        deadlock_timeout is lowered in it, so that in a deadlock with a client this transaction is
        the one that gives up."""

        def once():
            with self.conn.transaction():
                self.local_lock_timeout()
                if self.may_set_deadlock_timeout:
                    self.conn.execute("SELECT set_config('deadlock_timeout', %s, true)",
                                      [f"{max(10, min(100, self.lock_timeout_ms // 4))}ms"])
                if lock_sql is not None:
                    self.conn.execute("SELECT set_config('statement_timeout', %s, true)", [f"{self.lock_timeout_ms}ms"])
                    self.conn.execute(lock_sql)
                    self.conn.execute("SELECT set_config('statement_timeout', '0', true)")
                locked = time.monotonic()
                if check():
                    return None
                action()
            return time.monotonic() - locked  # the locks are released at the commit

        held = self.serialized(lambda: self.retrying(what, once, also=("57014",)))
        if held is not None:
            self.say(f"  {what}: locks held {1000 * held:.0f} ms")
        return held is not None

    def serialized(self, fn):
        """fn() under a session advisory lock on the table: two runs on one table take their DDL
        steps one after the other (the second finds the work done), so that neither queues a
        lock that blocks clients behind the other's index build or validation. Batches are not
        serialized: they share the rows with SKIP LOCKED."""
        # Polled, not waited for: a session waiting in pg_advisory_lock has a snapshot, and the
        # other run's CREATE INDEX CONCURRENTLY waits for it (a deadlock).
        waited = time.monotonic()
        while not self.v("SELECT pg_try_advisory_lock(%s::int4, %s::oid::int4)", [ADVISORY_KEY, self.oid]):
            if time.monotonic() - waited > 10:
                waited = time.monotonic()
                self.say("  waiting for another run of this tool on the same table (a DDL step)")
            time.sleep(0.2)
        try:
            return fn()
        finally:
            if not self.conn.broken:
                self.conn.execute("SELECT pg_advisory_unlock(%s::int4, %s::oid::int4)", [ADVISORY_KEY, self.oid])

    # --- catalog ----------------------------------------------------------------------------

    def column(self, rel, name):
        """(attnum, type, notnull, has default, default text) of a column, or None."""
        return self.q1(
            """SELECT a.attnum, format_type(a.atttypid, a.atttypmod), a.attnotnull, a.atttypid,
                      pg_get_expr(d.adbin, d.adrelid)
               FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
               WHERE a.attrelid = %s AND a.attname = %s AND a.attnum > 0 AND NOT a.attisdropped""",
            [rel, name],
        )

    def constraint(self, rel, name):
        """(oid, contype, convalidated) of a constraint of rel, or None."""
        return self.q1(
            "SELECT oid, contype, convalidated FROM pg_constraint WHERE conrelid = %s AND conname = %s", [rel, name]
        )

    def index(self, schema_oid, name):
        """(oid, indisvalid, indisunique, indrelid) of an index by name, or None."""
        return self.q1(
            """SELECT c.oid, i.indisvalid, i.indisunique, i.indrelid FROM pg_class c
               JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relnamespace = %s AND c.relname = %s""",
            [schema_oid, name],
        )

    def rel_ident(self, schema, name):
        return sql.Identifier(schema, name)

    # --- inspection: everything refused is refused here, before any change -------------------

    def inspect(self):
        o = self.o
        r = self.q1(
            """SELECT c.oid, n.oid, n.nspname, c.relname, c.relkind, c.relispartition, c.relreplident
               FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(%s)""",
            [o.table],
        )
        if r is None:
            raise Refused(f"there is no table {o.table!r} (as the search_path finds it)")
        self.oid, self.nsp_oid, self.schema, self.name, relkind, ispart, self.replident = r
        self.t = self.rel_ident(self.schema, self.name)
        label = f"{self.schema}.{self.name}"
        self.label = label
        if relkind == "p":
            raise Refused(f"{label} is a partitioned table: not handled (convert its partitions' data another way)")
        if relkind != "r":
            raise Refused(f"{label} is not a plain table (relkind {relkind})")
        if ispart or self.v("SELECT 1 FROM pg_inherits WHERE inhrelid = %s OR inhparent = %s", [self.oid, self.oid]):
            raise Refused(f"{label} is a partition or takes part in table inheritance: not handled")
        if self.v("SELECT to_regclass('pg_catalog.pg_dist_partition') IS NOT NULL"):
            if self.v("SELECT 1 FROM pg_catalog.pg_dist_partition WHERE logicalrelid = %s::oid::regclass", [self.oid]):
                raise Refused(
                    f"{label} is a Citus distributed or reference table: not handled (a distributed "
                    "table's primary key must include its distribution column)"
                )
        ext = self.q1(
            """SELECT n.nspname, t.oid FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
               JOIN pg_type t ON t.typname = 'sno' AND t.typnamespace = e.extnamespace WHERE e.extname = 'sno'"""
        )
        if ext is None:
            raise Refused("the sno extension is not installed in this database (CREATE EXTENSION sno)")
        self.ext_schema, self.sno_type = ext
        self.X = sql.Identifier(self.ext_schema)
        gen_at = self.v("SELECT to_regprocedure(format('%%I.sno_generate_at(integer, timestamptz)', %s::text))::oid",
                        [self.ext_schema])
        if gen_at is None:
            raise Refused("this sno has no sno_generate_at(int, timestamptz): update it (ALTER EXTENSION sno UPDATE)")
        if not self.v("SELECT has_function_privilege(%s::oid, 'EXECUTE')", [gen_at]):
            raise Refused(
                f"{self.v('SELECT current_user')} may not run sno_generate_at: a superuser can grant it with "
                f"GRANT EXECUTE ON FUNCTION {self.ext_schema}.sno_generate_at(int, timestamptz) TO "
                f"{self.v('SELECT current_user')}"
            )
        self.may_set_deadlock_timeout = self.v("SELECT has_parameter_privilege('deadlock_timeout', 'SET')")
        if not 0 <= o.meta <= 255:
            raise Refused(f"--meta {o.meta}: a meta byte is 0 to 255")

        pk = self.q1(
            """SELECT con.conname, con.conindid, con.conkey, ic.relname FROM pg_constraint con
               JOIN pg_class ic ON ic.oid = con.conindid WHERE con.conrelid = %s AND con.contype = 'p'""",
            [self.oid],
        )
        if pk is None:
            raise Refused(f"{label} has no primary key: not handled")
        self.pk_name, self.pk_index, pk_cols, self.pk_index_name = pk
        if len(pk_cols) != 1:
            raise Refused(f"{label} has a composite primary key ({len(pk_cols)} columns): not handled")
        pk_col = self.v("SELECT attname FROM pg_attribute WHERE attrelid = %s AND attnum = %s", [self.oid, pk_cols[0]])
        new = self.column(self.oid, o.new_column)
        if new is not None and new[3] != self.sno_type:
            raise Refused(f"{label}.{o.new_column} exists and is not of type sno ({new[1]}): choose --new-column")
        self.swapped = pk_col == o.new_column
        if self.swapped:
            # After the swap: the old key is the column given, else the one other single-column
            # unique key of a type this tool converts.
            self.key = o.key_column or self.v(
                """SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid
                   AND a.attnum = i.indkey[0] WHERE i.indrelid = %s AND i.indisunique AND i.indnkeyatts = 1
                   AND NOT i.indisprimary AND a.attname <> %s ORDER BY i.indexrelid LIMIT 1""",
                [self.oid, o.new_column],
            )
        else:
            if o.key_column and o.key_column != pk_col:
                raise Refused(f"--key-column {o.key_column}: the primary key of {label} is {pk_col}")
            self.key = pk_col
        if self.key is None:
            self.kind = None
        else:
            key = self.column(self.oid, self.key)
            if key is None:
                raise Refused(f"{label} has no column {self.key}")
            self.key_attnum, self.key_type = key[0], key[1]
            base = re.sub(r"\(.*\)", "", self.key_type)
            if base in INT_TYPES:
                self.kind = "int"
            elif base == "uuid":
                self.kind = "uuid"
            elif base in TEXT_TYPES:
                self.kind = "text"
            else:
                raise Refused(
                    f"{label}.{self.key} is of type {self.key_type}: this tool converts smallint/integer/bigint, "
                    "uuid and text (ULID) keys"
                )
        self.time_col = o.time_column
        if self.time_col:
            tc = self.column(self.oid, self.time_col)
            if tc is None:
                raise Refused(f"{label} has no column {self.time_col}")
            if tc[1] not in TIME_TYPES:
                raise Refused(f"--time-column {self.time_col} is of type {tc[1]}: timestamptz, timestamp or date")
            self.time_type = tc[1]
        if self.swapped:
            self.children = []
            self.work_index = pg_name(self.name, "sno_todo")
            return
        # A published table's replica identity is the old primary key's index: dropping it would
        # break UPDATE and DELETE replication.
        pubs = [r[0] for r in self.q("SELECT pubname FROM pg_publication_tables WHERE schemaname = %s AND tablename = %s",
                                     [self.schema, self.name])]
        ident_index = self.v("SELECT indexrelid FROM pg_index WHERE indrelid = %s AND indisreplident", [self.oid])
        on_pk = self.replident == "d" or (self.replident == "i" and ident_index == self.pk_index)
        if pubs and on_pk:
            raise Refused(
                f"{label} is in publication(s) {', '.join(pubs)} and its replica identity is the old primary key: "
                "not handled (set REPLICA IDENTITY to another unique index or FULL first, or take it out of the publication)"
            )
        self.ident_warning = self.replident == "i" and ident_index == self.pk_index
        self.children = []
        self.new_fks = {}
        rows = self.q(
            """SELECT con.oid, con.conname, con.conrelid, con.conkey, con.confkey, con.conindid, con.convalidated,
                      con.confupdtype, con.confdeltype, con.condeferrable, con.condeferred, con.conparentid,
                      cc.relkind, cc.relispartition, n.nspname, cc.relname, n.oid
               FROM pg_constraint con JOIN pg_class cc ON cc.oid = con.conrelid
               JOIN pg_namespace n ON n.oid = cc.relnamespace
               WHERE con.contype = 'f' AND con.confrelid = %s ORDER BY n.nspname, cc.relname, con.conname""",
            [self.oid],
        )
        new_attnum = new[0] if new else None
        overrides = dict(o.child_column or [])
        for (coid, conname, crel, conkey, confkey, conindid, validated, upd, dele, deferrable, deferred, parentid,
             ckind, cpart, cschema, cname, cnsp) in rows:
            clabel = f"{cschema}.{cname}"
            if new_attnum is not None and list(confkey) == [new_attnum]:
                self.new_fks[(crel, conkey[0])] = (conname, validated)
                continue
            if self.key_attnum not in confkey:
                continue  # references another unique column: untouched
            if len(confkey) != 1:
                raise Refused(f"the foreign key {conname} of {clabel} is composite: not handled")
            if crel == self.oid:
                raise Refused(f"the foreign key {conname} references {label} from {label} itself: not handled")
            if ckind == "p" or cpart or parentid:
                raise Refused(f"the foreign key {conname} belongs to partitioned table {clabel}: not handled")
            if self.v("SELECT 1 FROM pg_inherits WHERE inhrelid = %s OR inhparent = %s", [crel, crel]):
                raise Refused(f"{clabel} (foreign key {conname}) takes part in table inheritance: not handled")
            if not self.v("SELECT has_schema_privilege(%s::oid, 'CREATE')", [cnsp]):
                raise Refused(
                    f"{self.v('SELECT current_user')} may not create the trigger function that keeps {clabel}'s new column "
                    f"in step in schema {cschema}: GRANT CREATE ON SCHEMA {sql.Identifier(cschema).as_string(self.conn)} "
                    f"TO {sql.Identifier(self.v('SELECT current_user')).as_string(self.conn)} (or run this as the schema's owner)")
            fk = self.q1(
                "SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute WHERE attrelid = %s AND attnum = %s",
                [crel, conkey[0]],
            )
            fk_col = fk[0]
            if f"{cname}.{fk_col}" in overrides:
                new_col = overrides[f"{cname}.{fk_col}"]
            elif fk_col.endswith("_id"):
                new_col = pg_name(fk_col[:-3], "sno_id")
            else:
                new_col = pg_name(fk_col, "sno")
            existing = self.column(crel, new_col)
            if existing is not None and existing[3] != self.sno_type:
                raise Refused(f"{clabel}.{new_col} exists and is not of type sno: use --child-column {cname}.{fk_col}=NAME")
            indexed = self.v(
                "SELECT 1 FROM pg_index WHERE indrelid = %s AND indkey[0] = %s AND indpred IS NULL LIMIT 1", [crel, conkey[0]]
            )
            self.children.append(Child(
                con_oid=coid, conname=conname, rel=crel, nsp_oid=cnsp, schema=cschema, relname=cname,
                ident=self.rel_ident(cschema, cname), fk_col=fk_col, fk_attnum=conkey[0], fk_type=fk[1],
                fk_notnull=fk[2], new_col=new_col, validated=validated, on_pk=conindid == self.pk_index,
                upd=upd, dele=dele, deferrable=deferrable, deferred=deferred, indexed=bool(indexed),
            ))
        self.build_expressions()

    # --- the conversion order and each row's time ---------------------------------------------

    def build_expressions(self):
        S, I, L = sql.SQL, sql.Identifier, sql.Literal
        k = I(self.key)
        lo, hi = S("timestamptz {}").format(L(TIME_LO)), S("timestamptz {}").format(L(TIME_HI))
        now = S("now()")
        if self.time_col:
            tc = I(self.time_col)
            self.time_source = f"column {self.time_col} ({self.time_type})"
            if self.time_type != "timestamp with time zone":
                self.time_source += f", read in time zone {self.v('SHOW TimeZone')} (--time-zone)"
            at = S("{}::timestamptz").format(tc)
            valid = S("({tc} >= {lo} AND {tc} < {hi})").format(tc=tc, lo=lo, hi=hi)
            self.order = [tc, k]
            self.order_types = [S(self.time_type), S(self.key_type)]
            self.raw_time = S("{}::text").format(tc)
        else:
            # Where the key carries a time, the key order is its time order, so sno's range is a
            # key range: a cheap filter (an index condition on the work index for ULIDs).
            lo_ms, hi_ms = 1262304000000, 3461327255552
            if self.kind == "uuid":
                self.time_source = "a UUIDv7's own time; other UUIDs: the conversion's time, in key order"
                b = S("uuid_send({k})").format(k=k)
                embedded_ok = S("(get_byte({b}, 6) >> 4 = 7 AND get_byte({b}, 8) >> 6 = 2)").format(b=b)
                embedded = S("(timestamptz 'epoch' + ('x' || encode(substring({b} FROM 1 FOR 6), 'hex'))::bit(48)::bigint"
                             " * interval '1 millisecond')").format(b=b)
                in_range = S("({k} >= {lo}::uuid AND {k} < {hi}::uuid)").format(
                    k=k, lo=L(uuid_at(lo_ms)), hi=L(uuid_at(hi_ms)))
                self.order = [k]
                self.order_types = [S("uuid")]
            elif self.kind == "text":
                self.time_source = "a ULID's own time; other keys: the conversion's time, in key order"
                embedded_ok = S("({k} ~ '^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{{25}}$')").format(k=k)
                terms = [
                    S("((strpos({a}, substr(upper({k}), {i}, 1)) - 1)::bigint << {s})").format(
                        a=L(ULID_ALPHABET), k=k, i=L(i + 1), s=L(5 * (9 - i)))
                    for i in range(10)
                ]
                embedded = S("(timestamptz 'epoch' + ({sum}) * interval '1 millisecond')").format(sum=S(" + ").join(terms))
                o = S('(upper({k}) COLLATE "C")').format(k=k)
                in_range = S("({o} >= {lo} AND {o} < {hi})").format(o=o, lo=L(ulid_at(lo_ms)), hi=L(ulid_at(hi_ms)))
                self.order = [o]
                self.order_types = [S("text")]
            else:
                self.time_source = "the conversion's time, in key order"
                embedded_ok, embedded, in_range = S("false"), S("NULL::timestamptz"), S("true")
                self.order = [k]
                self.order_types = [S(self.key_type)]
            self.embedded_ok = embedded_ok
            at = S("(CASE WHEN {ok} THEN {emb} ELSE {now} END)").format(ok=embedded_ok, emb=embedded, now=now)
            valid = S("(NOT {ok} OR {r})").format(ok=embedded_ok, r=in_range)
            self.raw_time = S("(CASE WHEN {ok} THEN {emb}::text ELSE 'the conversion''s time' END)").format(
                ok=embedded_ok, emb=embedded)
        self.valid = valid
        self.at = at
        fb = self.o.fallback_time
        if fb is not None:
            fbv = now if fb == "now" else S("timestamptz {}").format(L(fb))
            self.batch_at = S("(CASE WHEN {v} THEN {at} ELSE {fb} END)").format(v=self.valid, at=at, fb=fbv)
            self.batch_valid = S("true")
        else:
            self.batch_at, self.batch_valid = at, self.valid
        self.work_index = pg_name(self.name, "sno_todo")
        self.new_key_index = pg_name(self.name, self.o.new_column, "key")
        self.old_key_index = pg_name(self.name, self.key, "key")
        self.not_null_check = pg_name(self.name, self.o.new_column, "not_null")

    # --- the state, for --dry-run and for skipping what is done --------------------------------

    def new_col(self):
        return self.column(self.oid, self.o.new_column)

    def count_todo(self, valid_only=None):
        cond = {None: sql.SQL("true"), True: self.batch_valid,
                False: sql.SQL("NOT coalesce({}, false)").format(self.batch_valid)}[valid_only]
        return self.v(sql.SQL("SELECT count(*) FROM ONLY {t} WHERE {n} IS NULL AND {c}").format(
            t=self.t, n=sql.Identifier(self.o.new_column), c=cond))

    def plan_lines(self):
        o = self.o
        if self.swapped:
            return [f"table {self.label}: the primary key is {o.new_column} already (old key: {self.key or 'none found'}); "
                    "what may be left: validating the old foreign keys"]
        lines = [f"table {self.label}: key {self.key} ({self.key_type}), new key {o.new_column} sno, meta {o.meta}",
                 f"time of each existing row's ID: {self.time_source}"]
        if o.fallback_time:
            lines.append(f"rows without a usable time: --fallback-time {o.fallback_time}")
        rows = self.v(sql.SQL("SELECT count(*) FROM ONLY {}").format(self.t))
        new = self.new_col()
        todo = self.count_todo() if new else rows
        lines.append(f"rows: {rows}, without an ID yet: {todo}")
        if new is None and self.kind in ("uuid", "text") and not self.time_col:
            counts = self.q1(sql.SQL("SELECT count(*) FILTER (WHERE {ok} AND {v}), count(*) FILTER (WHERE NOT {ok}), "
                                     "count(*) FILTER (WHERE {ok} AND NOT {v}) FROM ONLY {t}").format(
                ok=self.embedded_ok, v=self.valid, t=self.t))
            what = "UUIDv7s" if self.kind == "uuid" else "ULIDs"
            lines.append(f"keys: {counts[0]} {what} (their own time), {counts[1]} others (the conversion's time), "
                         f"{counts[2]} {what} with a time outside 2010..2079")
        for c in self.children:
            lines.append(f"child {c.schema}.{c.relname}: {c.fk_col} -> new column {c.new_col} "
                         f"({'on the old primary key' if c.on_pk else 'on another unique index'}; "
                         f"old foreign key {c.conname} {'kept' if not o.drop_old_fks else 'dropped'})")
        if not self.children:
            lines.append("no foreign keys reference the old key")
        if self.ident_warning:
            lines.append("note: the replica identity is the old primary key's index; after the swap the table has none "
                         "(it is in no publication)")
        if o.dry_run:
            lines += self.dry_run_steps()
        else:
            lines.append("steps: see --help; each is skipped when the catalog shows it done")
        return lines

    def dry_run_steps(self):
        """The steps, what each locks, and whether the catalog shows it done."""
        S, I, o = sql.SQL, sql.Identifier, self.o
        new = self.new_col()
        out = ["the plan (--dry-run: nothing is changed):"]

        def step(n, text, lock, done):
            out.append(f"  {n:>2}. [{'done' if done else 'todo'}] {text}  ({lock})")

        step(1, f"ADD COLUMN {o.new_column} sno, SET DEFAULT sno_generate({o.meta})", "ACCESS EXCLUSIVE, ms",
             new is not None and new[4] is not None)
        for c in self.children:
            trg = pg_name(c.relname, c.new_col, "sno_sync")
            step(2, f"{c.relname}: ADD COLUMN {c.new_col} sno, trigger {trg}", "ACCESS EXCLUSIVE on the child, ms",
                 self.column(c.rel, c.new_col) is not None
                 and self.v("SELECT 1 FROM pg_trigger WHERE tgrelid = %s AND tgname = %s", [c.rel, trg]) is not None)
        todo = self.count_todo() if new else None
        step(3, f"work index {self.work_index} CONCURRENTLY", "SHARE UPDATE EXCLUSIVE",
             todo == 0 or (self.index(self.nsp_oid, self.work_index) or (None, False))[1])
        bad = self.count_todo(False) if new else 0
        step(4, f"batches of {o.batch_size}: {'all' if todo is None else todo} rows to give IDs"
             + (f", {bad} of them with no usable time (the run stops there without --fallback-time)" if bad else ""),
             "row locks, SKIP LOCKED", todo == 0)
        for c in self.children:
            left = None
            if self.column(c.rel, c.new_col) is not None:
                left = self.v(S("SELECT count(*) FROM ONLY {ct} WHERE {nc} IS NULL AND {fk} IS NOT NULL").format(
                    ct=c.ident, nc=I(c.new_col), fk=I(c.fk_col)))
            step(5, f"{c.relname}: fill {c.new_col}: {'all' if left is None else left} rows", "row locks, SKIP LOCKED",
                 left == 0)
        step(6, f"NOT NULL on {o.new_column} (CHECK NOT VALID, VALIDATE, SET NOT NULL)",
             "ACCESS EXCLUSIVE ms; SHARE UPDATE EXCLUSIVE for the scan", new is not None and new[2])
        r = self.index(self.nsp_oid, self.new_key_index)
        step(7, f"UNIQUE INDEX CONCURRENTLY {self.new_key_index}; a unique index on {self.key} besides the primary key",
             "SHARE UPDATE EXCLUSIVE", r is not None and r[1])
        for c in self.children:
            fk_name = pg_name(c.relname, c.new_col, "fkey")
            con = self.constraint(c.rel, fk_name)
            step(8, f"{c.relname}: {'index, ' if c.indexed else ''}{'NOT NULL, ' if c.fk_notnull else ''}"
                 f"FOREIGN KEY {fk_name} NOT VALID, VALIDATE", "SHARE ROW EXCLUSIVE ms; SHARE UPDATE EXCLUSIVE",
                 con is not None and con[2])
        step(9, f"the swap: primary key {self.pk_name} on {o.new_column}, old foreign keys "
             + ("dropped" if o.drop_old_fks else "added again NOT VALID"),
             f"ACCESS EXCLUSIVE on {1 + sum(1 for c in self.children if c.on_pk)} table(s), ms", False)
        step(10, "VALIDATE the old foreign keys", "SHARE UPDATE EXCLUSIVE", o.drop_old_fks or not self.children)
        return out

    # --- the steps ---------------------------------------------------------------------------

    def run(self):
        S, I = sql.SQL, sql.Identifier
        o = self.o
        for line in self.plan_lines():
            self.say(line)
        if o.dry_run:
            return EXIT_OK
        if self.swapped:
            self.validate_fks()
            self.drop_index(self.work_index)
            self.say(f"{self.label}: converted; primary key {o.new_column}")
            return EXIT_OK
        new = self.new_col()
        if new is None or self.v(S("SELECT 1 FROM ONLY {t} WHERE {n} IS NULL LIMIT 1").format(t=self.t, n=I(o.new_column))):
            self.check_reserved()
        self.add_column()
        for c in self.children:
            self.child_column(c)
        if self.v(S("SELECT 1 FROM ONLY {t} WHERE {n} IS NULL LIMIT 1").format(t=self.t, n=I(o.new_column))):
            self.ensure_index(self.work_index, S("CREATE INDEX CONCURRENTLY IF NOT EXISTS {i} ON {t} ({cols}) WHERE {n} IS NULL").format(
                i=I(self.work_index), t=self.t, cols=S(", ").join(self.order), n=I(o.new_column)), unique=False)
            self.backfill()
        self.drop_index(self.work_index)
        if self.children:
            self.wait_older_transactions()
            for c in self.children:
                self.child_backfill(c)
        self.not_null(self.oid, self.t, o.new_column, self.not_null_check, self.label)
        self.ensure_index(self.new_key_index, S("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {i} ON {t} ({n})").format(
            i=I(self.new_key_index), t=self.t, n=I(o.new_column)), unique=True)
        self.old_key_unique_index()
        for c in self.children:
            self.child_finish(c)
        self.swap()
        self.validate_fks()
        self.say(f"{self.label}: converted in {time.monotonic() - self.t0:.1f} s; primary key {o.new_column} "
                 f"(constraint {self.pk_name}); {self.key} stays unique"
                 + (f"; {self.retried} lock or race retries" if self.retried else ""))
        return EXIT_OK

    def check_reserved(self):
        """Refuses before any change when this role has no reserved partition left to be granted
        (sno_generate_at would fail at the first batch)."""
        limit = self.v("SELECT current_setting('sno.reserved_limit', true)")
        if limit is None or not limit.lstrip("-").isdigit() or int(limit) < 0:
            return
        used = self.v(sql.SQL("SELECT count(*) FROM {x}.sno_reserved_grants WHERE grantee = current_user").format(x=self.X))
        if used >= int(limit):
            user = self.v("SELECT current_user")
            raise Refused(
                f"role {user} has used its limit of {limit} reserved sno partitions in this database (sno.reserved_limit; "
                f"each run of this tool that gives rows IDs takes one, for good): a superuser can raise it with "
                f"ALTER ROLE {sql.Identifier(user).as_string(self.conn)} SET sno.reserved_limit = {int(limit) * 2}")
        self.say(f"reserved partitions: this role has {used} of {limit} (sno.reserved_limit); this run takes one")

    def add_column(self):
        S, I, o = sql.SQL, sql.Identifier, self.o
        col = self.new_col()
        if col is not None and col[4] is not None:
            self.say(f"step 1: {o.new_column} and its default exist")
            return
        default = S("{x}.sno_generate({m})").format(x=self.X, m=sql.Literal(o.meta))

        def check():
            c = self.new_col()
            return c is not None and c[4] is not None

        def action():
            c = self.new_col()
            if c is None:
                self.conn.execute(S("ALTER TABLE ONLY {t} ADD COLUMN {n} {x}.sno").format(t=self.t, n=I(o.new_column), x=self.X))
            self.conn.execute(S("ALTER TABLE ONLY {t} ALTER COLUMN {n} SET DEFAULT {d}").format(
                t=self.t, n=I(o.new_column), d=default))

        self.timed(f"step 1: ADD COLUMN {o.new_column} sno, SET DEFAULT {default.as_string(self.conn)} (ACCESS EXCLUSIVE)",
                   lambda: self.ddl_tx("add column", S("LOCK TABLE ONLY {} IN ACCESS EXCLUSIVE MODE").format(self.t), check, action))

    def trigger_sql(self, c):
        S, I, L = sql.SQL, sql.Identifier, sql.Literal
        fn = I(c.schema, pg_name(c.relname, c.new_col, "sno_sync"))
        f = dict(fk=I(c.fk_col), nc=I(c.new_col), p=self.t, pk=I(self.key), pn=I(self.o.new_column), fn=fn,
                 cs=L(c.schema), cr=L(c.relname))
        # SECURITY DEFINER (it reads the parent for a client that may not): so it acts only as
        # the child's own trigger, and EXECUTE is revoked from PUBLIC (attached by another role
        # to a table of its own, it would read the parent's keys for it).
        body = S("""
BEGIN
    IF TG_TABLE_SCHEMA IS DISTINCT FROM {cs} OR TG_TABLE_NAME IS DISTINCT FROM {cr}
       OR TG_WHEN <> 'BEFORE' OR TG_LEVEL <> 'ROW' THEN
        RAISE EXCEPTION 'this function is the sno_pg.convert trigger of %.% only', {cs}, {cr};
    END IF;
    IF current_setting('sno_pg.converting', true) = 'on' THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'INSERT' THEN
        IF NEW.{nc} IS NULL AND NEW.{fk} IS NOT NULL THEN
            NEW.{nc} := (SELECT p.{pn} FROM ONLY {p} p WHERE p.{pk} = NEW.{fk});
        ELSIF NEW.{fk} IS NULL AND NEW.{nc} IS NOT NULL THEN
            NEW.{fk} := (SELECT p.{pk} FROM ONLY {p} p WHERE p.{pn} = NEW.{nc});
        END IF;
    ELSIF NEW.{fk} IS DISTINCT FROM OLD.{fk} AND NEW.{nc} IS NOT DISTINCT FROM OLD.{nc} THEN
        NEW.{nc} := (SELECT p.{pn} FROM ONLY {p} p WHERE p.{pk} = NEW.{fk});
    ELSIF NEW.{nc} IS DISTINCT FROM OLD.{nc} AND NEW.{fk} IS NOT DISTINCT FROM OLD.{fk} THEN
        NEW.{fk} := (SELECT p.{pk} FROM ONLY {p} p WHERE p.{pn} = NEW.{nc});
    END IF;
    RETURN NEW;
END""").format(**f).as_string(self.conn)
        create_fn = S("CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER "
                      "SET search_path = pg_catalog, {x}, pg_temp AS {body}").format(fn=fn, x=self.X, body=L(body))
        revoke = S("REVOKE ALL ON FUNCTION {fn}() FROM PUBLIC").format(fn=fn)
        comment = S("COMMENT ON FUNCTION {fn}() IS {c}").format(fn=fn, c=L(
            f"sno_pg.convert: keeps {c.relname}.{c.new_col} and {c.relname}.{c.fk_col} in step "
            f"({self.name}.{self.o.new_column} / {self.name}.{self.key})"))
        trg_name = pg_name(c.relname, c.new_col, "sno_sync")
        create_trg = S("CREATE TRIGGER {tn} BEFORE INSERT OR UPDATE OF {fk}, {nc} ON {ct} FOR EACH ROW EXECUTE FUNCTION {fn}()").format(
            tn=I(trg_name), fk=I(c.fk_col), nc=I(c.new_col), ct=c.ident, fn=fn)
        return trg_name, create_fn, revoke, comment, create_trg

    def child_column(self, c):
        S, I = sql.SQL, sql.Identifier
        trg_name, create_fn, revoke, comment, create_trg = self.trigger_sql(c)

        def done():
            return self.column(c.rel, c.new_col) is not None and self.v(
                "SELECT 1 FROM pg_trigger WHERE tgrelid = %s AND tgname = %s", [c.rel, trg_name]) is not None

        if done():
            self.say(f"step 2: {c.relname}.{c.new_col} and its trigger exist")
            return

        def action():
            if self.column(c.rel, c.new_col) is None:
                self.conn.execute(S("ALTER TABLE ONLY {ct} ADD COLUMN {n} {x}.sno").format(ct=c.ident, n=I(c.new_col), x=self.X))
            self.conn.execute(create_fn)
            self.conn.execute(revoke)
            self.conn.execute(comment)
            self.conn.execute(create_trg)

        self.timed(f"step 2: {c.relname}: ADD COLUMN {c.new_col} sno and trigger {trg_name} (ACCESS EXCLUSIVE)",
                   lambda: self.ddl_tx("child column", S("LOCK TABLE ONLY {} IN ACCESS EXCLUSIVE MODE").format(c.ident), done, action))

    def ensure_index(self, *args, **kw):
        return self.serialized(lambda: self._ensure_index(*args, **kw))

    def _ensure_index(self, name, create, unique, nsp_oid=None, rel=None):
        """A valid index `name` (built by `create`, a CREATE INDEX CONCURRENTLY IF NOT EXISTS); an
        INVALID one a failed or interrupted build left is dropped CONCURRENTLY and built again, one
        another run is building now is waited for."""
        nsp_oid = nsp_oid or self.nsp_oid
        rel = rel or self.oid
        t = time.monotonic()
        announced = False
        for attempt in range(1, self.o.retries + 1):
            r = self.index(nsp_oid, name)
            if r is not None and r[1]:
                if r[3] != rel or r[2] != unique:
                    raise Refused(f"an index named {name} exists and is not the one this tool builds: rename it")
                if announced:
                    self.say(f"index {name}: valid, built in {time.monotonic() - t:.2f} s")
                else:
                    self.say(f"index {name} exists")
                return
            if not announced:
                self.say(f"index {name}: CREATE {'UNIQUE ' if unique else ''}INDEX CONCURRENTLY (SHARE UPDATE EXCLUSIVE) ...")
                announced = True
            if r is not None:
                if self.v("SELECT 1 FROM pg_stat_progress_create_index WHERE index_relid = %s OR (relid = %s AND index_relid = 0)",
                          [r[0], rel]) or not self.idle_for_ddl(rel):
                    self.say(f"  index {name}: being built by another session; waiting")
                    time.sleep(1.0)
                    continue
                self.say(f"  index {name}: INVALID (a build was interrupted): DROP INDEX CONCURRENTLY, build again")
                try:
                    self.conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(
                        sql.Identifier(self.v("SELECT nspname FROM pg_namespace WHERE oid = %s", [nsp_oid]), name)))
                except psycopg.Error as e:
                    if getattr(e, "sqlstate", None) not in RETRY_STATES:
                        raise
                continue
            try:
                self.conn.execute(create)
            except psycopg.errors.UniqueViolation as e:
                if (e.diag.table_name or "").startswith("pg_"):
                    continue  # another run created it at the same moment
                raise Stopped(f"index {name} cannot be built: {str(e).strip()}\nFix the duplicates and run the same command again.")
            except psycopg.Error as e:
                if getattr(e, "sqlstate", None) not in RETRY_STATES:
                    raise
                self.say(f"  index {name}: {str(e).strip().splitlines()[0]}; again")
                time.sleep(min(0.2 * attempt, 5))
        raise Stopped(f"index {name}: not built after {self.o.retries} tries (see above); run the same command again")

    def idle_for_ddl(self, rel):
        """Whether no other session holds a lock on rel that a concurrent index build holds
        (checked by taking SHARE UPDATE EXCLUSIVE with a short timeout)."""
        try:
            with self.conn.transaction():
                self.conn.execute("SET LOCAL lock_timeout = '200ms'")
                self.conn.execute(sql.SQL("LOCK TABLE ONLY {} IN SHARE UPDATE EXCLUSIVE MODE").format(self.rel_of(rel)))
            return True
        except psycopg.errors.LockNotAvailable:
            return False

    def rel_of(self, rel):
        r = self.q1("SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s", [rel])
        return sql.Identifier(*r)

    def drop_index(self, *args, **kw):
        return self.serialized(lambda: self._drop_index(*args, **kw))

    def _drop_index(self, name, nsp_oid=None):
        nsp_oid = nsp_oid or self.nsp_oid
        if self.index(nsp_oid, name) is None:
            return
        schema = self.v("SELECT nspname FROM pg_namespace WHERE oid = %s", [nsp_oid])
        self.timed(f"DROP INDEX CONCURRENTLY {name} (SHARE UPDATE EXCLUSIVE)", lambda: self.retrying(
            "drop index", lambda: self.conn.execute(sql.SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(sql.Identifier(schema, name)))))

    # --- batches ------------------------------------------------------------------------------

    def batch_query(self, bound):
        """One batch: up to --batch-size rows without an ID, from the keyset bound on (or from
        the start), locked with SKIP LOCKED, given sno_generate_at IDs in (time, key) order.
        Returns (rows updated, the last row's order columns...), or no row when none is left."""
        S, I, L = sql.SQL, sql.Identifier, sql.Literal
        o = self.o
        cols = [S("{} AS o{}").format(e, L(i)) for i, e in enumerate(self.order)]
        onames = [I(f"o{i}") for i in range(len(self.order))]
        params = S(", ").join(S("%s::{}").format(tp) for tp in self.order_types)
        keyset = S("AND ({o}) > ({p})").format(o=S(", ").join(self.order), p=params) if bound else S("")
        return S("""
WITH todo AS MATERIALIZED (
    SELECT ctid AS tid, {at} AS at, {cols}
    FROM ONLY {t}
    WHERE {n} IS NULL AND {valid} {keyset}
    ORDER BY {order} LIMIT {lim}
    FOR NO KEY UPDATE SKIP LOCKED),
ids AS MATERIALIZED (
    SELECT tid, {x}.sno_generate_at({meta}, at) AS id FROM todo ORDER BY {onames}),
upd AS (
    UPDATE ONLY {t} r SET {n} = ids.id FROM ids WHERE r.ctid = ids.tid RETURNING 1)
SELECT (SELECT count(*) FROM upd), {onames} FROM todo ORDER BY {desc} LIMIT 1""").format(
            at=self.batch_at, cols=S(", ").join(cols), t=self.t, n=I(o.new_column), valid=self.batch_valid,
            keyset=keyset, order=S(", ").join(self.order), lim=L(o.batch_size), x=self.X, meta=L(o.meta),
            onames=S(", ").join(onames), desc=S(", ").join(S("{} DESC").format(x) for x in onames))

    def backfill(self):
        S, I = sql.SQL, sql.Identifier
        o = self.o
        n = I(o.new_column)
        q_first, q_next = self.batch_query(False), self.batch_query(True)
        total = self.count_todo(True)
        self.say(f"step 4: {total} rows to give IDs, in batches of {o.batch_size} "
                 f"(sno_generate_at, FOR NO KEY UPDATE SKIP LOCKED, one transaction each)")
        t_start = time.monotonic()
        done = 0
        last_report = 0.0
        passes = 0
        later = 0  # rows converted after the first pass (skipped then: a client held them)
        while True:
            passes += 1
            bound = None
            converted = 0
            while True:
                tb = time.monotonic()
                with self.conn.transaction():
                    # the work index, also when the statistics are stale
                    self.conn.execute("SET LOCAL enable_seqscan = off")
                    r = self.q1(q_first if bound is None else q_next, bound)
                    if r is not None and o.test_sleep_in_batch:
                        self.say(f"  (test: sleeping {o.test_sleep_in_batch} s inside a batch of {r[0]} rows)")
                        self.conn.execute("SELECT pg_sleep(%s)", [o.test_sleep_in_batch])
                if r is None:
                    break
                converted += r[0]
                done += r[0]
                if passes > 1:
                    later += r[0]
                bound = list(r[1:]) if all(x is not None for x in r[1:]) else None
                now = time.monotonic()
                if now - last_report >= o.progress_every:
                    last_report = now
                    rate = done / max(now - t_start, 1e-6)
                    self.say(f"  {self.name}: {done}/{total} rows ({100.0 * done / max(total, 1):.0f}%), "
                             f"last batch {r[0]} rows in {1000 * (now - tb):.0f} ms, {rate:.0f} rows/s")
                if o.throttle:
                    time.sleep(o.throttle)
            left = self.count_todo(True)
            if left == 0:
                break
            if converted == 0:
                time.sleep(0.5)  # the rows left are locked by clients (or another run): again
        elapsed = time.monotonic() - t_start
        self.say(f"step 4: {done} rows converted by this run in {elapsed:.1f} s ({done / max(elapsed, 1e-6):.0f} rows/s, "
                 f"{passes} pass(es), {later} rows in later passes)")
        bad = self.count_todo(False)
        if bad:
            sample = self.q(S("SELECT {k}::text, {raw} FROM ONLY {t} WHERE {n} IS NULL AND NOT coalesce({v}, false) ORDER BY {k} LIMIT 5").format(
                k=I(self.key), raw=self.raw_time, t=self.t, n=n, v=self.valid))
            shown = ", ".join(f"{self.key}={k} ({self.time_col or 'time'}={tv if tv is not None else 'NULL'})" for k, tv in sample)
            raise Stopped(
                f"{self.label}: {bad} row(s) cannot be converted: their time is NULL or outside sno's range "
                f"(2010-01-01 to 2079-09-07): {shown}{' ...' if bad > len(sample) else ''}\n"
                f"Stopped before NOT NULL and the primary key swap (new rows get IDs meanwhile). Either give those "
                f"rows the conversion's time, run:\n"
                f"  run: {self.command(['--fallback-time', 'now'])}\n"
                + (f"or correct their {self.time_col} (UPDATE {self.name} SET {self.time_col} = ... WHERE {self.key} IN (...)) "
                   "and run the same command again." if self.time_col else
                   "or delete those rows and run the same command again.")
            )

    def command(self, extra):
        # the command as given, without an earlier --fallback-time
        out, skip = [], False
        for a in self.o.argv:
            if skip:
                skip = False
                continue
            if a == "--fallback-time":
                skip = True
                continue
            if a.startswith("--fallback-time="):
                continue
            out.append(a)
        return "python -m sno_pg.convert " + shlex.join(out + extra)

    def wait_older_transactions(self):
        """Waits until every transaction open now has ended: after that, every child row written
        by an older transaction is visible to the child batches, and every newer one saw the
        parent's IDs in its trigger."""
        # Client sessions only: autovacuum and other workers write no child rows.
        vxids = [r[0] for r in self.q(
            """SELECT l.virtualxid FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
               WHERE l.locktype = 'virtualxid' AND l.granted AND l.pid <> pg_backend_pid()
               AND l.virtualxid IS NOT NULL AND coalesce(a.backend_type, 'client backend') = 'client backend'""")]
        t = time.monotonic()
        last = t
        while vxids:
            vxids = [r[0] for r in self.q(
                "SELECT virtualxid FROM pg_locks WHERE locktype = 'virtualxid' AND granted AND virtualxid = ANY(%s)", [vxids])]
            if not vxids:
                break
            if time.monotonic() - last > 10:
                last = time.monotonic()
                self.say(f"  waiting for {len(vxids)} transaction(s) older than the backfill to end "
                         f"({time.monotonic() - t:.0f} s): {', '.join(vxids[:5])}")
            time.sleep(0.1)
        if time.monotonic() - t > 0.5:
            self.say(f"step 5: waited {time.monotonic() - t:.1f} s for older transactions")

    def child_backfill(self, c):
        S, I, L = sql.SQL, sql.Identifier, sql.Literal
        o = self.o
        cond = S("c.{nc} IS NULL AND c.{fk} IS NOT NULL AND EXISTS (SELECT FROM ONLY {p} p WHERE p.{pk} = c.{fk} AND p.{pn} IS NOT NULL)").format(
            nc=I(c.new_col), fk=I(c.fk_col), p=self.t, pk=I(self.key), pn=I(o.new_column))
        count = S("SELECT count(*) FROM ONLY {ct} c WHERE {cond}").format(ct=c.ident, cond=cond)
        left = self.v(count)
        if left == 0:
            self.say(f"step 5: {c.relname}.{c.new_col} is filled")
            return
        q = S("""
WITH todo AS MATERIALIZED (
    SELECT c.ctid AS tid, c.{fk} AS fk FROM ONLY {ct} c
    WHERE c.{nc} IS NULL AND c.{fk} IS NOT NULL AND c.ctid >= %s::tid AND c.ctid < %s::tid
    FOR NO KEY UPDATE SKIP LOCKED),
upd AS (
    UPDATE ONLY {ct} c SET {nc} = p.{pn} FROM todo, ONLY {p} p
    WHERE c.ctid = todo.tid AND p.{pk} = todo.fk AND p.{pn} IS NOT NULL RETURNING 1)
SELECT count(*) FROM upd""").format(fk=I(c.fk_col), ct=c.ident, nc=I(c.new_col), pn=I(o.new_column), p=self.t, pk=I(self.key))
        t = time.monotonic()
        self.say(f"step 5: {c.relname}: {left} rows to fill {c.new_col} (row locks, SKIP LOCKED)")
        done, last_report = 0, 0.0
        while left:
            pages, tuples = self.q1("SELECT greatest(pg_relation_size(%s) / current_setting('block_size')::int, 1), reltuples FROM pg_class WHERE oid = %s",
                                    [c.rel, c.rel])
            per_page = max(1.0, (tuples if tuples and tuples > 0 else 100) / pages)
            step = max(1, int(o.batch_size / per_page))
            converted = 0
            for b in range(0, pages, step):
                with self.conn.transaction():
                    self.conn.execute("SELECT set_config('sno_pg.converting', 'on', true)")
                    n = self.v(q, [f"({b},0)", f"({b + step},0)"])
                converted += n
                done += n
                now = time.monotonic()
                if n and now - last_report >= o.progress_every:
                    last_report = now
                    self.say(f"  {c.relname}: {done} rows filled, block {b} of {pages}")
                if o.throttle and n:
                    time.sleep(o.throttle)
            left = self.v(count)
            if left and not converted:
                time.sleep(0.5)
        self.say(f"step 5: {c.relname}: {done} rows filled in {time.monotonic() - t:.1f} s")
        orphans = self.v(S("SELECT count(*) FROM ONLY {ct} c WHERE c.{nc} IS NULL AND c.{fk} IS NOT NULL").format(
            ct=c.ident, nc=I(c.new_col), fk=I(c.fk_col)))
        c.orphans = orphans
        if orphans:
            self.say(f"  warning: {orphans} rows of {c.relname} reference no row of {self.name} "
                     f"({c.conname} is NOT VALID): {c.new_col} stays NULL there")

    # --- NOT NULL, indexes, foreign keys, the swap ---------------------------------------------

    def not_null(self, rel, ident, col, check_name, label):
        S, I = sql.SQL, sql.Identifier
        lock = S("LOCK TABLE ONLY {} IN ACCESS EXCLUSIVE MODE").format(ident)
        c = self.column(rel, col)
        if c[2] and self.constraint(rel, check_name) is None:
            self.say(f"step 6: {label}.{col} is NOT NULL")
            return
        t = time.monotonic()
        self.say(f"step 6: NOT NULL on {label}.{col}: CHECK NOT VALID, VALIDATE, SET NOT NULL ...")
        if not c[2]:
            self.ddl_tx("add check", lock, lambda: self.constraint(rel, check_name) is not None or self.column(rel, col)[2],
                        lambda: self.conn.execute(S("ALTER TABLE ONLY {t} ADD CONSTRAINT {c} CHECK ({n} IS NOT NULL) NOT VALID").format(
                            t=ident, c=I(check_name), n=I(col))))

            def validate():
                con = self.constraint(rel, check_name)
                if con is None or con[2]:
                    return
                try:
                    self.conn.execute(S("ALTER TABLE ONLY {t} VALIDATE CONSTRAINT {c}").format(t=ident, c=I(check_name)))
                except psycopg.errors.CheckViolation:
                    raise Stopped(f"{label}.{col} has NULLs (rows written with an explicit NULL since the backfill?): "
                                  f"fill them (or delete those rows) and run the same command again")

            tv = time.monotonic()
            self.serialized(lambda: self.retrying("validate check", validate))
            self.say(f"  VALIDATE CONSTRAINT {check_name} (SHARE UPDATE EXCLUSIVE): {time.monotonic() - tv:.2f} s")

        def action():
            if not self.column(rel, col)[2]:
                self.conn.execute(S("ALTER TABLE ONLY {t} ALTER COLUMN {n} SET NOT NULL").format(t=ident, n=I(col)))
            if self.constraint(rel, check_name) is not None:
                self.conn.execute(S("ALTER TABLE ONLY {t} DROP CONSTRAINT {c}").format(t=ident, c=I(check_name)))

        self.ddl_tx("set not null", lock,
                    lambda: self.column(rel, col)[2] and self.constraint(rel, check_name) is None, action)
        self.say(f"step 6: {label}.{col} NOT NULL in {time.monotonic() - t:.2f} s")

    def old_key_unique_index(self):
        """A unique index on the old key besides the primary key (kept when one exists)."""
        other = self.v(
            """SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = %s
               AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 AND i.indkey[0] = %s AND NOT i.indisprimary
               AND i.indpred IS NULL AND i.indexprs IS NULL ORDER BY c.relname = %s DESC LIMIT 1""",
            [self.oid, self.key_attnum, self.old_key_index])
        if other is not None:
            self.old_unique = other
            self.say(f"step 7: {self.key} has a unique index besides the primary key: {other}")
            return
        self.ensure_index(self.old_key_index, sql.SQL("CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {i} ON {t} ({k})").format(
            i=sql.Identifier(self.old_key_index), t=self.t, k=sql.Identifier(self.key)), unique=True)
        self.old_unique = self.old_key_index

    def fk_clause(self, c):
        acts = {"a": "NO ACTION", "r": "RESTRICT", "c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
        s = f" ON UPDATE {acts[c.upd]} ON DELETE {acts[c.dele]}"
        if c.deferrable:
            s += " DEFERRABLE INITIALLY " + ("DEFERRED" if c.deferred else "IMMEDIATE")
        return sql.SQL(s)

    def child_finish(self, c):
        S, I = sql.SQL, sql.Identifier
        if c.indexed:
            name = pg_name(c.relname, c.new_col, "idx")
            self.ensure_index(name, S("CREATE INDEX CONCURRENTLY IF NOT EXISTS {i} ON {ct} ({nc})").format(
                i=I(name), ct=c.ident, nc=I(c.new_col)), unique=False, nsp_oid=c.nsp_oid, rel=c.rel)
        if c.fk_notnull and c.validated and not getattr(c, "orphans", 0):
            self.not_null(c.rel, c.ident, c.new_col, pg_name(c.relname, c.new_col, "not_null"), f"{c.schema}.{c.relname}")
        fk_name = pg_name(c.relname, c.new_col, "fkey")

        def exists():
            return self.constraint(c.rel, fk_name) is not None

        if not exists():
            self.timed(f"step 8: {c.relname}: FOREIGN KEY ({c.new_col}) REFERENCES {self.name} ({self.o.new_column}) NOT VALID "
                       "(SHARE ROW EXCLUSIVE)", lambda: self.ddl_tx(
                           "add foreign key", S("LOCK TABLE ONLY {ct}, ONLY {p} IN SHARE ROW EXCLUSIVE MODE").format(p=self.t, ct=c.ident),
                           exists, lambda: self.conn.execute(S("ALTER TABLE ONLY {ct} ADD CONSTRAINT {f} FOREIGN KEY ({nc}) REFERENCES {p} ({pn}){cl} NOT VALID").format(
                               ct=c.ident, f=I(fk_name), nc=I(c.new_col), p=self.t, pn=I(self.o.new_column), cl=self.fk_clause(c)))))
        self.validate_fk(c.rel, c.ident, fk_name)

    def validate_fk(self, rel, ident, name):
        con = self.constraint(rel, name)
        if con is None or con[2]:
            return
        t = time.monotonic()

        def once():
            con = self.constraint(rel, name)
            if con is not None and not con[2]:
                self.conn.execute(sql.SQL("ALTER TABLE {t} VALIDATE CONSTRAINT {c}").format(t=ident, c=sql.Identifier(name)))

        try:
            self.serialized(lambda: self.retrying("validate", once))
        except psycopg.errors.ForeignKeyViolation as e:
            self.say(f"  warning: {name} cannot be validated ({str(e).strip().splitlines()[0]}): it stays NOT VALID")
            return
        self.say(f"VALIDATE CONSTRAINT {name} (SHARE UPDATE EXCLUSIVE): {time.monotonic() - t:.2f} s")

    def swap(self):
        S, I = sql.SQL, sql.Identifier
        o = self.o
        on_pk = [c for c in self.children if c.on_pk]
        tables = [c.ident for c in on_pk] + [self.t]
        lock = S("LOCK TABLE {} IN ACCESS EXCLUSIVE MODE").format(S(", ").join(S("ONLY {}").format(t) for t in tables))
        self.readd = []

        def done():
            pk = self.q1("""SELECT a.attname FROM pg_constraint con JOIN pg_attribute a ON a.attrelid = con.conrelid
                            AND a.attnum = con.conkey[1] WHERE con.conrelid = %s AND con.contype = 'p'""", [self.oid])
            return pk is not None and pk[0] == o.new_column

        def action():
            self.readd = []
            # the old key's unique index as a constraint (kept as it is when it backs one already)
            if not self.v("SELECT 1 FROM pg_constraint WHERE conrelid = %s AND conindid = (SELECT oid FROM pg_class WHERE relnamespace = %s AND relname = %s)",
                          [self.oid, self.nsp_oid, self.old_unique]):
                self.conn.execute(S("ALTER TABLE ONLY {t} ADD CONSTRAINT {c} UNIQUE USING INDEX {c}").format(t=self.t, c=I(self.old_unique)))
            for c in on_pk:
                con = self.q1("SELECT pg_get_constraintdef(oid), convalidated FROM pg_constraint WHERE conrelid = %s AND conname = %s",
                              [c.rel, c.conname])
                if con is None:
                    continue
                definition = con[0]
                if not definition.endswith("NOT VALID"):
                    definition += " NOT VALID"
                self.conn.execute(S("ALTER TABLE ONLY {ct} DROP CONSTRAINT {f}").format(ct=c.ident, f=I(c.conname)))
                self.readd.append((c, definition, con[1]))
            self.conn.execute(S("ALTER TABLE ONLY {t} DROP CONSTRAINT {pk}").format(t=self.t, pk=I(self.pk_name)))
            self.conn.execute(S("ALTER TABLE ONLY {t} ADD CONSTRAINT {pk} PRIMARY KEY USING INDEX {i}").format(
                t=self.t, pk=I(self.pk_name), i=I(self.new_key_index)))
            if not o.drop_old_fks:
                for c, definition, _ in self.readd:
                    self.conn.execute(S("ALTER TABLE ONLY {ct} ADD CONSTRAINT {f} ").format(ct=c.ident, f=I(c.conname)) + S(definition))

        if done():
            return
        self.timed(f"step 9: the swap: primary key {self.pk_name} on {o.new_column}, UNIQUE {self.old_unique} on {self.key}, "
                   f"{len(on_pk)} old foreign key(s) {'dropped' if o.drop_old_fks else 'added again NOT VALID'} "
                   f"(ACCESS EXCLUSIVE on {len(tables)} table(s))",
                   lambda: self.ddl_tx("swap", lock, done, action))
        self.swapped_now = [(c, was_valid) for c, _, was_valid in self.readd]

    def validate_fks(self):
        """Validates the NOT VALID foreign keys that reference the table's old key (those the
        swap added again) and the new ones."""
        for (crel, conname, validated) in self.q(
                "SELECT conrelid, conname, convalidated FROM pg_constraint WHERE contype = 'f' AND confrelid = %s ORDER BY conname",
                [self.oid]):
            if validated:
                continue
            was = dict((c.conname, v) for c, v in getattr(self, "swapped_now", []))
            if conname in was and not was[conname]:
                continue  # it was NOT VALID before the conversion: left so
            self.validate_fk(crel, self.rel_of(crel), conname)


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m sno_pg.convert",
        description="Convert a table keyed by bigint/bigserial, uuid (v4 or v7) or text ULIDs, and the tables whose "
        "foreign keys reference it, to sno keys, online: clients keep reading and writing.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("table", help="the table (schema-qualified or as the search_path finds it)")
    p.add_argument("--dsn", "-d", default="", help="libpq connection string or URI (default: the PG* environment)")
    p.add_argument("--meta", type=int, required=True, help="the meta byte of the new IDs (0-255)")
    p.add_argument("--time-column", help="the column whose time goes into each existing row's ID")
    p.add_argument("--time-zone", metavar="ZONE",
                   help="the TimeZone a timestamp (without time zone) or date --time-column is read in "
                   "(default: this session's, from PGTZ or the server)")
    p.add_argument("--key-column", help="the old key (default: the primary key's column)")
    p.add_argument("--new-column", default="sno_id", help="the new sno column, the new primary key (default: sno_id)")
    p.add_argument("--child-column", action="append", metavar="CHILD.FKCOL=NAME",
                   type=parse_child_column,
                   help="the new column of a child table (default: x_id -> x_sno_id, else <fkcol>_sno)")
    p.add_argument("--batch-size", type=int, default=5000, help="rows per batch transaction (default 5000)")
    p.add_argument("--lock-timeout", type=parse_duration, default=2000, metavar="DURATION",
                   help="lock_timeout of each statement taking a lock that blocks clients (default 2s)")
    p.add_argument("--retries", type=int, default=60, help="tries of each such statement, with backoff up to 5 s (default 60)")
    p.add_argument("--fallback-time", metavar="now|TIMESTAMP",
                   help="the time of rows whose time is NULL or outside 2010..2079 (default: stop and report them)")
    p.add_argument("--drop-old-fks", action="store_true",
                   help="drop the children's old foreign keys at the swap instead of adding them again")
    p.add_argument("--throttle", type=float, default=0.0, metavar="SECONDS", help="a pause after each batch")
    p.add_argument("--progress-every", type=float, default=2.0, metavar="SECONDS", help="progress lines at most this often")
    p.add_argument("--dry-run", action="store_true", help="print the plan and the state, change nothing")
    p.add_argument("--test-sleep-in-batch", type=float, default=0.0, help=argparse.SUPPRESS)
    return p


def main(argv=None, out=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = build_parser().parse_args(argv)
    opts.argv = argv
    out = out or sys.stdout
    if psycopg is None:
        print("sno_pg.convert needs psycopg 3: pip install 'psycopg[binary]' (or install sno-pg with its"
              " convert extra: pip install './python[convert]' in a clone of the sno repository)", file=sys.stderr)
        return EXIT_ERROR
    if opts.batch_size < 1:
        print("--batch-size must be at least 1", file=sys.stderr)
        return EXIT_REFUSED
    try:
        conn = psycopg.connect(opts.dsn, autocommit=True, application_name="sno_pg.convert")
    except psycopg.OperationalError as e:
        print(f"cannot connect: {e}", file=sys.stderr)
        return EXIT_CONNECTION
    try:
        conn.execute("SET lock_timeout = 0")
        conn.execute("SET statement_timeout = 0")
        conn.execute("SET idle_in_transaction_session_timeout = 0")
        conn.execute("SET client_min_messages = warning")
        if opts.time_zone:
            conn.execute("SELECT set_config('TimeZone', %s, false)", [opts.time_zone])
        if opts.fallback_time and opts.fallback_time != "now":
            ok = conn.execute("SELECT %s::timestamptz >= %s::timestamptz AND %s::timestamptz < %s::timestamptz",
                              [opts.fallback_time, TIME_LO, opts.fallback_time, TIME_HI]).fetchone()[0]
            if not ok:
                print(f"--fallback-time {opts.fallback_time}: outside 2010-01-01 .. 2079-09-07", file=sys.stderr)
                return EXIT_REFUSED
        conv = Converter(conn, opts, out)
        conv.inspect()
        return conv.run()
    except KeyboardInterrupt:
        print("interrupted: every batch and step is its own transaction; run the same command again to resume",
              file=out, flush=True)
        return 130
    except Refused as e:
        print(f"refused: {e}\n(nothing was changed)", file=out, flush=True)
        return EXIT_REFUSED
    except Stopped as e:
        print(f"stopped: {e}", file=out, flush=True)
        return EXIT_STOPPED
    except psycopg.Error as e:
        if conn.closed or conn.broken:
            print(f"connection lost: {str(e).strip()}\nEvery batch and step is its own transaction: run the same "
                  f"command again to resume.", file=out, flush=True)
            return EXIT_CONNECTION
        print(f"error: {str(e).strip()}", file=out)
        if e.diag.message_detail and e.diag.message_detail not in str(e):
            print(f"DETAIL: {e.diag.message_detail}", file=out)
        if e.diag.message_hint and e.diag.message_hint not in str(e):
            print(f"HINT: {e.diag.message_hint}", file=out)
        print("Every batch and step is its own transaction: after fixing the cause, run the same command again.",
              file=out, flush=True)
        return EXIT_ERROR
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
