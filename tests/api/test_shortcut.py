"""The lane's shortcut (suspensions/api/shortcut.py): served above the middlewares a plain write does not need.

tests/api/test_lane.py already holds every lane answer to DRF's (with the
lane, a plain write goes through the shortcut; without it, down the whole
stack to DRF). Here: what the shortcut takes and what it sends on down,
the middlewares' own refusals and headers it must keep, its errors, and its
refusal to start above a middleware it knows nothing about.
"""

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.sessions.middleware import SessionMiddleware
from django.core.exceptions import ImproperlyConfigured
from django.db import OperationalError
from django.test import override_settings
from rest_framework.test import APIClient

from suspensions.api import authentication, shortcut
from suspensions.models import Run

from ..helpers import call, client, continuation, pause, post, register, resume, snapshot
from .test_lane import answer

PLAIN = {"revision": 1, "reason": "external_tool", "pending": [call()], "continuation": continuation()}


def both(send: Callable[[APIClient], Any], secret: str) -> list[Any]:
    """The answer through the shortcut and down the whole stack (API_PLAIN_LANE off): they must be the same."""
    out = []
    for on in (True, False):
        with override_settings(API_PLAIN_LANE=on):
            c = client(secret)  # a new client loads the middlewares under these settings
            c.raise_request_exception = False
            out.append(answer(send(c)))
    assert out[0] == out[1]
    return out[0]


@pytest.fixture
def below(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the requests that reached the session middleware, below the shortcut."""
    entered: list[str] = []
    original = SessionMiddleware.process_request

    def spy(self: SessionMiddleware, request: Any) -> None:
        entered.append(request.path)
        original(self, request)

    monkeypatch.setattr(SessionMiddleware, "process_request", spy)
    return entered


@pytest.mark.django_db
def test_a_plain_write_is_served_by_the_shortcut_and_anything_else_goes_on_down(
    engine: APIClient, below: list[str]
) -> None:
    s = pause(engine)  # register and suspend
    assert resume(engine, s).status_code == 201
    assert below == []
    complete = f"/api/v1/runs/{s['run_id']}/complete"
    assert engine.get(f"/api/v1/runs/{s['run_id']}").status_code == 200  # a read
    odd = engine.post(complete, data='{"revision": 3}', content_type="application/json", HTTP_ACCEPT="text/*")
    assert odd.status_code == 406  # the lane declined it: DRF answered, below the middlewares
    engine.cookies["sessionid"] = "a" * 32
    assert post(engine, complete, {"revision": 3}).status_code == 200  # a cookie: down the stack
    assert below == [f"/api/v1/runs/{s['run_id']}", complete, complete]


@pytest.mark.django_db
def test_a_write_with_a_cookie_answers_as_one_without(token: Callable[..., str]) -> None:
    answers = []
    for cookie in (None, "a" * 32):  # with a cookie, the request goes down the whole stack
        engine = client(token())
        if cookie:
            engine.cookies["sessionid"] = cookie
        run = register(engine)
        answers.append(answer(post(engine, f"/api/v1/runs/{run['id']}/suspend", PLAIN)))
    assert answers[0] == answers[1]
    assert answers[0][0] == 201


@pytest.mark.django_db
@pytest.mark.parametrize(
    "settings_, extra, status",
    [
        ({"SECURE_SSL_REDIRECT": True}, {}, 301),  # plain HTTP: the redirect to HTTPS
        ({"SECURE_SSL_REDIRECT": True, "SECURE_HSTS_SECONDS": 3600}, {"secure": True}, 201),  # with HSTS
        ({"ALLOWED_HOSTS": ["api.example"]}, {}, 400),  # a host that is not allowed
        ({"DISALLOWED_USER_AGENTS": [__import__("re").compile("crawler")]}, {"HTTP_USER_AGENT": "crawler"}, 403),
        ({"X_FRAME_OPTIONS": "SAMEORIGIN", "SECURE_REFERRER_POLICY": "no-referrer"}, {}, 201),
    ],
)
def test_the_middlewares_refusals_redirects_and_headers_are_kept(
    token: Callable[..., str], settings_: dict[str, Any], extra: dict[str, Any], status: int
) -> None:
    secret = token()
    runs = [register(client(secret))["id"] for _ in range(2)]

    def send(c: APIClient) -> Any:
        return c.post(f"/api/v1/runs/{runs.pop()}/suspend", json.dumps(PLAIN), content_type="application/json", **extra)

    with override_settings(**settings_):
        status_, headers, _ = both(send, secret)
    assert status_ == status
    if status == 201:
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Content-Length"]
        assert headers["X-Frame-Options"] == settings_.get("X_FRAME_OPTIONS", "DENY")
    if extra.get("secure"):
        assert headers["Strict-Transport-Security"] == "max-age=3600"


@pytest.mark.django_db
def test_the_database_going_away_is_a_503_with_its_headers_and_writes_nothing(
    token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = token()
    run = register(client(secret))
    before = snapshot()

    def down(token_hash: str) -> None:
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(authentication, "live_token", down)
    status, headers, body = both(lambda c: post(c, f"/api/v1/runs/{run['id']}/suspend", PLAIN), secret)
    assert status == 503
    assert headers["Content-Type"].startswith("application/problem+json") and headers["Retry-After"]
    assert headers["X-Frame-Options"] == "DENY" and headers["Cache-Control"]
    assert json.loads(body)["code"] == "unavailable"
    assert snapshot() == before
    assert Run.objects.get(pk=run["id"]).state == "running"


@pytest.mark.django_db
def test_an_unexpected_error_is_the_same_500(token: Callable[..., str], monkeypatch: pytest.MonkeyPatch) -> None:
    secret = token()
    runs = [register(client(secret))["id"] for _ in range(2)]

    def broken(**kwargs: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr("suspensions.services.suspend_run", broken)
    status, headers, body = both(lambda c: post(c, f"/api/v1/runs/{runs.pop()}/suspend", PLAIN), secret)
    assert status == 500
    assert headers["X-Frame-Options"] == "DENY"
    assert json.loads(body)["code"] == "internal_error"


def test_a_middleware_the_shortcut_does_not_know_stops_the_start() -> None:
    from django.conf import settings

    unknown = [*settings.MIDDLEWARE, "example.middleware.Unknown"]
    with override_settings(MIDDLEWARE=unknown), pytest.raises(ImproperlyConfigured, match="example.middleware"):
        shortcut.LaneShortcut(lambda request: None)  # type: ignore[arg-type,return-value]
