# Issue 32: webhook secrets sealed at rest, decision tokens kept as a keyed hash (suspensions/keys.py).

from django.db import migrations

import suspensions.models.sealed
from suspensions import keys


def _rows(schema_editor, sql, params=()):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _update(schema_editor, sql, params):
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(sql, params)


def seal_and_rehash(apps, schema_editor):
    """Seal every stored webhook secret; turn each stored SHA-256 of a decision token into its keyed hash.

    Raw SQL: the sealed field would try to open the plaintext these rows still hold.
    """
    endpoints = apps.get_model("suspensions", "WebhookEndpoint")._meta.db_table
    for pk, secret, previous in _rows(schema_editor, f"SELECT id, secret, previous_secret FROM {endpoints}"):
        _update(
            schema_editor,
            f"UPDATE {endpoints} SET secret = %s, previous_secret = %s WHERE id = %s",
            [keys.seal(secret), keys.seal(previous), pk],
        )
    waits = apps.get_model("suspensions", "FlowWait")._meta.db_table
    for pk, sha in _rows(schema_editor, f"SELECT id, decision_token_hash FROM {waits} WHERE decision_token_hash <> ''"):
        _update(schema_editor, f"UPDATE {waits} SET decision_token_hash = %s WHERE id = %s", [keys.keyed(sha), pk])


def open_secrets(apps, schema_editor):
    """Back to plaintext secrets. A keyed hash cannot be undone: waits parked before stay refusing their token."""
    endpoints = apps.get_model("suspensions", "WebhookEndpoint")._meta.db_table
    for pk, secret, previous in _rows(schema_editor, f"SELECT id, secret, previous_secret FROM {endpoints}"):
        _update(
            schema_editor,
            f"UPDATE {endpoints} SET secret = %s, previous_secret = %s WHERE id = %s",
            [keys.unseal(secret), keys.unseal(previous), pk],
        )


class Migration(migrations.Migration):
    dependencies = [
        ("suspensions", "0009_approval_floors"),
    ]

    operations = [
        migrations.AlterField(
            model_name="webhookendpoint",
            name="previous_secret",
            field=suspensions.models.sealed.SealedCharField(blank=True, editable=False, max_length=400),
        ),
        migrations.AlterField(
            model_name="webhookendpoint",
            name="secret",
            field=suspensions.models.sealed.SealedCharField(editable=False, max_length=400),
        ),
        migrations.RunPython(seal_and_rehash, open_secrets),
    ]
