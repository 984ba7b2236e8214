"""Racing approvers with real threads on their own connections: one decision wins, never both."""

import json
import threading

import pytest
from django.db import connection

from suspensions.models import Admission, Approval, Run
from tests.helpers import client, pause, post, version

APPROVERS = 8
PAUSES = 20


def decision_of(n):
    """Even approvers approve, odd ones deny; each note names its author."""
    if n % 2 == 0:
        return {"decision": "approve", "reason": f"note from approver {n}"}
    return {"decision": "deny", "reason": f"note from approver {n}"}


def race(secrets, pauses):
    """Each approver decides each pause in turn, all released together; returns answers[pause id][approver]."""
    barrier = threading.Barrier(len(secrets), timeout=60)
    answers = {s["id"]: [None] * len(secrets) for s in pauses}

    def approver(n):
        try:
            c = client(secrets[n])
            for s in pauses:
                barrier.wait()
                body = {"version": version(s), **decision_of(n)}
                response = post(c, f"/api/v1/approvals/{s['id']}/decide", body)
                answers[s["id"]][n] = (response.status_code, response.json())
        finally:
            connection.close()

    threads = [threading.Thread(target=approver, args=(n,)) for n in range(len(secrets))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def assert_one_decision(s, answers):
    winners = [n for n, (status, _) in enumerate(answers) if status == 201]
    assert len(winners) == 1, answers
    winner = winners[0]
    losers = [body for n, (status, body) in enumerate(answers) if n != winner]
    assert {body["code"] for body in losers} <= {"not_suspended", "admission_conflict"}
    assert all(status == 409 for n, (status, _) in enumerate(answers) if n != winner)
    # No loser learns what the winner wrote.
    assert all(f"approver {winner}" not in json.dumps(body) for body in losers)
    run = Run.objects.get(pk=s["run_id"])
    approval = Approval.objects.get(suspension_id=s["id"])
    admissions = Admission.objects.filter(run_id=run.id).count()
    expected = {
        "approve": ("running", 1, "approved"),
        "deny": ("failed", 0, "denied"),
    }[decision_of(winner)["decision"]]
    assert (run.state, admissions, approval.status) == expected
    assert (run.revision, approval.decided_by) == (s["run_revision"] + 1, f"token:approver-{winner}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_eight_approvers_approving_and_denying_at_once_leave_exactly_one_decision(token):
    engine = client(token("acme", ["engine"], "engine"))
    secrets = [token("acme", ["approver"], f"approver-{n}") for n in range(APPROVERS)]
    pauses = [pause(engine, reason="approval") for _ in range(PAUSES)]
    answers = race(secrets, pauses)
    for s in pauses:
        assert_one_decision(s, answers[s["id"]])
