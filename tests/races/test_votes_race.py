"""Racing quorum votes with real threads on their own connections (docs/policies.md, "Quorum and separation of duties").

However votes from different approvers interleave, a quorum approval admits
exactly once, every vote that was answered 202 or 201 is recorded, and no
vote is lost or counted twice.
"""

import pytest

from suspensions.models import Admission, ApprovalVote, Event, Run
from tests.helpers import call, client, continuation, post, register, version
from tests.race import race

# Every run these races move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")

APPROVERS = 5
PAUSES = 8


def quorum_pause(engine, quorum):
    run = register(engine)
    body = {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call("c1")],
        "continuation": continuation(),
        "approval": {"quorum": quorum},
    }
    response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def vote(secret, s):
    response = post(
        client(secret), f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"}
    )
    return response.status_code, response.json()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("quorum", [2, 3, 5])
def test_racing_votes_admit_exactly_once_and_record_every_accepted_vote(token, quorum):
    engine = client(token("acme", ["engine"], "engine"))
    secrets = [token("acme", ["approver"], f"voter-{n}") for n in range(APPROVERS)]
    pauses = [quorum_pause(engine, quorum) for _ in range(PAUSES)]
    answers = race(APPROVERS, pauses, lambda n, s: vote(secrets[n], s))
    for s, round_answers in zip(pauses, answers, strict=True):
        statuses = sorted(status for status, _ in round_answers)
        # quorum - 1 votes short of it, one that admits, the rest too late.
        assert statuses == [201] + [202] * (quorum - 1) + [409] * (APPROVERS - quorum), round_answers
        late = {body["code"] for status, body in round_answers if status == 409}
        assert late <= {"admission_conflict"}
        accepted = {f"token:voter-{n}" for n, (status, _) in enumerate(round_answers) if status in (201, 202)}
        votes = ApprovalVote.objects.filter(suspension_id=s["id"])
        assert set(votes.values_list("voter", flat=True)) == accepted and votes.count() == quorum
        admission = Admission.objects.get(suspension_id=s["id"])
        assert admission.actor == next(
            f"token:voter-{n}" for n, (status, _) in enumerate(round_answers) if status == 201
        )
        run = Run.objects.get(pk=s["run_id"])
        assert (run.state, run.revision) == ("running", s["run_revision"] + 1)
        kinds = list(Event.objects.filter(run_id=s["run_id"]).values_list("kind", flat=True))
        assert kinds.count("voted") == quorum and kinds.count("admitted") == 1
