"""Trust boundaries (docs/decisions.md, "Trust boundaries"): who gets in (staff, tokens, logins) and what every answer
tells caches and clients.

Everything goes through the real HTTP stack: the Django test client for the
console and the admin, DRF's APIClient for the API.
"""

import logging
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from suspensions.models import Admission, ApiToken, Run
from suspensions.tokens import create_token
from tests.helpers import client, member, pause, post, problem, refused, snapshot, version

ROOT = Path(__file__).resolve().parents[2]
WRONG = "not-the-password"


@pytest.fixture(autouse=True)
def fresh_cache(db):
    """Login failures and API throttles live in the cache (the database's, by default); each test starts with none."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    """The lockout tests check passwords dozens of times: hash them cheaply (the real hasher is not under test)."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def approval(engine, **kwargs):
    return pause(engine, reason="approval", **kwargs)


def console_decide(c, s, decision="approve"):
    form = {**version(s), "decision": decision, "reason": ""}
    return c.post(f"/console/approvals/{s['id']}/decide", form)


def api_decide(c, s):
    return post(c, f"/api/v1/approvals/{s['id']}/decide", {"version": version(s), "decision": "approve"})


def logged_in(user):
    c = Client()
    c.force_login(user)
    return c


def session_api(user):
    c = APIClient()
    c.force_login(user)
    return c


def sign_in(c, username="alice", password="pw", url="/console/login/"):
    return c.post(url, {"username": username, "password": password})


def signed_in(c):
    return c.get("/console/").status_code == 200


def admitted(engine, bus, scope):
    """An agent-reply pause in `scope`, admitted by the bus; returns the admission id."""
    s = pause(engine, scope=scope, reason="agent_reply")
    body = {"version": version(s), "input": '{"answer": 42}', "reply_with": "q-1"}
    response = post(bus, f"/api/v1/runs/{s['run_id']}/admissions", body)
    assert response.status_code == 201, response.content
    return response.json()["admission"]["id"]


def unauthenticated(response):
    body = problem(response, 401, "unauthenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    return body


# -- the console and the session API need an active staff user (item 4) -------------------


def test_a_non_staff_approver_cannot_open_the_inbox(engine):
    approval(engine)
    c = logged_in(member("nina", {"acme": ["approver"]}, is_staff=False))
    response = c.get("/console/approvals/")
    assert response.status_code == 403
    assert "staff" in response.content.decode()


def test_a_non_staff_approver_cannot_decide_in_the_console_and_nothing_is_written(engine):
    s = approval(engine)
    c = logged_in(member("nina", {"acme": ["approver"]}, is_staff=False))
    before = snapshot()
    assert console_decide(c, s).status_code == 403
    assert snapshot() == before
    assert Run.objects.get(pk=s["run_id"]).state == "paused"


def test_a_non_staff_user_cannot_sign_in_to_the_console_even_with_the_right_password(db):
    member("nina", {"acme": ["approver"]}, is_staff=False)
    c = Client()
    response = sign_in(c, "nina")
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()
    assert "_auth_user_id" not in c.session


def test_a_non_staff_approver_cannot_use_the_session_api(engine):
    s = approval(engine)
    c = session_api(member("nina", {"acme": ["approver"]}, is_staff=False))
    problem(c.get("/api/v1/approvals"), 403, "forbidden")
    problem(c.get("/api/v1/runs"), 403, "forbidden")
    refused(lambda: api_decide(c, s), 403, "forbidden")


def test_a_superuser_without_staff_status_has_no_power(engine):
    s = approval(engine)
    root = member("root", is_staff=False, is_superuser=True)
    assert logged_in(root).get("/console/").status_code == 403
    refused(lambda: api_decide(session_api(root), s), 403, "forbidden")


def test_clearing_staff_status_removes_every_power_at_the_next_request(engine):
    s = approval(engine)
    alice = member("alice", {"acme": ["approver"]}, is_staff=True)
    console, api = logged_in(alice), session_api(alice)
    assert s["id"] in console.get("/console/approvals/").content.decode()
    assert [row["id"] for row in api.get("/api/v1/approvals").json()["results"]] == [s["id"]]
    alice.is_staff = False
    alice.save(update_fields=["is_staff"])
    assert console.get("/console/approvals/").status_code == 403
    before = snapshot()
    assert console_decide(console, s).status_code == 403
    assert snapshot() == before
    refused(lambda: api_decide(api, s), 403, "forbidden")


def test_a_staff_approver_still_decides_through_the_session_api(engine):
    s = approval(engine)
    api = session_api(member("alice", {"acme": ["approver"]}, is_staff=True))
    response = api_decide(api, s)
    assert response.status_code == 201, response.content
    assert Admission.objects.get(suspension_id=s["id"]).actor == "user:alice"


# -- the admitted-work list needs the engine role (item 6) --------------------------------


@pytest.mark.parametrize("role", ["bus", "approver", "auditor", "operator"])
def test_the_admitted_work_list_is_forbidden_without_the_engine_role(engine, token, role):
    admitted(engine, client(token("acme", ["bus"], "bus")), "acme")
    caller = client(token("acme", [role], f"only-{role}"))
    refused(lambda: caller.get("/api/v1/admissions", {"state": "admitted"}), 403, "forbidden")


def test_the_admitted_work_list_shows_only_scopes_where_the_caller_is_an_engine(engine, token):
    bus = client(token("acme", ["bus"], "bus"))
    mine = admitted(engine, bus, "acme/a")
    admitted(engine, bus, "acme/b")
    user = member("eve", {"acme/a": ["engine"], "acme": ["auditor"]}, is_staff=True)
    response = session_api(user).get("/api/v1/admissions", {"state": "admitted"})
    assert response.status_code == 200, response.content
    assert [row["id"] for row in response.json()["results"]] == [mine]


# -- every 401 says Bearer (item 7) ---------------------------------------------------


def test_a_request_without_credentials_is_a_401_that_asks_for_a_bearer_token(db):
    body = unauthenticated(APIClient().get("/api/v1/runs"))
    assert body["status"] == 401


@pytest.mark.parametrize("header", ["Bearer sus_not-a-token", "Bearer two parts", "Bearer"])
def test_a_bad_bearer_header_is_a_401_that_asks_for_a_bearer_token(db, header):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=header)
    before = snapshot()
    unauthenticated(post(c, "/api/v1/runs", {"agent_id": "a"}))
    assert snapshot() == before


def test_a_revoked_token_is_a_401_that_asks_for_a_bearer_token(db, token):
    secret = token("acme", ["engine"], "revoked")
    ApiToken.objects.filter(name="revoked").update(revoked=True)
    unauthenticated(client(secret).get("/api/v1/runs"))


# -- tokens may expire (item 9d) ----------------------------------------------------------


def test_an_expired_token_is_a_401_and_writes_nothing(db):
    _, secret = create_token(
        scope="acme", roles=["engine"], name="old", expires_at=timezone.now() - timedelta(seconds=1)
    )
    before = snapshot()
    unauthenticated(post(client(secret), "/api/v1/runs", {"agent_id": "a"}))
    assert snapshot() == before


def test_a_token_before_its_expiry_works(db):
    _, secret = create_token(scope="acme", roles=["engine"], name="new", expires_at=timezone.now() + timedelta(days=1))
    assert post(client(secret), "/api/v1/runs", {"agent_id": "a"}).status_code == 201


def test_a_token_that_expires_while_in_use_is_refused_from_then_on(db, token):
    secret = token("acme", ["engine"], "lapsing")
    s = pause(client(secret))
    ApiToken.objects.filter(name="lapsing").update(expires_at=timezone.now() - timedelta(seconds=1))
    before = snapshot()
    unauthenticated(post(client(secret), f"/api/v1/runs/{s['run_id']}/cancel", {"revision": s["run_revision"]}))
    assert snapshot() == before


@pytest.mark.parametrize("given, seconds", [("45s", 45), ("90m", 5400), ("12h", 43200), ("30d", 2592000)])
def test_createtoken_sets_the_expiry_from_expires_in(db, capsys, given, seconds):
    before = timezone.now()
    call_command("createtoken", "--scope", "acme", "--roles", "engine", "--name", "ci", "--expires-in", given)
    after = timezone.now()
    expires_at = ApiToken.objects.get(name="ci").expires_at
    assert before + timedelta(seconds=seconds) <= expires_at <= after + timedelta(seconds=seconds)
    out = capsys.readouterr().out
    assert "expires" in out and out.strip().splitlines()[-1].startswith("sus_")


def test_createtoken_without_expires_in_makes_a_token_that_never_expires(db):
    call_command("createtoken", "--scope", "acme", "--roles", "engine", "--name", "forever")
    assert ApiToken.objects.get(name="forever").expires_at is None


@pytest.mark.parametrize("given", ["30", "30x", "d", "-1d", "0d", "1.5h"])
def test_createtoken_refuses_an_expiry_it_cannot_read(db, given):
    with pytest.raises(CommandError, match="expires-in"):
        call_command("createtoken", "--scope", "acme", "--roles", "engine", "--expires-in", given)
    assert not ApiToken.objects.exists()


# -- API throttling per token (item 9d) ---------------------------------------------------


def test_the_api_throttles_a_token_past_its_rate_with_retry_after(db, token, settings):
    settings.API_THROTTLE_RATE = "2/min"
    engine = client(token("acme", ["engine"], "busy"))
    assert [engine.get("/api/v1/runs").status_code for _ in range(2)] == [200, 200]
    body = refused(lambda: post(engine, "/api/v1/runs", {"agent_id": "a"}), 429, "throttled")
    assert body["status"] == 429
    response = engine.get("/api/v1/runs")
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60


def test_the_throttle_counts_each_token_on_its_own(db, token, settings):
    settings.API_THROTTLE_RATE = "1/min"
    first, second = client(token("acme", ["engine"], "one")), client(token("acme", ["engine"], "two"))
    assert first.get("/api/v1/runs").status_code == 200
    assert first.get("/api/v1/runs").status_code == 429
    assert second.get("/api/v1/runs").status_code == 200


def test_the_throttle_lifts_when_its_window_has_passed(db, token, settings, monkeypatch):
    from suspensions.api import throttling

    settings.API_THROTTLE_RATE = "1/min"
    engine = client(token("acme", ["engine"], "patient"))
    assert engine.get("/api/v1/runs").status_code == 200
    assert engine.get("/api/v1/runs").status_code == 429
    later = time.time() + 61
    monkeypatch.setattr(throttling.TokenRateThrottle, "timer", lambda self: later)
    assert engine.get("/api/v1/runs").status_code == 200


def test_without_a_throttle_rate_the_api_is_not_throttled(db, token):
    engine = client(token("acme", ["engine"], "free"))
    assert {engine.get("/api/v1/runs").status_code for _ in range(30)} == {200}


# -- login lockout (item 9a) --------------------------------------------------------------


@pytest.fixture
def alice(db):
    return member("alice", {"acme": ["approver"]}, is_staff=True)


def test_nine_wrong_passwords_still_let_the_right_one_in(alice):
    c = Client()
    assert {sign_in(c, password=WRONG).status_code for _ in range(9)} == {200}
    assert sign_in(c).status_code == 302
    assert signed_in(c)


def test_ten_wrong_passwords_lock_the_login_even_for_the_right_password(alice, caplog):
    c = Client()
    for _ in range(10):
        sign_in(c, password=WRONG)
    with caplog.at_level(logging.WARNING):
        response = sign_in(c)
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many failed sign-ins" in response.content.decode()
    assert not signed_in(c)
    logged = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "alice" in logged and "127.0.0.1" in logged
    assert WRONG not in logged and "pw" not in logged.split()


def test_the_lock_starts_with_a_warning_that_never_holds_the_password(alice, caplog):
    c = Client()
    with caplog.at_level(logging.WARNING):
        for _ in range(10):
            sign_in(c, password=WRONG)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("alice" in w and "locked" in w for w in warnings)
    assert not any(WRONG in w for w in warnings)


def test_the_lock_holds_one_user_at_one_address(alice):
    member("bob", {"acme": ["approver"]}, is_staff=True)
    here = Client(REMOTE_ADDR="10.0.0.1")
    for _ in range(10):
        sign_in(here, password=WRONG)
    assert sign_in(here).status_code == 429
    assert sign_in(Client(REMOTE_ADDR="10.0.0.2")).status_code == 302
    assert sign_in(Client(REMOTE_ADDR="10.0.0.1"), "bob").status_code == 302


def test_a_username_padded_with_spaces_is_the_same_user_for_the_lock(alice):
    c = Client()
    for _ in range(10):
        sign_in(c, password=WRONG)
    assert sign_in(c, " alice ").status_code == 429
    assert not signed_in(c)


def test_behind_a_proxy_the_lock_counts_the_address_the_proxy_appended(alice, settings):
    settings.CLIENT_ADDRESS_HEADER = "HTTP_X_FORWARDED_FOR"
    here = Client(HTTP_X_FORWARDED_FOR="1.2.3.4, 10.0.0.1")
    for _ in range(10):
        sign_in(here, password=WRONG)
    assert sign_in(Client(HTTP_X_FORWARDED_FOR="5.6.7.8, 10.0.0.1")).status_code == 429
    assert sign_in(Client(HTTP_X_FORWARDED_FOR="10.0.0.2")).status_code == 302


def test_failures_at_the_admin_login_lock_the_console_login_too(alice):
    c = Client()
    for _ in range(10):
        assert sign_in(c, password=WRONG, url="/admin/login/").status_code == 200
    assert sign_in(c).status_code == 429
    assert sign_in(c, url="/admin/login/").status_code == 429
    assert not signed_in(c)


def test_the_lock_lifts_after_fifteen_minutes(alice, monkeypatch):
    from suspensions import logins

    c = Client()
    for _ in range(10):
        sign_in(c, password=WRONG)
    assert sign_in(c).status_code == 429
    later = time.time() + 15 * 60 + 1
    monkeypatch.setattr(logins, "clock", lambda: later)
    assert sign_in(c).status_code == 302
    assert signed_in(c)


def test_a_successful_sign_in_forgets_the_earlier_failures(alice):
    c = Client()
    for _ in range(9):
        sign_in(c, password=WRONG)
    assert sign_in(c).status_code == 302
    c.post("/console/logout/")
    for _ in range(9):
        sign_in(c, password=WRONG)
    assert sign_in(c).status_code == 302


# -- Cache-Control: no-store (item 9b) ------------------------------------------------


def test_api_answers_are_never_stored_by_caches(engine):
    s = pause(engine)
    answers = [
        engine.get(f"/api/v1/suspensions/{s['id']}"),
        post(
            engine,
            f"/api/v1/runs/{s['run_id']}/resume",
            {"version": version(s), "results": [{"call_id": "c1", "content": "done"}]},
        ),
        engine.get(f"/api/v1/runs/{s['run_id']}/admissions/latest"),
        APIClient().get("/api/v1/runs"),
    ]
    assert [a.status_code for a in answers] == [200, 201, 200, 401]
    assert all("no-store" in a["Cache-Control"] for a in answers)


def test_console_pages_are_never_stored_by_caches(engine, alice):
    s = approval(engine)
    c = logged_in(alice)
    pages = [c.get("/console/"), c.get(f"/console/approvals/{s['id']}/"), Client().get("/console/login/")]
    assert [p.status_code for p in pages] == [200, 200, 200]
    assert all("no-store" in p["Cache-Control"] for p in pages)


# -- HSTS, SSL redirect, proxy header, check --deploy (item 9c) -----------------------------

PRODUCTION_ENV = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "k" * 20 + "0123456789abcdefghijklmnopqrstuvwxyz",
    "AUDIT_SIGNING_KEY": "dGVzdC1vbmx5LWF1ZGl0LXNpZ25pbmcta2V5LTAwMDA=",
    "DJANGO_ALLOWED_HOSTS": "suspensions.example.com",
    "DJANGO_CSRF_TRUSTED_ORIGINS": "https://suspensions.example.com",
    "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/suspensions",
    "DJANGO_SECURE_SSL_REDIRECT": "1",
    "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO,https",
    "DJANGO_SECURE_HSTS_SECONDS": "31536000",
    "DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS": "1",
    "DJANGO_SECURE_HSTS_PRELOAD": "1",
    "DATA_ENCRYPTION_KEYS": "S2V5LW9mLWl0cy1vd24tMzItYnl0ZXMtbG9uZy0tLS0=",
}


def django_in(env, *args):
    """Run manage.py in a fresh process with only `env` (plus PATH) as its environment."""
    clean = {"PATH": os.environ.get("PATH", ""), **env}
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_the_documented_production_environment():
    done = django_in(PRODUCTION_ENV, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout
    assert "WARNINGS" not in done.stdout + done.stderr


def test_check_deploy_warns_when_the_data_key_is_derived_from_the_secret_key():
    env = {k: v for k, v in PRODUCTION_ENV.items() if k != "DATA_ENCRYPTION_KEYS"}
    done = django_in(env, "check", "--deploy", "--fail-level", "WARNING")
    assert done.returncode != 0 and "suspensions.W001" in done.stdout + done.stderr


def test_the_security_settings_are_read_from_the_environment():
    code = (
        "from django.conf import settings as s;"
        "print(s.SECURE_SSL_REDIRECT, s.SECURE_PROXY_SSL_HEADER, s.SECURE_HSTS_SECONDS,"
        " s.SECURE_HSTS_INCLUDE_SUBDOMAINS, s.SECURE_HSTS_PRELOAD, s.SESSION_COOKIE_SECURE)"
    )
    done = django_in(PRODUCTION_ENV, "shell", "--no-imports", "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True ('HTTP_X_FORWARDED_PROTO', 'https') 31536000 True True True"


def test_a_proxy_header_that_is_not_a_name_and_a_value_is_refused_at_startup():
    done = django_in({**PRODUCTION_ENV, "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO"}, "check")
    assert done.returncode != 0
    assert "DJANGO_SECURE_PROXY_SSL_HEADER" in done.stderr


def test_the_ssl_redirect_spares_the_health_probes(db, settings):
    settings.SECURE_SSL_REDIRECT = True
    c = Client()
    assert c.get("/healthz").status_code == 200
    assert c.get("/readyz").status_code in (200, 503)
    response = c.get("/console/login/")
    assert (response.status_code, response["Location"]) == (301, "https://testserver/console/login/")


def test_hsts_is_sent_on_secure_requests_when_configured(db, settings):
    settings.SECURE_HSTS_SECONDS = 3600
    response = Client().get("/healthz", secure=True)
    assert response["Strict-Transport-Security"].startswith("max-age=3600")


# -- issue 32: the lockout is shared by every web process with the documented command line ----


@pytest.mark.django_db(transaction=True)
def test_failures_counted_in_another_process_lock_the_sign_in_here_by_default():
    from django.db import connection

    from suspensions import logins

    database = connection.settings_dict["NAME"]
    env = {
        "DJANGO_SECRET_KEY": "test-only-secret",
        "AUDIT_SIGNING_KEY": "dGVzdC1vbmx5LWF1ZGl0LXNpZ25pbmcta2V5LTAwMDA=",
        "DJANGO_DEBUG": "0",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{database}",
    }  # no CACHE_URL: the default store
    code = "from suspensions import logins\nfor _ in range(10): logins.record_failure('mallory', '203.0.113.9')"
    done = django_in(env, "shell", "--no-imports", "-c", code)
    assert done.returncode == 0, done.stderr
    assert logins.locked_for("mallory", "203.0.113.9") > 0
