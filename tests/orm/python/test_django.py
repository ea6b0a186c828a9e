"""Django with sno_pg.django.SnoField.

The README's block django-models is WORK/shop/models.py (an app `shop`); makemigrations and
migrate make the tables in a fresh database, then the README's block django-usage runs as printed,
then the six checks, bad IDs, a table made by SQL, and what inspectdb prints (as the README says).
"""

import io
import os
from datetime import datetime, timezone

import harness
from harness import BAD_IDS, bad_input, block, case, check_generated, check_schema, new_database, sql, write

_state = {}


def setup():
    """Django configured on a fresh database, the README's app migrated (once)."""
    if _state:
        return _state["db"]
    import django
    from django.conf import settings
    from django.core.management import call_command

    db = new_database("django")
    write("shop/__init__.py", "")
    write("shop/models.py", block("django-models"))
    settings.configure(
        # sno_pg.django is only needed for its inspectdb.
        INSTALLED_APPS=["sno_pg.django", "shop"],
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.postgresql",
                "NAME": db,
                "USER": "postgres",
                "HOST": harness.HOST,
                "PORT": harness.PORT,
                # A session time zone far from UTC (Django sends aware datetimes as timestamptz).
                "OPTIONS": {"options": "-c TimeZone=America/New_York"},
            }
        },
        USE_TZ=True,
        TIME_ZONE="Europe/Paris",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()
    out = io.StringIO()
    call_command("makemigrations", "shop", stdout=out)
    call_command("migrate", stdout=out)
    _state["db"] = db
    return db


@case("Django: makemigrations records SnoField(generate=1), migrate makes sno columns with DEFAULT sno_generate(1) "
      "and a sno foreign key; the README's usage block runs as printed (create, bulk_create of 1,000 with their IDs, "
      "get, id__gt, sno_time through Func, prefetch_related)")
def django_readme():
    db = setup()
    with open(os.path.join(harness.WORK, "shop", "migrations", "0001_initial.py")) as f:
        migration = f.read()
    want = "('id', sno_pg.django.SnoField(generate=1, primary_key=True, serialize=False))"
    assert want in migration, f"the migration has no {want!r}:\n{migration}"
    check_schema(db, "shop_order", "shop_item")
    ns = {"__name__": "readme_django"}
    exec(compile(block("django-usage"), "doc/orms.md:django-usage", "exec"), ns)
    order = ns["order"]
    check_generated(db, order.id)
    ids = [i.id for i in ns["items"]]
    assert len(ids) == 1000 and len(set(ids)) == 1000 and all(isinstance(i, str) and len(i) == 16 for i in ids), \
        f"bulk_create gave {ids[:3]}..."
    (n,), = sql(db, "SELECT count(*) FROM shop_item WHERE order_id = %s::sno AND id = ANY(%s::sno[])", order.id, ids)
    assert n == 1000, f"{n} of bulk_create's 1,000 IDs are in shop_item"
    assert ns["same"].id == order.id and ns["same"].customer == 42
    assert list(ns["later"]) == []
    assert [o.id for o in ns["today"]] == [order.id], f"today: {list(ns['today'])}"
    (o,) = ns["with_items"]
    assert len(o.items.all()) == 1000


@case("Django: the six checks (create, get, order_by/id__gt/id__in, the relation, sno_time through Func, "
      "bulk_create of 1,000 returning their IDs) and a ForeignKey to an unsaved Order refused")
def django_six():
    db = setup()
    from django.db.models import DateTimeField, F, Func

    from shop.models import Item, Order

    # 1. insert, the generated ID back.
    fresh = Order(customer=42)
    assert fresh.id is None and fresh.pk is None, f"an unsaved Order's id is {fresh.id!r}"
    try:
        Item(order=fresh).save()
    except ValueError:
        pass
    else:
        raise AssertionError("an Item with an unsaved Order was saved")
    fresh.save()
    first = fresh.id
    check_generated(db, first)
    # 2. fetch by ID, also in upper case.
    assert Order.objects.get(pk=first).customer == 42
    assert Order.objects.get(id=first.upper()).id == first
    # 3. order_by("id"), id__gt, id__in.
    made = [Order.objects.create(customer=1000 + n).id for n in range(5)]
    assert made == sorted(made), f"IDs made in a row are not in order: {made}"
    mine = Order.objects.filter(customer__gte=1000)
    assert list(mine.order_by("-id").values_list("id", flat=True)) == made[::-1]
    assert list(mine.filter(id__gt=made[1]).order_by("id").values_list("id", flat=True)) == made[2:]
    assert list(Order.objects.filter(id__in=[made[0], made[3].upper()]).order_by("id").values_list("id", flat=True)) == [made[0], made[3]]
    # 4. the relation, both ways.
    for _ in range(3):
        Item.objects.create(order=fresh)
    parent = Order.objects.prefetch_related("items").get(pk=first)
    assert len(parent.items.all()) == 3 and all(i.order_id == first for i in parent.items.all())
    child = Item.objects.select_related("order").filter(order_id=first).first()
    assert child.order.customer == 42
    assert Item.objects.filter(order__customer=42, order__id=first).count() == 3
    # 5. sno_time(id) through Func, with client-given IDs made at known times.
    t2020, t2024 = datetime(2020, 1, 1, tzinfo=timezone.utc), datetime(2024, 6, 1, tzinfo=timezone.utc)
    id2020, id2024 = harness.server_units(db, t2020, t2024)
    Order.objects.create(id=id2020, customer=2020)
    o2024 = Order.objects.create(id=id2024.upper(), customer=2024)
    assert o2024.id == id2024, f"{o2024.id!r}: not read back (RETURNING) in the server's lower-case form"
    made_at = Func(F("id"), function="sno_time", output_field=DateTimeField())
    got = list(Order.objects.alias(made=made_at).filter(made=t2024).values_list("id", flat=True))
    assert got == [id2024], f"sno_time(id) = {t2024} gave {got}"
    got = list(Order.objects.annotate(made=made_at).filter(made__lt=datetime(2023, 1, 1, tzinfo=timezone.utc)).values_list("customer", "made"))
    assert got == [(2020, t2020)], f"sno_time(id) < 2023 gave {got}"
    # 6. bulk_create of 1,000 returns their IDs.
    items = Item.objects.bulk_create([Item(order_id=first) for _ in range(1000)], batch_size=1000)
    ids = [i.pk for i in items]
    assert len(set(ids)) == 1000 and all(isinstance(i, str) and len(i) == 16 for i in ids), f"bulk_create: {ids[:3]}"
    assert Item.objects.filter(id__in=ids, order_id=first).count() == 1000


@case("Django: a 15-character ID, a 'z' and a '!' in get, filter(id__gt=) and create(id=): DataError, "
      "__cause__.sqlstate 22P02; full_clean rejects them in Python")
def django_bad():
    setup()
    from django.core.exceptions import ValidationError
    from django.db import DataError, transaction

    from shop.models import Order

    for bad in BAD_IDS:
        for what, fn in (
            (f"get(pk={bad!r})", lambda: Order.objects.get(pk=bad)),
            (f"filter(id__gt={bad!r})", lambda: list(Order.objects.filter(id__gt=bad))),
            (f"create(id={bad!r})", lambda: Order.objects.create(id=bad, customer=1)),
        ):
            with bad_input(what):
                try:
                    with transaction.atomic():
                        fn()
                except DataError:
                    raise
                except Exception as e:  # noqa: BLE001
                    raise AssertionError(f"{what}: {type(e).__name__}, not django.db.DataError: {e}") from e
        try:
            Order(id=bad, customer=1).full_clean()
        except ValidationError:
            pass
        else:
            raise AssertionError(f"full_clean accepted {bad!r}")


@case("Django: tables made by SQL (the natural model) through SnoField models (managed = False), and through a "
      "CharField primary key (Django sends strings untyped); inspectdb prints what the README says")
def django_existing():
    db = setup()
    from django.core.management import call_command
    from django.db import models

    from sno_pg.django import SnoField

    harness.ddl(
        db,
        "CREATE TABLE legacy_orders (id sno PRIMARY KEY DEFAULT sno_generate(1), customer int NOT NULL)",
        "CREATE TABLE legacy_items (id sno PRIMARY KEY DEFAULT sno_generate(1), order_id sno NOT NULL REFERENCES legacy_orders)",
    )

    class LegacyOrder(models.Model):
        id = SnoField(primary_key=True, generate=1)
        customer = models.IntegerField()

        class Meta:
            app_label = "shop"
            managed = False
            db_table = "legacy_orders"

    class LegacyItem(models.Model):
        id = SnoField(primary_key=True, generate=1)
        order = models.ForeignKey(LegacyOrder, models.DO_NOTHING, related_name="items")

        class Meta:
            app_label = "shop"
            managed = False
            db_table = "legacy_items"

    class CharOrder(models.Model):
        id = models.CharField(max_length=16, primary_key=True)
        customer = models.IntegerField()

        class Meta:
            app_label = "shop"
            managed = False
            db_table = "legacy_orders"

    o = LegacyOrder.objects.create(customer=7)
    check_generated(db, o.id)
    items = LegacyItem.objects.bulk_create([LegacyItem(order=o) for _ in range(10)])
    assert len({i.id for i in items}) == 10 and all(len(i.id) == 16 for i in items)
    assert LegacyOrder.objects.get(pk=o.id).items.count() == 10
    two = LegacyOrder.objects.create(customer=8)
    assert CharOrder.objects.get(pk=o.id).customer == 7
    assert list(CharOrder.objects.filter(id__gt=o.id).values_list("id", flat=True)) == [two.id]
    with bad_input("CharField get(pk=15 characters)"):
        CharOrder.objects.get(pk=BAD_IDS[0])

    # Django's own inspectdb guesses TextField (what the README says it prints) ...
    from django.core.management.commands.inspectdb import Command as DjangoInspectdb

    readme = block_text()
    out = io.StringIO()
    call_command(DjangoInspectdb(), "shop_order", "shop_item", stdout=out)
    printed = out.getvalue()
    for line in (
        "id = models.TextField(primary_key=True)  # This field type is a guess.",
        "order = models.ForeignKey(ShopOrder, models.DO_NOTHING)",
    ):
        assert line in printed, f"Django's inspectdb no longer prints {line!r} (update the README):\n{printed}"
        assert f"`{line}`" in readme, f"the README does not quote {line!r}"
    # ... and with sno_pg.django in INSTALLED_APPS, manage.py inspectdb is sno_pg's: SnoField.
    out = io.StringIO()
    call_command("inspectdb", "shop_order", "shop_item", "legacy_items", stdout=out)
    printed = out.getvalue()
    for line in (
        "import sno_pg.django",
        "id = sno_pg.django.SnoField(primary_key=True, generate=1)",
        "order = models.ForeignKey(ShopOrder, models.DO_NOTHING)",
        "order = models.ForeignKey('LegacyOrders', models.DO_NOTHING)",
    ):
        assert line in printed, f"sno_pg's inspectdb does not print {line!r}:\n{printed}"
        assert f"`{line}`" in readme, f"the README does not quote {line!r}"
    assert "guess" not in printed, f"sno_pg's inspectdb still guesses:\n{printed}"
    compile(printed, "inspectdb output", "exec")


def block_text():
    with open(os.path.join(harness.ROOT, "doc", "orms.md")) as f:
        return f.read()
