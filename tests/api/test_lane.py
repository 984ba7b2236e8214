"""The plain lane (suspensions/api/lane.py) answers exactly as DRF does, and only takes what it can.

Every scenario runs twice on fresh rows, once with the lane and once with
API_PLAIN_LANE off, and the answers must be the same byte for byte once ids,
digests and clocks are replaced by placeholders.
"""

import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient
from rest_framework.views import APIView

from suspensions.api import lane, views
from suspensions.models import ApiToken, Event, Run
from suspensions.tokens import create_token

from ..helpers import call, client, continuation, pause, post, register, resume, snapshot, version
from .test_agent_replies import admit, reply_pause

VOLATILE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uuid>"),
    (re.compile(r"[0-9a-f]{64}"), "<digest>"),
    (re.compile(r"\d{4}-\d\d-\d\dT[0-9:.]+(Z|[+-]\d\d:\d\d)"), "<time>"),
    (re.compile(r"[0-9a-f]{32}"), "<request id>"),
]
CLOCK_HEADERS = {"X-Request-ID", "Date", "Expires"}


def answer(response: Any) -> tuple[int, dict[str, str], str]:
    """Status, headers and body of an answer with its ids, digests and clocks replaced."""
    headers = {k: "<clock>" if k in CLOCK_HEADERS else placeholders(v) for k, v in response.headers.items()}
    return response.status_code, headers, placeholders(response.content.decode())


def placeholders(text: str) -> str:
    for pattern, placeholder in VOLATILE:
        text = pattern.sub(placeholder, text)
    return text


def twice(token: Callable[..., str], scenario: Callable[[Callable[..., APIClient]], list[Any]]) -> list[Any]:
    """The scenario's answers with the lane, then without it; each run with its own tokens and rows."""
    out = []
    for on in (True, False):
        with override_settings(API_PLAIN_LANE=on):
            out.append([answer(r) for r in scenario(lambda *roles: client(token("acme", roles or ["engine"])))])
    assert out[0] == out[1]
    return out[0]


def one_shot(make: Callable[..., APIClient]) -> list[Any]:
    engine = make()
    run = register(engine)
    body = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    url = f"/api/v1/runs/{run['id']}"
    paused = post(engine, f"{url}/suspend", body)
    s = paused.json()
    return [
        post(engine, "/api/v1/runs", {"agent_id": "a\u2028b", "scope": "acme"}),  # DRF escapes U+2028
        paused,
        post(engine, f"{url}/suspend", body),  # 409: the run is no longer running
        resume(engine, s, [{"call_id": "other", "content": 1}]),  # 422: results do not match
        resume(engine, s),
        resume(engine, s),  # the replay: 200
        post(engine, f"{url}/complete", {"revision": s["run_revision"]}),  # 409: revision moved on
        post(engine, f"{url}/complete", {"revision": s["run_revision"] + 1}),
    ]


def approval(make: Callable[..., APIClient]) -> list[Any]:
    engine, approver = make(), make("approver")
    s = pause(engine, reason="approval")
    decide = f"/api/v1/approvals/{s['id']}/decide"
    decided = post(approver, decide, {"version": version(s), "decision": "approve"})
    start = f"/api/v1/admissions/{decided.json()['admission']['id']}/start"
    return [
        post(engine, decide, {"version": version(s), "decision": "approve"}),  # 403: no approver role
        decided,
        post(approver, decide, {"version": version(s), "decision": "approve"}),  # the replay
        engine.post(start, data="{}", content_type="application/json"),
        engine.post(start),  # 409 resume_already_started, with its receipt
        engine.post(start, data='{"x": 1}', content_type="application/json"),  # 400: a start has no fields
    ]


def replies_and_ends(make: Callable[..., APIClient]) -> list[Any]:
    engine, bus = make(), make("bus")
    s = reply_pause(engine)
    admitted = admit(bus, s)
    started = post(engine, f"/api/v1/admissions/{admitted.json()['admission']['id']}/start", {})
    to_fail, to_cancel = register(engine), register(engine)
    return [
        admit(bus, s, input='{"answer": 1}'),  # 409: the pause was claimed with another input
        admitted,
        admit(bus, s),  # the replay
        started,
        post(engine, f"/api/v1/runs/{to_fail['id']}/fail", {"revision": 1, "error": "tool crashed"}),
        post(engine, f"/api/v1/runs/{to_fail['id']}/fail", {"revision": 1, "error": 7}),  # 400
        post(engine, f"/api/v1/runs/{to_cancel['id']}/cancel", {"revision": 1}),
        post(bus, f"/api/v1/runs/{to_cancel['id']}/cancel", {"revision": 2}),  # 403: a bus may not
    ]


def refusals(make: Callable[..., APIClient]) -> list[Any]:
    engine = make()
    run = register(engine)
    url = f"/api/v1/runs/{run['id']}/suspend"
    plain = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}
    gone, secret = create_token(scope="acme", roles=["engine"], name="gone")
    ApiToken.objects.filter(pk=gone.pk).update(revoked=True)
    return [
        post(engine, url, {**plain, "reason": "nap"}),  # 400 from the serializer, with its errors
        post(engine, url, {**plain, "extra": 1}),
        engine.post(url, data="{bad", content_type="application/json"),  # 400 from the parser
        engine.post(url, data="null", content_type="application/json"),
        engine.post(url, data="[1]", content_type="application/json"),
        engine.post(url, data=json.dumps(plain), content_type="text/plain"),  # 400: not JSON
        engine.post(url, data=json.dumps(plain), content_type="application/json", HTTP_ACCEPT="text/html"),  # 406
        engine.post(url + "?format=xml", data=json.dumps(plain), content_type="application/json"),  # 404 format
        engine.get(url),  # 405
        post(client(secret), url, plain),  # 401
        post(APIClient(), url, plain),  # 401 without credentials
        post(engine, f"/api/v1/runs/{run['id']}/resume", {"version": {"run_id": "x"}, "results": []}),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize("scenario", [one_shot, approval, replies_and_ends, refusals])
def test_the_lane_answers_as_drf_does(token: Callable[..., str], scenario: Callable[..., list[Any]]) -> None:
    answers = twice(token, scenario)
    assert len({status for status, _, _ in answers}) > 1  # the scenarios mix successes and refusals


@pytest.mark.django_db
def test_a_plain_post_skips_drf_and_an_odd_one_goes_to_it(engine: APIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    entered: list[str] = []
    initial = APIView.initial

    def spy(self: APIView, request: Any, *args: Any, **kwargs: Any) -> None:
        entered.append(type(self).__name__)
        initial(self, request, *args, **kwargs)

    monkeypatch.setattr(APIView, "initial", spy)
    s = pause(engine)
    assert entered == []  # register and suspend: the lane
    assert resume(engine, s).status_code == 201
    assert entered == []
    url = f"/api/v1/runs/{s['run_id']}/complete"
    response = engine.post(url, data='{"revision": 3}', content_type="application/json", HTTP_ACCEPT="text/*")
    assert response.status_code == 406  # DRF's negotiation refused it
    assert entered == ["Complete"]
    with override_settings(API_PLAIN_LANE=False):
        assert post(engine, url, {"revision": 3}).status_code == 200
    assert entered == ["Complete", "Complete"]


@pytest.mark.django_db
def test_a_refusal_in_the_lane_writes_nothing(engine: APIClient) -> None:
    s = pause(engine)
    before = snapshot()
    response = resume(engine, s, [{"call_id": "c1", "content": 1}, {"call_id": "c1", "content": 2}])
    assert response.status_code == 422
    assert snapshot() == before
    assert Run.objects.get(pk=s["run_id"]).state == "paused"
    assert Event.objects.filter(run_id=s["run_id"]).count() == 2  # registered, suspended


@pytest.mark.django_db
def test_the_throttle_still_counts_lane_requests(engine: APIClient) -> None:
    with override_settings(API_THROTTLE_RATE="2/min"):
        answers = [post(engine, "/api/v1/runs", {"agent_id": "a"}) for _ in range(3)]
    assert [r.status_code for r in answers] == [201, 201, 429]
    assert answers[2]["Retry-After"]
    assert Run.objects.count() == 2


def token_reads(send: Callable[[], Any]) -> tuple[int, int]:
    """The answer's status, and how many statements read the token table while it was served."""
    with CaptureQueriesContext(connection) as queries:
        status = send().status_code
    return status, sum(1 for q in queries.captured_queries if "FROM suspensions_apitoken" in q["sql"])


@pytest.mark.django_db
def test_a_request_the_lane_hands_to_drf_reads_its_token_once(engine: APIClient) -> None:
    gone, secret = create_token(scope="acme", roles=["engine"], name="gone")
    ApiToken.objects.filter(pk=gone.pk).update(revoked=True)
    assert token_reads(lambda: post(client(secret), "/api/v1/runs", {"agent_id": "a"})) == (401, 1)
    with override_settings(API_THROTTLE_RATE="1/min"):
        assert token_reads(lambda: post(engine, "/api/v1/runs", {"agent_id": "a"})) == (201, 1)
        assert token_reads(lambda: post(engine, "/api/v1/runs", {"agent_id": "a"})) == (429, 1)
    # A request the lane does not take at all is read by DRF, once.
    odd = lambda: engine.post("/api/v1/runs?x=1", data='{"agent_id": "a"}', content_type="application/json")  # noqa: E731
    assert token_reads(odd) == (201, 1)
    with override_settings(API_PLAIN_LANE=False):
        assert token_reads(lambda: post(client(secret), "/api/v1/runs", {"agent_id": "a"})) == (401, 1)


def test_a_view_that_changes_a_default_is_refused() -> None:
    class Anonymous(views.Complete):
        permission_classes: list[Any] = []

    with pytest.raises(TypeError, match="permission_classes"):
        lane.plain(Anonymous)
