"""The sno type for SQLAlchemy 2 (and so SQLModel and Alembic).

``Sno`` is a column type whose DDL is ``sno`` and whose Python value is the ID's 16-character
``str``. Why a type and not ``String``: SQLAlchemy's psycopg 3 and asyncpg dialects write every
string parameter as ``%(p)s::VARCHAR``, and before sno 0.4.0 the server has no ``sno = varchar``
operator. ``Sno`` sets ``render_bind_cast``, so the same dialects write ``%(p)s::sno``: the
parameter is read by the type's own input (a bad ID is the 22P02 input error), on any sno
version, and comparisons use the column's btree index with no cross-type operator involved.
Drivers that send parameters untyped (psycopg2, pg8000) need no cast and get none.

Importing this module also:

* maps the type name ``sno`` to ``Sno`` in the PostgreSQL dialect's reflection table, so
  ``Table(..., autoload_with=engine)``, ``inspect(engine).get_columns()`` and Alembic's
  autogenerate comparison see ``Sno`` rather than ``NullType`` with a warning;
* registers ``func.sno_generate``, ``func.sno_time``, ``func.sno_meta``, ``func.sno_partition``
  and ``func.sno_sequence`` with their return types, so that ``func.sno_time(Order.id) >= t``
  binds ``t`` as ``timestamptz`` and ``select(func.sno_generate(1))`` is typed ``Sno``.
"""

from sqlalchemy import DateTime, Integer, func, literal
from sqlalchemy.dialects.postgresql.base import ischema_names
from sqlalchemy.sql.functions import GenericFunction
from sqlalchemy.types import UserDefinedType

from . import sno_from_bytes

__all__ = ["Sno"]


class Sno(UserDefinedType):
    """A ``sno`` column: DDL ``sno``, parameters cast ``::sno``, values the 16-character ``str``.

    ``Sno.generate(meta)`` is the server default ``sno_generate(meta)``::

        id: Mapped[str] = mapped_column(Sno, primary_key=True, server_default=Sno.generate(1))
    """

    cache_ok = True
    # The psycopg 3 and asyncpg dialects then write "%(p)s::sno" / "$1::sno" (get_col_spec).
    render_bind_cast = True

    @property
    def python_type(self):
        return str

    def get_col_spec(self, **kw):
        return "sno"

    def bind_processor(self, dialect):
        return None

    def literal_processor(self, dialect):
        # For literal_binds (Alembic's offline mode, str(stmt.compile(...))): a quoted literal,
        # which PostgreSQL reads as an untyped constant and so as a sno.
        def process(value):
            return "'" + str(value).replace("'", "''") + "'"

        return process

    def result_processor(self, dialect, coltype):
        # Text results are the 16 characters already. A binary result (a driver set to binary
        # format) is the 10 raw bytes: turn it into the same text.
        def process(value):
            if isinstance(value, (bytes, bytearray, memoryview)):
                return sno_from_bytes(value)
            return value

        return process

    @staticmethod
    def generate(meta=1):
        """The SQL expression ``sno_generate(meta)``, for ``server_default=``."""
        return func.sno_generate(literal(int(meta), Integer), type_=Sno())

    def __repr__(self):
        # What Alembic writes into a migration: sno_pg.sqlalchemy.Sno()
        return "Sno()"


# Reflection: PostgreSQL reports the column's type as 'sno'.
ischema_names["sno"] = Sno


class sno_generate(GenericFunction):
    """sno_generate([meta]): a new ID."""

    type = Sno()
    inherit_cache = True


class sno_time(GenericFunction):
    """sno_time(id): the ID's time, a timestamptz."""

    type = DateTime(timezone=True)
    inherit_cache = True


class sno_meta(GenericFunction):
    """sno_meta(id): the meta byte."""

    type = Integer()
    inherit_cache = True


class sno_partition(GenericFunction):
    """sno_partition(id): the partition."""

    type = Integer()
    inherit_cache = True


class sno_sequence(GenericFunction):
    """sno_sequence(id): the sequence."""

    type = Integer()
    inherit_cache = True
