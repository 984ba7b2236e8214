"""T9 the expiry sweep, rule by rule (docs/api.md, "2. Lifecycle"), its receipt endpoint and its command."""

import io
from datetime import timedelta

import pytest
from django.core.management import call_command

from suspensions import digests, services
from suspensions.clock import db_now
from suspensions.models import (
    Admission,
    AdmissionState,
    Approval,
    ApprovalStatus,
    Event,
    ExpiryReceipt,
    Run,
    Suspension,
)
from tests.helpers import call, client, pause, post, snapshot, version

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("chains_intact")]
LATER = timedelta(days=2)


def sweep(**kwargs):
    return services.expire_suspensions(now=db_now() + LATER, **kwargs)


def admitted(token, scope="acme"):
    """An agent-reply pause admitted by the bus and never started: the run is running."""
    s = pause(client(token(scope, ["engine"], f"engine-{scope}")), scope=scope, reason="agent_reply")
    body = {"version": version(s), "input": '{"answer": 42}', "reply_with": "q-1"}
    response = post(client(token(scope, ["bus"], f"bus-{scope}")), f"/api/v1/runs/{s['run_id']}/admissions", body)
    assert response.status_code == 201, response.content
    return s, response.json()["admission"]


def expired_events(run_id):
    return list(Event.objects.filter(run_id=run_id, kind="expired").values_list("actor", "revision", "data"))


def test_a_paused_run_past_its_deadline_expires_naming_the_reason_and_the_deadline(engine):
    s = pause(engine, ttl_seconds=60)
    result = sweep()
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("expired", 3)
    assert "external_tool" in run.error and s["expires_at"] in run.error
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    data = {"suspension_id": s["id"], "reason": "external_tool", "expires_at": s["expires_at"]}
    assert expired_events(s["run_id"]) == [("sweeper", 3, data)]
    assert (result.expired, result.receipts, ExpiryReceipt.objects.count()) == (1, 0, 0)


def test_an_unanswered_approval_is_resolved_as_nobody_answered_in_time(engine):
    s = pause(engine, reason="approval", ttl_seconds=60)
    sweep()
    approval = Approval.objects.get(suspension_id=s["id"])
    assert (approval.status, approval.note) == (ApprovalStatus.EXPIRED, "nobody answered in time")
    assert approval.resolved_at is not None
    assert Run.objects.get(pk=s["run_id"]).state == "expired"


def test_an_admitted_continuation_not_started_by_its_deadline_expires_with_a_receipt(token):
    s, admission = admitted(token)
    result = sweep()
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("expired", 4)
    assert "agent_reply continuation was not started" in run.error
    assert Admission.objects.get(pk=admission["id"]).state == AdmissionState.EXPIRED
    receipt = ExpiryReceipt.objects.get(run_id=s["run_id"], suspension_id=s["id"])
    event = Event.objects.get(run_id=s["run_id"], kind="expired")
    assert (receipt.request_digest, receipt.run_revision, receipt.event_id) == (
        admission["request_digest"],
        4,
        event.id,
    )
    assert (event.revision, event.data["admission_id"]) == (4, admission["id"])
    assert (result.expired, result.receipts) == (1, 1)


def test_an_expired_admission_can_no_longer_start(token):
    s, admission = admitted(token)
    sweep()
    before = snapshot()
    response = post(client(token("acme", ["engine"], "engine-2")), f"/api/v1/admissions/{admission['id']}/start", {})
    assert (response.status_code, response.json()["code"]) == (410, "suspension_expired")
    assert snapshot() == before


def test_a_started_continuation_is_left_alone(engine):
    s = pause(engine, ttl_seconds=60)
    body = {"version": version(s), "results": [{"call_id": "c1", "content": "done"}]}
    assert post(engine, f"/api/v1/runs/{s['run_id']}/resume", body).status_code == 201
    before = snapshot()
    assert sweep().expired == 0
    assert snapshot() == before


def test_a_live_pause_whose_admission_already_started_is_left_alone_and_does_not_stall_the_sweep(token):
    s, admission = admitted(token)
    # A start consumes its pause; this row stands for one the sweep must not judge.
    Admission.objects.filter(pk=admission["id"]).update(state=AdmissionState.STARTED)
    before = snapshot()
    result = sweep(batch_size=1)
    assert (result.expired, result.left_alone, result.batches) == (0, 1, 2)
    assert snapshot() == before


def test_a_pause_left_on_a_terminal_run_is_deleted_and_the_run_keeps_its_state(engine):
    s = pause(engine, reason="approval", ttl_seconds=60)
    # Only an old bug or a manual edit leaves this behind; the sweep cleans it up.
    Run.objects.filter(pk=s["run_id"]).update(state="completed")
    result = sweep()
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision, run.error) == ("completed", 2, "")
    assert not Suspension.objects.filter(pk=s["id"]).exists()
    assert Approval.objects.get(suspension_id=s["id"]).status == ApprovalStatus.EXPIRED
    assert list(Event.objects.filter(run_id=s["run_id"], kind="pause_dropped").values_list("revision", flat=True)) == [
        2
    ]
    assert (result.expired, result.dropped) == (0, 1)


def test_at_exactly_its_deadline_a_pause_belongs_to_the_sweep(engine):
    s = pause(engine, ttl_seconds=3600)
    now = db_now()
    Suspension.objects.filter(pk=s["id"]).update(expires_at=now, deadline=now)
    before = snapshot()
    body = {"version": version(s), "results": [{"call_id": "c1", "content": "late"}]}
    response = post(engine, f"/api/v1/runs/{s['run_id']}/resume", body)
    assert (response.status_code, response.json()["code"]) == (410, "suspension_expired")
    assert snapshot() == before
    assert services.expire_suspensions(now=now - timedelta(microseconds=1)).expired == 0
    assert services.expire_suspensions(now=now).expired == 1
    assert Run.objects.get(pk=s["run_id"]).state == "expired"


def test_rows_of_several_scopes_in_one_batch_are_each_handled_under_their_own_scope(token):
    scopes = ["acme", "acme/support/eu", "globex/x"]
    paused = [pause(client(token(sc, ["engine"], f"e-{sc}")), scope=sc, ttl_seconds=60) for sc in scopes]
    claims = [admitted(token, sc)[0] for sc in scopes]
    result = sweep(batch_size=100)
    assert (result.batches, result.expired, result.receipts) == (1, 6, 3)
    for s in paused + claims:
        run = Run.objects.get(pk=s["run_id"])
        event = Event.objects.get(run_id=run.id, kind="expired")
        assert (event.scope, event.scope_l1, event.scope_l2, event.scope_l3) == (
            run.scope,
            run.scope_l1,
            run.scope_l2,
            run.scope_l3,
        )
    for s in claims:
        run = Run.objects.get(pk=s["run_id"])
        receipt = ExpiryReceipt.objects.get(run_id=run.id)
        assert (receipt.scope, receipt.scope_l1, receipt.scope_l2, receipt.scope_l3) == (
            run.scope,
            run.scope_l1,
            run.scope_l2,
            run.scope_l3,
        )


def test_a_row_whose_write_fails_stays_for_the_next_sweep(token):
    s, admission = admitted(token)
    others = [pause(client(token("acme", ["engine"], "e")), ttl_seconds=60) for _ in range(2)]
    # A receipt already on file for this pause makes its receipt INSERT fail (unique per pause).
    blocker = ExpiryReceipt.objects.create(
        run_id=s["run_id"], suspension_id=s["id"], request_digest="x", run_revision=1, digest="x", expired_at=db_now()
    )
    first = sweep()
    assert (first.expired, first.failed) == (2, 1)
    assert all(Run.objects.get(pk=o["run_id"]).state == "expired" for o in others)
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("running", 3)
    assert Suspension.objects.filter(pk=s["id"]).exists()
    assert Admission.objects.get(pk=admission["id"]).state == AdmissionState.ADMITTED
    assert expired_events(s["run_id"]) == []
    blocker.delete()
    assert sweep().receipts == 1
    assert Run.objects.get(pk=s["run_id"]).state == "expired"


def test_pauses_before_their_deadline_or_without_one_are_untouched(engine):
    pause(engine, ttl_seconds=3600)
    pause(engine, ttl_seconds=0)
    before = snapshot()
    assert services.expire_suspensions().expired == 0
    assert snapshot() == before


def test_a_second_sweep_finds_nothing_left_to_expire(engine):
    s = pause(engine, ttl_seconds=60)
    assert sweep().expired == 1
    before = snapshot()
    assert sweep().expired == 0
    assert snapshot() == before
    assert len(expired_events(s["run_id"])) == 1


def test_a_backlog_larger_than_a_batch_is_swept_in_several_batches(engine):
    rows = [pause(engine, ttl_seconds=60) for _ in range(5)]
    result = sweep(batch_size=2)
    assert (result.batches, result.expired) == (3, 5)
    assert {r.state for r in Run.objects.filter(pk__in=[s["run_id"] for s in rows])} == {"expired"}


def test_a_batch_takes_the_oldest_deadlines_first(engine):
    rows = [pause(engine, ttl_seconds=60 * (5 - i)) for i in range(5)]
    batch = services.expire_batch(limit=2, now=db_now() + LATER)
    assert (batch.locked, batch.expired) == (2, 2)
    expired = set(Run.objects.filter(state="expired").values_list("id", flat=True))
    assert {str(r) for r in expired} == {rows[4]["run_id"], rows[3]["run_id"]}


# -- the receipt endpoint -------------------------------------------------------------


def test_the_expiry_receipt_is_served_in_scope_with_its_digest_and_valid(token):
    s, admission = admitted(token)
    sweep()
    response = client(token("acme", ["auditor"], "auditor")).get(f"/api/v1/runs/{s['run_id']}/expiries/{s['id']}")
    assert response.status_code == 200, response.content
    body = response.json()
    receipt = ExpiryReceipt.objects.get(run_id=s["run_id"])
    assert (body["request_digest"], body["run_revision"], body["scope"]) == (admission["request_digest"], 4, "acme")
    assert body["expired_at"] == digests.rfc3339(receipt.expired_at)
    assert (body["digest"], body["valid"]) == (receipt.digest, True)


def test_a_tampered_expiry_receipt_reads_as_not_valid(token):
    s, _ = admitted(token)
    sweep()
    ExpiryReceipt.objects.filter(run_id=s["run_id"]).update(run_revision=99)
    body = client(token("acme", ["auditor"], "auditor")).get(f"/api/v1/runs/{s['run_id']}/expiries/{s['id']}").json()
    assert body["valid"] is False


def test_an_expiry_receipt_outside_the_callers_scope_is_not_found(token):
    s, _ = admitted(token, "acme/support")
    sweep()
    before = snapshot()
    response = client(token("acme/sales", ["auditor"], "other")).get(f"/api/v1/runs/{s['run_id']}/expiries/{s['id']}")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert snapshot() == before


def test_a_pause_expired_without_an_admission_has_no_receipt(engine):
    s = pause(engine, ttl_seconds=60)
    sweep()
    response = engine.get(f"/api/v1/runs/{s['run_id']}/expiries/{s['id']}")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


# -- the command --------------------------------------------------------------------


def test_the_sweep_command_expires_the_whole_backlog_and_reports_progress(engine):
    rows = [pause(engine, pending=[call()], ttl_seconds=60) for _ in range(3)]
    now = db_now()
    Suspension.objects.update(expires_at=now, deadline=now)
    out = io.StringIO()
    call_command("sweep", "--batch-size", "2", verbosity=2, stdout=out)
    assert all(Run.objects.get(pk=s["run_id"]).state == "expired" for s in rows)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("2 expired")
    assert lines[-1].startswith("done: 3 expired")
