"""asyncpg and the sno type: what works out of the box, the recipes, the traps.

Blocks between `# >>> recipe: NAME` and `# <<< recipe` are the README's text, word for word
(run.py checks that the README, or RECIPES.md until they move there, holds each of them).
"""

import asyncpg
from harness import DSN, DSN_EXT, EXAMPLE_RAW, EXAMPLE_TEXT, FIELDS_SQL, ORDERS, case, check_fields, check_generated, trap

import snoid

dsn = DSN


# >>> recipe: asyncpg-bytes-codec
async def sno_as_bytes(conn):
    """sno values, and sno[] elements, as their 10 raw bytes (binary format)."""
    await conn.set_type_codec(
        "sno", schema="public", format="binary",
        encoder=lambda v: bytes(memoryview(v)), decoder=bytes,
    )
# <<< recipe


# >>> recipe: asyncpg-str-or-bytes-codec
async def sno_str_or_bytes(conn):
    """sno values read as str; parameters either str or 10 raw bytes (sent as \\x and hex)."""
    await conn.set_type_codec(
        "sno", schema="public", format="text",
        encoder=lambda v: v if isinstance(v, str) else "\\x" + memoryview(v).hex(),
        decoder=str,
    )
# <<< recipe


async def connect():
    conn = await asyncpg.connect(dsn)
    await conn.execute(ORDERS)
    return conn


@case("asyncpg recipe asyncpg (out of the box): DEFAULT sno_generate(1) RETURNING id gives the 16-character str, "
      "fields as the server's; WHERE id = $1 with a str; 10 bytes through sno($1) and id::bytea; client-made IDs "
      "go in as str and bytes; sno[] reads as a list of str and a list of str goes into sno[] and = ANY($1)")
async def asyncpg_basics():
    conn = await connect()
    try:
        now, partition = await conn.fetchrow("SELECT now(), sno_current_partition()")
        new_raw_id = snoid.build(now, 7, 1234, 1)
        new_text_id = snoid.encode(snoid.build(now, 7, 1234, 2))
        # >>> recipe: asyncpg
        order_id = await conn.fetchval(
            "INSERT INTO orders (customer) VALUES (42) RETURNING id"
        )  # a str: 'brpk4q72xwf2m63l'
        customer = await conn.fetchval("SELECT customer FROM orders WHERE id = $1", order_id)
        raw_id = await conn.fetchval("SELECT id::bytea FROM orders WHERE id = $1", order_id)
        customer = await conn.fetchval("SELECT customer FROM orders WHERE id = sno($1)", raw_id)
        await conn.execute("INSERT INTO orders (id) VALUES ($1)", new_text_id)
        await conn.execute("INSERT INTO orders (id) VALUES (sno($1))", new_raw_id)  # bytes: sno($1)
        ids = await conn.fetchval("SELECT array_agg(id) FROM orders")  # a list of str
        await conn.execute("UPDATE orders SET related = $1", ids)
        # <<< recipe
        assert isinstance(order_id, str) and len(order_id) == 16, repr(order_id)
        assert raw_id == snoid.decode(order_id), (raw_id, order_id)
        assert customer == 42
        assert await conn.fetchval("SELECT customer FROM orders WHERE id = $1", order_id) == 42
        fields = await conn.fetchrow(f"SELECT {FIELDS_SQL.format('id')} FROM orders WHERE id = $1", order_id)
        check_generated(raw_id, tuple(fields), now, partition)
        want = sorted([order_id, new_text_id, snoid.encode(new_raw_id)])
        assert sorted(ids) == want, f"{ids} != {want}"
        assert [r[0] for r in await conn.fetch("SELECT DISTINCT related FROM orders")] == [ids]
        for r in await conn.fetch(f"SELECT id, {FIELDS_SQL.format('id')} FROM orders"):
            check_fields(snoid.decode(r[0]), tuple(r[1:]), r[0])
        got = await conn.fetchval("SELECT ARRAY[NULL, $1::sno]", order_id)
        assert got == [None, order_id], repr(got)
        got = await conn.fetchval("SELECT count(*) FROM orders WHERE id = ANY($1)", [order_id, None])
        assert got == 1, got
    finally:
        await conn.close()


@case("asyncpg: a client-made ID inserted as str (upper case too), read back as str, as id::bytea and "
      "through the field functions (out of the box)")
async def asyncpg_insert_str():
    conn = await connect()
    try:
        t0 = await conn.fetchval("SELECT now()")
        raw = snoid.build(t0, 9, 65535, 4147, tick=1)
        text = snoid.encode(raw)
        got = await conn.fetchval("INSERT INTO orders (id, customer) VALUES ($1, 7) RETURNING id", text)
        assert got == text, (got, text)
        await conn.execute("INSERT INTO orders (id, customer) VALUES ($1, 8)", EXAMPLE_TEXT.upper())
        rows = await conn.fetch(f"SELECT id, id::bytea, {FIELDS_SQL.format('id')} FROM orders ORDER BY 1")
        assert [r[0] for r in rows] == [text, EXAMPLE_TEXT], rows
        for r in rows:
            assert snoid.decode(r[0]) == r[1]
            check_fields(r[1], tuple(r[2:]), r[0])
        assert await conn.fetchval("SELECT customer FROM orders WHERE id = $1", text) == 7
    finally:
        await conn.close()


@case("asyncpg trap: bytes as a sno parameter (INSERT, WHERE, a list in = ANY) fails with DataError "
      "'expected str, got bytes'; sno is read in text only (str)")
async def asyncpg_bytes_trap():
    conn = await connect()
    try:
        with trap(asyncpg.DataError, r"expected str, got bytes"):
            await conn.execute("INSERT INTO orders (id) VALUES ($1)", EXAMPLE_RAW)
        with trap(asyncpg.DataError, r"expected str, got bytes"):
            await conn.fetch("SELECT * FROM orders WHERE id = $1", EXAMPLE_RAW)
        with trap(asyncpg.DataError, r"expected str, got bytes"):
            await conn.fetch("SELECT * FROM orders WHERE id = ANY($1)", [EXAMPLE_RAW])
        assert isinstance(await conn.fetchval("SELECT sno_generate(1)"), str)
    finally:
        await conn.close()


@case("asyncpg recipe asyncpg (bytes without a codec): sno($1) takes 10 raw bytes without a codec (INSERT and WHERE), "
      "id::bytea reads them, and WHERE id = sno($1) uses the primary key index")
async def asyncpg_bytes_sql():
    conn = await connect()
    try:
        raw = EXAMPLE_RAW
        await conn.execute("INSERT INTO orders (id, customer) VALUES (sno($1), 7)", raw)
        customer = await conn.fetchval("SELECT customer FROM orders WHERE id = sno($1)", raw)
        raw_ids = await conn.fetchval("SELECT array_agg(id::bytea) FROM orders")  # a list of bytes
        assert customer == 7
        assert raw_ids == [raw], repr(raw_ids)
        assert await conn.fetchval("SELECT id FROM orders") == EXAMPLE_TEXT
        await conn.execute("SET enable_seqscan = off")
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN SELECT * FROM orders WHERE id = sno($1)", raw))
        assert "orders_pkey" in plan, plan
        with trap(asyncpg.InvalidBinaryRepresentationError, r"invalid length for type sno.*9 bytes"):
            await conn.execute("INSERT INTO orders (id) VALUES (sno($1))", raw[:9])
    finally:
        await conn.close()


@case("asyncpg recipe asyncpg-bytes-codec: sno_as_bytes(conn): DEFAULT ids, sno columns and sno[] read as "
      "10-byte bytes (binary), bytes go into INSERT, WHERE, = ANY and sno[]; fields match; a str, an int or "
      "9 bytes are refused; it applies to statements already cached")
async def asyncpg_bytes_codec():
    conn = await connect()
    try:
        before = await conn.fetchval("SELECT $1::sno", EXAMPLE_TEXT)  # cached before the codec
        assert before == EXAMPLE_TEXT
        now, partition = await conn.fetchrow("SELECT now(), sno_current_partition()")
        raw = EXAMPLE_RAW
        # >>> recipe: asyncpg-bytes-codec-use
        await sno_as_bytes(conn)  # once per connection; a pool: create_pool(dsn, init=sno_as_bytes)
        order_id = await conn.fetchval("INSERT INTO orders (customer) VALUES (42) RETURNING id")  # 10 bytes
        await conn.execute("INSERT INTO orders (id, customer) VALUES ($1, 7)", raw)
        customer = await conn.fetchval("SELECT customer FROM orders WHERE id = $1", raw)
        ids = await conn.fetchval("SELECT array_agg(id) FROM orders")  # a list of bytes
        # <<< recipe
        assert await conn.fetchval("SELECT $1::sno", raw) == raw, "the codec missed a cached statement"
        assert type(order_id) is bytes and len(order_id) == 10, repr(order_id)
        assert customer == 7
        assert sorted(ids) == sorted([order_id, raw]), repr(ids)
        fields = await conn.fetchrow(f"SELECT {FIELDS_SQL.format('id')} FROM orders WHERE id = $1", order_id)
        check_generated(order_id, tuple(fields), now, partition)
        await conn.execute("UPDATE orders SET related = $1 WHERE id = $2", [order_id, None, bytearray(raw)], raw)
        assert await conn.fetchval("SELECT related FROM orders WHERE id = $1", raw) == [order_id, None, raw]
        assert await conn.fetchval("SELECT related::text FROM orders WHERE id = $1", raw) == (
            "{" + snoid.encode(order_id) + ",NULL," + EXAMPLE_TEXT + "}")
        assert await conn.fetchval("SELECT count(*) FROM orders WHERE id = ANY($1)", [raw, order_id]) == 2
        with trap(asyncpg.DataError, r"memoryview: a bytes-like object is required, not 'str'"):
            await conn.fetchval("SELECT customer FROM orders WHERE id = $1", EXAMPLE_TEXT)
        with trap(asyncpg.DataError, r"memoryview: a bytes-like object is required, not 'int'"):
            await conn.fetchval("SELECT customer FROM orders WHERE id = $1", 10)
        with trap(asyncpg.InvalidBinaryRepresentationError, r"invalid binary length for type sno: 9 bytes"):
            await conn.fetchval("SELECT customer FROM orders WHERE id = $1", raw[:9])
    finally:
        await conn.close()


@case("asyncpg recipe asyncpg-bytes-codec on a pool: create_pool(dsn, init=sno_as_bytes) gives bytes on "
      "every connection")
async def asyncpg_pool():
    pool = await asyncpg.create_pool(dsn, init=sno_as_bytes, min_size=2, max_size=2)
    try:
        async with pool.acquire() as a, pool.acquire() as b:
            for c in (a, b):
                got = await c.fetchval("SELECT sno_generate(1)")
                assert type(got) is bytes and len(got) == 10, repr(got)
                assert await c.fetchval("SELECT $1::sno::text", got) == snoid.encode(got)
    finally:
        await pool.close()


@case("asyncpg recipe asyncpg-str-or-bytes-codec: sno_str_or_bytes(conn): reads stay str (sno[] a list of "
      "str), parameters may be str or 10 raw bytes (the \\x hex input) in INSERT, WHERE, = ANY and sno[]")
async def asyncpg_str_or_bytes_codec():
    conn = await connect()
    try:
        raw = EXAMPLE_RAW
        await sno_str_or_bytes(conn)
        await conn.execute("INSERT INTO orders (id, customer) VALUES ($1, 7)", raw)
        customer = await conn.fetchval("SELECT customer FROM orders WHERE id = $1", "brpk4q72xwf2m63l")
        assert customer == 7
        order_id = await conn.fetchval("INSERT INTO orders (customer) VALUES (42) RETURNING id")
        assert isinstance(order_id, str) and len(order_id) == 16, repr(order_id)
        assert await conn.fetchval("SELECT customer FROM orders WHERE id = $1", raw) == 7
        assert await conn.fetchval("SELECT customer FROM orders WHERE id = $1", order_id) == 42
        mixed = [order_id, None, bytearray(raw)]
        await conn.execute("UPDATE orders SET related = $1 WHERE id = $2", mixed, raw)
        assert await conn.fetchval("SELECT related FROM orders WHERE id = $1", raw) == [order_id, None, EXAMPLE_TEXT]
        assert await conn.fetchval("SELECT count(*) FROM orders WHERE id = ANY($1)", [raw, order_id]) == 2
        got = await conn.fetchval("SELECT ARRAY[NULL, $1::sno]", raw)
        assert got == [None, EXAMPLE_TEXT], repr(got)
        with trap(asyncpg.InvalidTextRepresentationError, r"invalid input syntax for type sno"):
            await conn.fetchval("SELECT customer FROM orders WHERE id = $1", raw[:9])
    finally:
        await conn.close()


@case("asyncpg trap: set_type_codec looks in schema public, whatever search_path says: with sno in schema ext "
      "it raises ValueError 'unknown type: public.sno'; schema='ext' works")
async def asyncpg_schema():
    conn = await asyncpg.connect(DSN_EXT)
    try:
        with trap(ValueError, r"unknown type: public\.sno"):
            await sno_as_bytes(conn)
        await conn.set_type_codec("sno", schema="ext", format="binary", encoder=bytes, decoder=bytes)
        got = await conn.fetchval("SELECT ARRAY[ext.sno_generate(1)]")
        assert len(got) == 1 and type(got[0]) is bytes and len(got[0]) == 10, repr(got)
    finally:
        await conn.close()
