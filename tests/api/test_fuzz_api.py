"""Schemathesis against /api/schema/: every operation, positive and negative data, every role.

Checks: no 5xx, responses that match the documented schema and status codes,
and negative (schema-violating) data always rejected with a 4xx. Path ids
point at real rows of the caller's scope half of the time, so generated
bodies reach the services and not only the 404 branch.

Generated data rarely hits the inputs that once slipped past (issue #11), so
a hand-written corpus sends each of them, through the same app and checks,
to every operation that takes a body, for every role: each is a 400
invalid_request that writes nothing.
"""

import hashlib
import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    negative_data_rejection,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.helpers import call, client, continuation, pause, post, register, snapshot, version

ROLES = ("engine", "bus", "approver", "auditor", "operator")
EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
]
LONG_LIVED = ("wait_run", "stream_events")
# Tallied across the module and printed at the end (docs/reliability.md quotes it).
TALLY: dict[str, int] = {}

# Minutes of generated requests: in `make test`, not in the inner loop of `make check`.
pytestmark = pytest.mark.slow


@pytest.fixture
def keep_connection():
    """The WSGI app closes the connection after each request; inside a test transaction it must not
    (django.test.Client disconnects the same signal)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def api_schema(keep_connection):
    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    schema.config.generation.update(
        modes=[GenerationMode.POSITIVE, GenerationMode.NEGATIVE],
        max_examples=EXAMPLES,
        deterministic=True,
        with_security_parameters=False,
    )
    return schema


# The waits hold their answer up to a minute and the stream never ends: tests/api/test_waits.py drives them
# through uvicorn, tests/api/test_openapi.py holds their answers to the schema.
schema = schemathesis.pytest.from_fixture("api_schema").exclude(operation_id=list(LONG_LIVED))


@pytest.fixture
def world(token):
    """Tokens for every role (and one holding them all) and real rows of each kind in scope acme."""
    secrets = {role: token("acme", [role], f"fuzz-{role}") for role in ROLES}
    secrets["all"] = token("acme", ROLES, "fuzz-all")
    engine = client(secrets["all"])
    approval = pause(engine, reason="approval")
    tool = pause(engine)
    resumed = post(
        engine,
        f"/api/v1/runs/{tool['run_id']}/resume",
        {"version": version(tool), "results": [{"call_id": "c1", "content": "ok"}]},
    ).json()
    reply = pause(engine, reason="agent_reply")
    floor = post(engine, "/api/v1/approval-floors", {"scope": "acme/fuzz", "quorum": 2}).json()
    waiting = register(engine)
    answered = post(engine, f"/api/v1/runs/{waiting['id']}/suspend", suspend_body(callback=True)).json()
    ids = {
        "run": [approval["run_id"], tool["run_id"], reply["run_id"]],
        "suspension": [approval["id"], reply["id"], tool["id"]],
        "admission": [resumed["admission"]["id"]],
        "floor": [floor["id"]],
        "callback": [answered["callback_url"].rsplit("/", 1)[1]],  # a real token: its body is what is tested
    }
    return secrets, ids


def kind_of(path: str, name: str) -> str:
    if name == "suspension_id" or path.startswith(("/api/v1/suspensions", "/api/v1/approvals")):
        return "suspension"
    if path.startswith("/api/v1/admissions"):
        return "admission"
    if path.startswith("/api/v1/approval-floors"):
        return "floor"
    if path.startswith("/api/v1/callbacks"):
        return "callback"
    return "run"


def steer(case, ids) -> str:
    """Pick the role for this example and, half of the time, a real id for each path parameter."""
    seed = int(hashlib.sha256(repr((case.path, case.method, case.path_parameters, case.body)).encode()).hexdigest(), 16)
    role = (*ROLES, "all")[seed % (len(ROLES) + 1)]
    positive = case.meta is None or case.meta.generation.mode == GenerationMode.POSITIVE
    for name in case.path_parameters or {}:
        if positive and (seed >> 8) % 2:
            options = ids[kind_of(case.path, name)]
            case.path_parameters[name] = options[(seed >> 16) % len(options)]
    return role


@schema.parametrize()
@settings(suppress_health_check=list(HealthCheck), deadline=None)
@pytest.mark.django_db(transaction=True)
def test_every_operation_holds_its_schema_for_every_role(case, world):
    secrets, ids = world
    role = steer(case, ids)
    response = case.call(headers={"Authorization": f"Bearer {secrets[role]}"})
    TALLY[case.operation.label] = TALLY.get(case.operation.label, 0) + 1
    case.validate_response(response, checks=CHECKS)
    assert response.status_code < 500


@pytest.fixture(scope="module", autouse=True)
def report_calls():
    yield
    least = min(TALLY.values(), default=0)
    print(f"\nschemathesis: {sum(TALLY.values())} calls over {len(TALLY)} operations (at least {least} each)")


# -- the corpus ---------------------------------------------------------------------------------

# docs/api.md, "5. Digests and bounds": texts refused wherever JSON travels, as a body or held in a string (arguments,
# input).
BAD_JSON = {
    "NaN": '{"x": NaN}',
    "Infinity": "[Infinity]",
    "minus Infinity": "[-Infinity]",
    "a float that overflows a double": '{"x": 1e999}',
    "a negative float that overflows a double": "[-1e999]",
    "an integer that overflows a double": "[" + "9" * 400 + "]",
    "a duplicate key": '{"scope": "acme/support", "scope": "acme"}',
    "a duplicate key deep inside": '{"a": [{"b": {"c": 1, "c": 2}}]}',
    "an escaped U+0000": '{"x": "a\\u0000b"}',
    "an escaped U+0000 in a key": '{"a\\u0000": 1}',
    "an unpaired surrogate": '{"x": "\\udc00"}',
    "nesting of 201": "[" * 201 + "]" * 201,
    "nesting of a thousand": "[" * 1000 + "]" * 1000,
    "nesting past any recursion limit": "[" * 100_000 + "]" * 100_000,
}
HUGE = 10**30
OUT_OF_RANGE_TIMES = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]


def nowhere_version(ids):
    return {"run_id": ids["run"][0], "suspension_id": ids["suspension"][0], "run_revision": 1}


def suspend_body(**overrides):
    body = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    body.update(overrides)
    return body


def closure_body(ids, **overrides):
    body = {
        "schema_version": 1,
        "version": nowhere_version(ids),
        "admission_digest": "0" * 64,
        "start_digest": "0" * 64,
        "run_revision": 1,
        "issuer": "ctl",
        "issuer_revision": "1",
        "proof_ref": "p",
        "proof_digest": "0" * 64,
        "observed_at": "2026-01-01T00:00:00Z",
        "expires_at": "2026-01-01T01:00:00Z",
    }
    body.update(overrides)
    return body


# Valid JSON holding a value out of range: (operation, the field named in the refusal, body from the world's ids).
BAD_VALUES = {
    **{
        f"{field} {value}": (
            "POST /api/v1/runs/{id}/suspend",
            field,
            lambda ids, f=field, v=value: suspend_body(continuation=continuation(**{f: v})),
        )
        for field in ("step_index", "tokens_used", "new_messages_from", "schema_version")
        for value in (HUGE, 2**53 + 1)
    },
    "max_steps over 2^53": (
        "POST /api/v1/runs/{id}/suspend",
        "max_steps",
        lambda ids: suspend_body(continuation=continuation(config={"max_steps": 2**53 + 1})),
    ),
    "suspend revision": ("POST /api/v1/runs/{id}/suspend", "revision", lambda ids: suspend_body(revision=HUGE)),
    "complete revision": ("POST /api/v1/runs/{id}/complete", "revision", lambda ids: {"revision": HUGE}),
    "cancel revision": ("POST /api/v1/runs/{id}/cancel", "revision", lambda ids: {"revision": HUGE}),
    "fail revision": ("POST /api/v1/runs/{id}/fail", "revision", lambda ids: {"revision": HUGE, "error": "boom"}),
    "resume run_revision": (
        "POST /api/v1/runs/{id}/resume",
        "run_revision",
        lambda ids: {
            "version": {**nowhere_version(ids), "run_revision": HUGE},
            "results": [{"call_id": "c1", "content": "ok"}],
        },
    ),
    "admission run_revision": (
        "POST /api/v1/runs/{id}/admissions",
        "run_revision",
        lambda ids: {"version": {**nowhere_version(ids), "run_revision": HUGE}, "input": "1", "reply_with": "q"},
    ),
    "decision run_revision": (
        "POST /api/v1/approvals/{id}/decide",
        "run_revision",
        lambda ids: {"version": {**nowhere_version(ids), "run_revision": HUGE}, "decision": "approve"},
    ),
    "a list's decision run_revision": (
        "POST /api/v1/approvals/decide",
        "items[0].version.run_revision",
        lambda ids: {
            "items": [
                {
                    "approval_id": nowhere_version(ids)["suspension_id"],
                    "version": {**nowhere_version(ids), "run_revision": HUGE},
                    "decision": "approve",
                }
            ]
        },
    ),
    "closure run_revision": (
        "POST /api/v1/runs/{id}/closures",
        "run_revision",
        lambda ids: closure_body(ids, run_revision=HUGE),
    ),
    **{
        f"closure {field} {moment}": (
            "POST /api/v1/runs/{id}/closures",
            field,
            lambda ids, f=field, m=moment: closure_body(ids, **{f: m}),
        )
        for field in ("observed_at", "expires_at")
        for moment in OUT_OF_RANGE_TIMES
    },
}


def held_in_strings(ids, text):
    """The operations whose bodies hold JSON in a string, each given `text` there."""
    return {
        "POST /api/v1/runs/{id}/suspend": suspend_body(pending=[call(arguments=text)]),
        "POST /api/v1/runs/{id}/admissions": {"version": nowhere_version(ids), "input": text, "reply_with": "q-1"},
    }


def with_body(api_schema):
    operations = (result.ok() for result in api_schema.get_all_operations())
    return [operation for operation in operations if operation.body]


def send_raw(operation, ids, role_secret, data):
    """Send `data` (bytes) as the JSON body of `operation`, path ids pointing at real rows."""
    path_parameters = {p.name: ids[kind_of(operation.path, p.name)][0] for p in operation.path_parameters}
    case = operation.Case(path_parameters=path_parameters)
    headers = {"Authorization": f"Bearer {role_secret}", "Content-Type": "application/json"}
    response = case.call(headers=headers, data=data)
    case.validate_response(response, checks=CHECKS)
    return response


def assert_refused(response, label, role):
    body = response.json()
    assert (response.status_code, body["code"]) == (400, "invalid_request"), (label, role, response.text[:300])


@pytest.mark.parametrize("text", BAD_JSON.values(), ids=BAD_JSON.keys())
@pytest.mark.django_db(transaction=True)
def test_each_bad_json_text_is_refused_as_the_body_of_every_operation_for_every_role(api_schema, world, text):
    secrets, ids = world
    before = snapshot()
    for operation in with_body(api_schema):
        for role, secret in secrets.items():
            response = send_raw(operation, ids, secret, text.encode())
            assert_refused(response, operation.label, role)
            # Refused by the parser, before any field was looked at (those refusals name their fields).
            assert "errors" not in response.json(), (operation.label, role, response.text[:300])
    assert snapshot() == before


@pytest.mark.parametrize("text", BAD_JSON.values(), ids=BAD_JSON.keys())
@pytest.mark.django_db(transaction=True)
def test_each_bad_json_text_held_in_a_string_is_refused_for_every_role(api_schema, world, text):
    secrets, ids = world
    before = snapshot()
    for label, body in held_in_strings(ids, text).items():
        operation = api_schema.find_operation_by_label(label)
        for role, secret in secrets.items():
            assert_refused(send_raw(operation, ids, secret, json.dumps(body).encode()), label, role)
    assert snapshot() == before


@pytest.mark.parametrize("label, field, build", BAD_VALUES.values(), ids=BAD_VALUES.keys())
@pytest.mark.django_db(transaction=True)
def test_each_out_of_range_value_is_refused_for_every_role(api_schema, world, label, field, build):
    secrets, ids = world
    before = snapshot()
    operation = api_schema.find_operation_by_label(label)
    for role, secret in secrets.items():
        response = send_raw(operation, ids, secret, json.dumps(build(ids)).encode())
        assert_refused(response, label, role)
        assert f'"{field}"' in json.dumps(response.json()["errors"]), (role, response.text[:300])
    assert snapshot() == before
