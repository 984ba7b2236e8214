"""The OpenAPI document describes every operation, and what it shows is what the live API does.

Every operation has a summary, a description, one door (tag) and a readable
id; it lists only the error statuses it can answer, each a problem naming
codes of that status. Every request example is posted to the API, with the
caller's own ids (and a closure's proof window) put in place of the
samples' (suspensions/api/docs/samples.py), and must be accepted; every
answer, live or example, must match its documented shape exactly.
"""

import json
import re
import uuid
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import OperationalError
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema
from jsonschema import Draft202012Validator
from rest_framework.test import APIClient

from suspensions import exceptions, services
from suspensions.api import docs
from suspensions.api.docs import samples as v
from suspensions.api.errors import problem_exception_handler
from suspensions.clock import db_now
from suspensions.models import MessageStatus, WebhookMessage
from suspensions.services import audit
from suspensions.services.role_mappings import sync_roles
from tests.api import test_waits as waits
from tests.api.test_waits import asgi  # noqa: F401  (the fixture: uvicorn on the test database)
from tests.helpers import client, member

SCHEMA = SchemaGenerator().get_schema(request=None, public=True)
OPERATIONS = [
    (method, path, operation)
    for path, item in SCHEMA["paths"].items()
    for method, operation in item.items()
    if method in {"get", "post", "put", "patch", "delete"}
]
BY_ID = {operation["operationId"]: (method, path, operation) for method, path, operation in OPERATIONS}
STATUS_OF = {cls.code: cls.status for cls in exceptions.ALL_ERRORS}
ROLES = ("engine", "bus", "approver", "auditor", "operator")


def request_examples(operation: dict[str, Any]) -> dict[str, Any]:
    return operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("examples", {})


def errors_of(operation: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(status): answer for status, answer in operation["responses"].items() if status[0] in "45"}


def successes_of(operation: dict[str, Any]) -> set[int]:
    return {int(status) for status in operation["responses"] if status[0] == "2"}


# -- the words ----------------------------------------------------------------------------------


def test_every_operation_has_a_summary_a_description_one_door_and_a_readable_id():
    assert len(OPERATIONS) >= 34
    for method, path, operation in OPERATIONS:
        where = (method, path)
        assert operation.get("summary", "").strip(), where
        assert len(operation.get("description", "").strip()) > len(operation["summary"]), where
        assert len(operation["tags"]) == 1 and operation["tags"][0] in docs.TAG_NAMES, where
        assert re.fullmatch(r"[a-z_]+", operation["operationId"]), where


def test_no_two_operations_share_an_id():
    counts = Counter(operation["operationId"] for _, _, operation in OPERATIONS)
    assert [name for name, count in counts.items() if count > 1] == []


def test_every_door_is_a_tag_with_a_description_and_has_operations():
    assert [tag["name"] for tag in SCHEMA["tags"]] == [tag["name"] for tag in docs.TAGS]
    assert all(tag["description"] for tag in SCHEMA["tags"])
    assert {operation["tags"][0] for _, _, operation in OPERATIONS} == docs.TAG_NAMES


def test_the_schema_is_valid_openapi_3_and_is_the_one_served(db):
    validate_schema(SCHEMA)  # raises on the first violation of the OpenAPI 3 meta-schema
    served = APIClient().get("/api/schema/", {"format": "json"})
    assert served.status_code == 200
    assert {op["operationId"] for item in served.json()["paths"].values() for op in item.values()} == set(BY_ID)


def test_the_request_fields_whose_meaning_is_not_obvious_say_it():
    schemas = SCHEMA["components"]["schemas"]
    described = {
        ("PendingCallRequest", "arguments"): "string holding JSON",
        ("PendingCallRequest", "reply_with"): "agent_reply",
        ("AdmitRequest", "input"): "string holding JSON",
        ("SuspendRequest", "ttl_seconds"): "0 means no deadline",
        ("FlowEnvelopeRequest", "tenant"): "tenant/env",
        ("CloseRequest", "start_digest"): "start receipt",
    }
    for (schema, field), words in described.items():
        assert words in schemas[schema]["properties"][field].get("description", ""), (schema, field)


# -- the error statuses -------------------------------------------------------------------------


def possible_errors(method: str, path: str, operation: dict[str, Any]) -> set[int]:
    """What a view of this kind can refuse with: a GET reads (404 for an id, 400 for a bad query), a
    POST without a body only meets the state of its rows, a POST with a body may be refused for it."""
    allowed = {401, 403, 503}
    if "{" in path:
        allowed.add(404)
    if method == "get":
        has_query = any(parameter["in"] == "query" for parameter in operation.get("parameters", []))
        return allowed | ({400} if has_query else set())
    if "requestBody" not in operation:
        # A keyed create refuses a bad Idempotency-Key, body or not, and a new key past the allowance.
        return allowed | {409, 410} | ({400, 429} if keyed_operation(operation) else set())
    # A keyed create past the principal's keys, an early result past the run's allowance.
    allowances = keyed_operation(operation) or path.endswith("/early-results")
    return allowed | {400, 404, 409, 410, 413, 422} | ({429} if allowances else set())


def keyed_operation(operation: dict[str, Any]) -> bool:
    return any(p["in"] == "header" and p["name"] == "Idempotency-Key" for p in operation.get("parameters", []))


# docs/api.md, "4. Claims and recovery": every POST that creates takes an Idempotency-Key, and only those.
KEYED = {
    "register_run",
    "park_flow_wait",
    "create_webhook",
    "disable_webhook",
    "enable_webhook",
    "rotate_webhook_secret",
    "test_webhook",
    "redeliver_webhook_message",
    "create_approval_floor",
    "create_role_mapping",
    "create_notification_route",
    "create_legal_hold",
    "disable_notification_route",
    "enable_notification_route",
    "extend_suspension",
}


def test_the_posts_that_create_take_an_idempotency_key_and_document_its_409_and_replay_header():
    assert {op_id for op_id, (_, _, operation) in BY_ID.items() if keyed_operation(operation)} == KEYED
    for op_id in KEYED:
        responses = BY_ID[op_id][2]["responses"]
        assert "- `idempotency_mismatch`:" in responses["409"]["description"], op_id
        assert "- `invalid_request`:" in responses["400"]["description"], op_id
        assert "- `throttled`:" in responses["429"]["description"], op_id
        assert "Retry-After" in responses["429"]["headers"], op_id
        assert all("Idempotent-Replayed" in responses[s]["headers"] for s in responses if s[0] == "2"), op_id


@pytest.mark.parametrize("operation_id", sorted(BY_ID))
def test_each_operation_lists_only_the_errors_it_can_answer_naming_their_codes(operation_id):
    method, path, operation = BY_ID[operation_id]
    errors = errors_of(operation)
    assert ({503} if docs.OPERATIONS[operation_id].public else {401, 503}) <= errors.keys()
    assert errors.keys() <= possible_errors(method, path, operation)
    for status, answer in errors.items():
        assert list(answer["content"]) == ["application/problem+json"], status
        assert answer["content"]["application/problem+json"]["schema"] == {"$ref": "#/components/schemas/Problem"}
        codes = re.findall(r"^- `([a-z_]+)`", answer["description"], flags=re.MULTILINE)
        assert codes, (status, answer["description"])
        assert {code: STATUS_OF.get(code) for code in codes} == dict.fromkeys(codes, status)


# The answers that are not one JSON document: the audit export, a JSON object a line; the event stream, SSE.
MEDIA = {"export_audit": "application/x-ndjson", "stream_events": "text/event-stream"}


def test_every_operation_answers_a_typed_body():
    for method, path, operation in OPERATIONS:
        for status in successes_of(operation):
            media = MEDIA.get(operation["operationId"], "application/json")
            schema = operation["responses"][str(status)]["content"][media]["schema"]
            assert "$ref" in schema or "oneOf" in schema, (method, path, status)


# -- the shapes, against the examples and the live answers --------------------------------------


def strict(node: Any) -> Any:
    """An OpenAPI 3.0 schema as JSON Schema: `nullable` as a type, and objects refuse undocumented keys."""
    if isinstance(node, list):
        return [strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: strict(value) for key, value in node.items() if key != "nullable"}
    if "properties" in out:
        out.setdefault("additionalProperties", False)
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out


COMPONENTS = strict(SCHEMA["components"])


def assert_shape(value: Any, schema: dict[str, Any], where: Any) -> None:
    validator = Draft202012Validator({**schema, "components": COMPONENTS})
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(value)]
    assert problems == [], where


def documented(operation: dict[str, Any], status: int, media: str = "application/json") -> dict[str, Any]:
    return strict(operation["responses"][str(status)]["content"][media])


def test_every_answer_example_matches_its_documented_shape():
    checked = 0
    for _, _, operation in OPERATIONS:
        for status, answer in operation["responses"].items():
            for media, content in answer.get("content", {}).items():
                for name, example in content.get("examples", {}).items():
                    assert_shape(example["value"], strict(content["schema"]), (operation["operationId"], status, name))
                    checked += 1
    assert checked >= len(OPERATIONS)


# -- every request example, posted to the live API ----------------------------------------------


class World:
    """Real rows for the examples to act on, made through the API with one token per role in `demo`."""

    def __init__(self, token: Callable[..., str]) -> None:
        self.clients = {role: client(token("demo", [role], f"docs-{role}")) for role in ROLES}
        self.clients["anyone"] = APIClient()  # a callback URL is called without a token
        self.ids: dict[str, str] = {}

    def send(self, role: str, method: str, path: str, body: Any = None) -> Any:
        c = self.clients[role]
        if method in ("get", "delete"):
            return getattr(c, method)(path)
        if method == "patch":
            return c.patch(path, data=json.dumps(body), content_type="application/json")
        return c.post(path, data=json.dumps(body) if body is not None else None, content_type="application/json")

    def made(self, role: str, path: str, body: Any = None) -> dict[str, Any]:
        response = self.send(role, "post", path, body)
        assert response.status_code in (200, 201, 202), (path, response.content[:500])
        return response.json()

    def run(self) -> "World":
        self.ids[v.RUN_ID] = self.made("engine", "/api/v1/runs", {"agent_id": "support-agent"})["id"]
        return self

    def paused(self, body: dict[str, Any] = v.SUSPEND_TOOL) -> "World":
        self.run()
        self.ids[v.SUSPENSION_ID] = self.made("engine", f"/api/v1/runs/{self.ids[v.RUN_ID]}/suspend", body)["id"]
        return self

    def version(self) -> dict[str, Any]:
        return {"run_id": self.ids[v.RUN_ID], "suspension_id": self.ids[v.SUSPENSION_ID], "run_revision": 2}

    def started(self) -> "World":
        self.paused()
        body = {"version": self.version(), "results": [{"call_id": "call_1", "content": {"rows": 1}}]}
        claimed = self.made("engine", f"/api/v1/runs/{self.ids[v.RUN_ID]}/resume", body)
        self.ids |= {
            v.ADMISSION_ID: claimed["admission"]["id"],
            v.REQUEST_DIGEST: claimed["admission"]["request_digest"],
            v.START_DIGEST: claimed["start"]["digest"],
        }
        return self

    def approved(self) -> "World":
        self.paused(v.SUSPEND_APPROVAL)
        body = {"version": self.version(), "decision": "approve"}
        claimed = self.made("approver", f"/api/v1/approvals/{self.ids[v.SUSPENSION_ID]}/decide", body)
        self.ids[v.ADMISSION_ID] = claimed["admission"]["id"]
        return self

    def closed(self) -> "World":
        self.started().proof_window()
        body = json.loads(self.filled(json.dumps(docs.EXAMPLES["close_run"][0].value)))
        self.made("operator", f"/api/v1/runs/{self.ids[v.RUN_ID]}/closures", body)
        return self

    def expired(self) -> "World":
        self.approved()
        services.expire_suspensions(now=db_now() + timedelta(days=2))
        return self

    def proof_window(self) -> "World":
        now = timezone.now()
        self.ids[v.OBSERVED_AT] = (now - timedelta(minutes=1)).isoformat()
        self.ids[v.PROOF_EXPIRES_AT] = (now + timedelta(hours=1)).isoformat()
        return self

    def parked(self, body: dict[str, Any] = v.PARK_TOOL) -> "World":
        self.ids[v.CORRELATION_ID] = self.made("engine", "/api/v1/flow-waits", body)["correlation_id"]
        return self

    def callback(self) -> "World":
        answer = self.run().made(
            "engine", f"/api/v1/runs/{self.ids[v.RUN_ID]}/suspend", {**v.SUSPEND_TOOL, "callback": True}
        )
        self.ids |= {v.SUSPENSION_ID: answer["id"], v.CALLBACK_TOKEN: answer["callback_url"].rsplit("/", 1)[1]}
        return self

    def webhook(self) -> "World":
        body = {"url": "https://hooks.example.com/suspensions"}
        self.ids[v.WEBHOOK_ID] = self.made("operator", "/api/v1/webhooks", body)["id"]
        return self

    def route(self) -> "World":
        body = {"kind": "email", "target": "oncall@example.com"}
        self.ids[v.ROUTE_ID] = self.made("operator", "/api/v1/notification-routes", body)["id"]
        return self

    def hold(self) -> "World":
        body = {"scope": "demo", "reason": "Litigation hold"}
        self.ids[v.HOLD_ID] = self.made("auditor", "/api/v1/legal-holds", body)["id"]
        return self

    def floor(self) -> "World":
        self.ids[v.FLOOR_ID] = self.made("operator", "/api/v1/approval-floors", {"quorum": 2})["id"]
        return self

    def mapping(self) -> "World":
        body = {"group": "payments-approvers", "role": "approver"}
        self.ids[docs.identity.MAPPING_ID] = self.made("operator", "/api/v1/role-mappings", body)["id"]
        return self

    def role_change(self) -> "World":
        self.mapping()
        user = User.objects.create_user("alice", is_staff=True)
        sync_roles(user, ["payments-approvers"], cause="oidc sign-in https://id.example.com 00u1a2b3c")
        return self

    def people(self) -> "World":
        for name in ("alice", "bob"):
            member(name, {"demo": ["approver"]}, is_staff=True)
        return self

    def delegation(self) -> "World":
        body = {
            "from": "alice",
            "to": "bob",
            "scope": "demo",
            "ends_at": (timezone.now() + timedelta(days=2)).isoformat(),
        }
        self.ids[v.DELEGATION_ID] = self.people().made("operator", "/api/v1/delegations", body)["id"]
        return self

    def message(self) -> "World":
        self.webhook()
        sent = self.made("operator", f"/api/v1/webhooks/{self.ids[v.WEBHOOK_ID]}/test")
        # Without a worker the message stays pending; a redelivery wants a delivered or failed one.
        WebhookMessage.objects.filter(pk=sent["id"]).update(status=MessageStatus.FAILED)
        self.ids[v.MESSAGE_ID] = sent["id"]
        return self

    def sealed(self) -> "World":
        self.started()
        audit.write_checkpoint()
        return self

    def filled(self, text: str) -> str:
        for sample, real in self.ids.items():
            text = text.replace(sample, real)
        return text

    def path(self, template: str) -> str:
        kind = {"runs": v.RUN_ID, "approvals": v.SUSPENSION_ID, "suspensions": v.SUSPENSION_ID}
        kind |= {"admissions": v.ADMISSION_ID, "webhooks": v.WEBHOOK_ID, "approval-floors": v.FLOOR_ID}
        kind["notification-routes"] = v.ROUTE_ID
        kind["role-mappings"] = docs.identity.MAPPING_ID
        kind["legal-holds"] = v.HOLD_ID
        kind["delegations"] = v.DELEGATION_ID
        first = template.split("/")[3]
        names = {"{id}": kind.get(first, ""), "{suspension_id}": v.SUSPENSION_ID, "{message_id}": v.MESSAGE_ID}
        names["{token}"] = v.CALLBACK_TOKEN
        return self.filled(re.sub(r"\{[a-z_]+\}", lambda m: names[m.group(0)], template))


# What each operation needs before its example can be accepted; (operation, example) for one example.
SETUP: dict[Any, Callable[[World], World]] = {
    "register_run": lambda w: w,
    "list_runs": World.run,
    "get_run": World.run,
    "list_run_events": World.run,
    "suspend_run": World.run,
    "resume_run": World.paused,
    "keep_early_result": World.run,
    "resume_by_callback": World.callback,
    "complete_run": World.started,
    "fail_run": World.started,
    "cancel_run": World.paused,
    "list_suspensions": World.paused,
    "get_suspension": World.paused,
    "extend_suspension": World.paused,
    "list_approvals": lambda w: w.paused(v.SUSPEND_APPROVAL),
    "get_approval": lambda w: w.paused(v.SUSPEND_APPROVAL),
    "link_approval": lambda w: w.paused(v.SUSPEND_APPROVAL),
    "decide_approval": lambda w: w.paused(v.SUSPEND_APPROVAL),
    "decide_approvals": lambda w: w.paused(v.SUSPEND_APPROVAL),
    ("decide_approval", "ApproveWithEdits"): lambda w: w.paused({**v.SUSPEND_APPROVAL, "pending": [v.EDITABLE_CALL]}),
    "admit_agent_reply": lambda w: w.paused(v.SUSPEND_REPLY),
    "list_agent_reply_runs": lambda w: w.paused(v.SUSPEND_REPLY),
    "list_admissions": World.approved,
    "start_admission": World.approved,
    "list_run_admissions": World.started,
    "get_latest_admission": World.started,
    "close_run": lambda w: w.started().proof_window(),
    "get_closure_receipt": World.closed,
    "get_expiry_receipt": World.expired,
    "park_flow_wait": lambda w: w,
    "resume_flow_wait": World.parked,
    ("resume_flow_wait", "AnApprovalWait"): lambda w: w.parked(v.PARK_APPROVAL),
    "create_approval_floor": lambda w: w,
    "list_approval_floors": World.floor,
    "get_approval_floor": World.floor,
    "update_approval_floor": World.floor,
    "delete_approval_floor": World.floor,
    "create_delegation": World.people,
    "list_delegations": World.delegation,
    "get_delegation": World.delegation,
    "end_delegation": World.delegation,
    "create_webhook": lambda w: w,
    "list_webhooks": World.webhook,
    "get_webhook": World.webhook,
    "disable_webhook": World.webhook,
    "enable_webhook": World.webhook,
    "rotate_webhook_secret": World.webhook,
    "test_webhook": World.webhook,
    "list_webhook_messages": World.message,
    "redeliver_webhook_message": World.message,
    "create_notification_route": lambda w: w,
    "list_notification_routes": World.route,
    "get_notification_route": World.route,
    "delete_notification_route": World.route,
    "disable_notification_route": World.route,
    "enable_notification_route": World.route,
    "create_role_mapping": lambda w: w,
    "list_role_mappings": World.mapping,
    "get_role_mapping": World.mapping,
    "delete_role_mapping": World.mapping,
    "list_role_changes": World.role_change,
    "get_audit_public_key": lambda w: w,
    "create_legal_hold": lambda w: w,
    ("create_legal_hold", "ARun"): World.run,
    "list_legal_holds": World.hold,
    "release_legal_hold": World.hold,
    "export_audit": World.sealed,
    "wait_run": World.run,
    "stream_events": World.run,
}
# The waits (api/waits.py) read on a thread of their own, so their rows must be committed, and the stream never
# ends: they are called below, through the ASGI process, with the query that answers at once.
LONG_LIVED = {"wait_run": "?after_revision=0", "stream_events": "?last_event_id=0"}
# Operations without a request example are called as they are: a GET, or a POST without a body.
CALLS = [
    (operation_id, name)
    for operation_id, (_, _, operation) in sorted(BY_ID.items())
    if operation_id not in LONG_LIVED
    for name in (request_examples(operation) or [None])
]


def role_for(operation_id: str) -> str:
    first = docs.OPERATIONS[operation_id].role.split()[0]
    return "auditor" if first == "any" else first


def test_every_operation_has_a_setup_and_every_body_an_example():
    assert set(BY_ID) <= set(SETUP)
    assert all(request_examples(op) for _, _, op in OPERATIONS if "requestBody" in op)


@pytest.mark.parametrize("operation_id, example", CALLS, ids=[f"{o}-{e}" for o, e in CALLS])
def test_every_example_is_accepted_by_the_live_api_and_answers_its_documented_shape(db, token, operation_id, example):
    method, path, operation = BY_ID[operation_id]
    world = SETUP.get((operation_id, example), SETUP[operation_id])(World(token))
    body = None
    if example is not None:
        body = json.loads(world.filled(json.dumps(request_examples(operation)[example]["value"])))
        assert not set(v.PLACEHOLDERS) & set(re.findall(r'"([^"]*)"', json.dumps(body))), "a sample id was left"
    response = world.send(role_for(operation_id), method, world.path(path), body)
    assert response.status_code in successes_of(operation), (response.status_code, response.content[:800])
    media = MEDIA.get(operation_id, "application/json")
    schema = documented(operation, response.status_code, media)["schema"]
    if media == "application/json":
        assert_shape(response.json(), schema, operation_id)
        return
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) > 1
    for line in lines:
        assert_shape(json.loads(line), schema, operation_id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("operation_id", sorted(LONG_LIVED))
def test_the_waits_answer_their_documented_shape_through_the_asgi_process(asgi, token, operation_id):  # noqa: F811
    method, path, operation = BY_ID[operation_id]
    world = SETUP[operation_id](World(token))
    secret = token("demo", ["auditor"], "docs-waiter")
    media = MEDIA.get(operation_id, "application/json")
    schema = documented(operation, 200, media)["schema"]
    target = world.path(path) + LONG_LIVED[operation_id]
    if media == "application/json":
        status, body = waits.get(asgi, target, secret)
        assert status == 200, body
        assert_shape(body, schema, operation_id)
        assert body["id"] == world.ids[v.RUN_ID]
        return
    stream = waits.Stream(asgi, secret, LONG_LIVED[operation_id])
    message = stream.message()
    stream.close()
    assert (message["event"], message["data"]["run_id"]) == ("registered", world.ids[v.RUN_ID])
    assert_shape(message["data"], schema, operation_id)


# -- the refusals every operation can give, as the service answers them --------------------------


def real_refusals(token: Callable[..., str]) -> dict[int, dict[str, Any]]:
    """A real answer of each status most operations may give: no token, no role, no row, too big, no database."""
    engine = client(token("demo", ["engine"], "docs-engine-only"))
    oversized = "x" * (9 * 1024 * 1024)  # over 8 MiB + 64 KiB
    answers = {
        401: APIClient().get("/api/v1/runs"),
        403: engine.get("/api/v1/approvals"),
        404: engine.get(f"/api/v1/runs/{uuid.uuid4()}"),
        413: engine.post("/api/v1/runs", data=oversized, content_type="application/json"),
    }
    assert {status: answer.status_code for status, answer in answers.items()} == {s: s for s in answers}
    # Every view's database error ends in this handler (tests/ops/test_ops.py shows it answering a view).
    unavailable = problem_exception_handler(OperationalError("connection refused"), {})
    assert unavailable is not None and unavailable.status_code == 503
    return {**{status: answer.json() for status, answer in answers.items()}, 503: dict(unavailable.data)}


def test_each_documented_refusal_of_401_403_404_413_503_is_shaped_like_the_real_answer(db, token):
    real = real_refusals(token)
    checked = 0
    for operation_id, (_, _, operation) in BY_ID.items():
        for status, answer in errors_of(operation).items():
            if status not in real:
                continue
            examples = answer["content"]["application/problem+json"].get("examples", {})
            # Without an example Swagger UI invents one from the schema, every optional field filled in.
            assert examples, (operation_id, status)
            for name, example in examples.items():
                value = example["value"]
                if value["code"] != real[status]["code"]:
                    continue  # another code of that status (requires_approval, input_too_large, ...)
                assert value.keys() == real[status].keys(), (operation_id, status, name, value)
                assert {k: value[k] for k in ("type", "title", "status")} == {
                    k: real[status][k] for k in ("type", "title", "status")
                }, (operation_id, status, name)
                checked += 1
    assert checked >= 3 * len(BY_ID)  # 401, 403 and 503 of every operation at least
