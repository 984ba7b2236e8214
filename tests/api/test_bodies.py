"""Each request body is one model (suspensions/wire): it accepts the bodies the suite sends, refuses each rule's
breach naming the field path (as problem+json `errors`), and is the OpenAPI request schema.

Bodies are valid ones mutated at a random place with values chosen to sit on
the edges of every rule (types, blanks, whitespace, bounds, unknown keys): no
mutation may raise anything but a ValidationError, and every refusal's
`errors` names only paths that exist in the body or in the model.
"""

import copy
import json
import uuid
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from suspensions.models import Reason
from suspensions.wire import base, requests, requests_flows, requests_operators
from tests.helpers import call, continuation

RUN, PAUSE = str(uuid.uuid4()), str(uuid.uuid4())
VERSION = {"run_id": RUN, "suspension_id": PAUSE, "run_revision": 2}
SCHEMA = {"type": "object", "properties": {"amount": {"type": "integer", "maximum": 1000}}, "required": ["amount"]}
EDGES: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1,
    5,
    6,
    2**53,
    2**53 + 1,
    1.5,
    "",
    " ",
    "x",
    " x",
    "x ",
    "a\nb",
    "a,b",
    "c1",
    "x" * 201,
    "{}",
    "not json",
    "expire",
    "approve",
    "approval",
    "aGVsbG8=",
    RUN,
    [],
    [None],
    ["x", " "],
    {},
    {"escalate": {"extend_seconds": 0}},
    {"role": "user"},
    call("c1"),
]


def errors(model: type[base.Body], body: Any) -> dict[str, Any] | None:
    """The body's `errors` as the API writes them, or None when the model accepts it."""
    try:
        model.model_validate(copy.deepcopy(body))
    except ValidationError as exc:
        found = base.field_errors(exc)
        json.dumps(found)  # what the problem+json body holds
        return found
    return None


SUITE: dict[type[base.Body], list[dict[str, Any]]] = {
    requests.Suspend: [
        {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()},
        {
            "revision": 3,
            "reason": "approval",
            "pending": [call("c1", "refund", '{"amount": 900}', arguments_schema=SCHEMA, editable=True)],
            "continuation": continuation(prepared="aGVsbG8=", tool_results=[{"a": 1}], usage={}),
            "ttl_seconds": 60,
            "approval": {"quorum": 2, "exclude_requester": True, "on_expiry": {"escalate": {"extend_seconds": 5}}},
            "tags": ["team:billing"],
        },
        {"revision": 1, "reason": "agent_reply", "pending": [call(reply_with="q1")], "continuation": continuation()},
        {
            "revision": 1,
            "reason": "approval",
            "pending": [call()],
            "continuation": continuation(),
            "approval": {
                "escalation": [
                    {"after_seconds": 60, "notify": {"people": ["ann"]}},
                    {"after_seconds": 600, "notify": {"scopes": ["acme"], "groups": ["leads"]}},
                ]
            },
        },
    ],
    requests.Resume: [
        {"version": VERSION, "results": [{"call_id": "c1", "error": "boom"}, {"call_id": "c2", "content": None}]},
    ],
    requests.Decide: [
        {"version": VERSION, "decision": "approve", "reason": "ok", "calls": [{"id": "c1", "arguments": "{}"}]},
        {"version": VERSION, "decision": "deny", "reason": "no"},
        {"version": VERSION, "decision": "respond", "response": "42"},
    ],
    requests.RegisterRun: [{"agent_id": "a", "scope": "acme/team", "session_id": "s-1", "tags": ["x"]}],
    requests.Admit: [{"version": VERSION, "input": "{}", "reply_with": "q1"}],
    requests_flows.DispatchResumeIn: [{"tenant": "acme", "env": "prod", "correlation_id": "c", "output": None}],
    requests_operators.CreateWebhook: [{"url": "https://hooks.example.com", "event_types": ["approval.requested"]}],
    requests_operators.ExtendDeadline: [
        {"seconds": 3600, "reason": "the approver is out until noon"},
        {"until": "2030-01-01T12:00:00+02:00", "reason": "after the board meets"},
    ],
}


def test_every_body_the_suite_sends_is_accepted():
    for model, examples in SUITE.items():
        for body in examples:
            assert errors(model, body) is None, (model.__name__, body)


def test_the_reasons_are_the_models_reasons():
    assert set(base.ReasonName.__args__) == set(Reason.values)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, (*prefix, index))
    return out


def mutate(body: Any, path: tuple[Any, ...], how: str, value: Any, key: str) -> Any:
    body = copy.deepcopy(body)
    if not path:
        return value if how == "set" else body
    parent = body
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "set":
        parent[last] = value
    elif how == "drop":
        del parent[last]
    elif isinstance(parent[last], dict):  # add
        parent[last][key] = value
    elif isinstance(parent[last], list):
        parent[last].append(value)
    return body


KEYS = ["extra", "id", "content", "error", "reply_with", "editable", "arguments_schema", "approval", "calls"]


def named_paths(tree: dict[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if not isinstance(tree, dict):
        assert isinstance(tree, list) and tree and all(isinstance(m, str) and m for m in tree), tree
        return [prefix]
    return [p for key, sub in tree.items() for p in named_paths(sub, (*prefix, key))]


def refusal_is_well_formed(model: type[base.Body], body: Any) -> bool:
    """Check the refusal of `body`, if any: each path it names is in the body or the model; True when refused."""
    found = errors(model, body)
    if found is None:
        return False
    sent = {tuple(str(step) for step in p) for p in paths(body)}
    for path in named_paths(found):
        stripped = path[:-1] if path[-1] == "non_field_errors" else path
        # A path the body has, or a field it lacks (a required one), one step below a path it has.
        assert stripped in sent or stripped[:-1] in sent, (body, found)
    return True


@pytest.mark.parametrize("model", list(SUITE), ids=lambda m: m.__name__)
def test_every_body_one_change_away_is_accepted_or_refused_naming_its_fields(model):
    refused = 0
    for body in SUITE[model]:
        for path in paths(body):
            for value in EDGES:
                refused += refusal_is_well_formed(model, mutate(body, path, "set", value, ""))
            if path:
                refused += refusal_is_well_formed(model, mutate(body, path, "drop", None, ""))
            for key in KEYS:
                refused += refusal_is_well_formed(model, mutate(body, path, "add", "x", key))
    assert refused > 10


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_body_a_few_changes_away_is_accepted_or_refused_naming_its_fields(data):
    model = data.draw(st.sampled_from(list(SUITE)))
    body = data.draw(st.sampled_from(SUITE[model]))
    for _ in range(data.draw(st.integers(2, 4))):
        path = data.draw(st.sampled_from(paths(body)))
        how = data.draw(st.sampled_from(["set", "set", "drop", "add"]))
        value = data.draw(st.sampled_from(EDGES))
        body = mutate(body, path, how, value, data.draw(st.sampled_from(KEYS))) if path or how == "set" else body
    refusal_is_well_formed(model, body)


GOOD = SUITE[requests.Suspend][0]
STEP = {"after_seconds": 60, "notify": {"people": ["ann"]}}
REFUSED_SUSPENDS = {
    "duplicate ids": ({**GOOD, "reason": "approval", "pending": [call(), call()]}, {"pending": ["unique"]}),
    "an unknown key is reported alone": ({**GOOD, "pending": [call(" c1")], "extra": 1}, {"extra": ["Unknown"]}),
    "new_messages_from past the messages": (
        {**GOOD, "continuation": continuation(new_messages_from=4)},
        {"continuation": {"new_messages_from": ["len"]}},
    ),
    "a policy on an external_tool pause": ({**GOOD, "approval": {"quorum": 2}}, {"approval": ["policy"]}),
    "no deadline but an on_expiry": (
        {**GOOD, "reason": "approval", "ttl_seconds": 0, "approval": {"on_expiry": "deny"}},
        {"approval": {"on_expiry": ["never expires"]}},
    ),
    "a schema that cannot apply": (
        {**GOOD, "reason": "approval", "pending": [call(arguments_schema={"type": 5})]},
        {"pending": {"0": {"arguments_schema": [""]}}},
    ),
    "editable outside approval": ({**GOOD, "pending": [call(editable=True)]}, {"pending": ["only for approval"]}),
    "agent_reply without reply_with": ({**GOOD, "reason": "agent_reply"}, {"pending": ["reply_with"]}),
    "prepared not base64": (
        {**GOOD, "continuation": continuation(prepared="not base64!")},
        {"continuation": {"prepared": ["base64"]}},
    ),
    "a control character in a name": ({**GOOD, "pending": [call(name="re\nfund")]}, {"pending": {"0": {"name": [""]}}}),
    "a comma in a name": ({**GOOD, "pending": [call(name="a,b")]}, {"pending": {"0": {"name": ["commas"]}}}),
    "arguments not JSON": (
        {**GOOD, "pending": [call(arguments="{amount: 9")]},
        {"pending": {"0": {"arguments": ["valid JSON"]}}},
    ),
    "a null where a field may only be left out": ({**GOOD, "ttl_seconds": None}, {"ttl_seconds": [""]}),
    "a number as a string": ({**GOOD, "revision": "1"}, {"revision": [""]}),
    "past 2^53": ({**GOOD, "revision": 2**53 + 1}, {"revision": [""]}),
    "a message that is not an object": (
        {**GOOD, "continuation": continuation(messages=[1])},
        {"continuation": {"messages": {"0": ["message object"]}}},
    ),
    "a message without content": (
        {**GOOD, "continuation": continuation(messages=[{"role": "user"}])},
        {"continuation": {"messages": {"0": {"content": ["required"]}}}},
    ),
    "continuation null": ({**GOOD, "continuation": None}, {"continuation": ["null"]}),
    "continuation not an object": ({**GOOD, "continuation": 5}, {"continuation": {"non_field_errors": ["object"]}}),
    "a bad tag": ({**GOOD, "tags": ["Bad Tag"]}, {"tags": ["a-z"]}),
    "a blank tag": ({**GOOD, "tags": [""]}, {"tags": {"0": ["blank"]}}),
    "the body not an object": ([1], {"non_field_errors": ["object"]}),
    "escalation steps out of order": (
        {**GOOD, "reason": "approval", "approval": {"escalation": [STEP, STEP]}},
        {"approval": {"escalation": {"1": {"after_seconds": ["greater than the step before"]}}}},
    ),
    "an escalation step asking nobody": (
        {**GOOD, "reason": "approval", "approval": {"escalation": [{**STEP, "notify": {"groups": []}}]}},
        {"approval": {"escalation": {"0": {"notify": ["at least one"]}}}},
    ),
    "an escalation step naming a bad scope": (
        {**GOOD, "reason": "approval", "approval": {"escalation": [{**STEP, "notify": {"scopes": ["a b"]}}]}},
        {"approval": {"escalation": {"0": {"notify": {"scopes": ["Not a valid scope"]}}}}},
    ),
}


def assert_matches(found: Any, wanted: Any) -> None:
    """`found` has exactly `wanted`'s paths, each message holding the words given."""
    if isinstance(wanted, dict):
        assert isinstance(found, dict) and set(found) == set(wanted), (found, wanted)
        for key in wanted:
            assert_matches(found[key], wanted[key])
    else:
        assert len(found) == len(wanted) and all(w in f for f, w in zip(found, wanted, strict=True)), (found, wanted)


@pytest.mark.parametrize("body, wanted", REFUSED_SUSPENDS.values(), ids=REFUSED_SUSPENDS.keys())
def test_each_rule_of_the_pause_refuses_at_its_field(body, wanted):
    assert_matches(errors(requests.Suspend, body), wanted)


@pytest.mark.parametrize(
    "body, wanted",
    [
        ({"reason": "r"}, {"seconds": ["exactly one"]}),
        ({"seconds": 60, "until": "2030-01-01T00:00:00Z", "reason": "r"}, {"seconds": ["exactly one"]}),
        ({"until": "2030-01-01T00:00:00", "reason": "r"}, {"until": ["offset"]}),
        ({"until": "0001-01-01T00:00:00+01:00", "reason": "r"}, {"until": ["years 1 to 9999"]}),
        ({"seconds": 60, "reason": "  "}, {"reason": ["blank"]}),
        ({"seconds": True, "reason": "r"}, {"seconds": [""]}),
    ],
)
def test_an_extension_is_seconds_or_until_with_a_reason(body, wanted):
    assert_matches(errors(requests_operators.ExtendDeadline, body), wanted)


def test_strings_are_trimmed_where_they_were_and_kept_where_they_are_key_material():
    run = requests.RegisterRun.model_validate({"agent_id": "  support  ", "session_id": " s "})
    assert (run.agent_id, run.session_id) == ("support", "s")
    assert errors(requests.RegisterRun, {"agent_id": "   "}) == {"agent_id": ["This field may not be blank."]}
    assert errors(requests.RegisterRun, {"agent_id": " " * 5 + "a" * 200}) is None  # the length of the trimmed name
    assert errors(requests.RegisterRun, {"agent_id": "a\n"}) is not None  # controls are refused before trimming
    engine = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    assert requests.Suspend.model_validate({**engine, "engine_version": " v1 "}).engine_version == " v1 "
    envelope = {"tenant": "acme", "env": "prod", "provider": " p", "channel": "", "conversation": "c"}
    wait = requests_flows.FlowEnvelope.model_validate({**envelope, "user": "u", "pack": "p", "flow": "f"})
    assert (wait.provider, wait.channel) == (" p", "")
    assert requests.Decide.model_validate({"version": VERSION, "decision": "deny", "reason": " no "}).reason == "no"


def test_a_result_is_content_or_error_and_kept_as_sent():
    both = {"version": VERSION, "results": [{"call_id": "c1", "content": 1, "error": "x"}]}
    assert errors(requests.Resume, both) == {
        "results": {"0": {"non_field_errors": ["Give exactly one of content or error."]}}
    }
    none = {"version": VERSION, "results": [{"call_id": "c1", "content": None}]}
    assert errors(requests.Resume, none) is None


SCHEMA_DOC = SchemaGenerator().get_schema(request=None, public=True)


def resolved(name: str) -> Draft202012Validator:
    """The component `name` of the OpenAPI document as a JSON Schema (nullable as a type, refs resolved)."""

    def strict(node: Any) -> Any:
        if isinstance(node, list):
            return [strict(item) for item in node]
        if not isinstance(node, dict):
            return node
        out = {key: strict(value) for key, value in node.items() if key != "nullable"}
        return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") else out

    components = strict(SCHEMA_DOC["components"])
    return Draft202012Validator({"$ref": f"#/components/schemas/{name}", "components": components})


@pytest.mark.parametrize("model", list(SUITE), ids=lambda m: m.__name__)
def test_the_openapi_request_schema_is_the_models_and_takes_the_suites_bodies(model):
    validator = resolved(f"{model.__name__}Request")
    for body in SUITE[model]:
        assert list(validator.iter_errors(body)) == [], body
    assert validator.schema["components"]["schemas"][f"{model.__name__}Request"]["additionalProperties"] is False
