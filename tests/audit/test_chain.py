"""The per-run hash chain (docs/auditors.md, "What is recorded"): written by the INSERT, recomputed in Python,
back-filled by the migration."""

import base64
import importlib
import json
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from django.apps import apps
from django.db import connection, transaction

from suspensions import audit, services
from suspensions.clock import db_now
from suspensions.models import AuditCheckpoint, Event, OutboxEvent, Run
from suspensions.services import audit as sealing
from suspensions.services.claims import event, write_events
from suspensions.services.sql.rows import Writes
from tests.helpers import chain_from_api, pause, post, resume

pytestmark = pytest.mark.django_db
backfill = importlib.import_module("suspensions.migrations.0016_audit_chain")


def stored(run_id):
    return list(Event.objects.filter(run_id=run_id).order_by("id").values(*sealing.COVERED))


def test_each_events_hash_is_sha256_of_the_previous_hash_and_its_canonical_json(engine):
    s = pause(engine)
    assert resume(engine, s).status_code == 201
    events = chain_from_api(s["run_id"])
    assert [e["kind"] for e in events] == ["registered", "suspended", "admitted", "started"]
    assert events[0]["prev_hash"] == "0" * 64
    for before, after in zip(events, events[1:], strict=False):
        assert after["prev_hash"] == before["hash"]
    first = events[0]
    text = (
        "0" * 64
        + "\n"
        + '{"actor":"token:engine","at":"'
        + audit.rfc3339(first["at"])
        + '","data":{"agent_id":"agent-1"},'
        f'"id":{first["id"]},"kind":"registered","revision":1,"run_id":"{s["run_id"]}","scope":"acme"}}'
    )
    assert first["hash"] == __import__("hashlib").sha256(text.encode()).hexdigest()
    assert audit.walk(events).problem is None


def test_the_writer_sets_id_and_hashes_on_the_python_rows_it_inserts(engine):
    s = pause(engine)
    run = Run.objects.get(pk=s["run_id"])
    row = event(run, "noted", "tester", db_now(), text='naïve ✓ "quoted"', n=1.5)
    with transaction.atomic():
        writes = Writes()
        write_events(writes, row)
        writes.send()
    saved = Event.objects.get(pk=row.id)
    assert (row.prev_hash, row.hash) == (saved.prev_hash, saved.hash)
    assert row.prev_hash == stored(run.id)[-2]["hash"]
    assert audit.walk(stored(run.id)).problem is None


def test_two_events_of_one_run_in_one_round_trip_chain_in_order(engine):
    s = pause(engine)
    assert resume(engine, s).status_code == 201  # admitted and started: one write_events call, one round trip
    admitted, started = stored(s["run_id"])[-2:]
    assert started["prev_hash"] == admitted["hash"]


def test_the_sweeps_set_based_events_chain_like_every_other(engine):
    paused = [pause(engine, ttl_seconds=60) for _ in range(3)]
    services.expire_suspensions(now=db_now() + timedelta(days=2))
    for s in paused:
        events = chain_from_api(s["run_id"])
        assert events[-1]["kind"] == "expired"
        assert audit.walk(events).problem is None


def test_the_migration_back_fills_the_same_chain_the_writer_writes(engine):
    runs = [pause(engine)["run_id"] for _ in range(3)]
    written = {r: stored(r) for r in runs}
    Event.objects.update(prev_hash="", hash="")
    backfill.BATCH, batch = 2, backfill.BATCH  # several pages, a run split across two
    try:
        backfill.chain_existing_events(apps, None)
    finally:
        backfill.BATCH = batch
    assert {r: stored(r) for r in runs} == written


def test_verify_run_answers_ok_with_the_count_and_names_an_altered_event(engine):
    s = pause(engine)
    verdict = sealing.verify_run(s["run_id"])
    assert (verdict.ok, verdict.events, verdict.problem, verdict.checkpoint) == (True, 2, None, None)
    (checkpoint,) = sealing.write_checkpoint()
    assert sealing.verify_run(s["run_id"]).checkpoint == checkpoint.seq
    first = stored(s["run_id"])[0]["id"]
    with connection.cursor() as cursor:
        cursor.execute('UPDATE suspensions_event SET data = \'{"agent_id": "x"}\' WHERE id = %s', [first])
    verdict = sealing.verify_run(s["run_id"])
    assert not verdict.ok
    assert verdict.problem == f"event {first}: altered (its content does not match its hash)"


def test_a_checkpoint_seals_changed_runs_signed_and_chained_to_the_previous_root(engine):
    a, b = pause(engine), pause(engine)
    (first,) = sealing.write_checkpoint()
    assert (first.workspace, first.seq, first.previous) == ("acme", 1, "0" * 64)
    assert sorted(r for r, _, _ in first.runs) == sorted([a["run_id"], b["run_id"]])
    assert first.root == audit.checkpoint_root(first.previous, first.runs)
    key = Ed25519PublicKey.from_public_bytes(base64.b64decode(sealing.public_key()))
    assert sealing.signature_valid(first, key)
    assert sealing.write_checkpoint() == []  # nothing changed
    assert post(engine, f"/api/v1/runs/{a['run_id']}/cancel", {"revision": 2}).status_code == 200
    (second,) = sealing.write_checkpoint()
    assert (second.seq, second.previous) == (2, first.root)
    assert second.runs == [[a["run_id"], stored(a["run_id"])[-1]["hash"], 3]]


def test_an_event_committed_late_with_an_earlier_clock_is_sealed_by_the_next_checkpoint(engine):
    s = pause(engine)
    (first,) = sealing.write_checkpoint()
    run = Run.objects.get(pk=s["run_id"])
    late = event(run, "noted", "tester", first.at - timedelta(seconds=30))  # its transaction read the clock before
    with transaction.atomic():
        writes = Writes()
        write_events(writes, late)
        writes.send()
    (second,) = sealing.write_checkpoint()
    assert second.runs == [[s["run_id"], late.hash, 3]]


def test_each_checkpoint_is_announced_in_its_workspace_with_its_signature_and_no_run_ids_nor_count(engine):
    pause(engine)
    (checkpoint,) = sealing.write_checkpoint()
    announced = OutboxEvent.objects.get(type="audit.checkpoint")
    assert (announced.scope, announced.run_id) == ("acme", None)
    assert announced.data == {
        "workspace": "acme",
        "seq": checkpoint.seq,
        "at": audit.rfc3339(checkpoint.at),
        "root": checkpoint.root,
        "previous": "0" * 64,
        "signature": checkpoint.signature,
        "algorithm": "ed25519",
    }
    assert AuditCheckpoint.objects.count() == 1


def test_a_checkpoint_goes_to_its_workspaces_endpoint_that_wants_it_not_deeper_nor_elsewhere(engine, monkeypatch):
    from suspensions.models import WebhookMessage
    from suspensions.services import outbox
    from tests.push.conftest import make_endpoint

    monkeypatch.setattr(outbox.current_app, "send_task", lambda *args, **kwargs: None)
    everything = make_endpoint("acme")
    make_endpoint("beta", event_types=["audit.checkpoint"])  # another workspace's auditors
    make_endpoint("acme/support")
    make_endpoint("gamma", event_types=["run.finished"])
    pause(engine)
    outbox.fan_out()
    WebhookMessage.objects.all().delete()
    (checkpoint,) = sealing.write_checkpoint()
    outbox.fan_out()
    sent = WebhookMessage.objects.filter(type="audit.checkpoint")
    assert [m.endpoint_id for m in sent] == [everything.id]
    body = json.loads(sent[0].body)
    assert (body["type"], body["data"]["seq"], body["data"]["root"]) == ("audit.checkpoint", 1, checkpoint.root)


def test_the_chained_insert_names_the_sequence_postgresql_gave_event_id():
    from suspensions.services.sql.rows import EVENT_SEQUENCE

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence('suspensions_event', 'id')")
        assert cursor.fetchone()[0] == f"public.{EVENT_SEQUENCE}"
