"""One call to pause (docs/api.md, "One call to pause: `POST /runs` with `suspend`"): a run registered and paused in
one transaction, answered `{run, suspension}`, keyed like every create, and refused whole."""

import json

import pytest

from suspensions.clock import db_now
from suspensions.models import ApprovalFloor, Event, IdempotencyKey, Run, Suspension
from tests.helpers import call, client, continuation, post, problem, refused, resume, snapshot


def first_pause(**overrides):
    body = {"reason": "external_tool", "pending": [call()], "continuation": continuation(), "ttl_seconds": 3600}
    return {**body, **overrides}


def register(**overrides):
    return {
        "agent_id": "agent-1",
        "scope": "acme/support",
        "tags": ["team:support"],
        "suspend": first_pause(),
    } | overrides


def test_a_register_with_suspend_answers_the_paused_run_and_its_pause_with_two_events_in_order(engine, chains_intact):
    response = post(engine, "/api/v1/runs", register())
    assert response.status_code == 201, response.content
    body = response.json()
    assert list(body) == ["run", "suspension"]
    run, pause = body["run"], body["suspension"]
    assert (run["state"], run["revision"], run["suspension_id"]) == ("paused", 2, pause["id"])
    assert (pause["run_id"], pause["run_revision"], pause["run_state"]) == (run["id"], 2, "paused")
    assert pause["tags"] == ["team:support"] and pause["pending"][0]["id"] == "c1"
    assert engine.get(f"/api/v1/runs/{run['id']}").json() == run
    assert (
        engine.get(f"/api/v1/suspensions/{pause['id']}").json()["continuation"]["messages"]
        == continuation()["messages"]
    )
    events = list(Event.objects.filter(run_id=run["id"]).order_by("id").values_list("kind", "revision", "actor"))
    assert events == [("registered", 1, "token:engine"), ("suspended", 2, "token:engine")]


def test_the_pause_of_one_call_resumes_like_any_other(engine):
    pause = post(engine, "/api/v1/runs", register()).json()["suspension"]
    claimed = resume(engine, pause)
    assert claimed.status_code == 201, claimed.content
    assert claimed.json()["admission"]["claimed_revision"] == 3


def test_an_approval_pause_in_one_call_opens_its_approval_and_a_callback_url_comes_with_an_external_tool_one(
    db, token, engine
):
    approval = post(engine, "/api/v1/runs", register(suspend=first_pause(reason="approval", approval={"quorum": 2})))
    assert approval.status_code == 201, approval.content
    approver = client(token("acme", ["approver"], "alice"))
    asked = approver.get(f"/api/v1/approvals/{approval.json()['suspension']['id']}")
    assert asked.status_code == 200 and asked.json()["policy"]["quorum"] == 2
    with_url = post(engine, "/api/v1/runs", register(suspend=first_pause(callback=True))).json()["suspension"]
    assert "/api/v1/callbacks/" in with_url["callback_url"]


def test_without_suspend_the_answer_is_the_run_as_before(engine):
    body = post(engine, "/api/v1/runs", {"agent_id": "agent-1"}).json()
    assert (body["state"], body["revision"], body["suspension_id"]) == ("running", 1, None)


BAD_PAUSES = [
    ({"reason": "nap"}, ["suspend", "reason"]),
    ({"revision": 1}, ["suspend", "revision"]),
    ({"pending": [call(arguments="{not json")]}, ["suspend", "pending", "0", "arguments"]),
    ({"continuation": continuation(step_index=-1)}, ["suspend", "continuation", "step_index"]),
    ({"callback": True, "reason": "approval"}, ["suspend", "callback"]),
]


@pytest.mark.parametrize("fields, path", BAD_PAUSES, ids=[p[-1] for _, p in BAD_PAUSES])
def test_a_bad_field_inside_suspend_is_one_400_naming_its_path_and_writes_nothing(engine, fields, path):
    found = refused(
        lambda: post(engine, "/api/v1/runs", register(suspend=first_pause(**fields))), 400, "invalid_request"
    )
    node = found["errors"]
    for step in path:
        node = node[step]
    assert node and list(found["errors"]) == ["suspend"]
    assert not Run.objects.exists() and not Event.objects.exists()


def test_a_bad_field_beside_suspend_is_named_beside_it_and_writes_nothing(engine):
    found = refused(lambda: post(engine, "/api/v1/runs", register(agent_id="", suspend=7)), 400, "invalid_request")
    assert set(found["errors"]) == {"agent_id", "suspend"}


def test_a_pause_refused_after_its_run_was_inserted_rolls_the_run_back_too(engine):
    """The chain's step past the deadline is only found under the run's lock: the register is undone with it."""
    escalation = [{"after_seconds": 7200, "notify": {"groups": ["leads"]}}]
    body = register(suspend=first_pause(reason="approval", approval={"escalation": escalation}))
    found = refused(lambda: post(engine, "/api/v1/runs", body), 400, "invalid_request")
    assert "after_seconds" in found["errors"]["suspend"]["approval"]["escalation"]["0"]
    assert not Run.objects.exists() and not Suspension.objects.exists() and not Event.objects.exists()


def test_a_floor_refusing_the_first_pause_is_named_under_suspend_and_writes_nothing(engine):
    floor = ApprovalFloor(quorum=1, exclude_requester=False, on_expiry=["deny"])
    floor.created_at = floor.updated_at = db_now()
    floor.created_by = floor.updated_by = "root"
    floor.stamp_scope("acme")
    floor.save()
    body = register(suspend=first_pause(reason="approval", approval={"on_expiry": "expire"}))
    found = refused(lambda: post(engine, "/api/v1/runs", body), 400, "below_approval_floor")
    assert found["floors"] == ["acme"] and "suspend" in found["errors"]


def test_a_scope_the_token_does_not_hold_is_403_before_the_pause_is_looked_at(db, token):
    outsider = client(token("globex", ["engine"], "outsider"))
    refused(lambda: post(outsider, "/api/v1/runs", register()), 403, "forbidden")


def keyed(c, body, key):
    return c.post("/api/v1/runs", data=json.dumps(body), content_type="application/json", HTTP_IDEMPOTENCY_KEY=key)


def test_an_idempotency_key_replays_the_same_run_and_pause_and_refuses_another_body(engine):
    first = keyed(engine, register(), "k-1")
    assert first.status_code == 201, first.content
    before = snapshot()
    again = keyed(engine, register(), "k-1")
    assert (again.status_code, again["Idempotent-Replayed"]) == (201, "true")
    assert again.json() == first.json()
    assert snapshot() == before
    other = register(suspend=first_pause(ttl_seconds=60))
    problem(keyed(engine, other, "k-1"), 409, "idempotency_mismatch")
    assert snapshot() == before and Run.objects.count() == 1


def test_a_refused_one_call_keeps_no_key(engine):
    bad = register(suspend=first_pause(reason="nap"))
    problem(keyed(engine, bad, "k-2"), 400, "invalid_request")
    assert not IdempotencyKey.objects.exists() and not Run.objects.exists()
    assert keyed(engine, register(), "k-2").status_code == 201
