"""The take of an idempotency key (services/idempotency.py): one INSERT that also renews a key past its 24 hours."""

from typing import Any

from django.db import connection
from django.db.models.fields import AutoFieldMixin

from ...models import IdempotencyKey

KEYS = IdempotencyKey._meta.db_table
# Every column but the generated key, from _meta; created_at is the database's clock, written in the statement.
_FIELDS = [f for f in IdempotencyKey._meta.concrete_fields if not isinstance(f, AutoFieldMixin)]
_GIVEN = [f for f in _FIELDS if f.attname != "created_at"]
_COLUMNS = ", ".join(f'"{f.column}"' for f in _FIELDS)
_VALUES = ", ".join("%s" if f.attname != "created_at" else "STATEMENT_TIMESTAMP()" for f in _FIELDS)
_RENEW = ", ".join(f'"{f.column}" = EXCLUDED."{f.column}"' for f in _FIELDS)
# ON CONFLICT waits for a concurrent transaction holding the same (principal, key) to end: after its
# commit the key is taken (no row back), after its rollback this INSERT goes ahead. A key kept past
# its lifetime (the sweep has not deleted it yet) counts as free and is written over.
TAKE = (
    f"INSERT INTO {KEYS} AS k ({_COLUMNS}) VALUES ({_VALUES}) "
    f'ON CONFLICT ("principal", "key") DO UPDATE SET {_RENEW} '
    'WHERE k."created_at" <= STATEMENT_TIMESTAMP() - %s RETURNING k."id"'
)


def take(row: IdempotencyKey, lifetime: Any) -> bool:
    """Insert `row` unless its (principal, key) is held and younger than `lifetime`: True when inserted (or renewed)."""
    params = [f.get_db_prep_save(f.pre_save(row, True), connection) for f in _GIVEN]
    with connection.cursor() as cursor:
        cursor.execute(TAKE, [*params, lifetime])
        return cursor.fetchone() is not None
