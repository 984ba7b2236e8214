"""A2A's JSON-RPC endpoint through Django's test client (docs/api.md, "A2A"): the states a task passes through,
who sees it, and every bad request answered with the protocol's error, writing nothing."""

import json
import uuid
from typing import Any

import pytest
from django.test import Client

from suspensions.models import Approval, Run
from suspensions.tokens import create_token
from tests.helpers import approval_pause, snapshot

NOT_FOUND, NOT_CANCELABLE, UNSUPPORTED = -32001, -32002, -32004
PARSE, INVALID_REQUEST, NO_METHOD, INVALID_PARAMS = -32700, -32600, -32601, -32602


def secret(scope: str = "acme", *roles: str) -> str:
    return create_token(scope=scope, roles=roles or ("approver",), name=f"{scope}-{uuid.uuid4().hex[:6]}")[1]


def rpc(token: str, body: Any, *, raw: bytes | None = None, version: str = "1.0") -> Any:
    """POST one JSON-RPC request to /a2a/; the answer's JSON."""
    data = raw if raw is not None else json.dumps(body).encode()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}", "HTTP_A2A_VERSION": version}
    response = Client().post("/a2a/", data=data, content_type="application/json", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    return response.json()


def call(token: str, method: str, params: dict[str, Any]) -> Any:
    return rpc(token, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params})


def answer(task_id: str, data: Any, message_id: str = "m-1") -> dict[str, Any]:
    message = {"messageId": message_id, "taskId": task_id, "role": "ROLE_USER", "parts": [{"data": data}]}
    return {"message": message}


def error_code(answer: Any) -> int:
    assert "result" not in answer, answer
    return answer["error"]["code"]  # type: ignore[no-any-return]


def state(token: str, task_id: str) -> str:
    return call(token, "GetTask", {"id": task_id})["result"]["status"]["state"]  # type: ignore[no-any-return]


@pytest.mark.django_db
def test_the_card_is_public_and_names_the_skill_the_endpoint_and_bearer_auth():
    card = Client().get("/.well-known/agent-card.json").json()
    assert [s["id"] for s in card["skills"]] == ["answer-pause"]
    assert card["supportedInterfaces"] == [
        {"url": "http://testserver/a2a/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
    ]
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert card["capabilities"] == {"streaming": False, "pushNotifications": True}


@pytest.mark.django_db
def test_a_denial_by_message_rejects_the_task_and_the_run_fails():
    record = approval_pause()
    task_id, token = str(record.suspension_id), secret()
    assert state(token, task_id) == "TASK_STATE_INPUT_REQUIRED"
    result = call(token, "SendMessage", answer(task_id, {"decision": "deny", "reason": "Wrong account."}))
    task = result["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_REJECTED"
    assert "Wrong account." in task["status"]["message"]["parts"][0]["text"]
    run = Run.objects.get(pk=record.run_id)
    assert (run.state, run.error) == ("failed", "rejected: Wrong account.")


@pytest.mark.django_db
def test_a_respond_admits_the_run_with_the_words_and_the_task_follows_the_run_to_completed():
    from suspensions import services
    from suspensions.principals import Principal

    record = approval_pause()
    task_id, token = str(record.suspension_id), secret()
    answered = call(token, "SendMessage", answer(task_id, {"decision": "respond", "response": "Refund half."}))
    assert answered["result"]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert Approval.objects.get(pk=record.pk).response == "Refund half."
    engine = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))
    run = Run.objects.get(pk=record.run_id)
    services.complete_run(principal=engine, run_id=run.id, revision=run.revision)
    assert state(token, task_id) == "TASK_STATE_COMPLETED"


@pytest.mark.django_db
def test_cancel_needs_the_engine_role_and_cancels_a_waiting_task_once():
    record = approval_pause()
    task_id = str(record.suspension_id)
    approver = secret()
    before = snapshot()
    refused = call(approver, "CancelTask", {"id": task_id})
    assert error_code(refused) == INVALID_REQUEST
    assert refused["error"]["data"][0]["metadata"] == {"code": "forbidden", "status": "403"}
    assert snapshot() == before
    both = secret("acme", "engine", "approver")
    cancelled = call(both, "CancelTask", {"id": task_id})
    assert cancelled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert Run.objects.get(pk=record.run_id).state == "cancelled"
    after = snapshot()
    assert error_code(call(both, "CancelTask", {"id": task_id})) == NOT_CANCELABLE
    assert snapshot() == after


@pytest.mark.django_db
def test_a_task_out_of_scope_is_not_found_as_no_task_is_and_nothing_is_decided():
    record = approval_pause(scope="acme/support")
    task_id = str(record.suspension_id)
    outsider = secret("globex")
    before = snapshot()
    hidden = call(outsider, "GetTask", {"id": task_id})
    missing = call(outsider, "GetTask", {"id": str(uuid.uuid4())})
    not_an_id = call(outsider, "GetTask", {"id": "../runs"})
    assert hidden == missing == not_an_id
    assert error_code(hidden) == NOT_FOUND
    decided = call(outsider, "SendMessage", answer(task_id, {"decision": "approve"}))
    assert error_code(decided) == NOT_FOUND
    assert snapshot() == before


BAD_MESSAGES = [
    ({"decision": "maybe"}, "decision"),
    ({"decision": "deny"}, "reason"),
    ({"decision": "deny", "reason": " "}, "reason"),
    ({"decision": "approve", "reason": "ok"}, "reason"),
    ({"decision": "respond"}, "response"),
    ({"decision": "approve", "edits": [{"id": "c1", "arguments": "{not json"}]}, "arguments"),
    ({"decision": "approve", "surprise": 1}, "surprise"),
    (["approve"], ""),
    ("approve", ""),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("data", "named"), BAD_MESSAGES)
def test_a_bad_decision_is_invalid_params_naming_the_field_and_writes_nothing(data, named):
    record = approval_pause()
    token = secret()
    before = snapshot()
    refused = call(token, "SendMessage", answer(str(record.suspension_id), data))
    assert error_code(refused) == INVALID_PARAMS
    assert named in json.dumps(refused["error"])
    assert snapshot() == before


@pytest.mark.django_db
def test_a_message_without_one_data_part_or_without_a_task_is_refused_and_writes_nothing():
    record = approval_pause()
    token, task_id = secret(), str(record.suspension_id)
    before = snapshot()
    text_only = {"message": {"messageId": "m", "taskId": task_id, "role": "ROLE_USER", "parts": [{"text": "yes"}]}}
    assert error_code(call(token, "SendMessage", text_only)) == INVALID_PARAMS
    no_task = answer("", {"decision": "approve"})
    assert error_code(call(token, "SendMessage", no_task)) == INVALID_PARAMS
    elsewhere = answer(task_id, {"decision": "approve"})
    elsewhere["message"]["contextId"] = str(uuid.uuid4())
    assert error_code(call(token, "SendMessage", elsewhere)) == INVALID_PARAMS
    assert snapshot() == before


@pytest.mark.django_db
def test_malformed_json_rpc_gets_the_protocol_error_never_a_500():
    token = secret()
    before = snapshot()
    assert error_code(rpc(token, None, raw=b"{not json")) == PARSE
    assert error_code(rpc(token, None, raw=b"\xff\xfe")) == PARSE
    assert error_code(rpc(token, [{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}])) == INVALID_REQUEST
    assert error_code(rpc(token, {"jsonrpc": "1.0", "id": 1, "method": "GetTask"})) == INVALID_REQUEST
    assert error_code(rpc(token, {"jsonrpc": "2.0", "id": 1, "method": "Nope", "params": {}})) == NO_METHOD
    assert error_code(call(token, "GetTask", {"id": {"nested": 1}})) == INVALID_PARAMS
    assert error_code(call(token, "SendMessage", {"message": "hi"})) == INVALID_PARAMS
    assert error_code(call(token, "ListTasks", {})) == UNSUPPORTED
    assert error_code(call(token, "SendStreamingMessage", answer(str(uuid.uuid4()), {}))) == UNSUPPORTED
    config = {"taskId": str(uuid.uuid4()), "url": "https://example.com/hook"}
    assert error_code(call(token, "CreateTaskPushNotificationConfig", config)) == NOT_FOUND
    assert error_code(call(token, "CreateTaskPushNotificationConfig", {"url": 7})) == INVALID_PARAMS
    assert snapshot() == before


@pytest.mark.django_db
def test_without_a_token_it_is_the_apis_401_and_get_is_not_allowed():
    response = Client().post("/a2a/", data=b"{}", content_type="application/json")
    assert response.status_code == 401
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "unauthenticated"
    assert Client().get("/a2a/", HTTP_AUTHORIZATION=f"Bearer {secret()}").status_code == 405


@pytest.mark.django_db
def test_a_v0_3_client_reads_the_task_by_its_method_names_too():
    record = approval_pause()
    request = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": str(record.pk)}}
    answer_03 = rpc(secret(), request, version="0.3")
    assert answer_03["result"]["status"]["state"] == "input-required"
