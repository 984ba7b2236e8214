"""Issue 32: webhook secrets sealed at rest under DATA_ENCRYPTION_KEYS, rotation, and the data migration.

The database is read with raw SQL: what a copy of the table would show.
"""

import hashlib
import importlib

import pytest
from cryptography.fernet import Fernet
from django.apps import apps
from django.core.management import call_command
from django.db import connection

from suspensions import keys
from suspensions.models import FlowWait, WebhookEndpoint
from suspensions.services.webhooks import new_secret
from tests.api.test_flow_waits import TOKEN, keyed, park, resume
from tests.helpers import client
from tests.push.conftest import make_endpoint


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


migration = importlib.import_module("suspensions.migrations.0010_security_secrets_at_rest")


def stored(endpoint):
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT secret, previous_secret FROM {WebhookEndpoint._meta.db_table} WHERE id = %s", [endpoint.pk]
        )
        return cursor.fetchone()


def test_a_secret_is_stored_sealed_and_read_back_open(db):
    old, new = new_secret(), new_secret()
    endpoint = make_endpoint(url="https://hooks.example.com/x", previous_secret=old)
    endpoint.secret = new
    endpoint.save()
    sealed, sealed_previous = stored(endpoint)
    assert new not in sealed and old not in sealed_previous and sealed.startswith("gAAAA")
    assert (keys.unseal(sealed), keys.unseal(sealed_previous)) == (new, old)
    assert WebhookEndpoint.objects.values_list("secret", "previous_secret").get(pk=endpoint.pk) == (new, old)


def test_a_rotation_seals_again_under_the_new_key_and_the_old_key_can_then_go(db, settings):
    secret = new_secret()
    endpoint = make_endpoint(url="https://hooks.example.com/x")
    endpoint.secret = secret
    endpoint.save()
    old_key, new_key = settings.DATA_ENCRYPTION_KEYS[0], Fernet.generate_key().decode()
    settings.DATA_ENCRYPTION_KEYS = [new_key, old_key]
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).secret == secret  # both keys open
    call_command("rotate_data_keys", verbosity=0)
    settings.DATA_ENCRYPTION_KEYS = [new_key]
    assert WebhookEndpoint.objects.get(pk=endpoint.pk).secret == secret
    assert Fernet(new_key).decrypt(stored(endpoint)[0].encode()).decode() == secret


def test_a_decision_token_hashed_under_a_retired_key_still_matches_while_the_key_is_listed(engine, bus, settings):
    parked = park(engine, token=TOKEN)
    settings.DATA_ENCRYPTION_KEYS = [Fernet.generate_key().decode(), *settings.DATA_ENCRYPTION_KEYS]
    assert resume(bus, parked["correlation_id"], token=TOKEN).status_code == 201


def test_the_migration_seals_plaintext_secrets_and_keys_the_stored_token_hashes(engine, bus):
    plain, previous = new_secret(), new_secret()
    endpoint = make_endpoint(url="https://hooks.example.com/x")
    parked = park(engine, token=TOKEN)
    sha = hashlib.sha256(TOKEN.encode()).hexdigest()
    # The rows as a server before issue 32 wrote them: plaintext secrets, the token's bare SHA-256.
    with connection.cursor() as cursor:
        table = WebhookEndpoint._meta.db_table
        cursor.execute(
            f"UPDATE {table} SET secret = %s, previous_secret = %s WHERE id = %s", [plain, previous, endpoint.pk]
        )
        cursor.execute(f"UPDATE {FlowWait._meta.db_table} SET decision_token_hash = %s", [sha])
    with connection.schema_editor() as editor:
        migration.seal_and_rehash(apps, editor)
    assert plain not in stored(endpoint)[0] and previous not in stored(endpoint)[1]
    assert WebhookEndpoint.objects.values_list("secret", "previous_secret").get(pk=endpoint.pk) == (plain, previous)
    assert FlowWait.objects.get().decision_token_hash == keyed(TOKEN)
    assert resume(bus, parked["correlation_id"], token=TOKEN).status_code == 201
