"""More time for a live pause (docs/api.md, "`POST /suspensions/{id}/extend` — more time"): an operator moves its
deadline later through the one claim path, with its event and its announcement in the same transaction, and every
refusal leaves nothing behind."""

from datetime import timedelta

import pytest

from suspensions import digests, services
from suspensions.clock import db_now
from suspensions.models import Approval, ApprovalFloor, Event, OutboxEvent, Run, Suspension
from tests.factories import principal
from tests.helpers import call, client, continuation, pause, post, problem, refused, resume, version

pytestmark = pytest.mark.usefixtures("chains_intact")


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


def extend(c, s, **body):
    return post(c, f"/api/v1/suspensions/{s['id']}/extend", body)


def approval(scope="acme", ttl=3600, **policy):
    engine = principal("token:engine", scope, "engine")
    run = services.register_run(principal=engine, agent_id="agent-1", scope=scope)
    s = services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=1,
        reason="approval",
        pending=[call()],
        continuation=continuation(),
        ttl_seconds=ttl,
        approval=policy or None,
    )
    return {"id": str(s.id), "run_id": str(s.run_id), "run_revision": 2, "expires_at": s.expires_at}


def test_seconds_move_the_deadline_later_without_a_revision_change_and_are_recorded_and_announced(engine, operator):
    s = pause(engine, ttl_seconds=600)
    before = Suspension.objects.get(pk=s["id"]).expires_at
    response = extend(operator, s, seconds=3600, reason="the approver is out until noon")
    assert response.status_code == 200, response.content
    body = response.json()
    after = before + timedelta(seconds=3600)
    assert body["expires_at"] == digests.rfc3339(after)
    assert (body["id"], body["run_revision"], body["run_state"]) == (s["id"], 2, "paused")
    assert Suspension.objects.get(pk=s["id"]).expires_at == after
    assert Run.objects.get(pk=s["run_id"]).revision == 2
    extended = Event.objects.get(run_id=s["run_id"], kind="deadline_extended")
    assert (extended.revision, extended.actor) == (2, "token:ops")
    assert extended.data == {
        "suspension_id": s["id"],
        "reason": "external_tool",
        "previous_expires_at": digests.rfc3339(before),
        "expires_at": digests.rfc3339(after),
        "extend_seconds": 3600,
        "note": "the approver is out until noon",
    }
    announced = OutboxEvent.objects.get(run_id=s["run_id"], type="suspension.deadline_extended")
    assert announced.data["deadline"] == digests.rfc3339(after)
    assert announced.data["previous_deadline"] == digests.rfc3339(before)
    assert (announced.data["state"], announced.data["extended_by"]) == ("paused", "token:ops")
    assert "note" not in announced.data  # an operator's words stay in the audit trail
    # The version the engine held is still good: the pause resumes as before.
    assert resume(engine, s).status_code == 201


def test_until_sets_the_deadline_and_the_same_until_again_writes_nothing(db, operator):
    s = approval(ttl=600)
    until = s["expires_at"] + timedelta(hours=2)
    first = extend(operator, s, until=until.isoformat(), reason="waiting for finance")
    assert first.status_code == 200, first.content
    assert Approval.objects.get(pk=s["id"]).expires_at == until
    events = Event.objects.count()
    again = extend(operator, s, until=until.isoformat(), reason="waiting for finance")
    assert again.status_code == 200
    assert again.json()["expires_at"] == first.json()["expires_at"]
    assert Event.objects.count() == events


def test_an_idempotency_key_keeps_a_retried_extension_to_one(engine, operator):
    s = pause(engine, ttl_seconds=600)
    before = Suspension.objects.get(pk=s["id"]).expires_at
    body = {"seconds": 60, "reason": "one more minute"}
    url = f"/api/v1/suspensions/{s['id']}/extend"
    answers = [operator.post(url, body, format="json", HTTP_IDEMPOTENCY_KEY="ext-1") for _ in range(2)]
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[1]["Idempotent-Replayed"] == "true"
    assert Suspension.objects.get(pk=s["id"]).expires_at == before + timedelta(seconds=60)
    assert Event.objects.filter(run_id=s["run_id"], kind="deadline_extended").count() == 1


def test_an_approval_extension_moves_the_record_and_the_reminder_may_go_out_again(db, operator):
    s = approval(ttl=600)
    Approval.objects.filter(pk=s["id"]).update(reminded_at=db_now())
    assert extend(operator, s, seconds=600, reason="more time").status_code == 200
    record = Approval.objects.get(pk=s["id"])
    assert record.expires_at == s["expires_at"] + timedelta(seconds=600)
    assert record.reminded_at is None


@pytest.mark.parametrize(
    "body, field",
    [
        ({"reason": "no amount"}, "seconds"),
        ({"seconds": 60, "until": "2030-01-01T00:00:00Z", "reason": "both"}, "seconds"),
        ({"seconds": 60}, "reason"),
        ({"seconds": 60, "reason": " "}, "reason"),
        ({"seconds": 0, "reason": "zero"}, "seconds"),
        ({"seconds": "60", "reason": "a string"}, "seconds"),
        ({"seconds": 315_360_001, "reason": "too long"}, "seconds"),
        ({"until": "2030-01-01T00:00:00", "reason": "no offset"}, "until"),
        ({"until": "soon", "reason": "not a time"}, "until"),
        ({"seconds": 60, "reason": "x", "extra": 1}, "extra"),
    ],
)
def test_a_malformed_body_is_a_400_naming_the_field_and_writes_nothing(engine, operator, body, field):
    s = pause(engine, ttl_seconds=600)
    answer = refused(lambda: extend(operator, s, **body), 400, "invalid_request")
    assert field in answer["errors"]


def test_a_deadline_not_later_or_too_far_is_a_400_and_writes_nothing(engine, operator):
    s = pause(engine, ttl_seconds=600)
    current = Suspension.objects.get(pk=s["id"]).expires_at
    earlier = (current - timedelta(seconds=1)).isoformat()
    assert "until" in refused(lambda: extend(operator, s, until=earlier, reason="x"), 400, "invalid_request")["errors"]
    far = (db_now() + timedelta(days=3651)).isoformat()
    assert "until" in refused(lambda: extend(operator, s, until=far, reason="x"), 400, "invalid_request")["errors"]
    most = 315_360_000
    assert "seconds" in refused(lambda: extend(operator, s, seconds=most, reason="x"), 400, "invalid_request")["errors"]


def test_only_an_operator_of_the_scope_extends(engine, token, operator):
    s = pause(engine, ttl_seconds=600)
    refused(lambda: extend(engine, s, seconds=60, reason="mine"), 403, "forbidden")
    other = client(token("globex", ["operator"], "globex-ops"))
    refused(lambda: extend(other, s, seconds=60, reason="not mine"), 404, "not_found")


def test_a_pause_no_longer_live_is_409_invalid_state_and_writes_nothing(engine, operator):
    s = pause(engine, ttl_seconds=600)
    assert resume(engine, s).status_code == 201
    refused(lambda: extend(operator, s, seconds=60, reason="too late"), 409, "invalid_state")
    no_deadline = pause(engine, ttl_seconds=0)
    refused(lambda: extend(operator, no_deadline, seconds=60, reason="none"), 409, "invalid_state")
    past = pause(engine, ttl_seconds=600)
    Suspension.objects.filter(pk=past["id"]).update(expires_at=db_now() - timedelta(seconds=1))
    refused(lambda: extend(operator, past, seconds=60, reason="past"), 409, "invalid_state")


def test_a_decided_approval_is_409_invalid_state(db, token, operator):
    s = approval()
    approver = client(token("acme", ["approver"], "alice"))
    decided = post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    assert decided.status_code == 201, decided.content
    refused(lambda: extend(operator, s, seconds=60, reason="decided"), 409, "invalid_state")


def test_the_floor_duties_apply_the_requester_may_not_extend_its_own_approval(db, token):
    floor = ApprovalFloor(quorum=1, exclude_requester=True, on_expiry=[], require_linked_person=True)
    floor.created_at = floor.updated_at = db_now()
    floor.created_by = floor.updated_by = "root"
    floor.stamp_scope("acme")
    floor.save()
    s = approval()
    # The engine that asked also holds operator: under exclude_requester it may not keep its own request open.
    asker = client(token("acme", ["engine", "operator"], "engine"))
    refused(lambda: extend(asker, s, seconds=60, reason="mine"), 403, "person_required")
    unlinked = client(token("acme", ["operator"], "ops"))
    refused(lambda: extend(unlinked, s, seconds=60, reason="nobody"), 403, "person_required")


def test_separation_of_duties_refuses_the_requester(db, token):
    s = approval(exclude_requester=True)
    asker = client(token("acme", ["engine", "operator"], "engine"))
    body = problem(extend(asker, s, seconds=60, reason="mine"), 403, "separation_of_duties")
    assert "engine" in body["detail"]
