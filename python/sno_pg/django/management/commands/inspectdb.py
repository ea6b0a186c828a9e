"""inspectdb that knows sno: with "sno_pg.django" in INSTALLED_APPS, `manage.py inspectdb`
writes SnoField for a sno column (SnoField(generate=N) for one with DEFAULT sno_generate(N))
and imports sno_pg.django, where Django's own prints a TextField marked as a guess.

Django runs the command of the first app in INSTALLED_APPS that has one, before its own: put
"sno_pg.django" before django.contrib.gis, whose inspectdb this one does not extend.
"""

import re

from django.core.management.commands import inspectdb

_GENERATE = re.compile(r"^\(?sno_generate\((\d+)\)\)?$")


class Command(inspectdb.Command):
    def handle_inspection(self, options):
        self._sno_oids = {}  # per run: the OID may differ after a DROP/CREATE EXTENSION
        for line in super().handle_inspection(options):
            yield line
            if line == "from %s import models" % self.db_module:
                yield "import sno_pg.django"

    def get_field_type(self, connection, table_name, row):
        field_type, field_params, field_notes = super().get_field_type(connection, table_name, row)
        if getattr(self, "_sno_oids", None) is None:
            self._sno_oids = {}
        if row.type_code in self._sno_type_oids(connection):
            field_type = "sno_pg.django.SnoField"
            field_params.pop("db_collation", None)
            field_notes = [n for n in field_notes if n != "This field type is a guess."]
            m = _GENERATE.match(getattr(row, "default", None) or "")
            if m:
                field_params["generate"] = int(m.group(1))
        return field_type, field_params, field_notes

    def _sno_type_oids(self, connection):
        # The OID of sno is the database's own (CREATE EXTENSION assigns it), whatever its schema.
        if connection.vendor != "postgresql":
            return set()
        if connection.alias not in self._sno_oids:
            with connection.cursor() as cursor:
                cursor.execute("SELECT oid FROM pg_type WHERE typname = 'sno'")
                self._sno_oids[connection.alias] = {oid for (oid,) in cursor.fetchall()}
        return self._sno_oids[connection.alias]
