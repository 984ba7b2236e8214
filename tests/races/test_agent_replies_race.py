"""Racing bus admissions with real threads on their own connections (docs/api.md, "4. Claims and recovery")."""

import json

import pytest

from suspensions.models import Admission, Run
from tests.helpers import client, pause, post, version
from tests.race import race as release_together

RACERS = 8
PAUSES = 10


def race(secret, pauses, input_of):
    """Each racer admits input_of(racer) to each pause in turn, all released together."""

    def act(n, s):
        body = {"version": version(s), "input": input_of(n), "reply_with": "q-1"}
        response = post(client(secret), f"/api/v1/runs/{s['run_id']}/admissions", body)
        return response.status_code, response.content

    return {s["id"]: row for s, row in zip(pauses, release_together(RACERS, pauses, act))}


@pytest.fixture
def paused(transactional_db, token):
    engine = client(token("acme", ["engine"], "engine"))
    return token("acme", ["bus"], "bus"), [pause(engine, reason="agent_reply") for _ in range(PAUSES)]


def assert_claimed_once(s):
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("running", s["run_revision"] + 1)
    assert Admission.objects.filter(run_id=run.id).count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_identical_admissions_at_once_give_one_fresh_receipt_and_byte_identical_replays(paused):
    secret, pauses = paused
    answers = race(secret, pauses, lambda n: '{"answer": 42}')
    for s in pauses:
        statuses = sorted(status for status, _ in answers[s["id"]])
        assert statuses == [200] * (RACERS - 1) + [201]
        fresh = next(json.loads(content) for status, content in answers[s["id"]] if status == 201)
        replays = {content for status, content in answers[s["id"]] if status == 200}
        assert len(replays) == 1  # byte for byte
        assert json.loads(replays.pop())["admission"] == {**fresh["admission"], "fresh": False}
        assert_claimed_once(s)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_different_admissions_at_once_give_one_winner_and_admission_conflicts(paused):
    secret, pauses = paused
    answers = race(secret, pauses, lambda n: f'{{"answer": {n}}}')
    for s in pauses:
        bodies = [(status, json.loads(content)) for status, content in answers[s["id"]]]
        winners = [body for status, body in bodies if status == 201]
        assert len(winners) == 1
        digest = winners[0]["admission"]["request_digest"]
        losers = [body for status, body in bodies if status != 201]
        assert {(body["status"], body["code"], body["admitted_digest"]) for body in losers} == {
            (409, "admission_conflict", digest)
        }
        assert_claimed_once(s)
