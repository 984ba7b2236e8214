"""Creates racing with one Idempotency-Key (docs/api.md, "4. Claims and recovery"): real threads, each on its own
connection.

Every racer sends the identical keyed create at once: exactly one row is
created, and every racer gets the same answer (the first one's; the others
wait on the key's unique index while it is being made, then replay it).
"""

import json

import pytest

from suspensions.models import IdempotencyKey, Run, WebhookEndpoint
from tests.helpers import client
from tests.race import race

RACERS = 6
ROUNDS = 5


def keyed_race(secret, url, body):
    """Every racer POSTs `body` to `url` with each round's key; answers[round] = [(status, body, replayed)]."""

    def act(n, key):
        response = client(secret).post(
            url, data=json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY=key
        )
        return response.status_code, response.json(), response.get("Idempotent-Replayed")

    return race(RACERS, [f"key-{i}" for i in range(ROUNDS)], act)


def assert_one_answer(answers):
    for round_ in answers:
        assert {(status, json.dumps(body, sort_keys=True)) for status, body, _ in round_} == {
            (round_[0][0], json.dumps(round_[0][1], sort_keys=True))
        }
        assert sorted(replayed or "" for _, _, replayed in round_) == [""] + ["true"] * (RACERS - 1)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_identical_registers_with_one_key_at_once_register_one_run_and_answer_it_to_all(token):
    answers = keyed_race(token("acme", ["engine"], "engine"), "/api/v1/runs", {"agent_id": "a1"})
    assert_one_answer(answers)
    assert {round_[0][0] for round_ in answers} == {201}
    assert sorted(str(pk) for pk in Run.objects.values_list("id", flat=True)) == sorted(r[0][1]["id"] for r in answers)
    assert IdempotencyKey.objects.count() == ROUNDS


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_identical_webhook_creates_with_one_key_at_once_create_one_endpoint_with_one_secret(token):
    body = {"scope": "acme", "url": "http://127.0.0.1:1/hooks", "event_types": []}
    answers = keyed_race(token("acme", ["operator"], "ops"), "/api/v1/webhooks", body)
    assert_one_answer(answers)
    assert WebhookEndpoint.objects.count() == ROUNDS
    assert {e.secret for e in WebhookEndpoint.objects.all()} == {r[0][1]["secret"] for r in answers}
