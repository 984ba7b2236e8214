"""The flat checks of the hot bodies (suspensions.api.bodies) never accept what their serializer refuses.

Each check may say "plainly valid" (the validated data) or "not sure" (None:
the serializer decides and writes the error). The property held here: when a
check answers, the serializer accepts the same body with the same data. Bodies
are valid ones mutated at a random place with values chosen to sit on the
edges of every rule (types, blanks, whitespace, bounds, unknown keys), plus the
bodies the suite and the clients send, which must take the flat path.
"""

import copy
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from suspensions.api import bodies
from suspensions.api import serializers as s
from tests.helpers import call, continuation

RUN, PAUSE = str(uuid.uuid4()), str(uuid.uuid4())
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
    "a,b",
    "c1",
    "c2",
    "q1",
    "x" * 201,
    "{}",
    "[1]",
    "not json",
    '{"amount": 2000}',
    "expire",
    "deny",
    "approve",
    "respond",
    "approval",
    "external_tool",
    "agent_reply",
    "aGVsbG8=",
    "ü",
    RUN,
    RUN.replace("-", ""),
    [],
    [1],
    [None],
    ["x", " "],
    {},
    {"escalate": {"extend_seconds": 60}},
    {"escalate": {"extend_seconds": 0}},
    {"role": "user", "content": "hi"},
    {"role": " ", "content": "hi"},
    {"role": "user"},
    call("c2"),
    call("c1"),
]


def bodies_of_the_suite() -> dict[type[s.Strict], list[dict[str, Any]]]:
    version = {"run_id": RUN, "suspension_id": PAUSE, "run_revision": 2}
    schema_call = call("c1", "refund", '{"amount": 900}', arguments_schema=SCHEMA, editable=True)
    return {
        s.Suspend: [
            {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()},
            {"revision": 1, "reason": "approval", "pending": [call(), call("c2")], "continuation": continuation()},
            {"revision": 3, "reason": "approval", "pending": [schema_call], "continuation": continuation()},
            {
                "revision": 1,
                "reason": "approval",
                "pending": [call()],
                "continuation": continuation(prepared="aGVsbG8=", tool_results=[{"a": 1}], usage={}),
                "ttl_seconds": 60,
                "approval": {"quorum": 2, "exclude_requester": True, "on_expiry": {"escalate": {"extend_seconds": 5}}},
            },
            {
                "revision": 1,
                "reason": "agent_reply",
                "pending": [call(reply_with="q1")],
                "continuation": continuation(),
            },
        ],
        s.Resume: [
            {"version": version, "results": [{"call_id": "c1", "content": {"ok": True}}]},
            {"version": version, "results": [{"call_id": "c1", "error": "boom"}, {"call_id": "c2", "content": None}]},
        ],
        s.Decide: [
            {"version": version, "decision": "approve"},
            {"version": version, "decision": "approve", "reason": "ok", "calls": [{"id": "c1", "arguments": "{}"}]},
            {"version": version, "decision": "deny", "reason": "no"},
            {"version": version, "decision": "respond", "response": "42"},
        ],
        s.RegisterRun: [
            {"agent_id": "a"},
            {"agent_id": "a", "scope": "acme/team", "session_id": "s-1"},
            {"agent_id": "a", "session_id": ""},
        ],
    }


SUITE = bodies_of_the_suite()


def plain(value: Any) -> Any:
    """DRF's validated data as plain values (OrderedDicts and all)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def used(serializer_class: type[s.Strict], data: dict[str, Any]) -> dict[str, Any]:
    """The validated fields the views read: all of them but a pause's, which stores its raw objects."""
    if serializer_class is s.Suspend:
        return {k: v for k, v in data.items() if k in ("revision", "reason", "ttl_seconds")}
    return plain(data)


def agree(serializer_class: type[s.Strict], body: Any) -> bool:
    """Assert the check and the serializer agree on `body`; True when the check answered."""
    flat = bodies.plainly(bodies.CHECKS[serializer_class], copy.deepcopy(body))
    if flat is None:
        return False
    serializer = serializer_class(data=copy.deepcopy(body))
    assert serializer.is_valid(), (body, serializer.errors)
    assert used(serializer_class, flat) == used(serializer_class, serializer.validated_data), body
    return True


def test_every_body_the_suite_sends_takes_the_flat_path_with_the_serializers_data():
    for serializer_class, examples in SUITE.items():
        for body in examples:
            assert agree(serializer_class, body), (serializer_class.__name__, body)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += paths(item, (*prefix, index))
    return out


def value_at(body: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        body = body[step]
    return body


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


def single_mutations(body: Any) -> list[Any]:
    """Every body one change away from `body`: each place set to each edge value, dropped, or given a key."""
    out = []
    for path in paths(body):
        out += [mutate(body, path, "set", value, "") for value in EDGES]
        if path:
            out.append(mutate(body, path, "drop", None, ""))
        if isinstance(value_at(body, path), dict):
            out += [mutate(body, path, "add", value, key) for key in KEYS for value in (None, "x", "c1", {}, True)]
        elif isinstance(value_at(body, path), list):
            out += [mutate(body, path, "add", value, "") for value in EDGES]
    return out


def test_a_check_never_accepts_a_body_one_change_away_that_its_serializer_refuses():
    answered = 0
    for serializer_class, examples in SUITE.items():
        for body in examples:
            answered += sum(agree(serializer_class, mutated) for mutated in single_mutations(body))
    assert answered > 1000  # the flat path is taken often enough for the agreement to mean something


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_check_never_accepts_a_body_a_few_changes_away_that_its_serializer_refuses(data):
    serializer_class = data.draw(st.sampled_from(list(SUITE)))
    body = data.draw(st.sampled_from(SUITE[serializer_class]))
    for _ in range(data.draw(st.integers(2, 4))):
        path = data.draw(st.sampled_from(paths(body)))
        how = data.draw(st.sampled_from(["set", "set", "drop", "add"]))
        value = data.draw(st.sampled_from(EDGES))
        body = mutate(body, path, how, value, data.draw(st.sampled_from(KEYS))) if path or how == "set" else body
    agree(serializer_class, body)


def test_the_checks_leave_the_refusals_to_the_serializer():
    """A few bodies each rule refuses: the check is unsure of every one (the serializer writes the error)."""
    good = SUITE[s.Suspend][0]
    refused = [
        {**good, "reason": "approval", "pending": [call(), call()]},  # duplicate ids
        {**good, "pending": [call(" c1")], "extra": 1},
        {**good, "continuation": continuation(new_messages_from=4)},
        {**good, "approval": {"quorum": 2}},  # a policy on an external_tool pause
        {**good, "reason": "approval", "ttl_seconds": 0, "approval": {"on_expiry": "deny"}},
        {**good, "reason": "approval", "pending": [call(arguments_schema={"type": 5})]},
        {**good, "pending": [call(editable=True)]},
        {**good, "reason": "agent_reply"},
        {**good, "continuation": continuation(prepared="not base64!")},
    ]
    for body in refused:
        assert bodies.plainly(bodies.suspend, body) is None, body
        assert not s.Suspend(data=body).is_valid(), body
