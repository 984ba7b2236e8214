"""A database migrated from the unpartitioned events table keeps every event as it was (id, tx, hashes) and its chains
verify (migration 0026_partitioned_events; docs/deploy.md, "The events table's partitions")."""

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from suspensions.models import Event
from suspensions.services import audit as sealing
from suspensions.services.sql.rows import Writes
from tests.helpers import pause, resume

pytestmark = pytest.mark.django_db(transaction=True)
BEFORE = [("suspensions", "0025_escalation_chains_and_risk")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


def latest():
    return [key for key in MigrationExecutor(connection).loader.graph.leaf_nodes() if key[0] == "suspensions"]


def rows():
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, tx::text, prev_hash, hash, run_id, at FROM suspensions_event ORDER BY id")
        return cursor.fetchall()


def relkind():
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE relname = 'suspensions_event'")
        return cursor.fetchone()[0]


def test_events_written_before_partitioning_keep_ids_tx_and_hashes_and_verify_after(engine):
    migrate(BEFORE)
    try:
        assert relkind() == "r"
        s = pause(engine)
        assert resume(engine, s).status_code == 201
        old = Event(
            run_id=s["run_id"], kind="note", actor="t", revision=9, data={}, at=datetime(2025, 3, 4, tzinfo=UTC)
        )
        old.stamp_scope("acme")
        writes = Writes()
        writes.insert_events([old])
        writes.send()
        written = rows()
    finally:
        migrate(latest())
    assert relkind() == "p"
    assert rows() == written
    assert Event.objects.filter(id=old.id).values_list("at", flat=True).get() == old.at
    with connection.cursor() as cursor:
        cursor.execute("SELECT tableoid::regclass::text FROM suspensions_event WHERE id = %s", [old.id])
        assert cursor.fetchone()[0] == "suspensions_event_y2025m03"
    report = sealing.verify_all()
    assert report.problems == [] and report.events == len(written)
    after = pause(engine)  # the trigger and the chain function are back: a new event chains, with a new tx and id
    new = rows()[len(written) :]
    assert new and new[0][0] > written[-1][0] and new[0][1] not in {"0", written[-1][1]}
    assert sealing.verify_run(after["run_id"]).ok
