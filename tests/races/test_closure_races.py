"""T10 under contention: racing closures, and a closure racing the worker's own completion."""

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from suspensions.models import ClosureReceipt, Run
from tests.closure_setup import closure_body, started
from tests.helpers import client, post

RACERS = 6


def race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run each call in its own thread and connection, released together."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def racer(i: int) -> None:
        try:
            barrier.wait()
            results[i] = calls[i]()
        finally:
            connection.close()

    threads = [threading.Thread(target=racer, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def closing(secret: str, run_id: Any, body: dict[str, Any]) -> Callable[[], Any]:
    return lambda: post(client(secret), f"/api/v1/runs/{run_id}/closures", body)


@pytest.mark.django_db(transaction=True)
def test_racing_identical_closures_create_one_receipt_and_replay_it(token):
    secret = token("acme", ["operator"], "ops")
    claimed = started()
    body = closure_body(claimed)
    responses = race([closing(secret, claimed.run.id, body) for _ in range(RACERS)])
    assert sorted(r.status_code for r in responses) == [200] * (RACERS - 1) + [201]
    assert sorted(r.json()["fresh"] for r in responses) == [False] * (RACERS - 1) + [True]
    assert {r.json()["id"] for r in responses} == {str(ClosureReceipt.objects.get().id)}


@pytest.mark.django_db(transaction=True)
def test_racing_different_closures_let_one_win_and_refuse_the_rest(token):
    secret = token("acme", ["operator"], "ops")
    claimed = started()
    bodies = [closure_body(claimed, proof_ref=f"pods/agent-7/proof-{i}") for i in range(RACERS)]
    responses = race([closing(secret, claimed.run.id, body) for body in bodies])
    assert sorted(r.status_code for r in responses) == [201] + [409] * (RACERS - 1)
    assert sorted(r.json().get("code", "") for r in responses) == [""] + ["closure_conflict"] * (RACERS - 1)
    assert ClosureReceipt.objects.count() == 1


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_closure_racing_the_workers_completion_lets_exactly_one_take_effect(token):
    operator, engine = token("acme", ["operator"], "ops"), token("acme", ["engine"], "engine")
    outcomes = []
    for _ in range(20):
        claimed = started()
        run_id, revision = claimed.run.id, claimed.run.revision
        closed, completed = race(
            [
                closing(operator, run_id, closure_body(claimed)),
                lambda run_id=run_id, revision=revision: post(
                    client(engine), f"/api/v1/runs/{run_id}/complete", {"revision": revision}
                ),
            ]
        )
        state = Run.objects.get(pk=run_id).state
        outcomes.append((closed.status_code, closed.json().get("code"), completed.json().get("code"), state))
    closure_won = (201, None, "version_conflict", "incomplete")
    completion_won = (409, "invalid_state", None, "completed")
    assert set(outcomes) <= {closure_won, completion_won}
    assert ClosureReceipt.objects.count() == outcomes.count(closure_won)
