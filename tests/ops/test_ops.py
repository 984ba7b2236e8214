"""Operations: list query counts, management commands, probes, the schema and docs, a database that is down."""

import re
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import RequestFactory
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from suspensions import services
from suspensions.api.errors import as_service_error, problem_exception_handler
from suspensions.exceptions import Unavailable
from suspensions.middleware import DatabaseUnavailableMiddleware
from suspensions.models import Reason, Run, RunState, Suspension
from suspensions.observability import heartbeat
from suspensions.principals import Principal
from tests.helpers import call, client, continuation

ENGINE = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))


def paused_run() -> Run:
    run = services.register_run(principal=ENGINE, agent_id="agent-1", scope="acme")
    services.suspend_run(
        principal=ENGINE,
        run_id=run.id,
        revision=1,
        reason=Reason.EXTERNAL_TOOL,
        pending=[call()],
        continuation=continuation(),
    )
    return run


def run_with_events(cycles: int) -> Run:
    """A run paused and resumed `cycles` times: 1 + 3 * cycles events."""
    run = services.register_run(principal=ENGINE, agent_id="agent-1", scope="acme")
    for n in range(cycles):
        suspension = services.suspend_run(
            principal=ENGINE,
            run_id=run.id,
            revision=2 * n + 1,
            reason=Reason.EXTERNAL_TOOL,
            pending=[call()],
            continuation=continuation(),
        )
        version = services.Version(run_id=run.id, suspension_id=suspension.id, run_revision=2 * n + 2)
        services.resume_run(principal=ENGINE, run_id=run.id, version=version, results=[{"call_id": "c1", "content": n}])
    return run


# -- query counts -------------------------------------------------------------------

# The token (1), its last_used_at on first use (1) and the page (1): a cursor
# page has no count query, and joins replace per-row lookups.
LIST_QUERIES = 3


@pytest.mark.parametrize("rows", [3, 60])
@pytest.mark.parametrize("url", ["/api/v1/runs", "/api/v1/suspensions"])
def test_list_queries_do_not_grow_with_the_rows(engine, django_assert_max_num_queries, url, rows):
    for _ in range(rows):
        paused_run()
    with django_assert_max_num_queries(LIST_QUERIES):
        response = engine.get(url)
    assert len(response.json()["results"]) == min(rows, 50)


@pytest.mark.parametrize("cycles", [1, 20])
def test_event_list_queries_do_not_grow_with_the_timeline(engine, django_assert_max_num_queries, cycles):
    run = run_with_events(cycles)
    # One more: the run's own visibility check (404 before listing).
    with django_assert_max_num_queries(LIST_QUERIES + 1):
        response = engine.get(f"/api/v1/runs/{run.id}/events")
    assert len(response.json()["results"]) == min(1 + 3 * cycles, 50)


# -- commands -----------------------------------------------------------------------


def test_createtoken_prints_a_working_token_alone_on_the_last_line(db):
    out = StringIO()
    call_command("createtoken", "--scope", "acme", "--roles", "engine,bus", stdout=out)
    secret = out.getvalue().strip().splitlines()[-1]
    assert re.fullmatch(r"sus_[A-Za-z0-9_-]+", secret)
    registered = client(secret).post("/api/v1/runs", {"agent_id": "a"}, format="json")
    assert (registered.status_code, registered.json()["scope"]) == (201, "acme")


@pytest.mark.parametrize(
    "scope, roles", [("acme", "engine,wizard"), ("acme", ""), ("Not A Scope", "engine")], ids=["role", "none", "scope"]
)
def test_createtoken_refuses_unknown_roles_and_bad_scopes(db, scope, roles):
    with pytest.raises(CommandError):
        call_command("createtoken", "--scope", scope, "--roles", roles, stdout=StringIO())


def test_seed_demo_pauses_runs_of_every_reason_in_the_demo_scope(db):
    out = StringIO()
    call_command("seed_demo", stdout=out)
    assert set(Suspension.objects.filter(scope="demo").values_list("reason", flat=True)) == set(Reason.values)
    assert set(Run.objects.filter(scope="demo").values_list("state", flat=True)) == {RunState.PAUSED}
    token = next(line for line in out.getvalue().splitlines() if line.startswith("sus_"))
    listed = client(token).get("/api/v1/suspensions").json()["results"]
    assert {row["reason"] for row in listed} == set(Reason.values)


def test_seed_demo_twice_does_not_duplicate_the_runs(db):
    call_command("seed_demo", stdout=StringIO())
    count = Run.objects.count()
    call_command("seed_demo", stdout=StringIO())
    assert Run.objects.count() == count


# -- probes, schema, docs -------------------------------------------------------------


def test_healthz_answers_without_a_token(db):
    response = APIClient().get("/healthz")
    assert (response.status_code, response.json()) == (200, {"status": "ok"})


def test_readyz_reaches_postgresql_and_the_broker(db):
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql"  # Django's own backend
    assert settings.CELERY_BROKER_URL.startswith(("redis://", "amqp://"))
    heartbeat.beat()
    response = APIClient().get("/readyz")
    assert response.status_code == 200, response.content
    assert response.json() == {"status": "ready", "database": "ok", "broker": "ok", "sweep": "ok"}


def test_readyz_is_unavailable_when_the_broker_is_not_reachable(db, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = APIClient().get("/readyz")
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    assert response.json()["broker"].startswith("down")


def test_the_schema_is_an_openapi_document_of_the_api(db):
    response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert {"/api/v1/runs", "/api/v1/runs/{id}/resume", "/api/v1/suspensions/{id}"} <= schema["paths"].keys()


def test_the_docs_page_loads_nothing_from_outside_the_app(db):
    response = APIClient().get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    sources = re.findall(r'<(?:script|link)[^>]*(?:src|href)="([^"]*)"', html)
    assert sources
    assert all(source.startswith("/") and not source.startswith("//") for source in sources), sources
    assert "cdn" not in html.lower()
    assert not re.search(r'src="https?://', html)


# -- a database that is down ------------------------------------------------------------


class DatabaseDown(APIView):
    authentication_classes = []
    permission_classes = []

    def get(self, request):
        raise OperationalError("connection to server at 127.0.0.1, port 5432 failed: Connection refused")


def test_a_database_that_is_down_is_a_503_with_retry_after_from_an_api_view():
    response = DatabaseDown.as_view()(APIRequestFactory().get("/anything"))
    response.render()
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.data["code"] == "unavailable"
    assert "5432" not in response.content.decode()


def test_the_exception_handler_maps_database_errors_to_unavailable():
    assert isinstance(as_service_error(OperationalError("down")), Unavailable)
    response = problem_exception_handler(OperationalError("down"), {})
    assert (response.status_code, response["Retry-After"], response.data["status"]) == (503, "5", 503)


def test_the_middleware_answers_503_for_a_plain_django_view():
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    response = middleware.process_exception(RequestFactory().get("/console/"), OperationalError("down"))
    assert (response.status_code, response["Retry-After"]) == (503, "5")
    assert response["Content-Type"] == "application/problem+json"
