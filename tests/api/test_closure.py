"""T10: closing an uncertain start as incomplete (docs/api.md, "7.6 Closure of an uncertain start")."""

import time
from datetime import timedelta

import pytest
from django.db import connection

from suspensions import digests, services
from suspensions.models import Admission, ClosureReceipt, Event, Run
from tests.closure_setup import (
    ENGINE,
    approved_not_started,
    claim_version,
    closure_body,
    paused_again,
    started,
    written,
)
from tests.helpers import call, client, continuation, post

# Every run these tests move keeps an intact audit chain, recomputed from the events API
# (docs/auditors.md, "What is recorded").
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("chains_intact")]


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


@pytest.fixture
def worker(db, token):
    return client(token("acme", ["engine"], "engine"))


def close(c, claimed, body):
    return post(c, f"/api/v1/runs/{claimed.run.id}/closures", body)


def test_an_operator_closes_an_uncertain_start_as_incomplete(operator):
    claimed = started()
    response = close(operator, claimed, closure_body(claimed))
    assert response.status_code == 201, response.content
    receipt = response.json()
    run = Run.objects.get(pk=claimed.run.id)
    assert (run.state, run.revision) == ("incomplete", claimed.run.revision + 1)
    assert receipt["fresh"] is True and receipt["valid"] is True
    assert receipt["run_revision"] == run.revision
    assert receipt["actor"] == "token:ops" and receipt["request"]["actor"] == "token:ops"
    assert receipt["request"]["scope"] == "acme/support"
    event = Event.objects.get(pk=receipt["event_id"])
    assert (event.kind, event.revision, event.actor) == ("closed", run.revision, "token:ops")
    assert Admission.objects.get(pk=claimed.admission.id).state == "closed"


def test_anyone_in_scope_reads_the_closure_receipt_and_the_timeline_shows_it(operator, token):
    claimed = started()
    closed = close(operator, claimed, closure_body(claimed)).json()
    auditor = client(token("acme/support", ["auditor"], "audit"))
    response = auditor.get(f"/api/v1/runs/{claimed.run.id}/closures/{claimed.admission.suspension_id}")
    assert response.status_code == 200, response.content
    assert response.json() == {**closed, "fresh": False}
    events = auditor.get(f"/api/v1/runs/{claimed.run.id}/events").json()["results"]
    assert events[-1]["kind"] == "closed"


def test_the_closure_receipt_is_not_found_outside_the_scope(operator, token):
    claimed = started()
    close(operator, claimed, closure_body(claimed))
    stranger = client(token("globex", ["operator", "auditor"], "stranger"))
    response = stranger.get(f"/api/v1/runs/{claimed.run.id}/closures/{claimed.admission.suspension_id}")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_the_identical_closure_again_replays_the_original_receipt_even_after_the_proof_expired(operator):
    claimed = started()
    expires_at = services.db_now() + timedelta(seconds=1)
    body = closure_body(claimed, expires_at=digests.rfc3339(expires_at))
    first = close(operator, claimed, body)
    assert first.status_code == 201, first.content
    while services.db_now() <= expires_at:
        time.sleep(0.05)
    before = written()
    again = close(operator, claimed, body)
    assert again.status_code == 200, again.content
    assert again.json() == {**first.json(), "fresh": False}
    assert written() == before


def test_a_different_closure_of_the_same_pause_is_a_closure_conflict(operator):
    claimed = started()
    first = close(operator, claimed, closure_body(claimed))
    before = written()
    response = close(operator, claimed, closure_body(claimed, proof_ref="pods/agent-7/evicted"))
    assert (response.status_code, response.json()["code"]) == (409, "closure_conflict")
    assert response.json()["closed_digest"] == first.json()["request_digest"]
    assert written() == before


def test_another_operators_identical_body_is_a_closure_conflict(operator, token):
    claimed = started()
    body = closure_body(claimed)
    close(operator, claimed, body)
    before = written()
    response = close(client(token("acme", ["operator"], "ops-2")), claimed, body)
    assert (response.status_code, response.json()["code"]) == (409, "closure_conflict")
    assert written() == before


def test_a_replay_still_needs_the_operator_role(operator, token):
    claimed = started()
    body = closure_body(claimed)
    close(operator, claimed, body)
    before = written()
    response = close(client(token("acme", ["auditor"], "ops")), claimed, body)
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")
    assert written() == before


def test_the_actor_is_never_taken_from_the_body(operator):
    claimed = started()
    before = written()
    response = close(operator, claimed, closure_body(claimed, actor="user:someone-else"))
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request")
    assert "actor" in response.json()["errors"]
    assert written() == before


STALE = "0" * 64
HOUR = timedelta(hours=1)


def window(observed: timedelta, expires: timedelta):
    def shift(now):
        return {"observed_at": digests.rfc3339(now + observed), "expires_at": digests.rfc3339(now + expires)}

    return shift


@pytest.mark.parametrize(
    ("overrides", "status", "code", "field"),
    [
        (lambda now: {"admission_digest": STALE}, 409, "version_conflict", None),
        (lambda now: {"start_digest": STALE}, 409, "version_conflict", None),
        (lambda now: {"run_revision": 2}, 409, "version_conflict", None),
        (window(HOUR, 2 * HOUR), 400, "invalid_request", "observed_at"),
        (window(-2 * HOUR, -HOUR), 400, "invalid_request", "expires_at"),
    ],
    ids=["stale-admission-digest", "stale-start-digest", "stale-revision", "proof-not-yet-valid", "proof-expired"],
)
def test_a_closure_that_does_not_bind_the_current_start_and_proof_writes_nothing(
    operator, overrides, status, code, field
):
    claimed = started()
    body = closure_body(claimed, **overrides(services.db_now()))
    before = written()
    response = close(operator, claimed, body)
    assert (response.status_code, response.json()["code"]) == (status, code), response.content
    assert field is None or field in response.json()["errors"]
    assert written() == before


def test_a_closure_of_an_earlier_start_of_the_same_run_is_a_version_conflict(operator):
    first = started()
    again = paused_again(first)
    latest = services.resume_run(
        principal=ENGINE,
        run_id=again.run.id,
        version=claim_version(again),
        results=[{"call_id": "c1", "content": {"ok": False}}],
    )
    before = written()
    response = close(operator, first, closure_body(first, run_revision=latest.run.revision))
    assert (response.status_code, response.json()["code"]) == (409, "version_conflict")
    assert written() == before


def test_a_closure_refuses_a_run_that_was_admitted_but_never_started(operator):
    claimed = approved_not_started()
    before = written()
    response = close(operator, claimed, closure_body(claimed))
    assert (response.status_code, response.json()["code"]) == (409, "invalid_state")
    assert written() == before


def test_a_closure_refuses_a_finished_run(operator, worker):
    claimed = started()
    completed = post(worker, f"/api/v1/runs/{claimed.run.id}/complete", {"revision": claimed.run.revision})
    assert completed.status_code == 200, completed.content
    before = written()
    response = close(operator, claimed, closure_body(claimed, run_revision=completed.json()["revision"]))
    assert (response.status_code, response.json()["code"]) == (409, "invalid_state")
    assert written() == before


def test_a_closure_needs_the_operator_role(token):
    claimed = started()
    before = written()
    response = close(
        client(token("acme", ["engine", "auditor", "approver"], "not-ops")), claimed, closure_body(claimed)
    )
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")
    assert written() == before


def test_a_closure_of_a_run_in_another_scope_is_not_found(token):
    claimed = started()
    before = written()
    response = close(client(token("acme/billing", ["operator"], "billing-ops")), claimed, closure_body(claimed))
    assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert written() == before


def test_the_closure_fences_the_original_worker(operator, worker):
    claimed = started()
    assert close(operator, claimed, closure_body(claimed)).status_code == 201
    before = written()
    run_url, old = f"/api/v1/runs/{claimed.run.id}", claimed.run.revision
    complete = post(worker, f"{run_url}/complete", {"revision": old})
    fail = post(worker, f"{run_url}/fail", {"revision": old, "error": "late"})
    suspend = post(
        worker,
        f"{run_url}/suspend",
        {"revision": old, "reason": "external_tool", "pending": [call()], "continuation": continuation()},
    )
    retry = post(worker, f"/api/v1/admissions/{claimed.admission.id}/start", {})
    assert [r.json()["code"] for r in (complete, fail, suspend)] == ["version_conflict"] * 3
    assert (retry.status_code, retry.json()["code"]) == (409, "resume_already_started")
    assert "suspension" not in retry.json()
    assert written() == before
    assert ClosureReceipt.objects.get().run_revision == Run.objects.get(pk=claimed.run.id).revision


def timeouts():
    with connection.cursor() as cursor:
        cursor.execute("SHOW lock_timeout")
        lock = cursor.fetchone()[0]
        cursor.execute("SHOW statement_timeout")
        return lock, cursor.fetchone()[0]


def test_a_closure_runs_under_a_thirty_second_lock_and_statement_timeout(operator):
    claimed = started()
    assert timeouts() == ("0", "0")
    close(operator, claimed, closure_body(claimed))
    # The test's own transaction is still open, so what SET LOCAL set inside the closure is visible.
    assert timeouts() == ("30s", "30s")
