"""psycopg 3 and the sno type: what works out of the box, the recipes, the traps.

Blocks between `# >>> recipe: NAME` and `# <<< recipe` are the README's text, word for word
(run.py checks that the README, or RECIPES.md until they move there, holds each of them).
"""

import psycopg
from harness import DSN, DSN_EXT, EXAMPLE_RAW, EXAMPLE_TEXT, FIELDS_SQL, ORDERS, case, check_fields, check_generated, trap

import snoid

# >>> recipe: psycopg-sno-class
from psycopg.adapt import Dumper, Loader
from psycopg.pq import Format
from psycopg.types import TypeInfo


class Sno(bytes):
    """A sno ID as its 10 raw bytes."""


class SnoDumper(Dumper):
    """A Sno parameter as type sno, in text: \\x and 20 hex digits, which sno's input takes."""

    def __init__(self, cls, context=None):
        super().__init__(cls, context)
        self.oid = context.adapters.types["sno"].oid

    def dump(self, obj):
        return b"\\x" + obj.hex().encode()


class SnoBinaryDumper(SnoDumper):
    format = Format.BINARY

    def dump(self, obj):
        return bytes(obj)


class SnoBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data):
        return Sno(data)


def register_sno(conn):
    """Once per connection: Sno parameters, Sno from binary results, sno[] as lists."""
    TypeInfo.fetch(conn, "sno").register(conn)
    conn.adapters.register_dumper(Sno, SnoDumper)
    conn.adapters.register_dumper(Sno, SnoBinaryDumper)
    conn.adapters.register_loader("sno", SnoBinaryLoader)
# <<< recipe


def connect():
    conn = psycopg.connect(DSN, autocommit=True)
    conn.execute(ORDERS)
    return conn


def server_now_and_partition(conn):
    return conn.execute("SELECT now(), sno_current_partition()").fetchone()


@case("psycopg recipe psycopg: DEFAULT sno_generate(1) RETURNING id gives a 16-character str, binary=True "
      "its 10 bytes, fields as sno_time/sno_tick/sno_meta/sno_partition/sno_sequence say; client-made IDs go in as "
      "str and as bytes; WHERE with a str, and bytes with ::sno; sno[] both ways")
def psycopg_main():
    with connect() as conn:
        now, partition = server_now_and_partition(conn)
        t0 = conn.execute("SELECT now()").fetchone()[0]
        new_raw_id = snoid.build(t0, 7, 1234, 1)
        new_text_id = snoid.encode(snoid.build(t0, 7, 1234, 2))
        # >>> recipe: psycopg
        from psycopg.types import TypeInfo

        TypeInfo.fetch(conn, "sno").register(conn)  # once per connection: sno[] as lists
        order_id = conn.execute(
            "INSERT INTO orders (customer) VALUES (42) RETURNING id"
        ).fetchone()[0]  # a str: 'brpk4q72xwf2m63l'
        raw_id = conn.execute(
            "SELECT id FROM orders WHERE id = %s", (order_id,), binary=True
        ).fetchone()[0]  # binary: the 10 raw bytes
        customer = conn.execute(
            "SELECT customer FROM orders WHERE id = %s::sno", (raw_id,)  # bytes: ::sno
        ).fetchone()[0]
        conn.execute("INSERT INTO orders (id) VALUES (%s)", (new_text_id,))
        conn.execute("INSERT INTO orders (id) VALUES (%s)", (new_raw_id,))  # bytes as they are
        ids = conn.execute("SELECT array_agg(id) FROM orders").fetchone()[0]  # a list of str
        conn.execute("UPDATE orders SET related = %s", (ids,))
        # <<< recipe
        assert isinstance(order_id, str) and len(order_id) == 16, repr(order_id)
        assert type(raw_id) is bytes and raw_id == snoid.decode(order_id), f"binary {raw_id!r}, text {order_id!r}"
        assert customer == 42
        fields = conn.execute(f"SELECT {FIELDS_SQL.format('id')} FROM orders WHERE id = %s", (order_id,)).fetchone()
        check_generated(raw_id, fields, now, partition)
        assert conn.execute("SELECT customer FROM orders WHERE id = %s", (order_id,)).fetchone()[0] == 42
        want = sorted([order_id, new_text_id, snoid.encode(new_raw_id)])
        assert sorted(ids) == want, f"{ids} != {want}"
        got = conn.execute("SELECT DISTINCT related FROM orders").fetchall()
        assert got == [(ids,)], repr(got)
        got = conn.execute("SELECT DISTINCT related FROM orders", binary=True).fetchall()
        assert got == [([snoid.decode(i) for i in ids],)], repr(got)
        for text, *fields in conn.execute(f"SELECT id, {FIELDS_SQL.format('id')} FROM orders"):
            check_fields(snoid.decode(text), fields, text)


@case("psycopg binary cursor: RETURNING id gives the 10 raw bytes; the same fields; "
      "the text read of that row is their 16 characters (out of the box)")
def psycopg_default_binary():
    with connect() as conn:
        now, partition = server_now_and_partition(conn)
        with conn.cursor(binary=True) as cur:
            cur.execute(f"INSERT INTO orders (customer) VALUES (1) RETURNING id, {FIELDS_SQL.format('id')}")
            raw, *fields = cur.fetchone()
            assert type(raw) is bytes and len(raw) == 10, repr(raw)
            check_generated(raw, fields, now, partition)
            cur.execute("SELECT id FROM orders WHERE id = %s::sno", (raw,))
            assert cur.fetchone()[0] == raw
        text = conn.execute("SELECT id FROM orders").fetchone()[0]
        assert text == snoid.encode(raw), f"text {text!r}, binary {raw!r}"


@case("psycopg: a client-made ID inserted as str (text and binary cursor, %s and %t), read back as "
      "str, as 10 bytes, and through the field functions (out of the box)")
def psycopg_insert_str():
    with connect() as conn:
        for n, (binary, placeholder) in enumerate([(False, "%s"), (True, "%s"), (False, "%t")]):
            raw = EXAMPLE_RAW[:8] + n.to_bytes(2, "big")
            text = snoid.encode(raw)
            with conn.cursor(binary=binary) as cur:
                cur.execute(f"INSERT INTO orders (id, customer) VALUES ({placeholder}, 7) RETURNING id", (text,))
                assert cur.fetchone()[0] == (raw if binary else text)
        # upper case is accepted too
        conn.execute("INSERT INTO orders (id) VALUES (%s)", (EXAMPLE_TEXT.upper(),))
        rows = conn.execute(f"SELECT id, id::bytea, {FIELDS_SQL.format('id')} FROM orders ORDER BY 1").fetchall()
        assert len(rows) == 4
        for text, raw, *fields in rows:
            assert snoid.decode(text) == raw
            check_fields(raw, fields, text)
        assert rows[-1][0] == EXAMPLE_TEXT


@case("psycopg: a client-made ID inserted as 10 raw bytes (%s, %t, %b: psycopg types them bytea, and the "
      "bytea to sno assignment cast applies), and set by UPDATE, reads back as its text, with its fields; "
      "a 9-byte value is refused (out of the box)")
def psycopg_insert_bytes():
    with connect() as conn:
        t0 = conn.execute("SELECT now()").fetchone()[0]
        raw = snoid.build(t0, 5, 300, 0)
        conn.execute("INSERT INTO orders (id, customer) VALUES (%s, 7)", (raw,))
        for n, placeholder in enumerate(["%t", "%b"], 1):
            conn.execute(f"INSERT INTO orders (id, customer) VALUES ({placeholder}, 7)", (snoid.build(t0, 5, 300, n),))
        rows = conn.execute(f"SELECT id, {FIELDS_SQL.format('id')} FROM orders ORDER BY 1").fetchall()
        assert [snoid.parts(snoid.decode(r[0]))["sequence"] for r in rows] == [0, 1, 2], rows
        for text, *fields in rows:
            check_fields(snoid.decode(text), fields, text)
            assert snoid.parts(snoid.decode(text))["time"] <= t0
        assert rows[0][0] == snoid.encode(raw)
        other = snoid.build(t0, 6, 300, 0)
        got = conn.execute("UPDATE orders SET id = %s WHERE id = %s::sno RETURNING id", (other, raw)).fetchone()[0]
        assert got == snoid.encode(other), got
        with trap(psycopg.errors.InvalidBinaryRepresentation, r"invalid length for type sno.*9 bytes"):
            conn.execute("INSERT INTO orders (id) VALUES (%s)", (EXAMPLE_RAW[:9],))


@case("psycopg: WHERE id = %s with a str, in text and binary cursors, and prepared (out of the box)")
def psycopg_where_str():
    with connect() as conn:
        conn.execute("INSERT INTO orders (id, customer) VALUES (%s, 7)", (EXAMPLE_TEXT,))
        for binary in (False, True):
            for prepare in (False, True):
                got = conn.execute(
                    "SELECT customer FROM orders WHERE id = %s", (EXAMPLE_TEXT,), binary=binary, prepare=prepare
                ).fetchall()
                assert got == [(7,)], f"binary={binary} prepare={prepare}: {got}"
        assert conn.execute("SELECT count(*) FROM orders WHERE id = ANY(%s)", ([EXAMPLE_TEXT, None],)).fetchone()[0] == 1


@case("psycopg trap: bytes in WHERE id = %s (or = ANY(%s) with a list of bytes) fails with "
      "'operator does not exist: sno = bytea'")
def psycopg_where_bytes_trap():
    with connect() as conn:
        for binary in (False, True):
            with trap(psycopg.errors.UndefinedFunction, r"operator does not exist: sno = bytea"):
                conn.execute("SELECT customer FROM orders WHERE id = %s", (EXAMPLE_RAW,), binary=binary)
        with trap(psycopg.errors.UndefinedFunction, r"operator does not exist: sno = bytea"):
            conn.execute("SELECT customer FROM orders WHERE id = ANY(%s)", ([EXAMPLE_RAW],))


@case("psycopg recipe psycopg (bytes in WHERE): WHERE id = %s::sno (and = ANY(%s::sno[])) takes bytes and str alike, "
      "and uses the primary key index")
def psycopg_where_bytes_cast():
    with connect() as conn:
        conn.execute("INSERT INTO orders (id, customer) VALUES (%s, 7)", (EXAMPLE_TEXT,))
        raw = EXAMPLE_RAW
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute("SELECT customer FROM orders WHERE id = ANY(%s::sno[])", ([raw],))
                assert cur.fetchall() == [(7,)]
                cur.execute("SELECT customer FROM orders WHERE id = %s::sno", (raw,))
                assert cur.fetchall() == [(7,)]
                cur.execute("SELECT customer FROM orders WHERE id = %s::sno", (EXAMPLE_TEXT,))
                assert cur.fetchall() == [(7,)]
                cur.execute("SELECT customer FROM orders WHERE id = ANY(%s::sno[])", ([EXAMPLE_TEXT, None],))
                assert cur.fetchall() == [(7,)]
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN SELECT * FROM orders WHERE id = %s::sno", (raw,)))
        assert "orders_pkey" in plan, plan


@case("psycopg trap: sno[] without registration: a text cursor gives the unparsed '{...}' str, "
      "a binary cursor the undecoded array bytes (lists of str as parameters work all the same)")
def psycopg_array_trap():
    with connect() as conn:
        conn.execute("INSERT INTO orders (id) VALUES (%s)", (EXAMPLE_TEXT,))
        got = conn.execute("SELECT array_agg(id) FROM orders").fetchone()[0]
        assert got == "{" + EXAMPLE_TEXT + "}", repr(got)
        got = conn.execute("SELECT array_agg(id) FROM orders", binary=True).fetchone()[0]
        assert isinstance(got, bytes) and EXAMPLE_RAW in got and len(got) > 20, repr(got)
        # lists of str as parameters need no registration
        conn.execute("UPDATE orders SET related = %s", ([EXAMPLE_TEXT, None],))
        assert conn.execute("SELECT related::text FROM orders").fetchone()[0] == "{" + EXAMPLE_TEXT + ",NULL}"
        assert conn.execute("SELECT count(*) FROM orders WHERE id = ANY(%s)", ([EXAMPLE_TEXT],)).fetchone()[0] == 1


@case("psycopg recipe psycopg (sno[]): after TypeInfo.fetch(conn, 'sno').register(conn), sno[] reads as a "
      "list of str (text) or of 10-byte bytes (binary), NULLs and 2-D included; lists of str and of bytes "
      "go into a sno[] column, a list of str into = ANY(%s)")
def psycopg_arrays():
    with connect() as conn:
        TypeInfo.fetch(conn, "sno").register(conn)
        for _ in range(3):
            conn.execute("INSERT INTO orders (customer) VALUES (1)")
        ids = [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id")]
        raws = [r[0] for r in conn.execute("SELECT id FROM orders ORDER BY id", binary=True)]
        got = conn.execute("SELECT array_agg(id ORDER BY id) FROM orders").fetchone()[0]
        assert got == ids, f"{got!r} != {ids!r}"
        got = conn.execute("SELECT array_agg(id ORDER BY id) FROM orders", binary=True).fetchone()[0]
        assert got == raws and all(type(r) is bytes and len(r) == 10 for r in got), repr(got)
        got = conn.execute("SELECT ARRAY[NULL, %s::sno], ARRAY[[%s::sno], [NULL::sno]]", (ids[0], ids[1])).fetchone()
        assert got == ([None, ids[0]], [[ids[1]], [None]]), repr(got)
        got = conn.execute("SELECT ARRAY[NULL, %s::sno]", (ids[0],), binary=True).fetchone()[0]
        assert got == [None, raws[0]], repr(got)
        # lists as parameters: str lists go in as they are, byte lists through the assignment cast
        conn.execute("INSERT INTO orders (customer, related) VALUES (2, %s)", (ids[:2],))
        conn.execute("INSERT INTO orders (customer, related) VALUES (3, %s)", (raws[1:],))
        got = conn.execute("SELECT related FROM orders WHERE customer IN (2, 3) ORDER BY customer").fetchall()
        assert got == [(ids[:2],), (ids[1:],)], repr(got)
        got = conn.execute("SELECT related FROM orders WHERE customer = 3", binary=True).fetchone()[0]
        assert got == raws[1:], repr(got)
        got = conn.execute("SELECT count(*) FROM orders WHERE id = ANY(%s)", (ids[1:],)).fetchone()[0]
        assert got == 2, got


@case("psycopg recipe psycopg-sno-class: with register_sno(conn), binary results are Sno (10 bytes), Sno "
      "parameters work in WHERE (%s, %t, %b) and in lists (= ANY, sno[] columns); text results stay str; "
      "bytea columns stay bytes")
def psycopg_sno_class():
    with connect() as conn:
        conn.execute("CREATE TEMP TABLE blobs (b bytea)")
        conn.execute("INSERT INTO blobs VALUES (%s)", (EXAMPLE_RAW,))
        conn.execute("INSERT INTO orders (id, customer) VALUES (%s, 7)", (EXAMPLE_TEXT,))
        raw_id = EXAMPLE_RAW
        # >>> recipe: psycopg-sno-class-use
        register_sno(conn)  # once per connection
        with conn.cursor(binary=True) as cur:
            cur.execute("INSERT INTO orders (customer) VALUES (42) RETURNING id")
            order_id = cur.fetchone()[0]  # a Sno: the 10 raw bytes
            cur.execute("SELECT customer FROM orders WHERE id = %s", (order_id,))
            customer = cur.fetchone()[0]
            cur.execute("SELECT customer FROM orders WHERE id = %s", (Sno(raw_id),))  # raw_id: 10 bytes
        # <<< recipe
            assert customer == 42
            assert cur.fetchall() == [(7,)]
            assert type(order_id) is Sno and len(order_id) == 10, repr(order_id)
            raw = bytes(order_id)
            for placeholder in ("%s", "%t", "%b"):
                cur.execute(f"SELECT customer FROM orders WHERE id = {placeholder}", (Sno(raw),))
                assert cur.fetchall() == [(42,)], placeholder
                cur.execute(f"SELECT count(*) FROM orders WHERE id = ANY({placeholder})", ([Sno(raw), None],))
                assert cur.fetchone()[0] == 1, placeholder
            cur.execute(f"SELECT id, related, {FIELDS_SQL.format('id')} FROM orders WHERE customer = 42")
            got, related, *fields = cur.fetchone()
            assert type(got) is Sno and got == order_id and related is None
            check_fields(got, fields)
            cur.execute("UPDATE orders SET related = %s WHERE customer = 42 RETURNING related", ([order_id, Sno(EXAMPLE_RAW)],))
            got = cur.fetchone()[0]
            assert got == [order_id, EXAMPLE_RAW] and all(type(x) is Sno for x in got), repr(got)
            # bytea is not sno: still plain bytes, and plain bytes still go in as bytea
            cur.execute("SELECT b FROM blobs WHERE b = %s", (EXAMPLE_RAW,))
            got = cur.fetchone()[0]
            assert type(got) is bytes and got == EXAMPLE_RAW, repr(got)
        text = conn.execute("SELECT id FROM orders WHERE customer = 42").fetchone()[0]
        assert text == snoid.encode(raw), repr(text)
        with trap(psycopg.errors.InvalidTextRepresentation, r"invalid input syntax for type sno"):
            conn.execute("SELECT %t", (Sno(EXAMPLE_RAW[:9]),))
        with trap(psycopg.errors.InvalidBinaryRepresentation, r"invalid binary length for type sno: 9 bytes"):
            conn.execute("SELECT %b", (Sno(EXAMPLE_RAW[:9]),))


@case("psycopg trap: with sno in a schema that is not on search_path, TypeInfo.fetch(conn, 'sno') "
      "is None; TypeInfo.fetch(conn, 'ext.sno') works")
def psycopg_schema():
    with psycopg.connect(DSN_EXT, autocommit=True) as conn:
        assert TypeInfo.fetch(conn, "sno") is None
        TypeInfo.fetch(conn, "ext.sno").register(conn)
        got = conn.execute("SELECT ARRAY[%s::ext.sno]", (EXAMPLE_TEXT,)).fetchone()[0]
        assert got == [EXAMPLE_TEXT], repr(got)
