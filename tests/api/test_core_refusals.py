"""Every refusal of the core: its status, its code, a problem+json body, and nothing written."""

import copy
import json
import uuid
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from suspensions.models import ApiToken, Run, Suspension
from tests.helpers import call, client, continuation, pause, post, problem, refused, register, resume, version


def suspend_body(**overrides):
    body = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    body.update(overrides)
    return body


def resume_body(s, results=None):
    return {"version": version(s), "results": results or [{"call_id": "c1", "content": "done"}]}


def raw(c, url, text):
    return c.post(url, data=text.encode("utf-8"), content_type="application/json")


def finish(c, run_id, action, *, revision):
    body = {"complete": {"revision": revision}, "cancel": {"revision": revision}}.get(action)
    return post(c, f"/api/v1/runs/{run_id}/{action}", body or {"revision": revision, "error": "boom"})


def with_continuation(**fields):
    return suspend_body(continuation=continuation(**fields))


def with_config(**fields):
    return suspend_body(continuation=continuation(config={**continuation()["config"], **fields}))


# -- 400 invalid_request ----------------------------------------------------------

BAD_SUSPENDS = {
    "step_index as a string": (with_continuation(step_index="3"), ["continuation", "step_index"]),
    "new_messages_from past the messages": (with_continuation(new_messages_from=4), ["continuation"]),
    "negative tokens_used": (with_continuation(tokens_used=-1), ["continuation", "tokens_used"]),
    "prepared not base64": (with_continuation(prepared="not base64!"), ["continuation", "prepared"]),
    "a message without content": (with_continuation(messages=[{"role": "user"}]), ["continuation", "messages"]),
    "unknown continuation field": (with_continuation(mood="calm"), ["continuation", "mood"]),
    "unknown config field": (with_config(colour="red"), ["continuation", "config", "colour"]),
    "tools_restricted as a string": (with_config(tools_restricted="yes"), ["continuation", "config"]),
    "empty pending": (suspend_body(pending=[]), ["pending"]),
    "duplicate pending ids": (suspend_body(pending=[call("c1"), call("c1")]), ["pending"]),
    "arguments not JSON": (suspend_body(pending=[call(arguments="{amount: 900")]), ["pending"]),
    "arguments not a string": (suspend_body(pending=[{**call(), "arguments": {"amount": 900}}]), ["pending"]),
    "reply_with outside agent_reply": (suspend_body(pending=[call(reply_with="q-1")]), ["pending"]),
    "agent_reply without reply_with": (suspend_body(reason="agent_reply"), ["pending"]),
    "agent_reply with two calls": (
        suspend_body(reason="agent_reply", pending=[call("c1", reply_with="q"), call("c2", reply_with="q")]),
        ["pending"],
    ),
    "unknown reason": (suspend_body(reason="vibes"), ["reason"]),
    "ttl_seconds negative": (suspend_body(ttl_seconds=-1), ["ttl_seconds"]),
    "revision as a string": (suspend_body(revision="1"), ["revision"]),
    "unknown top-level field": (suspend_body(force=True), ["force"]),
    "missing continuation": ({"revision": 1, "reason": "external_tool", "pending": [call()]}, ["continuation"]),
}


@pytest.mark.parametrize("body, path", BAD_SUSPENDS.values(), ids=BAD_SUSPENDS.keys())
def test_suspend_refuses_a_malformed_body_with_field_errors(engine, body, path):
    run = register(engine)
    problem = refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body), 400, "invalid_request")
    errors = problem["errors"]
    for key in path:
        errors = errors[key]
    assert errors


BAD_BODIES = {
    "not JSON": '{"revision": 1,',
    "NaN": '{"revision": NaN, "reason": "external_tool"}',
    "Infinity": '{"revision": Infinity}',
    "a string with U+0000": json.dumps(suspend_body(pending=[call(name="re\x00fund")])),
    "an unpaired surrogate": '{"revision": 1, "reason": "\\ud800"}',
    "a list, not an object": "[1, 2]",
    "a number out of range": json.dumps(suspend_body(continuation=continuation(usage={"x": 1.5}))).replace(
        "1.5", "1e400"
    ),
    "nested past the limit": '{"revision": 1, "usage": ' + "[" * 300 + "]" * 300 + "}",
    "nested past the parser's recursion": '{"revision": 1, "usage": ' + "[" * 50000 + "]" * 50000 + "}",
}


@pytest.mark.parametrize("text", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_suspend_refuses_a_body_that_is_not_acceptable_json(engine, text):
    run = register(engine)
    refused(lambda: raw(engine, f"/api/v1/runs/{run['id']}/suspend", text), 400, "invalid_request")


def test_suspend_refuses_a_body_that_is_not_json_at_all(engine):
    run = register(engine)
    url = f"/api/v1/runs/{run['id']}/suspend"
    refused(lambda: engine.post(url, data="revision=1", content_type="text/plain"), 400, "invalid_request")


def test_a_result_nested_up_to_the_limit_is_accepted(engine):
    s = pause(engine)
    content = json.loads("[" * 190 + "]" * 190)
    response = resume(engine, s, [{"call_id": "c1", "content": content}])
    assert response.status_code == 201, response.content
    assert response.json()["results"][0]["content"] == content


def _version_with(s, **fields):
    return {**version(s), **fields}


BAD_RESUMES = {
    "no results": (lambda s: {"version": version(s), "results": []}, ["results"]),
    "content and error both": (
        lambda s: {"version": version(s), "results": [{"call_id": "c1", "content": 1, "error": "x"}]},
        ["results"],
    ),
    "neither content nor error": (lambda s: {"version": version(s), "results": [{"call_id": "c1"}]}, ["results"]),
    "call_id not a string": (lambda s: {"version": version(s), "results": [{"call_id": 1, "content": 1}]}, ["results"]),
    "unknown result field": (
        lambda s: {"version": version(s), "results": [{"call_id": "c1", "content": 1, "extra": 2}]},
        ["results"],
    ),
    "run_revision as a string": (
        lambda s: {"version": _version_with(s, run_revision="2"), "results": [{"call_id": "c1", "content": 1}]},
        ["version"],
    ),
    "suspension_id not a uuid": (
        lambda s: {"version": _version_with(s, suspension_id="s-1"), "results": [{"call_id": "c1", "content": 1}]},
        ["version"],
    ),
    "a version of another run": (
        lambda s: {"version": _version_with(s, run_id=str(uuid.uuid4())), "results": [{"call_id": "c1", "content": 1}]},
        ["version"],
    ),
    "no version": (lambda s: {"results": [{"call_id": "c1", "content": 1}]}, ["version"]),
    "unknown top-level field": (lambda s: {**resume_body(s), "fresh": True}, ["fresh"]),
}


@pytest.mark.parametrize("build, path", BAD_RESUMES.values(), ids=BAD_RESUMES.keys())
def test_resume_refuses_a_malformed_body_with_field_errors(engine, build, path):
    s = pause(engine)
    problem = refused(lambda: post(engine, f"/api/v1/runs/{s['run_id']}/resume", build(s)), 400, "invalid_request")
    assert path[0] in problem["errors"]


@pytest.mark.parametrize("text", BAD_BODIES.values(), ids=BAD_BODIES.keys())
def test_resume_refuses_a_body_that_is_not_acceptable_json(engine, text):
    s = pause(engine)
    refused(lambda: raw(engine, f"/api/v1/runs/{s['run_id']}/resume", text), 400, "invalid_request")


@pytest.mark.parametrize(
    "body",
    [{"agent_id": 7}, {"agent_id": "a", "scope": "Acme!"}, {"agent_id": "a", "owner": "me"}, {}],
    ids=["agent_id not a string", "scope not a scope path", "unknown field", "no agent_id"],
)
def test_register_refuses_a_malformed_body(engine, body):
    refused(lambda: post(engine, "/api/v1/runs", body), 400, "invalid_request")


@pytest.mark.parametrize(
    "action, body",
    [("complete", {"revision": True}), ("complete", {"revision": 0}), ("fail", {"revision": 1}), ("cancel", {})],
    ids=["revision a boolean", "revision zero", "fail without an error", "no revision"],
)
def test_finish_refuses_a_malformed_body(engine, action, body):
    run = register(engine)
    refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/{action}", body), 400, "invalid_request")


# -- 401 / 403 --------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, url",
    [("get", "/api/v1/runs"), ("post", "/api/v1/runs"), ("get", "/api/v1/suspensions")],
)
def test_a_request_without_a_token_is_unauthenticated(db, method, url):
    refused(lambda: getattr(APIClient(), method)(url, data={"agent_id": "a"}, format="json"), 401, "unauthenticated")


def test_a_wrong_token_is_unauthenticated(db):
    refused(lambda: post(client("sus_not-a-token"), "/api/v1/runs", {"agent_id": "a"}), 401, "unauthenticated")


def test_a_malformed_authorization_header_is_unauthenticated(db):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION="Bearer two parts")
    refused(lambda: post(c, "/api/v1/runs", {"agent_id": "a"}), 401, "unauthenticated")


def test_a_revoked_token_is_unauthenticated(db, token):
    secret = token("acme", ["engine"], "soon-revoked")
    s = pause(client(secret))
    ApiToken.objects.filter(name="soon-revoked").update(revoked=True)
    refused(lambda: resume(client(secret), s), 401, "unauthenticated")
    refused(lambda: client(secret).get("/api/v1/runs"), 401, "unauthenticated")


def test_register_needs_the_engine_role(db, token):
    bus = client(token("acme", ["bus", "approver", "auditor", "operator"]))
    refused(lambda: post(bus, "/api/v1/runs", {"agent_id": "a", "scope": "acme"}), 403, "forbidden")


def test_register_outside_the_tokens_scope_is_forbidden(engine):
    refused(lambda: post(engine, "/api/v1/runs", {"agent_id": "a", "scope": "other"}), 403, "forbidden")


@pytest.mark.parametrize("action", ["suspend", "resume", "complete", "fail", "cancel"])
def test_writes_need_the_engine_role_where_the_run_lives(engine, token, action):
    s = pause(engine)
    run = register(engine)
    auditor = client(token("acme", ["auditor", "bus", "approver"]))
    bodies = {
        "suspend": (run["id"], suspend_body()),
        "resume": (s["run_id"], resume_body(s)),
        "complete": (run["id"], {"revision": 1}),
        "fail": (run["id"], {"revision": 1, "error": "boom"}),
        "cancel": (s["run_id"], {"revision": 2}),
    }
    run_id, body = bodies[action]
    refused(lambda: post(auditor, f"/api/v1/runs/{run_id}/{action}", body), 403, "forbidden")


def test_one_shot_resume_of_an_approval_pause_requires_approval(engine):
    s = pause(engine, reason="approval")
    refused(lambda: resume(engine, s), 403, "requires_approval")


def test_one_shot_resume_of_an_agent_reply_pause_is_agent_reply_only(engine):
    s = pause(engine, reason="agent_reply")
    refused(lambda: resume(engine, s), 403, "agent_reply_only")


# -- 404 --------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["suspend", "resume", "complete", "fail", "cancel"])
def test_writes_to_an_unknown_run_are_not_found(engine, action):
    s = pause(engine)
    missing = str(uuid.uuid4())
    bodies = {
        "suspend": suspend_body(),
        "resume": {**resume_body(s), "version": {**version(s), "run_id": missing}},
        "complete": {"revision": 1},
        "fail": {"revision": 1, "error": "boom"},
        "cancel": {"revision": 1},
    }
    refused(lambda: post(engine, f"/api/v1/runs/{missing}/{action}", bodies[action]), 404, "not_found")


@pytest.mark.parametrize(
    "method, url",
    [("get", "/api/v1/runs/not-a-uuid"), ("post", "/api/v1/runs/42/resume"), ("get", "/api/v1/nowhere")],
)
def test_a_path_no_route_matches_is_a_not_found_problem(engine, method, url):
    refused(lambda: getattr(engine, method)(url, data={}, format="json"), 404, "not_found")


@pytest.mark.parametrize("url", ["/api/v1/runs/{}", "/api/v1/runs/{}/events", "/api/v1/suspensions/{}"])
def test_reads_of_an_unknown_id_are_not_found(engine, url):
    refused(lambda: engine.get(url.format(uuid.uuid4())), 404, "not_found")


# -- 409 --------------------------------------------------------------------------


def test_suspend_with_a_stale_revision_is_a_version_conflict(engine):
    run = register(engine)
    refused(
        lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", suspend_body(revision=2)), 409, "version_conflict"
    )


def test_suspend_of_a_paused_run_is_already_suspended(engine):
    s = pause(engine)
    url = f"/api/v1/runs/{s['run_id']}/suspend"
    refused(lambda: post(engine, url, suspend_body(revision=2)), 409, "already_suspended")


def test_suspend_of_a_finished_run_is_an_invalid_state(engine):
    run = register(engine)
    post(engine, f"/api/v1/runs/{run['id']}/complete", {"revision": 1})
    url = f"/api/v1/runs/{run['id']}/suspend"
    refused(lambda: post(engine, url, suspend_body(revision=2)), 409, "invalid_state")


def test_resume_with_a_stale_revision_is_a_version_conflict(engine):
    s = pause(engine)
    stale = {**resume_body(s), "version": {**version(s), "run_revision": 1}}
    refused(lambda: post(engine, f"/api/v1/runs/{s['run_id']}/resume", stale), 409, "version_conflict")


def test_resume_of_a_pause_that_never_existed_on_a_paused_run_is_a_version_conflict(engine):
    s = pause(engine)
    other = {**resume_body(s), "version": {**version(s), "suspension_id": str(uuid.uuid4())}}
    refused(lambda: post(engine, f"/api/v1/runs/{s['run_id']}/resume", other), 409, "version_conflict")


def test_a_different_resume_of_a_claimed_pause_is_an_admission_conflict(engine):
    s = pause(engine)
    first = resume(engine, s)
    assert first.status_code == 201
    problem = refused(lambda: resume(engine, s, [{"call_id": "c1", "content": "other"}]), 409, "admission_conflict")
    assert problem["admitted_digest"] == first.json()["admission"]["request_digest"]
    assert problem["request_digest"] != problem["admitted_digest"]
    assert "suspension" not in problem and "other" not in json.dumps(problem)


def test_resume_after_the_run_moved_on_with_a_different_request_is_a_version_conflict(engine):
    s = pause(engine)
    resume(engine, s)
    post(engine, f"/api/v1/runs/{s['run_id']}/complete", {"revision": 3})
    refused(lambda: resume(engine, s, [{"call_id": "c1", "content": "late"}]), 409, "version_conflict")


def test_resume_of_a_cancelled_pause_is_not_suspended(engine):
    s = pause(engine)
    post(engine, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": 2})
    refused(lambda: resume(engine, s), 409, "not_suspended")


def test_resume_aba_a_version_of_a_replaced_pause_claims_nothing(engine):
    first = pause(engine)
    assert resume(engine, first).status_code == 201
    second = post(engine, f"/api/v1/runs/{first['run_id']}/suspend", suspend_body(revision=3))
    assert second.status_code == 201, second.content
    later = second.json()
    assert later["run_revision"] == 4
    refused(lambda: resume(engine, first, [{"call_id": "c1", "content": "stale"}]), 409, "version_conflict")
    mixed = {**resume_body(later), "version": {**version(later), "run_revision": 2}}
    refused(lambda: post(engine, f"/api/v1/runs/{later['run_id']}/resume", mixed), 409, "version_conflict")
    assert Suspension.objects.filter(pk=later["id"]).exists()
    assert resume(engine, later).status_code == 201


@pytest.mark.parametrize("action", ["complete", "fail", "cancel"])
def test_finish_with_a_stale_revision_is_a_version_conflict(engine, action):
    s = pause(engine)
    refused(lambda: finish(engine, s["run_id"], action, revision=1), 409, "version_conflict")


@pytest.mark.parametrize("action", ["complete", "fail"])
def test_complete_or_fail_of_a_paused_run_is_an_invalid_state(engine, action):
    s = pause(engine)
    refused(lambda: finish(engine, s["run_id"], action, revision=2), 409, "invalid_state")


def test_cancel_of_a_finished_run_is_an_invalid_state(engine):
    run = register(engine)
    post(engine, f"/api/v1/runs/{run['id']}/complete", {"revision": 1})
    refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/cancel", {"revision": 2}), 409, "invalid_state")


# -- 410 --------------------------------------------------------------------------


def _expire(s):
    # Test setup: move the deadline into the past as the clock would have.
    past = Run.objects.get(pk=s["run_id"]).updated_at - timedelta(seconds=1)
    Suspension.objects.filter(pk=s["id"]).update(expires_at=past, deadline=past)


def test_resume_past_the_deadline_is_expired_and_leaves_the_run_paused(engine):
    s = pause(engine, ttl_seconds=60)
    _expire(s)
    refused(lambda: resume(engine, s), 410, "suspension_expired")
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("paused", 2)
    assert Suspension.objects.filter(pk=s["id"]).exists()


def test_cancel_past_the_deadline_is_expired_and_leaves_the_run_to_the_sweeper(engine):
    s = pause(engine, ttl_seconds=60)
    _expire(s)
    refused(lambda: post(engine, f"/api/v1/runs/{s['run_id']}/cancel", {"revision": 2}), 410, "suspension_expired")


def test_a_pause_without_a_deadline_never_expires(engine):
    s = pause(engine, ttl_seconds=0)
    assert resume(engine, s).status_code == 201


# -- 422 --------------------------------------------------------------------------

MISMATCHES = {
    "an unknown call id": [
        {"call_id": "c1", "content": 1},
        {"call_id": "c2", "content": 2},
        {"call_id": "zz", "content": 3},
    ],
    "a duplicate call id": [
        {"call_id": "c1", "content": 1},
        {"call_id": "c1", "content": 1},
        {"call_id": "c2", "content": 2},
    ],
    "a missing call id": [{"call_id": "c1", "content": 1}],
}


@pytest.mark.parametrize("results", MISMATCHES.values(), ids=MISMATCHES.keys())
def test_results_that_do_not_match_the_pending_calls_one_to_one_are_refused(engine, results):
    s = pause(engine, pending=[call("c1"), call("c2", name="lookup")])
    refused(lambda: resume(engine, s, copy.deepcopy(results)), 422, "results_mismatch")
    assert resume(engine, s, [{"call_id": "c2", "content": 2}, {"call_id": "c1", "content": 1}]).status_code == 201


@pytest.mark.parametrize(
    "path, query",
    [
        ("/api/v1/admissions", {"run_id": "01a22e4f-5e9f-71ea-966d-27b48316a991"}),
        ("/api/v1/runs", {"status": "paused"}),
        ("/api/v1/suspensions", {"tools": "send_refund"}),
        ("/api/v1/approvals", {"page": "2"}),
    ],
)
def test_a_list_refuses_a_query_parameter_it_does_not_know_instead_of_answering_every_row(db, token, path, query):
    c = client(token("acme", ["engine", "approver", "auditor"], "reader"))
    body = problem(c.get(path, query), 400, "invalid_request")
    assert list(body["errors"]) == list(query)


# -- bytes that are not UTF-8 (issue 50 item 14) ---------------------------------------------------


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ("agent_id=%ff%c3", "agent_id"),
        ("agent_id=%ff", "agent_id"),
        ("agent_id=ok%c3", "agent_id"),
        ("agent_id=%ed%a0%80", "agent_id"),  # a UTF-16 surrogate, which UTF-8 has no place for
        ("state=paused&tag=%c3%28", "tag"),
        ("%ff=1", "\ufffd"),
    ],
)
def test_bad_utf8_in_any_query_parameter_is_400_naming_it_before_any_view_runs(engine, query, named):
    register(engine)
    body = refused(lambda: engine.get(f"/api/v1/runs?{query}"), 400, "invalid_request")
    assert list(body["errors"]) == [named]


def test_bad_utf8_in_the_path_as_the_server_received_it_is_400(db):
    # gunicorn keeps the request line's path in RAW_URI; Django's PATH_INFO re-encodes the bad bytes.
    send = lambda: APIClient().post("/api/v1/callbacks/%ff%c3", {}, format="json", RAW_URI="/api/v1/callbacks/%ff%c3")  # noqa: E731
    body = refused(send, 400, "invalid_request")
    assert list(body["errors"]) == ["path"]


def test_bad_utf8_in_a_form_body_is_400_naming_the_field(db):
    send = lambda: APIClient().post(  # noqa: E731
        "/console/login/", data=b"username=%ff&password=x", content_type="application/x-www-form-urlencoded"
    )
    body = refused(send, 400, "invalid_request")
    assert list(body["errors"]) == ["username"]


def test_utf8_text_percent_encoded_in_a_query_is_read_as_text(engine):
    run = post(engine, "/api/v1/runs", {"agent_id": "agent-é"}).json()
    found = engine.get("/api/v1/runs?agent_id=agent-%C3%A9").json()["results"]
    assert [r["id"] for r in found] == [run["id"]]
