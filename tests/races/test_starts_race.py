"""Racing starts with real threads on their own connections: exactly one is granted execution."""

import json

import pytest

from suspensions.models import Admission, Start, Suspension
from tests.helpers import client, pause, post, version
from tests.race import race as release_together

RACERS = 8
ADMISSIONS = 10


def race(secret, admission_ids):
    """Each racer starts each admission in turn, all released together."""

    def act(n, admission_id):
        response = post(client(secret), f"/api/v1/admissions/{admission_id}/start", {})
        return response.status_code, json.loads(response.content)

    return dict(zip(admission_ids, release_together(RACERS, admission_ids, act)))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_eight_engines_starting_one_admission_at_once_grant_it_once(token):
    secret = token("acme", ["engine"], "engine")
    engine, bus = client(secret), client(token("acme", ["bus"], "bus"))
    ids = []
    for _ in range(ADMISSIONS):
        s = pause(engine, reason="agent_reply")
        body = {"version": version(s), "input": '"yes"', "reply_with": "q-1"}
        ids.append(post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body).json()["admission"]["id"])
    answers = race(secret, ids)
    for admission_id in ids:
        granted = [body for status, body in answers[admission_id] if status == 201]
        assert len(granted) == 1
        assert granted[0]["suspension"]["pending"][0]["reply_with"] == "q-1"
        refusals = [body for status, body in answers[admission_id] if status != 201]
        assert {(body["status"], body["code"]) for body in refusals} == {(409, "resume_already_started")}
        assert all(body["receipt"] == granted[0]["start"] and "suspension" not in body for body in refusals)
        assert Start.objects.filter(admission_id=admission_id).count() == 1
        assert Admission.objects.get(pk=admission_id).state == "started"
    assert Suspension.objects.count() == 0
