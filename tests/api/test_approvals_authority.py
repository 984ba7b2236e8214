"""docs/api.md, "3. Who may do what": who may answer what, every cell, each refused before anything is written."""

import pytest

from suspensions.models import Admission, Run
from tests.helpers import client, pause, post, refused, version


def one_shot(c, s):
    body = {"version": version(s), "results": [{"call_id": "c1", "content": "done"}]}
    return post(c, f"/api/v1/runs/{s['run_id']}/resume", body)


def decide(c, s):
    return post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})


def admit(c, s):
    body = {"version": version(s), "input": '{"answer": 42}', "reply_with": "q-1"}
    return post(c, f"/api/v1/runs/{s['run_id']}/admissions", body)


PATHS = {"one_shot": (one_shot, "engine"), "decide": (decide, "approver"), "admit": (admit, "bus")}

MATRIX = {
    ("external_tool", "one_shot"): None,
    ("external_tool", "decide"): "not_an_approval",
    ("external_tool", "admit"): "not_an_agent_reply",
    ("approval", "one_shot"): "requires_approval",
    ("approval", "decide"): None,
    ("approval", "admit"): "not_an_agent_reply",
    ("agent_reply", "one_shot"): "agent_reply_only",
    ("agent_reply", "decide"): "not_an_approval",
    ("agent_reply", "admit"): None,
}
REFUSED = [cell for cell, code in MATRIX.items() if code]
ALLOWED = [cell for cell, code in MATRIX.items() if not code]


@pytest.fixture
def caller(db, token):
    """caller(role, scope="acme") -> a client holding only that role."""
    return lambda role, scope="acme": client(token(scope, [role], f"{scope}-{role}"))


@pytest.mark.parametrize("reason, path", REFUSED, ids=["-".join(cell) for cell in REFUSED])
def test_a_pause_refuses_the_paths_that_may_not_answer_its_reason(engine, caller, reason, path):
    s = pause(engine, reason=reason)
    send, role = PATHS[path]
    refused(lambda: send(caller(role), s), 403, MATRIX[reason, path])
    assert Run.objects.get(pk=s["run_id"]).state == "paused"


@pytest.mark.parametrize("reason, path", ALLOWED, ids=["-".join(cell) for cell in ALLOWED])
def test_a_pause_is_answered_by_the_path_its_reason_names(engine, caller, reason, path):
    s = pause(engine, reason=reason)
    send, role = PATHS[path]
    response = send(caller(role), s)
    assert response.status_code == 201, response.content
    assert Run.objects.get(pk=s["run_id"]).state == "running"
    assert Admission.objects.filter(run_id=s["run_id"]).count() == 1


WRONG_ROLES = [
    (reason, path, role)
    for reason, path in ALLOWED
    for role in ["engine", "bus", "approver", "auditor", "operator"]
    if role != PATHS[path][1]
]


@pytest.mark.parametrize("reason, path, role", WRONG_ROLES, ids=["-".join(cell) for cell in WRONG_ROLES])
def test_a_role_missing_in_the_runs_scope_is_forbidden(engine, caller, reason, path, role):
    s = pause(engine, reason=reason)
    send, _ = PATHS[path]
    refused(lambda: send(caller(role), s), 403, "forbidden")


@pytest.mark.parametrize("reason, path", ALLOWED, ids=["-".join(cell) for cell in ALLOWED])
def test_the_right_role_held_only_in_a_sub_scope_is_not_found(engine, caller, reason, path):
    s = pause(engine, reason=reason)
    send, role = PATHS[path]
    refused(lambda: send(caller(role, "acme/support"), s), 404, "not_found")


@pytest.mark.parametrize("reason, path", list(MATRIX), ids=["-".join(cell) for cell in MATRIX])
def test_a_token_whose_scope_does_not_cover_the_run_sees_nothing(engine, caller, reason, path):
    s = pause(engine, reason=reason)
    send, role = PATHS[path]
    refused(lambda: send(caller(role, "other"), s), 404, "not_found")


@pytest.mark.parametrize("reason, path", ALLOWED, ids=["-".join(cell) for cell in ALLOWED])
def test_a_role_held_in_a_parent_scope_answers_a_run_below_it(engine, caller, reason, path):
    s = pause(engine, reason=reason, scope="acme/support/eu")
    send, role = PATHS[path]
    assert send(caller(role), s).status_code == 201


def test_the_reply_path_also_checks_reply_with(engine, caller):
    s = pause(engine, reason="agent_reply")
    body = {"version": version(s), "input": '"hi"', "reply_with": "q-2"}
    refused(lambda: post(caller("bus"), f"/api/v1/runs/{s['run_id']}/admissions", body), 409, "reply_mismatch")
