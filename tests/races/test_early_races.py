"""Races of early results (docs/api.md, "`POST /runs/{id}/early-results` — a result before its pause") with real
threads, each on its own connection: an early result against its pause, and a callback URL against the API's own resume.
Exactly one resume either way."""

from collections import Counter

import pytest

from suspensions.models import Admission, Run, Start
from tests.helpers import call, client, continuation, post, register, version
from tests.race import race

ROUNDS = 20
RESULTS = [{"call_id": "c1", "content": {"rows": 1}}]


def assert_resumed_once(run_id):
    assert Run.objects.get(pk=run_id).state == "running"
    assert Admission.objects.filter(run_id=run_id).count() == 1
    assert Start.objects.filter(run_id=run_id).count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_an_early_result_racing_its_pause_gives_exactly_one_resume_in_either_order(token):
    secret = token("acme", ["engine"], "racer")
    runs = [register(client(secret)) for _ in range(ROUNDS)]
    pause = {"revision": 1, "reason": "external_tool", "pending": [call("c1")], "continuation": continuation()}

    def act(n, run):
        if n == 0:
            response = post(client(secret), f"/api/v1/runs/{run['id']}/early-results", RESULTS[0])
        else:
            response = post(client(secret), f"/api/v1/runs/{run['id']}/suspend", pause)
        return response.status_code, response.json()

    answers = race(2, runs, act)
    for run, (kept, paused) in zip(runs, answers, strict=True):
        assert (kept[0], paused[0]) == (201, 201)
        assert ("resume" in kept[1]) + ("resume" in paused[1]) == 1
        resumed = kept[1].get("resume") or paused[1]["resume"]
        assert resumed["results"] == RESULTS and resumed["fresh"] is True
        assert_resumed_once(run["id"])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("same_body", [True, False])
def test_a_callback_and_the_api_resuming_at_once_give_one_winner(token, same_body):
    secret = token("acme", ["engine"], "racer")
    pauses = []
    for _ in range(ROUNDS):
        run = register(client(secret))
        body = {"revision": 1, "reason": "external_tool", "pending": [call("c1")], "continuation": continuation()}
        pauses.append(post(client(secret), f"/api/v1/runs/{run['id']}/suspend", {**body, "callback": True}).json())

    def act(n, s):
        results = RESULTS if same_body or n == 0 else [{"call_id": "c1", "content": "other"}]
        body = {"version": version(s), "results": results}
        if n == 0:
            response = post(client("no-token"), s["callback_url"], body)  # a wrong bearer is never read there
        else:
            response = post(client(secret), f"/api/v1/runs/{s['run_id']}/resume", body)
        return response.status_code, response.json()

    answers = race(2, pauses, act)
    loser = 200 if same_body else 409
    for s, pair in zip(pauses, answers, strict=True):
        assert Counter(status for status, _ in pair) == {201: 1, loser: 1}
        if not same_body:
            assert {body["code"] for status, body in pair if status == 409} == {"admission_conflict"}
        assert_resumed_once(s["run_id"])
