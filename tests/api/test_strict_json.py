"""Strict JSON (docs/api.md, "5. Digests and bounds"): bodies and JSON held in strings obey one set of rules (issue #11,
3 and 5)."""

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from suspensions import services
from suspensions.exceptions import InvalidRequest
from suspensions.models import Run, Suspension
from tests.closure_setup import OPERATOR, closure_body, closure_request, started, written
from tests.helpers import call, client, continuation, envelope, pause, post, refused, register, version

TWO_TO_53 = 2**53
HUGE = 10**30


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Texts that must never pass as JSON, whether they are a body or held in a string.
BAD_TEXTS = {
    "NaN": '{"amount": NaN}',
    "Infinity": "[Infinity]",
    "minus Infinity": "[-Infinity]",
    "a float that overflows a double": '{"amount": 1e999}',
    "a negative float that overflows a double": "[-1e999]",
    "an integer that overflows a double": "[" + "9" * 400 + "]",
    "a duplicate key": '{"amount": 1, "amount": 900}',
    "a duplicate key deep inside": '{"a": [{"b": {"c": 1, "c": 2}}]}',
    "an escaped U+0000": '{"note": "a\\u0000b"}',
    "an escaped U+0000 in a key": '{"a\\u0000": 1}',
    "an unpaired surrogate": '{"note": "\\ud800"}',
    "nesting of 201": nested(201),
    "nesting of a thousand": nested(1000),
    "nesting past any recursion limit": nested(100_000),
}


@pytest.fixture
def bus(db, token):
    return client(token("acme", ["bus"], "bus"))


@pytest.fixture
def operator(db, token):
    return client(token("acme", ["operator"], "ops"))


def suspend(c, run, **overrides):
    body = {"revision": run["revision"], "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    body.update(overrides)
    return post(c, f"/api/v1/runs/{run['id']}/suspend", body)


def reply_pause(engine):
    cont = continuation(config={"model": "m-1", "tools": ["ask"], "tools_restricted": False})
    return pause(engine, reason="agent_reply", cont=cont)


def admit(c, s, text, **overrides):
    body = {"version": {**version(s), **overrides}, "input": text, "reply_with": "q-1"}
    return post(c, f"/api/v1/runs/{s['run_id']}/admissions", body)


def raw(c, url, text):
    return c.post(url, data=text.encode("utf-8"), content_type="application/json")


# -- JSON held in strings ------------------------------------------------------------------


def test_arguments_nested_a_thousand_deep_are_refused(engine):
    run = register(engine)
    problem = refused(lambda: suspend(engine, run, pending=[call(arguments=nested(1000))]), 400, "invalid_request")
    assert "pending" in problem["errors"]


def test_an_admission_input_nested_a_thousand_deep_is_refused(engine, bus):
    s = reply_pause(engine)
    problem = refused(lambda: admit(bus, s, nested(1000)), 400, "invalid_request")
    assert "input" in problem["errors"]


def test_arguments_nested_two_hundred_deep_are_kept_and_one_more_level_is_refused(engine):
    kept = pause(engine, pending=[call(arguments=nested(200))])
    assert kept["pending"][0]["arguments"] == nested(200)
    run = register(engine)
    refused(lambda: suspend(engine, run, pending=[call(arguments=nested(201))]), 400, "invalid_request")


@pytest.mark.parametrize("text", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
def test_arguments_that_break_a_json_rule_are_refused(engine, text):
    run = register(engine)
    problem = refused(lambda: suspend(engine, run, pending=[call(arguments=text)]), 400, "invalid_request")
    assert "pending" in problem["errors"]


@pytest.mark.parametrize("text", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
def test_an_admission_input_that_breaks_a_json_rule_is_refused(engine, bus, text):
    s = reply_pause(engine)
    problem = refused(lambda: admit(bus, s, text), 400, "invalid_request")
    assert "input" in problem["errors"]


@pytest.mark.parametrize("text", BAD_TEXTS.values(), ids=BAD_TEXTS.keys())
def test_a_body_that_breaks_a_json_rule_is_refused(engine, text):
    run = register(engine)
    valid = json.dumps(
        {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation(usage={"x": 0})}
    )
    body = valid.replace('"usage": {"x": 0}', '"usage": {"x": ' + text + "}")
    assert body != valid
    refused(lambda: raw(engine, f"/api/v1/runs/{run['id']}/suspend", body), 400, "invalid_request")


def test_arguments_and_input_are_kept_byte_for_byte(engine, bus):
    text = '{ "amount" : 9.00e2 ,"note":"caf\\u00e9", "n": -0 }'
    s = pause(engine, reason="agent_reply", pending=[call(arguments=text, reply_with="q-1")])
    assert s["pending"][0]["arguments"] == text
    assert json.loads(Suspension.objects.get(pk=s["id"]).pending)[0]["arguments"] == text
    response = admit(bus, s, text)
    assert response.status_code == 201, response.content
    started = post(engine, f"/api/v1/admissions/{response.json()['admission']['id']}/start", {})
    assert started.json()["input"] == text


# -- bodies ---------------------------------------------------------------------------------


def test_a_body_with_a_duplicate_key_is_refused_and_registers_nothing(engine):
    text = '{"agent_id": "agent-1", "scope": "acme/support", "scope": "acme"}'
    refused(lambda: raw(engine, "/api/v1/runs", text), 400, "invalid_request")
    assert not Run.objects.exists()


def test_a_dispatch_output_nested_a_thousand_deep_is_refused(db, bus):
    text = '{"tenant": "acme", "env": "prod", "correlation_id": "acme:s:c:v:u::pack=p::flow=f", "output": '
    refused(lambda: raw(bus, "/api/v1/dispatch/resume", text + nested(1000) + "}"), 400, "invalid_request")


def test_a_dispatch_output_string_is_text_and_never_read_as_json(engine, bus):
    parked = post(
        engine,
        "/api/v1/flow-waits",
        {
            "envelope": envelope(),
            "snapshot": {"node": "n"},
            "reason": "agent_reply",
        },
    ).json()
    body = {"tenant": "acme", "env": "prod", "correlation_id": parked["correlation_id"], "output": nested(1000)}
    response = post(bus, "/api/v1/dispatch/resume", body)
    assert response.status_code == 201, response.content[:500]


# -- integers: at most 2^53 either way ------------------------------------------------------

COUNTERS = ["step_index", "tokens_used", "new_messages_from", "schema_version"]


@pytest.mark.parametrize("value", [HUGE, TWO_TO_53 + 1])
@pytest.mark.parametrize("field", COUNTERS)
def test_a_continuation_counter_beyond_two_to_the_53_is_refused(engine, field, value):
    run = register(engine)
    problem = refused(lambda: suspend(engine, run, continuation=continuation(**{field: value})), 400, "invalid_request")
    assert field in problem["errors"]["continuation"]


@pytest.mark.parametrize("field", ["max_steps", "max_tokens"])
def test_a_config_integer_beyond_two_to_the_53_is_refused(engine, field):
    run = register(engine)
    cont = continuation(config={"model": "m-1", field: TWO_TO_53 + 1})
    refused(lambda: suspend(engine, run, continuation=cont), 400, "invalid_request")


def test_counters_of_exactly_two_to_the_53_are_accepted(engine):
    cont = continuation(step_index=TWO_TO_53, tokens_used=TWO_TO_53, schema_version=TWO_TO_53)
    s = pause(engine, cont=cont)
    assert s["continuation"]["step_index"] == TWO_TO_53


@pytest.mark.parametrize("action", ["suspend", "complete", "cancel", "fail"])
def test_a_revision_beyond_two_to_the_53_is_refused(engine, action):
    run = register(engine)
    body = {"revision": HUGE, "error": "boom"} if action == "fail" else {"revision": HUGE}
    if action == "suspend":
        body.update(reason="external_tool", pending=[call()], continuation=continuation())
    problem = refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/{action}", body), 400, "invalid_request")
    assert "revision" in problem["errors"]


def test_a_claimed_run_revision_beyond_two_to_the_53_is_refused(engine, bus):
    s = reply_pause(engine)
    problem = refused(lambda: admit(bus, s, '{"answer": 42}', run_revision=HUGE), 400, "invalid_request")
    assert "run_revision" in problem["errors"]["version"]


def test_a_closure_run_revision_beyond_two_to_the_53_is_refused(operator):
    claimed = started()
    before = written()
    response = post(operator, f"/api/v1/runs/{claimed.run.id}/closures", closure_body(claimed, run_revision=HUGE))
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request"), response.content
    assert "run_revision" in response.json()["errors"]
    assert written() == before


# -- dates ------------------------------------------------------------------------------------

OUT_OF_RANGE = ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "9999-12-31T23:59:59.999999-00:01"]


@pytest.mark.parametrize("moment", OUT_OF_RANGE)
@pytest.mark.parametrize("field", ["observed_at", "expires_at"])
def test_a_closure_time_outside_the_calendar_in_utc_is_refused(operator, field, moment):
    claimed = started()
    before = written()
    response = post(operator, f"/api/v1/runs/{claimed.run.id}/closures", closure_body(claimed, **{field: moment}))
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request"), response.content
    assert field in response.json()["errors"]
    assert written() == before


def test_an_out_of_range_closure_time_is_a_400_for_any_token(db, token):
    claimed = started()
    anyone = client(token("elsewhere", ["auditor"], "stranger"))
    before = written()
    body = closure_body(claimed, observed_at=OUT_OF_RANGE[0])
    response = post(anyone, f"/api/v1/runs/{claimed.run.id}/closures", body)
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request"), response.content
    assert written() == before


def test_a_proof_observed_in_year_one_keeps_a_four_digit_year_in_the_receipt(operator):
    claimed = started()
    body = closure_body(claimed, observed_at="0001-01-01T00:00:00Z")
    response = post(operator, f"/api/v1/runs/{claimed.run.id}/closures", body)
    assert response.status_code == 201, response.content
    assert response.json()["request"]["observed_at"] == "0001-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    "moment",
    [datetime(2026, 1, 1), datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1)))],
    ids=["without an offset", "before year one in UTC"],
)
def test_the_closure_service_refuses_a_time_it_cannot_hold_whichever_door_built_the_request(db, moment):
    claimed = started()
    request = replace(closure_request(claimed), observed_at=moment)
    before = written()
    with pytest.raises(InvalidRequest) as refusal:
        services.close_run(principal=OPERATOR, run_id=claimed.run.id, request=request)
    assert "observed_at" in refusal.value.extra["errors"]
    assert written() == before
