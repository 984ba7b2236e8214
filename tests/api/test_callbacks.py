"""Callback URLs (docs/api.md, "Callback URLs: `POST /callbacks/{token}`"): a signed capability that resumes one pause
with the one-shot body and no token."""

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import Admission, Event, Run, Suspension
from tests.helpers import call, continuation, pause, post, problem, refused, register, version

RESULTS = [{"call_id": "c1", "content": {"rows": 1}}]


def paused_with_callback(c, **extra):
    run = register(c)
    body = {
        "revision": 1,
        "reason": "external_tool",
        "pending": [call("c1")],
        "continuation": continuation(),
        "callback": True,
        **extra,
    }
    response = post(c, f"/api/v1/runs/{run['id']}/suspend", body)
    assert response.status_code == 201, response.content
    return response.json()


def answer(url, s, results=RESULTS, **extra):
    return post(APIClient(), url, {"version": version(s), "results": results, **extra})


def test_a_pause_that_asks_gets_a_callback_url_on_the_requests_host(engine):
    s = paused_with_callback(engine)
    assert s["callback_url"].startswith("http://testserver/api/v1/callbacks/")
    assert "callback_url" not in pause(engine)


def test_the_callback_url_names_the_configured_public_origin(engine, settings):
    settings.CONSOLE_BASE_URL = "https://susp.example.com"
    s = paused_with_callback(engine)
    assert s["callback_url"].startswith("https://susp.example.com/api/v1/callbacks/")


def test_a_post_without_a_token_resumes_the_pause_as_the_one_shot_resume_would(engine):
    s = paused_with_callback(engine)
    response = answer(s["callback_url"], s)
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["results"] == RESULTS and body["suspension"]["id"] == s["id"]
    assert body["admission"]["actor"] == "callback" and body["admission"]["fresh"] is True
    assert (body["run_state"], body["run_revision"]) == ("running", 3)
    events = Event.objects.filter(run_id=s["run_id"]).order_by("id")
    assert [(e.kind, e.actor) for e in events][-2:] == [("admitted", "callback"), ("started", "callback")]
    assert Admission.objects.get(run_id=s["run_id"]).source == "one_shot"


def test_the_identical_body_again_is_a_replay_and_another_body_a_conflict(engine):
    s = paused_with_callback(engine)
    first = answer(s["callback_url"], s).json()
    again = answer(s["callback_url"], s)
    assert again.status_code == 200
    assert again.json()["fresh"] is False and "suspension" not in again.json()
    assert again.json()["admission"]["request_digest"] == first["admission"]["request_digest"]
    body = refused(lambda: answer(s["callback_url"], s, [{"call_id": "c1", "content": 2}]), 409, "admission_conflict")
    assert body["admitted_digest"] == first["admission"]["request_digest"]


def test_the_callback_and_the_api_share_digests_and_replays(engine):
    s = paused_with_callback(engine)
    by_api = post(engine, f"/api/v1/runs/{s['run_id']}/resume", {"version": version(s), "results": RESULTS})
    assert by_api.status_code == 201
    by_url = answer(s["callback_url"], s)
    assert by_url.status_code == 200
    assert by_url.json()["admission"]["id"] == by_api.json()["admission"]["id"]


def test_a_tampered_token_is_a_404_and_writes_nothing(engine):
    s = paused_with_callback(engine)
    url = s["callback_url"]
    tampered = url[:-2] + ("AA" if not url.endswith("AA") else "BB")
    refused(lambda: answer(tampered, s), 404, "not_found")
    refused(lambda: answer(url.rsplit("/", 1)[0] + "/nothing", s), 404, "not_found")


def test_a_token_does_not_cover_another_pause(engine):
    s = paused_with_callback(engine)
    other = paused_with_callback(engine)
    refused(lambda: answer(s["callback_url"], other), 404, "not_found")
    refused(lambda: answer(s["callback_url"], {**s, "run_id": other["run_id"]}), 404, "not_found")
    assert Run.objects.get(pk=other["run_id"]).state == "paused"


def test_a_token_past_its_deadline_is_410_suspension_expired_as_the_engines_own_resume_would_be(engine):
    s = paused_with_callback(engine, ttl_seconds=60)
    live = Suspension.objects.get(pk=s["id"])
    live.expires_at = db_now() - timedelta(seconds=1)
    token = services.callback_token(live)  # signed as a real one, with a deadline already passed
    refused(lambda: answer(f"/api/v1/callbacks/{token}", s), 410, "suspension_expired")


def test_a_pause_without_a_deadline_has_a_token_without_one(engine):
    s = paused_with_callback(engine, ttl_seconds=0)
    assert s["expires_at"] is None
    assert answer(s["callback_url"], s).status_code == 201


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "options"])
def test_any_other_method_is_a_404(engine, method):
    s = paused_with_callback(engine)
    response = refused(lambda: getattr(APIClient(), method)(s["callback_url"]), 404, "not_found")
    assert response["code"] == "not_found"


def test_a_bad_body_at_a_good_url_is_refused_like_a_resume(engine):
    s = paused_with_callback(engine)
    refused(lambda: post(APIClient(), s["callback_url"], {"results": RESULTS}), 400, "invalid_request")
    refused(lambda: answer(s["callback_url"], s, [{"call_id": "c2", "content": 1}]), 422, "results_mismatch")


def test_a_bad_token_is_a_404_whatever_the_body(engine):
    s = paused_with_callback(engine)
    refused(lambda: post(APIClient(), s["callback_url"] + "x", {"nonsense": True}), 404, "not_found")


def test_only_an_external_tool_pause_may_ask_for_a_callback(engine):
    run = register(engine)
    body = {"revision": 1, "reason": "approval", "pending": [call()], "continuation": continuation(), "callback": True}
    refused(lambda: post(engine, f"/api/v1/runs/{run['id']}/suspend", body), 400, "invalid_request")


def test_a_callback_answers_no_401_even_with_a_wrong_bearer(engine):
    s = paused_with_callback(engine)
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION="Bearer wrong")
    response = post(c, s["callback_url"], {"version": version(s), "results": RESULTS})
    assert response.status_code == 201
    problem(answer(s["callback_url"] + "0", s), 404, "not_found")
