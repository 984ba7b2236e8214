"""The order of a door's steps (services/claiming.py), where a door's steps were rearranged to pass values instead
of fields: a vote's step 3 (its replay) and step 4 (duties, edits) refuse in the one order they always had, and
refuse before anything is written (docs/exactly-once.md, "6. The other doors, and the sweep")."""

from dataclasses import FrozenInstanceError
from datetime import timedelta

import pytest

from suspensions import services
from suspensions.exceptions import InvalidRequest, SeparationOfDuties, SuspensionExpired, VoteMismatch
from suspensions.models import Approval, ApprovalVote, Event, Run, RunState, Suspension
from suspensions.services.claims import Version
from suspensions.services.votes import Vote
from tests.factories import ApprovalPauseFactory, principal

pytestmark = pytest.mark.django_db


def version_of(s):
    return Version(run_id=s.run_id, suspension_id=s.id, run_revision=s.run.revision)


def quorum_of_two(**more):
    s = ApprovalPauseFactory()
    Approval.objects.filter(suspension_id=s.id).update(quorum=2, **more)
    return s


def vote(s, who, **kwargs):
    return services.approve(principal=principal(who), suspension_id=s.id, version=version_of(s), **kwargs)


def written(s):
    return (ApprovalVote.objects.filter(suspension_id=s.id).count(), Event.objects.filter(run_id=s.run_id).count())


def test_the_same_persons_identical_vote_again_is_its_replay_and_writes_nothing():
    s = quorum_of_two()
    first = vote(s, "user:alice", note="ok")
    before = written(s)
    again = vote(s, "user:alice", note="ok")
    assert (first.fresh, again.fresh, again.voters, again.quorum) == (True, False, ["user:alice"], 2)
    assert written(s) == before == (1, 1)


def test_the_same_persons_other_vote_is_vote_mismatch_and_writes_nothing():
    s = quorum_of_two()
    vote(s, "user:alice", note="ok")
    with pytest.raises(VoteMismatch):
        vote(s, "user:alice", note="on second thoughts")
    assert written(s) == (1, 1)


def test_past_the_deadline_the_same_vote_again_is_expired_not_replayed():
    """The deadline is step 3's for a vote: a pause past it is the sweeper's, even for a vote already cast."""
    s = quorum_of_two()
    vote(s, "user:alice", note="ok")
    past = s.created_at - timedelta(seconds=1)
    Suspension.objects.filter(pk=s.pk).update(expires_at=past, deadline=past)
    with pytest.raises(SuspensionExpired):
        vote(s, "user:alice", note="ok")
    assert written(s) == (1, 1)
    assert Run.objects.get(pk=s.run_id).state == RunState.PAUSED


def test_duties_are_refused_before_the_edits_are_read():
    """The requester's vote with a broken edit is refused for who it is (403), not for the edit (400)."""
    s = quorum_of_two(exclude_requester=True)
    broken = [{"id": "no-such-call", "arguments": "{}"}]
    with pytest.raises(SeparationOfDuties):
        vote(s, "token:engine", edits=broken)
    with pytest.raises(InvalidRequest):
        vote(s, "user:alice", edits=broken)
    assert written(s) == (0, 0)


def test_a_door_holds_only_its_request_and_cannot_be_changed():
    door = Vote(version=Version(run_id=None, suspension_id=None, run_revision=1), note="", edits=None)
    with pytest.raises(FrozenInstanceError):
        door.note = "changed"  # type: ignore[misc]
