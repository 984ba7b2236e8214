"""Issue 32 items 1-3: a call's arguments_schema reads no file, fetches no URL, runs no unbounded regex, never 500s.

Each reproduction of the issue, through the API: the `$ref` cases against a
real HTTP listener on 127.0.0.1 (and ::1 where the host has it) that must see
no request, and a temporary file whose content must appear nowhere.
"""

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from suspensions import schemas
from suspensions.models import Approval, Run, Suspension
from tests.helpers import call, client, continuation, post, refused, register, version

SECRET = "LOCAL-FILE-SECRET-77"
SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer"}}}


class Listener(ThreadingHTTPServer):
    """An HTTP server on a loopback address that answers a schema to anything and records every request."""

    def __init__(self, host: str, family: int = socket.AF_INET) -> None:
        self.address_family = family
        self.seen: list[str] = []
        super().__init__((host, 0), Handler)

    @property
    def url(self) -> str:
        host = self.server_address[0]
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.seen.append(f"{self.path} {self.headers.get('User-Agent')}")  # type: ignore[attr-defined]
        body = json.dumps({"const": SECRET}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def serving(host: str, family: int) -> Iterator[Listener]:
    server = Listener(host, family)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    yield from serving("127.0.0.1", socket.AF_INET)


@pytest.fixture
def listener6() -> Iterator[Listener]:
    try:
        socket.socket(socket.AF_INET6).close()
        yield from serving("::1", socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback on this host")


@pytest.fixture
def secret_file(tmp_path):
    path = tmp_path / "local.json"
    path.write_text(json.dumps({"const": SECRET}))
    return path


def suspend_body(run, schema, arguments='{"amount": 900}'):
    return {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call("c1", "refund", arguments, arguments_schema=schema, editable=True)],
        "continuation": continuation(),
    }


def suspend(engine, schema, arguments='{"amount": 900}'):
    run = register(engine)
    return run, post(engine, f"/api/v1/runs/{run['id']}/suspend", suspend_body(run, schema, arguments))


def refused_at_suspend(engine, schema, arguments='{"amount": 900}'):
    """The suspend is 400 invalid_request naming arguments_schema, and wrote nothing."""
    run = register(engine)
    body = refused(
        lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", suspend_body(run, schema, arguments)),
        400,
        "invalid_request",
    )
    assert not Suspension.objects.filter(run_id=run["id"]).exists()
    assert "arguments_schema" in json.dumps(body["errors"])
    return body


def unreached(ref):
    """A schema whose bad `$ref` sits in a branch the arguments {"amount": 900} never reach."""
    return {**SCHEMA, "properties": {**SCHEMA["properties"], "never": {"$ref": ref}}}


# -- item 1: nothing outside the schema is read -----------------------------------------------


def test_a_file_ref_is_refused_at_suspend_and_the_file_is_never_read(engine, secret_file):
    for schema in ({"$ref": secret_file.as_uri()}, unreached(secret_file.as_uri())):
        body = refused_at_suspend(engine, schema)
        assert SECRET not in json.dumps(body)


@pytest.mark.parametrize("where", ["root", "unreached", "defs"])
def test_an_http_ref_to_a_listener_is_refused_at_suspend_and_nothing_is_fetched(engine, listener, where):
    url = f"{listener.url}/schema.json"
    schema = {
        "root": {"$ref": url},
        "unreached": unreached(url),
        # Under `definitions`, which 2020-12 does not walk: reached only through the local $ref.
        "defs": {"definitions": {"a": {"$ref": url}}, "anyOf": [{"type": "object"}, {"$ref": "#/definitions/a"}]},
    }[where]
    refused_at_suspend(engine, schema)
    assert listener.seen == []


def test_an_ipv6_loopback_ref_is_refused_and_nothing_is_fetched(engine, listener6):
    refused_at_suspend(engine, {"$ref": f"{listener6.url}/x"})
    assert listener6.seen == []


def test_an_id_does_not_make_a_relative_ref_remote(engine, listener):
    refused_at_suspend(engine, {"$id": f"{listener.url}/root.json", "$ref": "other.json"})
    refused_at_suspend(engine, {"$defs": {"a": {"$id": f"{listener.url}/a.json", "type": "string"}}})
    assert listener.seen == []


# -- items 2 and 3: patterns in linear time, every schema error a 400 --------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"title": "t", "$ref": "#/title"},
        {"$defs": {"n": 5}, "$ref": "#/$defs/n"},
        {"$defs": {"l": {"enum": [1, 2]}}, "$ref": "#/$defs/l/enum"},
        {"$defs": {"a": True}, "$ref": "#/$defs/a/b"},  # a pointer walking into a boolean (found by the fuzz)
        {"$defs": {"n": 5}, "$ref": "#/$defs/n/0"},
        unreached("#/$defs/missing"),
        {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
        {"$defs": {"a": {"$ref": "#/$defs/a"}}},  # a self-loop no argument reaches
        {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"not": {"$ref": "#/$defs/a"}}}},
        {"type": "string", "pattern": "(a)\\1"},
        {"patternProperties": {"(?=x)": {}}},
        {"$schema": "http://json-schema.org/draft-04/schema#"},
        {"patternProperties": {"^a": {}}, "unevaluatedProperties": False},
        {"description": "x" * (schemas.MAX_SCHEMA_BYTES + 1)},
    ],
)
def test_a_schema_that_cannot_be_applied_is_400_at_suspend_never_500(engine, schema):
    refused_at_suspend(engine, schema)


def test_a_deep_schema_is_refused(engine):
    deep: dict = {"type": "object"}
    for _ in range(schemas.MAX_SCHEMA_DEPTH):
        deep = {"properties": {"a": deep}}
    refused_at_suspend(engine, deep)


def test_a_backtracking_pattern_runs_in_linear_time_on_the_arguments(engine):
    # Python's re takes about 20 s on 26 a's and then doubles with each one; RE2 answers at once.
    pattern = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}}
    run, response = suspend(engine, pattern, json.dumps({"s": "a" * 5000 + "!"}))
    assert response.status_code == 201, response.content
    found = schemas.errors(pattern, {"s": "a" * 100_000 + "!"})
    assert [e.message.endswith("does not match '^(a+)+$'") for e in found] == [True]
    names = {"patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False}
    assert len(schemas.errors(names, {"a" * 5000 + "!": 1})) == 1


def test_a_fan_out_of_refs_is_refused_for_its_cost_not_run_for_ever(engine):
    steps = {f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]} for i in range(40)}
    schema = {"$defs": {**steps, "d40": {"type": "string"}}, "$ref": "#/$defs/d0"}
    body = refused_at_suspend(engine, schema, "5")
    assert "steps" in json.dumps(body["errors"])


def test_unique_items_over_many_objects_is_answered(engine):
    schema = {"type": "array", "uniqueItems": True}
    assert schemas.errors(schema, [{"i": i} for i in range(20_000)]) == []
    assert len(schemas.errors(schema, [{"i": 1}, {"i": 1.0}])) == 1
    assert schemas.errors(schema, [1, True, [0], [False]]) == []


def test_a_self_contained_recursive_schema_with_anchors_is_accepted(engine):
    tree = {
        "$defs": {"node": {"$anchor": "node", "type": "object", "properties": {"kids": {"items": {"$ref": "#node"}}}}},
        "$ref": "#/$defs/node",
    }
    run, response = suspend(engine, tree, json.dumps({"kids": [{"kids": []}]}))
    assert response.status_code == 201, response.content


# -- at decide: a schema stored before these checks is a 400, never a 500 or a fetch -------------


@pytest.fixture
def approver(db, token):
    return client(token("acme", ["approver"], "alice"))


def stored_before_the_checks(engine, schema):
    """A pause whose call carries `schema`, written as a server without issue 32's checks would have kept it."""
    run, response = suspend(engine, SCHEMA)
    assert response.status_code == 201, response.content
    s = response.json()
    for model in (Suspension, Approval):
        row = model.objects.get(pk=s["id"])
        pending = json.loads(row.pending)
        pending[0]["arguments_schema"] = schema
        model.objects.filter(pk=s["id"]).update(pending=json.dumps(pending))
    return s


def decide(c, s, arguments):
    body = {"version": version(s), "decision": "approve", "calls": [{"id": "c1", "arguments": arguments}]}
    return post(c, f"/api/v1/approvals/{s['id']}/decide", body)


@pytest.mark.parametrize(
    "bad",
    [
        "remote",
        "file",
        "#/$defs/missing",
        "loop",
        "pattern",
    ],
)
def test_an_edit_against_a_schema_stored_before_the_checks_is_400_and_fetches_nothing(
    engine, approver, listener, secret_file, bad
):
    schema = {
        "remote": unreached(f"{listener.url}/x.json"),
        "file": {"$ref": secret_file.as_uri()},
        "#/$defs/missing": unreached("#/$defs/missing"),
        "loop": {**SCHEMA, "$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"never": {"$ref": "#/$defs/a"}}},
        "pattern": {"properties": {"amount": {"pattern": "(?<=a)b"}}},
    }[bad]
    s = stored_before_the_checks(engine, schema)
    body = refused(lambda: decide(approver, s, '{"amount": 450}'), 400, "invalid_request")
    assert body["call_id"] == "c1" and "cannot be applied" in body["detail"]
    assert SECRET not in json.dumps(body) and listener.seen == []
    assert Run.objects.get(pk=s["run_id"]).state == "paused"
