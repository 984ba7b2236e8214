"""The one claim path (services/claiming.py), driven directly with factory-built rows and a door of the test's own."""

from dataclasses import dataclass
from datetime import timedelta

import pytest

from suspensions import services
from suspensions.exceptions import (
    AdmissionConflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    NotSuspended,
    RequiresApproval,
    SuspensionExpired,
    VersionConflict,
)
from suspensions.models import Admission, AdmissionSource, Event, Run, RunState, Suspension
from suspensions.services.claiming import AdmissionDoor, through
from suspensions.services.claims import Claimed, Locked, Version, check_deadline, write_events
from tests.factories import ApprovalPauseFactory, SuspensionFactory, principal

pytestmark = pytest.mark.django_db


def version_of(s, revision=None):
    return Version(run_id=s.run_id, suspension_id=s.id, run_revision=revision or s.run.revision)


@dataclass(frozen=True)
class Probe(AdmissionDoor[Suspension]):
    """The smallest claiming door: the deadline, then admit the input and write the event (its version and input
    are AdmissionDoor's, and so is its step 3)."""

    role: str = "bus"
    door: str | None = "admit"

    def check(self, t: Locked, live: Suspension) -> Suspension:
        check_deadline(live, t.now)
        return live

    def write(self, t: Locked, live: Suspension) -> Claimed:
        admission, admitted = self.admit(t, live, AdmissionSource.AGENT_REPLY)
        write_events(t.writes, admitted)
        return Claimed(run=t.run, admission=admission)


def claim_with(s, input_text='"yes"', who=None, door="admit", **kwargs):
    probe = Probe(
        version=kwargs.pop("version", version_of(s)), input_text=input_text, role=kwargs.pop("role", "bus"), door=door
    )
    return through(probe, principal=who or principal(), run_id=s.run_id)


def test_a_fresh_claim_moves_the_run_to_running_and_binds_the_input():
    s = SuspensionFactory(reason="agent_reply", reply_with="q-1")
    c = claim_with(s)
    run = Run.objects.get(pk=s.run_id)
    assert (c.fresh, run.state, run.revision) == (True, RunState.RUNNING, 3)
    admission = Admission.objects.get()
    assert (admission.input, admission.claimed_revision, admission.version_revision) == ('"yes"', 3, 2)
    assert Event.objects.get().kind == "admitted"


def test_the_identical_claim_again_replays_the_admission_and_writes_nothing():
    s = SuspensionFactory(reason="agent_reply")
    first = claim_with(s)
    again = claim_with(s)
    assert (again.fresh, again.admission.pk) == (False, first.admission.pk)
    assert (Admission.objects.count(), Event.objects.count()) == (1, 1)


def test_a_different_input_for_the_claimed_pause_is_an_admission_conflict():
    s = SuspensionFactory(reason="agent_reply")
    claim_with(s)
    with pytest.raises(AdmissionConflict):
        claim_with(s, '"no"')


def test_a_stale_revision_is_a_version_conflict_and_writes_nothing():
    s = SuspensionFactory(reason="agent_reply")
    with pytest.raises(VersionConflict):
        claim_with(s, version=version_of(s, revision=1))
    assert (Admission.objects.count(), Run.objects.get().state) == (0, RunState.PAUSED)


def test_a_claim_at_the_deadline_belongs_to_the_sweeper():
    s = SuspensionFactory(reason="agent_reply", ttl=timedelta(seconds=-1))
    with pytest.raises(SuspensionExpired):
        claim_with(s)
    assert Admission.objects.count() == 0


def test_the_door_refuses_a_reason_it_may_not_answer():
    s = ApprovalPauseFactory()
    with pytest.raises(RequiresApproval):
        claim_with(s, door="one_shot", role="engine")


def test_the_role_is_checked_in_the_runs_scope():
    s = SuspensionFactory(reason="agent_reply")
    with pytest.raises(Forbidden):
        claim_with(s, who=principal("token:reader", "acme", "auditor"))


def test_a_run_outside_the_principals_scopes_is_not_found():
    s = SuspensionFactory(reason="agent_reply", scope="globex")
    with pytest.raises(NotFound):
        claim_with(s)


def test_a_version_naming_another_run_is_refused_by_the_service_itself():
    s = SuspensionFactory()
    other = SuspensionFactory()
    with pytest.raises(InvalidRequest):
        services.resume_run(
            principal=principal(), run_id=other.run_id, version=version_of(s), results=[{"call_id": "c1", "content": 1}]
        )
    assert Admission.objects.count() == 0


def test_the_loser_of_a_decided_approval_is_not_suspended():
    s = ApprovalPauseFactory()
    v = version_of(s)
    services.deny_approval(principal=principal("user:alice"), suspension_id=s.id, version=v, reason="no")
    with pytest.raises(NotSuspended):
        services.approve(principal=principal("user:bob"), suspension_id=s.id, version=v)


def test_decide_serves_approve_and_deny_and_refuses_a_denial_without_a_reason():
    s = ApprovalPauseFactory()
    with pytest.raises(InvalidRequest):
        services.decide(principal=principal(), suspension_id=s.id, version=version_of(s), decision="deny", reason=" ")
    decision = services.decide(principal=principal(), suspension_id=s.id, version=version_of(s), decision="approve")
    assert isinstance(decision, services.Claimed) and decision.fresh
