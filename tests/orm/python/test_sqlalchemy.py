"""SQLAlchemy 2 (psycopg 3 and asyncpg), SQLModel and Alembic with sno_pg.sqlalchemy.Sno.

The models are the README's block sqlalchemy-models, written to WORK/models.py and imported as
`models`; the README's usage blocks run as printed; then the six checks on each stack: the
generated ID back as a 16-character str, fetch by ID, ORDER BY id and id > x, the relation,
sno_time(id) in a filter, 1,000 rows in one bulk insert with their IDs; the schema path; bad IDs.
"""

import importlib
import json
import os
import subprocess
import sys
import warnings
from datetime import datetime, timezone

import harness
from harness import BAD_IDS, bad_input, block, case, check_generated, check_schema, new_database, sql, url, write

write("models.py", block("sqlalchemy-models"))

# Times of client-given IDs (made by the server's sno_from_parts), for the sno_time filter.
T2020 = datetime(2020, 1, 1, tzinfo=timezone.utc)
T2024 = datetime(2024, 6, 1, tzinfo=timezone.utc)
# The natural model, made by SQL.
EXISTING_TABLES = (
    "CREATE TABLE orders (id sno PRIMARY KEY DEFAULT sno_generate(1), customer int NOT NULL)",
    "CREATE TABLE items (id sno PRIMARY KEY DEFAULT sno_generate(1), order_id sno NOT NULL REFERENCES orders)",
)
# A session time zone far from UTC: a sno_time(id) compared with an aware datetime bound as
# TIMESTAMP WITHOUT TIME ZONE (an untyped func) would be off by hours.
TZ_OPTIONS = {"options": "-c TimeZone=America/New_York"}


def six_checks_sync(db, engine, Session, Order, Item, orders="orders", items="items"):
    """The six checks through a sync Session (SQLAlchemy's or SQLModel's)."""
    from sqlalchemy import func, insert, select
    from sqlalchemy.orm import selectinload

    # 1. insert, the generated ID back.
    with Session(engine) as s:
        order = Order(customer=42)
        s.add(order)
        s.flush()
        first = order.id
        check_generated(db, first)
        s.commit()
    # 2. fetch by ID (also in upper case, which the type's input takes).
    with Session(engine) as s:
        got = s.get(Order, first)
        assert got is not None and got.customer == 42 and got.id == first, f"get({first!r}) gave {got}"
        got = s.scalars(select(Order).where(Order.id == first.upper())).one()
        assert got.id == first, f"WHERE id = upper-case gave {got.id!r}"
    # 3. ORDER BY id, id > x: five orders made one after another sort in the order made.
    with Session(engine) as s:
        made = []
        for n in range(5):
            o = Order(customer=1000 + n)
            s.add(o)
            s.flush()
            made.append(o.id)
        s.commit()
        assert made == sorted(made), f"IDs made in a row are not in order: {made}"
        rows = s.scalars(select(Order.id).where(Order.customer >= 1000).order_by(Order.id.desc())).all()
        assert rows == made[::-1], f"ORDER BY id DESC gave {rows}, want {made[::-1]}"
        rows = s.scalars(select(Order.id).where(Order.id > made[1], Order.customer >= 1000).order_by(Order.id)).all()
        assert rows == made[2:], f"id > {made[1]} gave {rows}, want {made[2:]}"
        rows = s.scalars(select(Order.id).where(Order.id.in_([made[0], made[3].upper()])).order_by(Order.id)).all()
        assert rows == [made[0], made[3]], f"id IN gave {rows}"
    # 4. the relation, both ways.
    with Session(engine) as s:
        parent = s.get(Order, first)
        s.add_all([Item(order_id=first) for _ in range(3)])
        s.commit()
    with Session(engine) as s:
        parent = s.scalars(select(Order).where(Order.id == first).options(selectinload(Order.items))).one()
        assert len(parent.items) == 3 and all(i.order_id == first for i in parent.items), f"items {parent.items}"
        child = s.get(Item, parent.items[0].id)
        assert child.order.id == first and child.order.customer == 42, "Item.order does not load its Order"
    # 5. sno_time(id) in a filter, with client-given IDs made at known times.
    id2020, id2024 = harness.server_units(db, T2020, T2024)
    with Session(engine) as s:
        s.add_all([Order(id=id2020, customer=2020), Order(id=id2024.upper(), customer=2024)])
        s.commit()
        got = s.scalars(select(Order.id).where(func.sno_time(Order.id) == T2024)).all()
        assert got == [id2024], f"sno_time(id) = {T2024} gave {got}, want [{id2024!r}]"
        got = s.scalars(select(Order.customer).where(func.sno_time(Order.id) < datetime(2023, 1, 1, tzinfo=timezone.utc))).all()
        assert got == [2020], f"sno_time(id) < 2023 gave customers {got}, want [2020]"
        got = s.scalars(select(Order.id).where(Order.id >= func.sno_min(T2024), Order.id < func.sno_min(datetime(2025, 1, 1, tzinfo=timezone.utc)))).all()
        assert got == [id2024], f"id in [sno_min(2024-06), sno_min(2025)) gave {got}"
    # 6. 1,000 rows in one bulk insert, the IDs returned.
    with Session(engine) as s:
        ids = s.scalars(insert(Item).returning(Item.id), [{"order_id": first}] * 1000).all()
        s.commit()
        assert len(ids) == 1000 and len(set(ids)) == 1000, f"{len(ids)} IDs back, {len(set(ids))} distinct"
        assert all(isinstance(i, str) and len(i) == 16 for i in ids), "not every ID is a 16-character str"
        (n,), = sql(db, f"SELECT count(*) FROM {items} WHERE order_id = %s::sno AND id = ANY(%s::sno[])", first, ids)
        assert n == 1000, f"{n} of the 1,000 IDs are in {items}"


def bad_ids_sync(engine, Session, Order):
    from sqlalchemy import select

    for bad in BAD_IDS:
        with Session(engine) as s:
            with bad_input(f"get({bad!r})"):
                s.get(Order, bad)
        with Session(engine) as s:
            with bad_input(f"WHERE id > {bad!r}"):
                s.scalars(select(Order).where(Order.id > bad)).all()
        with Session(engine) as s:
            with bad_input(f"INSERT id {bad!r}"):
                s.add(Order(id=bad, customer=1))
                s.flush()


@case("SQLAlchemy + psycopg 3: the README's sync block runs as printed (create_all, RETURNING, 1,000 items, get, "
      "id >, sno_time, selectinload); create_all made sno columns with DEFAULT sno_generate(1) and a sno foreign key")
def readme_sync():
    db = new_database("sa_readme")
    os.environ["DATABASE_URL"] = url(db, "psycopg")
    ns = {"__name__": "readme_sync"}
    exec(compile(block("sqlalchemy-sync"), "doc/orms.md:sqlalchemy-sync", "exec"), ns)
    ns["engine"].dispose()
    check_schema(db, "orders", "items")
    order = ns["order"]
    check_generated(db, order.id)
    assert ns["same"] is order, "session.get did not give the order back"
    assert ns["later"] == [], f"later: {ns['later']}"
    assert [o.id for o in ns["today"]] == [order.id], f"today: {ns['today']}"
    (loaded,) = ns["loaded"]
    ids = [i.id for i in loaded.items]
    assert len(ids) == 1000 and len(set(ids)) == 1000 and all(len(i) == 16 for i in ids), "the 1,000 items' IDs"
    assert sql(db, "SELECT count(*) FROM items WHERE order_id = %s::sno", order.id) == [(1000,)]


@case("SQLAlchemy + psycopg 3: the six checks on the README's models (create_all), parameters cast ::sno, session "
      "TimeZone America/New_York")
def sync_six():
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    import models

    db = new_database("sa_sync")
    engine = create_engine(url(db, "psycopg"), connect_args=TZ_OPTIONS)
    models.Base.metadata.create_all(engine)
    check_schema(db, "orders", "items")
    stmt = str(select(models.Order).where(models.Order.id > "x").compile(engine))
    assert "orders.id > %(id_1)s::sno" in stmt, f"the parameter is not cast to sno: {stmt}"
    six_checks_sync(db, engine, Session, models.Order, models.Item)
    engine.dispose()


@case("SQLAlchemy + psycopg 3: a 15-character ID, a 'z' and a '!' in get, WHERE id > and INSERT: DataError, SQLSTATE 22P02")
def sync_bad():
    from sqlalchemy import create_engine
    from sqlalchemy.exc import DataError
    from sqlalchemy.orm import Session

    import models

    db = new_database("sa_bad")
    engine = create_engine(url(db, "psycopg"))
    models.Base.metadata.create_all(engine)
    bad_ids_sync(engine, Session, models.Order)
    with Session(engine) as s:
        try:
            s.get(models.Order, BAD_IDS[0])
        except DataError:
            pass
        else:
            raise AssertionError("not a sqlalchemy.exc.DataError, as the README says")
    engine.dispose()


@case("SQLAlchemy: a table made by SQL (id sno PRIMARY KEY DEFAULT sno_generate(1)) through the README's models, "
      "and reflected (autoload_with gives Sno columns, no warning)")
def sync_existing_table():
    from sqlalchemy import MetaData, Table, create_engine, insert, select
    from sqlalchemy.exc import SAWarning
    from sqlalchemy.orm import Session

    import models
    from sno_pg.sqlalchemy import Sno

    db = new_database("sa_existing")
    harness.ddl(db, *EXISTING_TABLES)
    engine = create_engine(url(db, "psycopg"))
    six_checks_sync(db, engine, Session, models.Order, models.Item)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SAWarning)
        meta = MetaData()
        orders = Table("orders", meta, autoload_with=engine)
    assert isinstance(orders.c.id.type, Sno), f"reflected orders.id is {orders.c.id.type!r}"
    with engine.begin() as conn:
        new = conn.execute(insert(orders).values(customer=5).returning(orders.c.id)).scalar_one()
        check_generated(db, new)
        assert conn.execute(select(orders.c.customer).where(orders.c.id == new)).scalar_one() == 5
    engine.dispose()


def plain_string_models():
    """The natural mapping without sno_pg: String columns (bound ::VARCHAR), the server's default."""
    from sqlalchemy import FetchedValue, ForeignKey, String
    from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

    class Base(DeclarativeBase):
        pass

    class POrder(Base):
        __tablename__ = "orders"
        id: Mapped[str] = mapped_column(String, primary_key=True, server_default=FetchedValue())
        customer: Mapped[int]
        items: Mapped[list["PItem"]] = relationship(back_populates="order")

    class PItem(Base):
        __tablename__ = "items"
        id: Mapped[str] = mapped_column(String, primary_key=True, server_default=FetchedValue())
        order_id: Mapped[str] = mapped_column(String, ForeignKey("orders.id"))
        order: Mapped[POrder] = relationship(back_populates="items")

    return POrder, PItem


@case("SQLAlchemy + psycopg 3 with a plain String mapping over sno columns (::VARCHAR parameters): works with "
      "sno 0.4.0's sno-text operators and assignment casts (fails on 0.3.0: operator does not exist: sno = character varying)")
def sync_plain_string():
    from sqlalchemy import create_engine, select
    from sqlalchemy.orm import Session

    POrder, PItem = plain_string_models()
    db = new_database("sa_string")
    harness.ddl(db, *EXISTING_TABLES)
    engine = create_engine(url(db, "psycopg"), connect_args=TZ_OPTIONS)
    stmt = str(select(POrder).where(POrder.id == "x").compile(engine))
    assert "orders.id = %(id_1)s::VARCHAR" in stmt, f"String no longer binds ::VARCHAR: {stmt}"
    six_checks_sync(db, engine, Session, POrder, PItem)
    bad_ids_sync(engine, Session, POrder)
    engine.dispose()


@case("SQLAlchemy + asyncpg: the README's async block runs as printed (python models' directory, DATABASE_URL "
      "postgresql+asyncpg://), prints the order's ID and its 1,000 items")
def readme_async():
    db = new_database("sa_async_readme")
    path = write("readme_async.py", block("sqlalchemy-async"))
    env = dict(os.environ, DATABASE_URL=url(db, "asyncpg"), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, path], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"exit {out.returncode}: {out.stderr[-800:]}"
    order_id, n = out.stdout.split()
    check_generated(db, order_id)
    assert n == "1000", f"printed {out.stdout!r}"
    check_schema(db, "orders", "items")
    assert sql(db, "SELECT count(*) FROM items WHERE order_id = %s::sno", order_id) == [(1000,)]


async def six_checks_async(db, engine, Order, Item, items="items"):
    """The six checks through an AsyncSession."""
    from sqlalchemy import func, insert, select
    from sqlalchemy.ext.asyncio import AsyncSession
    from sqlalchemy.orm import selectinload

    # 1. insert, the generated ID back.
    async with AsyncSession(engine, expire_on_commit=False) as s:
        order = Order(customer=42)
        s.add(order)
        await s.flush()
        first = order.id
        check_generated(db, first)
        await s.commit()
    async with AsyncSession(engine) as s:
        # 2. fetch by ID (a query: a new session has an empty identity map), also in upper case.
        got = await s.get(Order, first)
        assert got is not None and got.customer == 42 and got.id == first, f"get({first!r}) gave {got}"
        got = (await s.scalars(select(Order).where(Order.id == first.upper()))).one()
        assert got.id == first, f"WHERE id = upper-case gave {got.id!r}"
        # 3. ORDER BY id, id > x.
        made = []
        for n in range(5):
            o = Order(customer=1000 + n)
            s.add(o)
            await s.flush()
            made.append(o.id)
        await s.commit()
        assert made == sorted(made), f"IDs made in a row are not in order: {made}"
        rows = (await s.scalars(select(Order.id).where(Order.customer >= 1000).order_by(Order.id.desc()))).all()
        assert rows == made[::-1], f"ORDER BY id DESC gave {rows}, want {made[::-1]}"
        rows = (await s.scalars(select(Order.id).where(Order.id > made[1], Order.customer >= 1000).order_by(Order.id))).all()
        assert rows == made[2:], f"id > {made[1]} gave {rows}, want {made[2:]}"
        s.add_all([Item(order_id=first) for _ in range(3)])
        await s.commit()
    async with AsyncSession(engine) as s:
        # 4. the relation.
        parent = (await s.scalars(select(Order).where(Order.id == first).options(selectinload(Order.items)))).one()
        assert len(parent.items) == 3 and all(i.order_id == first for i in parent.items), f"items {parent.items}"
        # 5. sno_time(id) in a filter, with client-given IDs made at known times.
        id2020, id2024 = harness.server_units(db, T2020, T2024)
        s.add_all([Order(id=id2020, customer=2020), Order(id=id2024.upper(), customer=2024)])
        await s.commit()
        got = (await s.scalars(select(Order.id).where(func.sno_time(Order.id) == T2024))).all()
        assert got == [id2024], f"sno_time(id) = {T2024} gave {got}"
        got = (await s.scalars(select(Order.customer).where(func.sno_time(Order.id) < datetime(2023, 1, 1, tzinfo=timezone.utc)))).all()
        assert got == [2020], f"sno_time(id) < 2023 gave customers {got}, want [2020]"
        # 6. 1,000 rows in one bulk insert, the IDs returned.
        ids = (await s.scalars(insert(Item).returning(Item.id), [{"order_id": first}] * 1000)).all()
        await s.commit()
        assert len(ids) == 1000 and len(set(ids)) == 1000 and all(isinstance(i, str) and len(i) == 16 for i in ids)
        (n,), = sql(db, f"SELECT count(*) FROM {items} WHERE order_id = %s::sno AND id = ANY(%s::sno[])", first, ids)
        assert n == 1000, f"{n} of the 1,000 IDs are in {items}"


async def bad_ids_async(engine, Order):
    from sqlalchemy import select
    from sqlalchemy.ext.asyncio import AsyncSession

    for bad in BAD_IDS:
        async with AsyncSession(engine) as s:
            with bad_input(f"asyncpg get({bad!r})"):
                await s.get(Order, bad)
        async with AsyncSession(engine) as s:
            with bad_input(f"asyncpg WHERE id > {bad!r}"):
                (await s.scalars(select(Order).where(Order.id > bad))).all()
        async with AsyncSession(engine) as s:
            with bad_input(f"asyncpg INSERT id {bad!r}"):
                s.add(Order(id=bad, customer=1))
                await s.flush()


@case("SQLAlchemy + asyncpg: the six checks on the README's models (run_sync(create_all)), parameters cast $1::sno, "
      "and a 15-character ID, "
      "a 'z' and a '!' failing with SQLSTATE 22P02")
async def async_six():
    from sqlalchemy import select
    from sqlalchemy.ext.asyncio import create_async_engine

    import models

    db = new_database("sa_async")
    engine = create_async_engine(url(db, "asyncpg"), connect_args={"server_settings": {"TimeZone": "America/New_York"}})
    async with engine.begin() as conn:
        await conn.run_sync(models.Base.metadata.create_all)
    check_schema(db, "orders", "items")
    stmt = str(select(models.Order).where(models.Order.id > "x").compile(engine))
    assert "orders.id > $1::sno" in stmt, f"the parameter is not cast to sno: {stmt}"
    await six_checks_async(db, engine, models.Order, models.Item)
    await bad_ids_async(engine, models.Order)
    await engine.dispose()


@case("SQLAlchemy + asyncpg with a plain String mapping over sno columns made by SQL ($1::VARCHAR parameters): "
      "the six checks and bad IDs (22P02) work with sno 0.4.0's sno-text operators and assignment casts")
async def async_plain_string():
    from sqlalchemy import select
    from sqlalchemy.ext.asyncio import create_async_engine

    POrder, PItem = plain_string_models()
    db = new_database("sa_async_string")
    harness.ddl(db, *EXISTING_TABLES)
    engine = create_async_engine(url(db, "asyncpg"), connect_args={"server_settings": {"TimeZone": "America/New_York"}})
    stmt = str(select(POrder).where(POrder.id == "x").compile(engine))
    assert "orders.id = $1::VARCHAR" in stmt, f"String no longer binds ::VARCHAR with asyncpg: {stmt}"
    await six_checks_async(db, engine, POrder, PItem)
    await bad_ids_async(engine, POrder)
    await engine.dispose()


@case("SQLModel: the README's models (sa_type=Sno): create_all makes sno columns, the six checks, bad IDs fail with "
      "SQLSTATE 22P02, model_dump_json gives the ID as a string")
def sqlmodel_six():
    import sqlmodel
    from sqlmodel import Session, create_engine

    db = new_database("sqlmodel")
    write("sqlmodel_models.py", block("sqlmodel"))
    mod = importlib.import_module("sqlmodel_models")
    engine = create_engine(url(db, "psycopg"), connect_args=TZ_OPTIONS)
    sqlmodel.SQLModel.metadata.create_all(engine)
    check_schema(db, "orders", "items")
    six_checks_sync(db, engine, Session, mod.Order, mod.Item)
    bad_ids_sync(engine, Session, mod.Order)
    with Session(engine) as s:
        o = mod.Order(customer=9)
        s.add(o)
        s.commit()
        s.refresh(o)
        assert json.loads(o.model_dump_json()) == {"id": o.id, "customer": 9}, o.model_dump_json()
    engine.dispose()


@case("SQLModel with plain str fields (AutoString, ::VARCHAR parameters) over sno tables made by SQL: the six "
      "checks and bad IDs (22P02) work with sno 0.4.0's sno-text operators and assignment casts")
def sqlmodel_plain_str():
    # After sqlmodel_six: these tables join SQLModel's one metadata, which that case's create_all makes.
    from typing import Optional

    from sqlalchemy import FetchedValue, select
    from sqlmodel import Field, Relationship, Session, SQLModel, create_engine

    class PlainOrder(SQLModel, table=True):
        __tablename__ = "p_orders"
        id: Optional[str] = Field(default=None, primary_key=True, sa_column_kwargs={"server_default": FetchedValue()})
        customer: int
        items: list["PlainItem"] = Relationship(back_populates="order")

    class PlainItem(SQLModel, table=True):
        __tablename__ = "p_items"
        id: Optional[str] = Field(default=None, primary_key=True, sa_column_kwargs={"server_default": FetchedValue()})
        order_id: str = Field(foreign_key="p_orders.id")
        order: Optional[PlainOrder] = Relationship(back_populates="items")

    db = new_database("sqlmodel_str")
    harness.ddl(db, *(t.replace("orders", "p_orders").replace("items", "p_items") for t in EXISTING_TABLES))
    engine = create_engine(url(db, "psycopg"), connect_args=TZ_OPTIONS)
    stmt = str(select(PlainOrder).where(PlainOrder.id == "x").compile(engine))
    assert "p_orders.id = %(id_1)s::VARCHAR" in stmt, f"a SQLModel str no longer binds ::VARCHAR: {stmt}"
    six_checks_sync(db, engine, Session, PlainOrder, PlainItem, orders="p_orders", items="p_items")
    bad_ids_sync(engine, Session, PlainOrder)
    engine.dispose()
    SQLModel.metadata.remove(PlainItem.__table__)
    SQLModel.metadata.remove(PlainOrder.__table__)


@case("Alembic: alembic init, the README's line in script.py.mako, revision --autogenerate renders "
      "sno_pg.sqlalchemy.Sno() and sa.text('sno_generate(1)'); upgrade head makes sno columns; alembic check finds no diff")
def alembic_autogenerate():
    from alembic import command
    from alembic.config import Config

    db = new_database("alembic")
    ini = os.path.join(harness.WORK, "alembic.ini")
    directory = os.path.join(harness.WORK, "alembic")
    command.init(Config(ini), directory)
    cfg = Config(ini)
    cfg.set_main_option("sqlalchemy.url", url(db, "psycopg"))
    env_py = os.path.join(directory, "env.py")
    with open(env_py) as f:
        env = f.read()
    assert "target_metadata = None" in env, "alembic's env.py template changed"
    with open(env_py, "w") as f:
        f.write(env.replace("target_metadata = None", "from models import Base\ntarget_metadata = Base.metadata"))
    mako = os.path.join(directory, "script.py.mako")
    with open(mako) as f:
        template = f.read()
    assert "import sqlalchemy as sa\n" in template, "alembic's script.py.mako template changed"
    with open(mako, "w") as f:
        f.write(template.replace("import sqlalchemy as sa\n", "import sqlalchemy as sa\n" + block("alembic-mako"), 1))
    command.revision(cfg, message="orders", autogenerate=True)
    versions = os.path.join(directory, "versions")
    (name,) = [n for n in os.listdir(versions) if n.endswith(".py")]
    with open(os.path.join(versions, name)) as f:
        migration = f.read()
    for want in (
        "import sno_pg.sqlalchemy",
        "sa.Column('id', sno_pg.sqlalchemy.Sno(), server_default=sa.text('sno_generate(1)'), nullable=False)",
        "sa.Column('order_id', sno_pg.sqlalchemy.Sno(), nullable=False)",
    ):
        assert want in migration, f"the migration has no {want!r}:\n{migration}"
    command.upgrade(cfg, "head")
    check_schema(db, "orders", "items")
    command.check(cfg)  # raises AutogenerateDiffsDetected on any difference


@case("sno_pg helpers: the README's block; sno_time, sno_meta, sno_partition, sno_sequence, sno_tick computed "
      "here equal the server's for generated IDs; bad IDs rejected like the server")
def helpers():
    import sno_pg

    db = new_database("helpers")
    ns = {}
    exec(compile(block("helpers"), "doc/orms.md:helpers", "exec"), ns)
    t = ns["sno_time"]("brpk4q72xwf2m63l")
    assert t == datetime(2031, 5, 8, 23, 3, 34, 976000, tzinfo=timezone.utc), t
    assert (sno_pg.sno_meta("brpk4q72xwf2m63l"), sno_pg.sno_partition("BRPK4Q72XWF2M63L")) == (255, 39434)
    rows = sql(db, "SELECT id::text, id::bytea FROM (SELECT sno_generate(m) AS id FROM generate_series(0, 255) m) g")
    for text, raw in rows:
        check_generated(db, text, meta=sno_pg.sno_meta(text))
        assert sno_pg.sno_to_bytes(text) == raw and sno_pg.sno_from_bytes(raw) == text
    for bad in BAD_IDS + ["", "brpk4q72xwf2m63l2", 42]:
        assert not sno_pg.is_sno(bad), f"is_sno({bad!r})"
        try:
            sno_pg.normalize(bad)
        except (TypeError, ValueError):
            pass
        else:
            raise AssertionError(f"normalize({bad!r}) did not fail")
