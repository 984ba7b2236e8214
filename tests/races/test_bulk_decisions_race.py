"""A list of decisions racing single decisions on the same approvals, on real concurrent connections: each approval
gets exactly one outcome (docs/api.md, "`POST /approvals/decide`: a list of decisions")."""

import pytest

from suspensions.models import Admission, Approval, Run
from tests.helpers import client, pause, post, version
from tests.race import race

SINGLES = 3
ROUNDS = 3
PER_ROUND = 12


def decision_of(n):
    """Racer 0 sends the list (approve); single racers 1 and 3 deny, racer 2 approves, each note its own."""
    if n % 2 == 1:
        return {"decision": "deny", "reason": f"no from racer {n}"}
    return {"decision": "approve", "reason": f"yes from racer {n}"}


def act(clients):
    def decide(n, pauses):
        c = clients[n]
        if n == 0:
            items = [{"approval_id": s["id"], "version": version(s), **decision_of(0)} for s in pauses]
            response = post(c, "/api/v1/approvals/decide", {"items": items})
            assert response.status_code == 200, response.content[:500]
            return {r["approval_id"]: r["status"] for r in response.json()["results"]}
        # The singles walk the list from the other end, so every approval meets the list somewhere.
        answers = {}
        for s in reversed(pauses) if n % 2 else pauses[n:] + pauses[:n]:
            response = post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), **decision_of(n)})
            answers[s["id"]] = response.status_code
        return answers

    return decide


def assert_one_outcome(s, answers):
    statuses = [by_racer[s["id"]] for by_racer in answers]
    winners = [n for n, status in enumerate(statuses) if status == 201]
    assert len(winners) == 1, statuses
    assert all(status == 409 for n, status in enumerate(statuses) if n != winners[0]), statuses
    run, record = Run.objects.get(pk=s["run_id"]), Approval.objects.get(suspension_id=s["id"])
    admitted = Admission.objects.filter(run_id=run.id).count()
    if decision_of(winners[0])["decision"] == "approve":
        assert (run.state, admitted, record.status) == ("running", 1, "approved")
    else:
        assert (run.state, admitted, record.status) == ("failed", 0, "denied")
    assert record.decided_by == f"token:racer-{winners[0]}"
    assert record.note == decision_of(winners[0])["reason"]
    assert run.revision == s["run_revision"] + 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_list_racing_single_decisions_leaves_exactly_one_outcome_per_approval(token):
    engine = client(token("acme", ["engine"], "engine"))
    clients = [client(token("acme", ["approver"], f"racer-{n}")) for n in range(SINGLES + 1)]
    rounds = [[pause(engine, reason="approval") for _ in range(PER_ROUND)] for _ in range(ROUNDS)]
    answers = race(SINGLES + 1, rounds, act(clients))
    for pauses, by_racer in zip(rounds, answers, strict=True):
        for s in pauses:
            assert_one_outcome(s, by_racer)
