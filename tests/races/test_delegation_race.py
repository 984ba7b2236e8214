"""A person and their delegate deciding the same approval at once, on real connections (docs/identity.md,
"Delegation"): whichever order the database gives them, one vote is counted for that person, never two."""

from datetime import timedelta

import pytest
from django.utils import timezone

from suspensions.models import Admission, ApprovalVote, Event
from suspensions.tokens import create_token
from tests.helpers import approval_pause, client, member, post
from tests.race import race

pytestmark = pytest.mark.usefixtures("chains_intact")

PAUSES = 6


def decide(secret, record, **body):
    version = {"run_id": str(record.run_id), "suspension_id": str(record.pk), "run_revision": 2}
    response = post(
        client(secret), f"/api/v1/approvals/{record.pk}/decide", {"version": version, "decision": "approve", **body}
    )
    return response.status_code, response.json()


def people():
    alice = member("alice", {"acme": ["approver"]}, is_staff=True)
    bob = member("bob", {}, is_staff=True)
    erin = member("erin", {"acme": ["engine"]}, is_staff=True)
    _, alices = create_token(scope="acme", roles=["approver"], name="alice-phone", user=alice)
    _, bobs = create_token(scope="globex", roles=["approver"], name="bob-phone", user=bob)
    body = {"to": "bob", "scope": "acme", "ends_at": (timezone.now() + timedelta(days=1)).isoformat()}
    assert post(client(alices), "/api/v1/delegations", body).status_code == 201
    return alice, erin, alices, bobs


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("quorum", [1, 2])
def test_the_delegator_and_the_delegate_at_once_count_one_vote_for_that_person(quorum):
    alice, erin, alices, bobs = people()
    pauses = [approval_pause("acme/support", by=erin, quorum=quorum) for _ in range(PAUSES)]

    def act(n, record):
        return decide(alices, record) if n == 0 else decide(bobs, record, acting_for="alice")

    answers = race(2, pauses, act)
    first = 201 if quorum == 1 else 202
    for record, round_answers in zip(pauses, answers, strict=True):
        # One of them is the vote; the other finds that person's identical vote and replays it.
        assert sorted(status for status, _ in round_answers) == [200, first], round_answers
        [vote] = ApprovalVote.objects.filter(suspension_id=record.pk)
        assert vote.voter_key == f"user#{alice.pk}"
        assert Admission.objects.filter(suspension_id=record.pk).count() == (1 if quorum == 1 else 0)
        kinds = list(Event.objects.filter(run_id=record.run_id).values_list("kind", flat=True))
        assert kinds.count("admitted") == (1 if quorum == 1 else 0)
        assert kinds.count("voted") == (0 if quorum == 1 else 1)


@pytest.mark.django_db(transaction=True)
def test_the_delegator_and_the_delegate_with_different_votes_at_once_one_stands_and_the_other_is_refused():
    _, erin, alices, bobs = people()
    pauses = [approval_pause("acme/support", by=erin, quorum=2) for _ in range(PAUSES)]

    def act(n, record):
        return decide(alices, record, reason="mine") if n == 0 else decide(bobs, record, acting_for="alice", reason="b")

    answers = race(2, pauses, act)
    for record, round_answers in zip(pauses, answers, strict=True):
        assert sorted(status for status, _ in round_answers) == [202, 409], round_answers
        assert {body["code"] for status, body in round_answers if status == 409} == {"vote_mismatch"}
        [vote] = ApprovalVote.objects.filter(suspension_id=record.pk)
        winner = 0 if round_answers[0][0] == 202 else 1
        assert (vote.voter, vote.acting_for) == [("token:alice-phone", ""), ("token:bob-phone", "user:alice")][winner]
