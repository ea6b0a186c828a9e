"""The sno type for Django (5.0 and later): ``SnoField``.

``SnoField`` is a model field whose column is ``sno`` and whose value is the ID's 16-character
``str``. ``SnoField(primary_key=True, generate=1)`` gives the column the database default
``sno_generate(1)`` (Django's ``db_default``), so migrations write
``"id" sno DEFAULT sno_generate(1) NOT NULL PRIMARY KEY``, ``save()`` and ``create()`` insert
``DEFAULT`` and read the new ID back with ``RETURNING``, and ``bulk_create()`` returns every
new ID the same way. A ``ForeignKey`` to such a model makes a ``sno`` column too.

Parameters go to the server as plain strings, which psycopg sends untyped, so the server reads
them with the type's own input: a bad ID is the server's 22P02 error
(``invalid input syntax for type sno``), as for a ``UUIDField`` given a bad UUID.
"""

from django.core import exceptions
from django.db import models
from django.db.models.expressions import DatabaseDefault

from .. import normalize, sno_from_bytes

__all__ = ["SnoField", "SnoGenerate"]


class SnoGenerate(models.Func):
    """The SQL expression ``sno_generate(meta)``."""

    function = "sno_generate"

    def __init__(self, meta=1, **extra):
        super().__init__(models.Value(int(meta)), output_field=SnoField(), **extra)


class SnoField(models.Field):
    """A ``sno`` column, its value the 16-character ``str``.

    ``generate=META`` sets the database default ``sno_generate(META)`` (as ``db_default``).
    """

    description = "A sno ID (16 characters)"
    empty_strings_allowed = False

    def __init__(self, *args, generate=None, **kwargs):
        self.generate = generate
        if generate is not None:
            if "db_default" in kwargs:
                raise TypeError("SnoField: give generate= or db_default=, not both")
            kwargs["db_default"] = SnoGenerate(generate)
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        # Migrations record generate=META rather than the expression it stands for.
        name, path, args, kwargs = super().deconstruct()
        if self.generate is not None:
            kwargs.pop("db_default", None)
            kwargs["generate"] = self.generate
        return name, "sno_pg.django.SnoField", args, kwargs

    def db_type(self, connection):
        return "sno"

    def rel_db_type(self, connection):
        return "sno"

    def get_internal_type(self):
        return "SnoField"

    def get_default(self):
        # A primary key whose only default is the database's starts as None, as an AutoField's
        # does: Django then treats the instance as unsaved (bulk_create reads its new pk back,
        # a ForeignKey to it refuses it), and pre_save sends DEFAULT in its place.
        if self.primary_key and self.has_db_default() and not self.has_default():
            return None
        return super().get_default()

    def pre_save(self, model_instance, add):
        value = super().pre_save(model_instance, add)
        if add and value is None and self.primary_key and self.has_db_default():
            return DatabaseDefault(self._db_default_expression, output_field=self)
        return value

    def from_db_value(self, value, expression, connection):
        if isinstance(value, (bytes, bytearray, memoryview)):
            return sno_from_bytes(value)
        return value

    def to_python(self, value):
        # Forms, serializers and full_clean: validated here, normalized to lower case. Queries
        # do not come through here: the server validates their parameters.
        if value is None:
            return None
        try:
            return normalize(value)
        except (TypeError, ValueError) as e:
            raise exceptions.ValidationError(str(e), code="invalid", params={"value": value}) from e

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        if isinstance(value, (bytes, bytearray, memoryview)):
            return sno_from_bytes(value)
        return value
