"""Schemathesis against /api/schema/: every operation, positive and negative data, every role.

Checks: no 5xx, responses that match the documented schema and status codes,
and negative (schema-violating) data always rejected with a 4xx. Path ids
point at real rows of the caller's scope half of the time, so generated
bodies reach the services and not only the 404 branch.
"""

import hashlib

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

from tests.helpers import client, pause, post, version

ROLES = ("engine", "bus", "approver", "auditor", "operator")
EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    negative_data_rejection,
]
# Tallied across the module and printed at the end (docs/reliability.md quotes it).
TALLY: dict[str, int] = {}


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


schema = schemathesis.pytest.from_fixture("api_schema")


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
    ids = {
        "run": [approval["run_id"], tool["run_id"], reply["run_id"]],
        "suspension": [approval["id"], reply["id"], tool["id"]],
        "admission": [resumed["admission"]["id"]],
    }
    return secrets, ids


def kind_of(path: str, name: str) -> str:
    if name == "suspension_id" or path.startswith(("/api/v1/suspensions", "/api/v1/approvals")):
        return "suspension"
    if path.startswith("/api/v1/admissions"):
        return "admission"
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
