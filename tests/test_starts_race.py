"""Racing starts with real threads on their own connections: exactly one is granted execution."""

import json
import threading

import pytest
from django.db import connection

from suspensions.models import Admission, Start, Suspension
from tests.helpers import client, pause, post, version

RACERS = 8
ADMISSIONS = 10


def race(secret, admission_ids):
    """Each racer starts each admission in turn, all released together."""
    barrier = threading.Barrier(RACERS, timeout=60)
    answers = {a: [None] * RACERS for a in admission_ids}

    def racer(n):
        try:
            c = client(secret)
            for admission_id in admission_ids:
                barrier.wait()
                response = post(c, f"/api/v1/admissions/{admission_id}/start", {})
                answers[admission_id][n] = (response.status_code, json.loads(response.content))
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(n,)) for n in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


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
