"""Settings that cannot work refuse to start; a bug under /api/ is still a problem+json 500."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import path
from rest_framework.views import APIView

from suspensions_project import urls as project_urls

BASE_DIR = Path(__file__).resolve().parents[2]
# What production sets; DATABASE_URL is only parsed here, never connected to.
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "suspensions_project.settings",
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "a-secret-only-for-this-test",
    "AUDIT_SIGNING_KEY": "YS1zaWduaW5nLWtleS1vbmx5LWZvci10aGlzLXRlc3Q=",
    "DATABASE_URL": "postgres://suspensions@127.0.0.1:5432/suspensions",
    "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
}


def start_django(*, show: str = "", **overrides: str) -> subprocess.CompletedProcess[str]:
    """django.setup() in a process of its own with these variables; `show`: a setting it then prints as JSON."""
    env = {**os.environ, **PRODUCTION, **overrides}
    code = "import django; django.setup()"
    if show:
        code += f"; import json; from django.conf import settings; print(json.dumps(settings.{show}, default=str))"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_production_environment_starts():
    started = start_django()
    assert started.returncode == 0, started.stderr


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"DB_POOL_MIN": "5", "DB_POOL_MAX": "2"}, "DB_POOL_MAX (2) must be at least DB_POOL_MIN (5)"),
        ({"DB_POOL_MAX": "0"}, "DB_POOL_MAX must be at least 1, got 0"),
        ({"DB_POOL_MIN": "-1"}, "DB_POOL_MIN must be at least 0, got -1"),
        ({"DB_POOL_MAX": "forty"}, "DB_POOL_MAX must be an integer, got 'forty'"),
        ({"DB_POOL_TIMEOUT": "0"}, "DB_POOL_TIMEOUT must be at least 1, got 0"),
        ({"SWEEP_INTERVAL_SECONDS": "0"}, "SWEEP_INTERVAL_SECONDS must be at least 1, got 0"),
        ({"SWEEP_BATCH_SIZE": "0"}, "SWEEP_BATCH_SIZE must be at least 1, got 0"),
        ({"SWEEP_TIME_LIMIT_SECONDS": "0"}, "SWEEP_TIME_LIMIT_SECONDS must be at least 1, got 0"),
        ({"SUSPENSION_TTL_SECONDS": "-1"}, "SUSPENSION_TTL_SECONDS must be at least 0, got -1"),
        ({"DJANGO_SECURE_HSTS_SECONDS": "-1"}, "DJANGO_SECURE_HSTS_SECONDS must be at least 0, got -1"),
        ({"API_THROTTLE_RATE": "100/fortnight"}, "API_THROTTLE_RATE must look like 100/min"),
        ({"DJANGO_SECRET_KEY": ""}, "DJANGO_SECRET_KEY is required when DJANGO_DEBUG is off"),
        ({"AUDIT_SIGNING_KEY": ""}, "AUDIT_SIGNING_KEY is required when DJANGO_DEBUG is off"),
        ({"AUDIT_SIGNING_KEY": "c2hvcnQ="}, "AUDIT_SIGNING_KEY must be base64 of exactly 32 bytes"),
        ({"DATABASE_URL": ""}, "DATABASE_URL is required when DJANGO_DEBUG is off"),
        ({"DATABASE_URL": "sqlite:///var/old.sqlite3"}, "DATABASE_URL must be a postgres:// URL, not sqlite://"),
        ({"DB_PREPARED_STATEMENTS": "1"}, "DB_PREPARED_STATEMENTS=1 is not supported"),
    ],
    ids=lambda value: "-".join(value) if isinstance(value, dict) else None,
)
def test_a_setting_that_cannot_work_stops_the_start_with_a_clear_message(overrides, message):
    started = start_django(**overrides)
    assert started.returncode != 0
    assert "ImproperlyConfigured" in started.stderr
    assert message in started.stderr


def test_a_pool_that_may_shrink_to_nothing_starts():
    started = start_django(DB_POOL_MIN="0", DB_POOL_MAX="1")
    assert started.returncode == 0, started.stderr


def database(**overrides: str) -> dict[str, Any]:
    started = start_django(show='DATABASES["default"]', **overrides)
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout)


def test_the_database_is_django_s_postgresql_with_no_prepared_statements():
    default = database()
    assert default["ENGINE"] == "django.db.backends.postgresql"
    assert default["OPTIONS"]["prepare_threshold"] is None  # PgBouncer in transaction mode works as it is
    assert "server_side_binding" not in default["OPTIONS"]  # Django's default: parameters bound on the client
    assert default["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 40, "timeout": 10}
    assert database(DB_PREPARED_STATEMENTS="0")["OPTIONS"]["prepare_threshold"] is None  # an old explicit 0 starts


def test_the_database_url_s_own_parameters_are_kept():
    default = database(DATABASE_URL="postgres://app@db.internal:6432/suspensions?sslmode=verify-full")
    assert (default["HOST"], default["PORT"], default["NAME"]) == ("db.internal", 6432, "suspensions")
    assert default["OPTIONS"]["sslmode"] == "verify-full"


def test_with_debug_on_and_no_database_url_it_is_the_embedded_server_of_make_run():
    default = database(DJANGO_DEBUG="1", DATABASE_URL="")
    assert default["NAME"] == "suspensions"
    assert default["OPTIONS"]["host"] == str(BASE_DIR / "var" / "postgres")  # the socket's directory


# -- never an HTML 500 under /api/ --------------------------------------------------------

LEAK = "the secret sus_do-not-show and a stack"


def fails(request):
    raise RuntimeError(LEAK)


class FailingApiView(APIView):
    authentication_classes = []
    permission_classes = []

    def get(self, request):
        raise RuntimeError(LEAK)


# This module is the urlconf of the tests below: the project's routes and error
# handlers, plus views with a bug (ahead of the project's catch-all for /api/).
urlpatterns = [
    path("api/v1/fails", fails),
    path("api/v1/fails-in-drf", FailingApiView.as_view()),
    path("console/fails", fails),
    *project_urls.urlpatterns,
]
handler404 = project_urls.handler404
handler500 = project_urls.handler500


@pytest.fixture
def failing_site(settings):
    settings.ROOT_URLCONF = __name__
    browser = Client(raise_request_exception=False)
    return browser


@pytest.mark.parametrize("url", ["/api/v1/fails", "/api/v1/fails-in-drf"])
def test_a_bug_under_the_api_answers_a_problem_500_without_the_traceback(db, failing_site, url):
    response = failing_site.get(url)
    assert response.status_code == 500
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert (body["status"], body["code"]) == (500, "internal_error")
    assert LEAK not in response.content.decode()
    assert "Traceback" not in response.content.decode()


def test_a_bug_in_the_console_answers_django_s_own_500_page(db, failing_site):
    response = failing_site.get("/console/fails")
    assert response.status_code == 500
    assert response["Content-Type"].startswith("text/html")
    assert LEAK not in response.content.decode()
