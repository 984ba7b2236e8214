"""On expiry (docs/policies.md, "What happens at the deadline") through the real sweep: expire, deny, and escalate once
then expire."""

from datetime import timedelta

import pytest

from suspensions import digests, services
from suspensions.models import Approval, Event, OutboxEvent, Run, Suspension
from suspensions.principals import Principal
from suspensions.services.claims import Version
from tests.helpers import call, continuation, member, notify_all

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("chains_intact")]
SCOPE = "acme/support"
ENGINE = Principal(name="token:engine", grants=((SCOPE, frozenset({"engine"})),))
APPROVER = Principal(name="token:ann", grants=((SCOPE, frozenset({"approver"})),))


def paused(on_expiry, ttl=60):
    run = services.register_run(principal=ENGINE, agent_id="refund-agent", scope=SCOPE)
    return services.suspend_run(
        principal=ENGINE,
        run_id=run.id,
        revision=run.revision,
        reason="approval",
        pending=[call("c1", "send_refund")],
        continuation=continuation(),
        ttl_seconds=ttl,
        approval={"on_expiry": on_expiry},
    )


def sweep_at(moment):
    return services.expire_suspensions(now=moment)


def events(s):
    return list(Event.objects.filter(run_id=s.run_id).order_by("id").values_list("kind", "actor", "revision", "data"))


def test_on_expiry_expire_is_the_plain_expiry(db):
    s = paused("expire")
    result = sweep_at(s.expires_at + timedelta(seconds=1))
    run = Run.objects.get(pk=s.run_id)
    assert (run.state, run.revision, result.expired, result.escalated) == ("expired", 3, 1, 0)
    assert Approval.objects.get(pk=s.id).status == "expired"


def test_on_expiry_deny_fails_the_run_as_rejected_and_records_it_on_the_expiry_event(db):
    s = paused("deny")
    result = sweep_at(s.expires_at + timedelta(seconds=1))
    run = Run.objects.get(pk=s.run_id)
    assert (run.state, run.revision, run.error) == ("failed", 3, "rejected: nobody answered in time")
    assert result.expired == 1
    record = Approval.objects.get(pk=s.id)
    assert (record.status, record.decided_by, record.note) == ("denied", "sweeper", "nobody answered in time")
    kind, actor, revision, data = events(s)[-1]
    assert (kind, actor, revision, data["on_expiry"]) == ("expired", "sweeper", 3, "deny")
    announced = OutboxEvent.objects.get(run_id=s.run_id, type="suspension.expired")
    assert (announced.data["state"], announced.data["on_expiry"]) == ("failed", "deny")
    assert not Suspension.objects.filter(pk=s.id).exists()


def test_on_expiry_escalate_moves_the_deadline_once_then_the_pause_expires_at_the_new_one(db):
    s = paused({"escalate": {"extend_seconds": 600}})
    first_deadline = s.expires_at
    result = sweep_at(first_deadline + timedelta(seconds=1))
    assert (result.expired, result.escalated) == (0, 1)
    run = Run.objects.get(pk=s.run_id)
    assert (run.state, run.revision) == ("paused", 2)  # no revision change: the approvers' version stays valid
    moved = first_deadline + timedelta(seconds=600)
    assert Suspension.objects.get(pk=s.id).expires_at == moved
    record = Approval.objects.get(pk=s.id)
    assert (record.status, record.expires_at, record.reminded_at) == ("pending", moved, None)
    assert record.escalated_at is not None
    kind, actor, revision, data = events(s)[-1]
    assert (kind, actor, revision) == ("escalated", "sweeper", 2)
    assert data["previous_expires_at"] == digests.rfc3339(first_deadline)
    assert data["expires_at"] == digests.rfc3339(moved)
    announced = OutboxEvent.objects.get(run_id=s.run_id, type="approval.escalated")
    assert announced.data["deadline"] == digests.rfc3339(moved)

    # Before the new deadline nothing happens; at it, the pause expires normally (it escalates only once).
    assert sweep_at(moved - timedelta(seconds=1)).expired == 0
    assert sweep_at(moved + timedelta(seconds=1)).expired == 1
    run = Run.objects.get(pk=s.run_id)
    assert (run.state, run.revision) == ("expired", 3)
    assert Approval.objects.get(pk=s.id).status == "expired"


def test_an_escalated_approval_can_still_be_decided_with_the_version_the_approvers_saw(db):
    s = paused({"escalate": {"extend_seconds": 10**6}})
    sweep_at(s.expires_at + timedelta(seconds=1))
    # The new deadline lies far in the future: the real clock is before it.
    version = Version(run_id=s.run_id, suspension_id=s.id, run_revision=2)
    decided = services.decide(principal=APPROVER, suspension_id=s.id, version=version, decision="approve")
    assert decided.fresh and decided.run.state == "running"


def test_an_escalation_mails_the_approvers_of_the_parent_scope(transactional_db, mailoutbox):
    member("up", {"acme": ["approver"]}, is_staff=True, email="up@example.com")
    member("here", {SCOPE: ["approver"]}, is_staff=True, email="here@example.com")
    s = paused({"escalate": {"extend_seconds": 600}})
    sweep_at(s.expires_at + timedelta(seconds=1))
    notify_all()
    escalated = [m for m in mailoutbox if m.subject.startswith("Escalated: ")]
    assert [m.to for m in escalated] == [["up@example.com"]]
    assert escalated[0].subject.startswith("Escalated: Approval needed: refund-agent")
