"""The harness of the Python ORM tests: cases, the README's blocks, throwaway databases.

A case is a function (plain or async) registered with @case("what it shows"); it passes when it
returns and fails with its first exception, reported with its line in the test file; each prints
an ok:/FAIL: line like tests/client/lib.bash's check.

The README's blocks: every ```python block in doc/orms.md between <!-- orm-section:python --> and
<!-- /orm-section:python --> that follows a line <!-- orm-python: NAME --> is block NAME. The tests
run those blocks as they are printed (written to files and imported or run, or executed), never
a copy of them.
"""

import asyncio
import contextlib
import inspect
import os
import re
import tempfile
import traceback

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
HOST = os.environ.get("SNO_TEST_HOST", "")
PORT = os.environ.get("SNO_TEST_PORT", "")
PREFIX = "sno_orm_py_"

# A work directory for the README's files (models.py, shop/, alembic/), on sys.path.
WORK = tempfile.mkdtemp(prefix="sno-orm-python-")

CASES = []
_DATABASES = []

# Bad IDs: 15 characters, a 'z' (not in the alphabet), a '!'.
BAD_IDS = ["brpk4q72xwf2m63", "brpk4q72xwf2m63z", "brpk4q72xwf2m63!"]


def case(name):
    def register(fn):
        CASES.append((name, fn))
        return fn

    return register


def readme_blocks():
    """{NAME: code} of the README's Python ORM section."""
    with open(os.path.join(ROOT, "doc", "orms.md")) as f:
        text = f.read()
    m = re.search(r"<!-- orm-section:python -->\n(.*?)<!-- /orm-section:python -->", text, re.S)
    if not m:
        raise AssertionError("doc/orms.md has no <!-- orm-section:python --> section")
    blocks = {}
    for b in re.finditer(r"<!-- orm-python: ([\w-]+) -->\n```python\n(.*?)```\n", m.group(1), re.S):
        if b.group(1) in blocks:
            raise AssertionError(f"doc/orms.md: two blocks named {b.group(1)}")
        blocks[b.group(1)] = b.group(2)
    return blocks


BLOCKS = readme_blocks()


def block(name):
    if name not in BLOCKS:
        raise AssertionError(f"doc/orms.md has no block <!-- orm-python: {name} --> (it has {sorted(BLOCKS)})")
    return BLOCKS[name]


def write(path, text):
    """A file under WORK (its directories made); returns its full path."""
    full = os.path.join(WORK, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    return full


def admin():
    return psycopg.connect(host=HOST, port=PORT, user="postgres", dbname="postgres", autocommit=True)


def new_database(name, extension=True):
    """A fresh database (dropped first if left by an earlier run), with sno unless told not."""
    db = PREFIX + name
    with admin() as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {db}")
        conn.execute(f"CREATE DATABASE {db}")
    _DATABASES.append(db)
    if extension:
        with connect(db) as conn:
            conn.execute("CREATE EXTENSION sno")
    return db


def drop_databases():
    with admin() as conn:
        for db in _DATABASES:
            conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")


def connect(db):
    return psycopg.connect(host=HOST, port=PORT, user="postgres", dbname=db, autocommit=True)


def url(db, driver):
    """A SQLAlchemy URL over the Unix socket: driver 'psycopg' or 'asyncpg'."""
    return f"postgresql+{driver}://postgres@/{db}?host={HOST}&port={PORT}"


def sql(db, query, *params):
    """All rows of a query, on a connection of its own."""
    with connect(db) as conn:
        return conn.execute(query, params).fetchall()


def ddl(db, *statements):
    """Runs statements (no results) on a connection of its own."""
    with connect(db) as conn:
        for s in statements:
            conn.execute(s)


def columns(db, table):
    """{column: (type, default)} as the catalog has them."""
    rows = sql(
        db,
        """SELECT a.attname, format_type(a.atttypid, a.atttypmod), pg_get_expr(d.adbin, d.adrelid)
           FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
           WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped""",
        table,
    )
    return {name: (type_, default) for name, type_, default in rows}


def check_schema(db, orders, items, fk="order_id"):
    """The ID columns are sno with DEFAULT sno_generate(1), the foreign key is sno and references orders."""
    o, i = columns(db, orders), columns(db, items)
    for table, cols in ((orders, o), (items, i)):
        assert cols.get("id") in (("sno", "sno_generate(1)"), ("sno", "(sno_generate(1))")), f"{table}.id is {cols.get('id')}"
    assert i.get(fk) == ("sno", None), f"{items}.{fk} is {i.get(fk)}, want ('sno', None)"
    refs = sql(
        db,
        "SELECT confrelid::regclass::text FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'f'",
        items,
    )
    assert refs == [(orders,)], f"{items} references {refs}, want {orders}"


def check_generated(db, id, meta=1):
    """A sno_generate(meta) ID as a str: its fields computed here equal the server's, made just now here."""
    import sno_pg

    assert isinstance(id, str) and len(id) == 16 and sno_pg.is_sno(id), f"not a 16-character sno str: {id!r}"
    assert id == sno_pg.normalize(id), f"not in the server's (lower-case) form: {id!r}"
    (time, meta_, partition, sequence, tick, now, current), = sql(
        db,
        "SELECT sno_time(%s::sno), sno_meta(%s::sno), sno_partition(%s::sno), sno_sequence(%s::sno), "
        "sno_tick(%s::sno), now(), sno_current_partition()",
        id, id, id, id, id,
    )
    here = (sno_pg.sno_time(id), sno_pg.sno_meta(id), sno_pg.sno_partition(id), sno_pg.sno_sequence(id), sno_pg.sno_tick(id))
    assert here == (time, meta_, partition, sequence, tick), f"fields here {here} != the server's {(time, meta_, partition, sequence, tick)}"
    assert meta_ == meta and partition == current, f"meta {meta_}, partition {partition}; want {meta}, {current}"
    assert abs((time - now).total_seconds()) < 60, f"time {time} is not near the server's now() {now}"


def check_bad_input(exc, what):
    """exc is the server's sno input error (SQLSTATE 22P02), as the ORM raised it."""
    sqlstate = getattr(getattr(exc, "orig", None), "sqlstate", None) or getattr(exc.__cause__, "sqlstate", None)
    assert sqlstate == "22P02", f"{what}: SQLSTATE {sqlstate!r}, want 22P02: {type(exc).__name__}: {exc}"
    assert "invalid input syntax for type sno" in str(exc), f"{what}: the message does not name sno: {exc}"


@contextlib.contextmanager
def bad_input(what):
    """The block must fail with the server's sno input error."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 (the ORM's exception class is what we check)
        check_bad_input(e, what)
    else:
        raise AssertionError(f"{what}: worked, want SQLSTATE 22P02")


def server_units(db, *times):
    """IDs made by the server with sno_from_parts at the given times (meta 1, partition 7)."""
    return [sql(db, "SELECT sno_from_parts(%s, 1, 7, %s)::text", t, n)[0][0] for n, t in enumerate(times)]


def run(selected=None):
    """Runs the cases (those whose name contains `selected`), prints ok:/FAIL:, returns (passed, failed)."""
    passed = failed = 0
    for name, fn in CASES:
        if selected and selected not in name:
            continue
        try:
            if inspect.iscoroutinefunction(fn):
                asyncio.run(fn())
            else:
                fn()
        except Exception as e:  # noqa: BLE001 (every failure is reported the same way)
            frames = [f for f in traceback.extract_tb(e.__traceback__) if f.filename.startswith(HERE)]
            frames = [f for f in frames if os.path.basename(f.filename).startswith("test_")] or frames
            where = f" ({os.path.basename(frames[-1].filename)}:{frames[-1].lineno})" if frames else ""
            msg = " ".join(str(e).split())[:600] or "(no message)"
            print(f"FAIL: {name}: {type(e).__name__}: {msg}{where}", flush=True)
            failed += 1
        else:
            print(f"ok: {name}", flush=True)
            passed += 1
    return passed, failed
