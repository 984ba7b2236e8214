"""The service's indexes, read back from PostgreSQL: each serves a query, and none is paid for twice.

Every row a transition writes updates every index of its table, so an index
that no query can use is a cost on every pause and resume (docs/performance.md,
"Where the time goes"), and every index of a table is one more path the planner
weighs for each statement on it (the token's read, on every request). Two rules, checked on the migrated schema: no
varchar_pattern_ops index (Django adds one to a CharField with db_index or
unique=True, for LIKE; the service's only LIKE, a scope's prefix in the
audit verifier, is on the unindexed `scope` column), and no plain index is a leading
prefix of another index of its table, which serves the same lookups.
"""

import pytest
from django.apps import apps
from django.db import connection

from suspensions.models.base import SCOPE_LEVELS, Scoped

pytestmark = pytest.mark.django_db


def indexes(table: str) -> list[dict]:
    """Each index of `table`: name, columns in order, whether unique, partial, btree, and its opclasses."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT i.relname, ix.indisunique, ix.indpred IS NOT NULL, am.amname,
                   ARRAY(SELECT a.attname FROM unnest(ix.indkey) WITH ORDINALITY k(attnum, n)
                         JOIN pg_attribute a ON a.attrelid = ix.indrelid AND a.attnum = k.attnum ORDER BY k.n),
                   ARRAY(SELECT o.opcname FROM unnest(ix.indclass) WITH ORDINALITY c(oid, n)
                         JOIN pg_opclass o ON o.oid = c.oid ORDER BY c.n)
            FROM pg_index ix
            JOIN pg_class i ON i.oid = ix.indexrelid
            JOIN pg_class t ON t.oid = ix.indrelid
            JOIN pg_am am ON am.oid = i.relam
            WHERE t.relname = %s
            """,
            [table],
        )
        names = ["name", "unique", "partial", "method", "columns", "opclasses"]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def service_tables() -> list[str]:
    return [m._meta.db_table for m in apps.get_app_config("suspensions").get_models()]


def test_every_scope_level_of_every_scoped_table_leads_an_index():
    scoped = [m for m in apps.get_app_config("suspensions").get_models() if issubclass(m, Scoped)]
    assert len(scoped) >= 19
    for model in scoped:
        found = [i for i in indexes(model._meta.db_table) if i["method"] == "btree" and not i["partial"]]
        for level in SCOPE_LEVELS:
            assert [i for i in found if i["columns"][0] == level], (model, level)


def test_no_service_table_has_a_pattern_index():
    patterned = [
        (table, index["name"])
        for table in service_tables()
        for index in indexes(table)
        if any("pattern" in o for o in index["opclasses"])
    ]
    assert patterned == []


def test_no_plain_index_is_a_leading_prefix_of_another_index_of_its_table():
    redundant = []
    for table in service_tables():
        found = [i for i in indexes(table) if i["method"] == "btree" and not i["partial"]]
        for index in found:
            if index["unique"]:
                continue  # a unique index is a constraint (pattern indexes: none, the test above)
            wider = [
                other["name"]
                for other in found
                if other is not index
                and other["columns"][: len(index["columns"])] == index["columns"]
                and len(other["columns"]) > len(index["columns"])
            ]
            if wider:
                redundant.append((table, index["name"], wider))
    assert redundant == [], "\n".join(map(str, redundant))
