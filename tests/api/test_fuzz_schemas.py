"""Issue 32: a fuzz pass over `arguments_schema` at suspend and over edited arguments at decide.

Hypothesis builds schemas from every keyword that once broke something (local,
missing, non-schema, file and loopback `$ref`s, backtracking and unsupported
patterns, loops through `$defs`, `$id`, `uniqueItems`, tiny `multipleOf`...)
and arguments around them. Every answer must be a 2xx or a 4xx problem: never
a 5xx. The slowest request and the count over one second are printed as
figures (docs/reliability.md quotes them), not asserted: a loaded machine
must not fail a test.
"""

import json
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers import call, client, continuation, post, register, version

pytestmark = pytest.mark.slow

SUSPEND_EXAMPLES = 1250
DECIDE_EXAMPLES = 1250
FIGURES: dict[str, list[float]] = {"suspend": [], "decide": []}
STATUSES: dict[str, Counter[int]] = {"suspend": Counter(), "decide": Counter()}

REFS = [
    "#",
    "#/$defs/a",
    "#/$defs/b",
    "#/$defs/missing",
    "#/title",
    "#/$defs/a/enum",
    "#/properties",
    "#node",
    "#/definitions/a",
    "file:///etc/passwd",
    "http://127.0.0.1:9/schema.json",
    "http://[::1]:9/x",
    "https://json-schema.org/draft/2020-12/schema",
    "urn:example:x",
    "other.json#/a",
    "#/%24defs/a",
]
PATTERNS = ["^(a+)+$", "(a|aa)*b", "[a-z]+", "(a)\\1", "(?=a)", "(?<!a)b", "\\p{L}+", "[", "a{1000}{1000}", "^.*$", ""]
TYPES = ["string", "integer", "number", "object", "array", "boolean", "null"]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["a" * 30 + "!", "aaaa", "b", ""]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)


def one_keyword(children):
    """A schema of one keyword: a leaf, or a combinator over `children`."""
    return st.one_of(
        st.builds(lambda t: {"type": t}, st.sampled_from(TYPES)),
        st.builds(lambda r: {"$ref": r}, st.sampled_from(REFS)),
        st.builds(lambda r: {"$dynamicRef": r}, st.sampled_from(REFS)),
        st.builds(lambda p: {"pattern": p}, st.one_of(st.sampled_from(PATTERNS), st.text(max_size=8))),
        st.builds(lambda p, s: {"patternProperties": {p: s}}, st.sampled_from(PATTERNS), children),
        st.builds(lambda v: {"enum": v}, st.lists(json_values, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, json_values),
        st.builds(lambda m: {"multipleOf": m}, st.sampled_from([1e-308, 0.1, 3, 1e308])),
        st.builds(lambda n: {"minLength": n}, st.integers(0, 10)),
        st.builds(lambda b: {"uniqueItems": b}, st.booleans()),
        st.builds(lambda i: {"$id": i}, st.sampled_from(["http://127.0.0.1:9/id.json", "urn:x", "#frag", "rel.json"])),
        st.builds(lambda s: {"$schema": s}, st.sampled_from(["https://json-schema.org/draft/2020-12/schema", "x"])),
        st.just({"$anchor": "node"}),
        st.builds(lambda props: {"properties": props}, st.dictionaries(st.sampled_from("abc"), children, max_size=3)),
        st.builds(lambda s: {"items": s}, children),
        st.builds(lambda s: {"prefixItems": s}, st.lists(children, min_size=1, max_size=2)),
        st.builds(lambda s: {"contains": s}, children),
        st.builds(lambda s: {"additionalProperties": s}, children),
        st.builds(lambda s: {"unevaluatedProperties": s}, children),
        st.builds(lambda s: {"propertyNames": s}, children),
        st.builds(lambda s: {"not": s}, children),
        st.builds(lambda a, b: {"if": a, "then": b}, children, children),
        st.builds(lambda k, s: {k: s}, st.sampled_from(["allOf", "anyOf", "oneOf"]), st.lists(children, max_size=3)),
        st.builds(lambda s: {"dependentSchemas": {"a": s}}, children),
        st.builds(lambda d: {"$defs": d}, st.dictionaries(st.sampled_from(["a", "b"]), children, max_size=2)),
        st.builds(lambda d: {"definitions": {"a": d}}, children),
        st.builds(lambda d: {"$defs": {"a": d}}, st.one_of(json_scalars, st.lists(json_scalars, max_size=2))),
    )


def merged(parts):
    schema = {}
    for part in parts:
        schema.update(part)
    return schema


schemas_ = st.recursive(
    st.one_of(st.booleans(), one_keyword(st.just({}))),
    lambda children: st.lists(one_keyword(children), min_size=1, max_size=3).map(merged),
    max_leaves=10,
)


def timed(kind, send):
    began = time.monotonic()
    response = send()
    FIGURES[kind].append(time.monotonic() - began)
    STATUSES[kind][response.status_code] += 1
    assert response.status_code < 500, response.content[:2000]
    if response.status_code >= 400:
        assert response["Content-Type"].startswith("application/problem+json")
    return response


FUZZ = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}


def body(run, schema, arguments):
    return {
        "revision": run["revision"],
        "reason": "approval",
        "pending": [call("c1", "tool", arguments, arguments_schema=schema, editable=True)],
        "continuation": continuation(),
        "approval": {"quorum": 5},
    }


@settings(max_examples=SUSPEND_EXAMPLES, **FUZZ)
@given(schema=st.one_of(schemas_.filter(lambda s: isinstance(s, dict)), json_values), arguments=json_values)
def test_no_schema_makes_a_suspend_answer_5xx(engine, schema, arguments):
    run = register(engine)
    timed(
        "suspend", lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body(run, schema, json.dumps(arguments)))
    )


# Schemas that store (self-contained, cheap) yet do a lot with what an approver sends.
RICH = [
    {"type": "object", "properties": {"s": {"pattern": "^(a+)+$"}}, "patternProperties": {"^(a|aa)*$": {}}},
    {"$defs": {"n": {"$anchor": "node", "type": "object", "properties": {"k": {"items": {"$ref": "#node"}}}}}},
    {"type": "array", "uniqueItems": True, "items": {"anyOf": [{"type": "object"}, {"multipleOf": 0.1}]}},
    {"additionalProperties": {"$ref": "#"}, "propertyNames": {"pattern": "^[a-z]*$"}, "minProperties": 1},
    {"unevaluatedProperties": False, "properties": {"a": {}}, "if": {"required": ["a"]}, "then": {"required": ["b"]}},
]


@pytest.fixture
def pauses(engine):
    made = []
    for schema in RICH:
        run = register(engine)
        response = post(engine, f"/api/v1/runs/{run['id']}/suspend", body(run, schema, "{}"))
        assert response.status_code == 201, response.content
        made.append(response.json())
    return made


@pytest.fixture
def approver(db, token):
    return client(token("acme", ["approver"], "fuzz-approver"))


@settings(max_examples=DECIDE_EXAMPLES, **FUZZ)
@given(which=st.integers(0, len(RICH) - 1), arguments=json_values)
def test_no_edited_arguments_make_a_decide_answer_5xx(pauses, approver, which, arguments):
    s = pauses[which]
    edit = {"version": version(s), "decision": "approve", "calls": [{"id": "c1", "arguments": json.dumps(arguments)}]}
    timed("decide", lambda: post(approver, f"/api/v1/approvals/{s['id']}/decide", edit))


def teardown_module():
    for kind, times in FIGURES.items():
        if times:
            print(
                f"\nfuzz {kind}: {len(times)} requests, slowest {max(times) * 1000:.0f} ms,"
                f" over 1 s: {sum(t > 1 for t in times)}, statuses {dict(sorted(STATUSES[kind].items()))}"
            )
