"""The version-drift guard (docs/api.md, "Version drift: `engine_version` and `accept_drift`"): a pause's engine_version
against its resume's or start's."""

import pytest

from suspensions.models import Event
from tests.helpers import call, client, continuation, post, refused, register, version

RESULTS = [{"call_id": "c1", "content": "done"}]


def paused(c, reason="external_tool", **extra):
    run = register(c)
    body = {"revision": 1, "reason": reason, "pending": [call("c1")], "continuation": continuation(), **extra}
    response = post(c, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def resume(c, s, **extra):
    return post(c, f"/api/v1/runs/{s['run_id']}/resume", {"version": version(s), "results": RESULTS, **extra})


def event_data(s, kind):
    return Event.objects.get(run_id=s["run_id"], kind=kind).data


@pytest.fixture
def approver(db, token):
    return client(token("acme", ["approver"], "alice"))


def approved(engine, approver, **extra):
    s = paused(engine, "approval", **extra)
    decided = post(approver, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})
    assert decided.status_code == 201, decided.content
    return s, decided.json()["admission"]["id"]


def test_the_pause_keeps_its_engine_version(engine):
    s = paused(engine, engine_version="engine-2.4.1")
    assert s["engine_version"] == "engine-2.4.1"
    assert paused(engine)["engine_version"] is None


@pytest.mark.parametrize("value", ["x" * 201, "", 7, None])
def test_an_engine_version_must_be_a_string_of_1_to_200_characters(engine, value):
    run = register(engine)
    body = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    send = lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", {**body, "engine_version": value})  # noqa: E731
    refused(send, 400, "invalid_request")


def test_a_resume_from_another_engine_version_is_refused_naming_both(engine):
    s = paused(engine, engine_version="v1")
    body = refused(lambda: resume(engine, s, engine_version="v2"), 409, "version_drift")
    assert (body["engine_version"], body["pause_engine_version"]) == ("v2", "v1")


def test_a_resume_that_accepts_the_drift_goes_on_and_the_events_say_so(engine):
    s = paused(engine, engine_version="v1")
    response = resume(engine, s, engine_version="v2", accept_drift=True)
    assert response.status_code == 201, response.content
    said = {"accept_drift": True, "engine_version": "v2", "pause_engine_version": "v1"}
    for kind in ("admitted", "started"):
        assert said.items() <= event_data(s, kind).items()


@pytest.mark.parametrize("extra", [{"engine_version": "v1"}, {}, {"accept_drift": True}])
def test_no_drift_no_refusal_and_nothing_recorded(engine, extra):
    s = paused(engine, engine_version="v1")
    assert resume(engine, s, **extra).status_code == 201
    assert "accept_drift" not in event_data(s, "started")


def test_a_pause_without_a_version_never_drifts(engine):
    s = paused(engine)
    assert resume(engine, s, engine_version="v9").status_code == 201


def test_a_replay_is_decided_on_the_digest_whatever_the_version(engine):
    s = paused(engine, engine_version="v1")
    first = resume(engine, s, engine_version="v1")
    assert first.status_code == 201
    for extra in ({"engine_version": "v1"}, {"engine_version": "v2"}, {}):
        again = resume(engine, s, **extra)
        assert again.status_code == 200, (extra, again.content)
        assert again.json()["admission"]["request_digest"] == first.json()["admission"]["request_digest"]


def test_a_start_from_another_engine_version_is_refused_naming_both(engine, approver):
    _, admission_id = approved(engine, approver, engine_version="v1")
    start = lambda: post(engine, f"/api/v1/admissions/{admission_id}/start", {"engine_version": "v2"})  # noqa: E731
    body = refused(start, 409, "version_drift")
    assert (body["engine_version"], body["pause_engine_version"]) == ("v2", "v1")


def test_a_start_that_accepts_the_drift_records_it(engine, approver):
    s, admission_id = approved(engine, approver, engine_version="v1")
    body = {"engine_version": "v2", "accept_drift": True}
    assert post(engine, f"/api/v1/admissions/{admission_id}/start", body).status_code == 201
    assert event_data(s, "started")["accept_drift"] is True
    assert event_data(s, "started")["pause_engine_version"] == "v1"


def test_a_start_of_the_same_version_or_without_one_goes_on(engine, approver):
    _, same = approved(engine, approver, engine_version="v1")
    _, bare = approved(engine, approver, engine_version="v1")
    assert post(engine, f"/api/v1/admissions/{same}/start", {"engine_version": "v1"}).status_code == 201
    assert post(engine, f"/api/v1/admissions/{bare}/start", {}).status_code == 201


@pytest.mark.parametrize("body", [{"accept_drift": "yes"}, {"engine_version": "x" * 201}, {"other": 1}])
def test_a_start_body_holds_only_the_drift_guard(engine, approver, body):
    _, admission_id = approved(engine, approver)
    refused(lambda: post(engine, f"/api/v1/admissions/{admission_id}/start", body), 400, "invalid_request")
