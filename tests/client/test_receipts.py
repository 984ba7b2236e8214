"""The sync client against a live gunicorn: expiry and closure receipts, webhook endpoints."""

import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from suspensions_client import ClosureReceipt, ExpiryReceipt, InvalidState, SuspensionExpired, WebhookEndpoint

from suspensions.models import ClosureReceipt as ClosureRow
from suspensions.models import Run
from suspensions.models import WebhookEndpoint as EndpointRow
from suspensions.services import expire_suspensions
from tests.processes import wait_for

from .conftest import cont, pending


def swept(run_id):
    """One sweep; true once the run is expired (the deadline is the database's, so sweep until it passed)."""
    expire_suspensions()
    return Run.objects.get(pk=run_id).state == "expired"


def test_an_admitted_pause_that_expires_unstarted_has_an_expiry_receipt_and_a_late_start_is_refused(engine, approver):
    pause = engine.pause_for_approval(engine.register("a"), [pending()], cont(), ttl_seconds=1)
    admitted = approver.decide(pause.id, pause.version)
    wait_for(lambda: swept(pause.run_id), "the sweep to expire the admitted pause", step=0.2)
    receipt = engine.get_expiry(pause.run_id, pause.id)
    assert isinstance(receipt, ExpiryReceipt) and receipt.valid
    assert (receipt.request_digest, receipt.run_revision) == (admitted.admission.request_digest, 4)
    with pytest.raises(SuspensionExpired) as refused:
        engine.start(admitted)
    assert refused.value.status == 410 and refused.value.code == "suspension_expired"
    outcome = engine.wait_for_admission(pause.run_id, pause.id, timeout=30, poll_interval=0.2)
    assert (outcome.status, outcome.admitted, outcome.run.state) == ("expired", False, "expired")


def test_an_operator_closes_an_uncertain_start_and_the_identical_closure_replays(connect, engine):
    operator = connect("operator")
    pause = engine.suspend(engine.register("a"), reason="external_tool", pending=[pending()], continuation=cont())
    started = engine.resume(pause, [{"call_id": "c1", "content": {"ok": True}}])
    latest = engine.latest_admission(pause.run_id)
    now = datetime.now(UTC)
    proof = {
        "version": latest.version,
        "admission_digest": latest.request_digest,
        "start_digest": latest.start.digest,
        "run_revision": started.run_revision,
        "issuer": "ops-runbook",
        "issuer_revision": "v3",
        "proof_ref": "incident/4711",
        "proof_digest": hashlib.sha256(b"the worker is gone").hexdigest(),
        "observed_at": now - timedelta(minutes=1),
        "expires_at": now + timedelta(hours=1),
    }
    closed = operator.close_run(pause.run_id, **proof)
    assert isinstance(closed, ClosureReceipt) and closed.fresh and closed.valid
    again = operator.close_run(pause.run_id, **proof)
    assert (again.fresh, again.digest) == (False, closed.digest)
    assert engine.get_closure(pause.run_id, pause.id).digest == closed.digest
    assert engine.get_run(pause.run_id).state == "incomplete"
    assert ClosureRow.objects.count() == 1


def test_webhook_endpoints_are_created_read_disabled_enabled_rotated_and_tested(connect):
    operator = connect("operator")
    created = operator.create_webhook(
        "http://127.0.0.1:9/hooks", event_types=["approval.requested"], description="client test"
    )
    assert isinstance(created, WebhookEndpoint) and created.secret.startswith("whsec_")
    assert (created.active, created.format, created.event_types) == (True, "standard", ["approval.requested"])
    read = operator.get_webhook(created.id)
    assert read.secret is None and read.url == created.url
    assert [e.id for e in operator.list_webhooks()] == [created.id]
    assert operator.disable_webhook(created.id).active is False
    assert operator.disable_webhook(created.id).active is False  # disabling twice changes nothing
    with pytest.raises(InvalidState):
        operator.test_webhook(created.id)
    assert operator.enable_webhook(created.id).active is True
    rotated = operator.rotate_webhook_secret(created.id)
    assert rotated.secret != created.secret and rotated.previous_secret_expires_at is not None
    assert EndpointRow.objects.get(pk=created.id).secret == rotated.secret
    message = operator.test_webhook(created.id)
    assert (message.type, message.status, message.endpoint_id) == ("webhook.test", "pending", created.id)
    assert [m.id for m in operator.webhook_messages(created.id)] == [message.id]
    with pytest.raises(InvalidState) as pending_already:
        operator.redeliver(created.id, message.id)  # redelivered for real in test_webhooks.py, once delivered
    assert "pending already" in pending_already.value.detail
