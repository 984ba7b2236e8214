"""Racing resumers with real threads, each on its own database connection (exactly one wins:
docs/api.md, "2. Lifecycle").

Sixteen threads are released together by a barrier against one paused run,
once per pause, over 25 pauses per test (50 in the file).
"""

from collections import Counter

import pytest

from suspensions.models import Admission, Run, Start
from tests.helpers import client, pause, post, version
from tests.race import race as release_together

# Every run these races move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = pytest.mark.usefixtures("chains_intact")

RACERS = 16
PAUSES = 25


def race(secret, pauses, body_of):
    """Every racer posts body_of(racer, pause) to each pause in turn, all released together; answers by pause id."""

    def act(n, s):
        response = post(client(secret), f"/api/v1/runs/{s['run_id']}/resume", body_of(n, s))
        return response.status_code, response.json()

    return {s["id"]: row for s, row in zip(pauses, release_together(RACERS, pauses, act))}


@pytest.fixture
def paused(transactional_db, token):
    secret = token("acme", ["engine"], "racer")
    c = client(secret)
    return secret, [pause(c) for _ in range(PAUSES)]


def assert_claimed_once(s):
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("running", s["run_revision"] + 1)
    assert Admission.objects.filter(run_id=run.id).count() == 1
    assert Start.objects.filter(run_id=run.id).count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_sixteen_different_resumes_of_one_pause_give_one_winner_and_fifteen_conflicts(paused):
    secret, pauses = paused
    answers = race(secret, pauses, lambda n, s: {"version": version(s), "results": [{"call_id": "c1", "content": n}]})
    for s in pauses:
        statuses = Counter(status for status, _ in answers[s["id"]])
        assert statuses == {201: 1, 409: RACERS - 1}
        losers = [body for status, body in answers[s["id"]] if status == 409]
        assert {body["code"] for body in losers} == {"admission_conflict"}
        assert all("suspension" not in body and "results" not in body for body in losers)
        winner = next(body for status, body in answers[s["id"]] if status == 201)
        assert {body["admitted_digest"] for body in losers} == {winner["admission"]["request_digest"]}
        assert_claimed_once(s)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_sixteen_identical_resumes_of_one_pause_give_one_fresh_claim_and_fifteen_replays(paused):
    secret, pauses = paused
    answers = race(
        secret, pauses, lambda n, s: {"version": version(s), "results": [{"call_id": "c1", "content": "ok"}]}
    )
    for s in pauses:
        statuses = Counter((status, body["fresh"]) for status, body in answers[s["id"]])
        assert statuses == {(201, True): 1, (200, False): RACERS - 1}
        replays = [body for status, body in answers[s["id"]] if status == 200]
        assert all({"suspension", "results", "input"}.isdisjoint(body) for body in replays)
        winner = next(body for status, body in answers[s["id"]] if status == 201)
        assert winner["suspension"]["id"] == s["id"]
        assert all(body["start"] == winner["start"] for body in replays)
        assert_claimed_once(s)
