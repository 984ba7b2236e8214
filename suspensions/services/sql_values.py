"""The values the fixed SQL of `claims_sql` sends: what the ORM sends, its work skipped where it changes nothing.

Each value still goes through its field's `get_db_prep_save` (and, for an
inserted row, `pre_save` first), except where the field's type is known to
give the value back as it is: one rule (`as_is`), decided once per field or
per model and applied per value. tests/services/test_claims_sql.py holds every
skipped type to Django's own preparation.
"""

import functools
from collections.abc import Callable
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import DateField, Field, Model
from django.db.models.fields import AutoFieldMixin

# Field types whose get_db_prep_save on PostgreSQL gives back a value of this type unchanged.
UNCHANGED: dict[str, type] = {
    "CharField": str,
    "TextField": str,
    "UUIDField": UUID,
    "DateTimeField": datetime,
    "BooleanField": bool,
}  # not integers: on psycopg 3 Django sends them as Int2/Int4/Int8, typed for server-side binding


def as_is(value: Any, plain: type | None, aware: bool) -> bool:
    """Whether `value` goes as it is: None, or exactly of the field's `plain` type (and aware, for a datetime)."""
    return value is None or (type(value) is plain and (not aware or getattr(value, "tzinfo", None) is not None))


@functools.cache
def prepare(field: "Field[Any, Any]") -> Callable[[Any, BaseDatabaseWrapper], Any]:
    """`field.get_db_prep_save`, skipped for the values it would return as they are (`as_is`)."""
    plain = UNCHANGED.get(field.get_internal_type())
    full = field.get_db_prep_save
    if plain is None:
        return full
    aware = plain is datetime

    def prepared(value: Any, conn: BaseDatabaseWrapper) -> Any:
        return value if as_is(value, plain, aware) else full(value, conn)

    return prepared


def inserted_fields(model: type[Model]) -> list[Any]:
    """The columns an INSERT names: every concrete field but a database-generated key."""
    return [f for f in model._meta.concrete_fields if not isinstance(f, AutoFieldMixin)]


class Column(NamedTuple):
    """How one inserted column's value is read off a new row and prepared, decided once per model."""

    attname: str
    pre_save: "Callable[[Model, bool], Any] | None"  # None: the value as set (what Field.pre_save returns)
    plain: type | None  # values of exactly this type go as they are (UNCHANGED)
    aware: bool  # ... and, for datetimes, only when aware
    full: Callable[[Any, BaseDatabaseWrapper], Any]  # field.get_db_prep_save


def _own_pre_save(field: "Field[Any, Any]") -> bool:
    """Whether `field.pre_save` does more than read the attribute (auto_now and the like)."""
    if isinstance(field, DateField) and not (field.auto_now or field.auto_now_add):
        return False
    return type(field).pre_save is not Field.pre_save


@functools.cache
def inserted_columns(model: type[Model]) -> list[Column]:
    columns = []
    for f in inserted_fields(model):
        plain = UNCHANGED.get(f.get_internal_type())
        pre_save = f.pre_save if _own_pre_save(f) else None
        columns.append(Column(f.attname, pre_save, plain, plain is datetime, f.get_db_prep_save))
    return columns


def row_values(row: Model, columns: list[Column], conn: BaseDatabaseWrapper, out: list[Any]) -> None:
    """What `pre_save` then `get_db_prep_save` give for each column, calling them only when they could change it."""
    values = row.__dict__
    for c in columns:
        value: Any = values[c.attname] if c.pre_save is None else c.pre_save(row, True)
        out.append(value if as_is(value, c.plain, c.aware) else c.full(value, conn))
