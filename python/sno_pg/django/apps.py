"""The app config of sno_pg.django, for INSTALLED_APPS: only needed for its inspectdb."""

from django.apps import AppConfig


class SnoConfig(AppConfig):
    name = "sno_pg.django"
    label = "sno_pg"
    verbose_name = "sno"
