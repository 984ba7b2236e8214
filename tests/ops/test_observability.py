"""/metrics, JSON logs with request context, /readyz, and the sweep's health check (docs/api.md, "7.11 Metrics";
docs/deploy.md, "Logs"; docs/api.md, "7.10 Health and schema").

In this process PROMETHEUS_MULTIPROC_DIR is unset, so metrics come from the
process's own registry: tests read counters as differences between two
scrapes. The aggregation test starts real gunicorn and Celery processes with
the variable set and scrapes them.
"""

import io
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from suspensions import health, services, tasks
from suspensions.exceptions import AdmissionConflict, Forbidden, NotFound, SuspensionExpired
from suspensions.models import Reason, Run, Suspension, SweepHeartbeat
from suspensions.observability import celery_signals, context, heartbeat, logs, metrics
from suspensions.services import db_now
from tests.front_door import database_url, start_gunicorn
from tests.helpers import client, envelope, pause, post, register, resume
from tests.processes import Processes, child_env

# -- reading a scrape -------------------------------------------------------------------------


def scrape(c=None, **headers):
    response = (c or APIClient()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    return response.content.decode()


def value(text, name, **labels):
    """The sample `name{labels}` of a scrape; 0 when the series is absent."""
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and sample.labels == {k: str(v) for k, v in labels.items()}:
                return sample.value
    return 0.0


def growth(before, after, name, **labels):
    return value(after, name, **labels) - value(before, name, **labels)


def due(engine, **kwargs):
    """A pause whose deadline has passed (the sweep's next row)."""
    s = pause(engine, ttl_seconds=3600, **kwargs)
    past = db_now() - timedelta(seconds=1)
    Suspension.objects.filter(pk=s["id"]).update(expires_at=past, deadline=past)
    return s


# -- /metrics ---------------------------------------------------------------------------------


def test_metrics_answer_the_prometheus_text_format_outside_the_api(db):
    response = APIClient().get("/metrics")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {
        "suspensions_live_pauses",
        "suspensions_oldest_pending_approval_age_seconds",
        "suspensions_claims",
        "suspensions_transitions",
        "suspensions_sweep_runs",
        "suspensions_sweep_rows",
        "suspensions_sweep_duration_seconds",
        "suspensions_sweep_last_success_timestamp_seconds",
        "suspensions_http_request_duration_seconds",
    } <= names


def test_metrics_need_the_metrics_token_when_one_is_set(db, settings):
    settings.METRICS_TOKEN = "metrics-secret-9"
    anonymous = APIClient().get("/metrics")
    wrong = APIClient().get("/metrics", HTTP_AUTHORIZATION="Bearer metrics-secret-8")
    assert (anonymous.status_code, wrong.status_code) == (401, 401)
    assert anonymous["WWW-Authenticate"].startswith("Bearer")
    assert "suspensions_" not in anonymous.content.decode() + wrong.content.decode()
    assert scrape(HTTP_AUTHORIZATION="Bearer metrics-secret-9").startswith("#")


def test_live_pauses_are_counted_by_reason(engine):
    pause(engine)
    pause(engine)
    pause(engine, reason="approval")
    text = scrape()
    counts = {reason: value(text, "suspensions_live_pauses", reason=reason) for reason in Reason.values}
    assert counts == {"external_tool": 2, "approval": 1, "agent_reply": 0}


def test_past_the_exact_bound_live_pauses_are_estimated_never_below_what_was_walked(engine, monkeypatch):
    monkeypatch.setattr(metrics, "EXACT_UP_TO", 2)
    for _ in range(3):
        pause(engine)
    pause(engine, reason="approval")
    text = scrape()
    assert value(text, "suspensions_live_pauses", reason="external_tool") >= 3
    assert value(text, "suspensions_live_pauses", reason="approval") == 1


def test_the_oldest_pending_approval_age_counts_only_undecided_approvals(engine):
    decided = pause(engine, reason="approval")
    waiting = pause(engine, reason="approval")
    now = db_now()
    Suspension.objects.filter(pk=decided["id"]).update(created_at=now - timedelta(hours=5))
    Suspension.objects.filter(pk=waiting["id"]).update(created_at=now - timedelta(hours=2))
    # An approved pause waits for its start, no longer for an approver.
    Run.objects.filter(pk=decided["run_id"]).update(state="running")
    age = value(scrape(), "suspensions_oldest_pending_approval_age_seconds")
    assert 2 * 3600 <= age < 5 * 3600


def test_the_oldest_pending_approval_age_is_zero_without_any(engine):
    pause(engine)
    assert value(scrape(), "suspensions_oldest_pending_approval_age_seconds") == 0


def test_requests_are_counted_by_route_name_never_by_path(engine):
    runs = [register(engine)["id"] for _ in range(2)]
    before = scrape()
    for run_id in runs:
        assert engine.get(f"/api/v1/runs/{run_id}").status_code == 200
    assert engine.get("/no/such/page").status_code == 404
    after = scrape()
    assert growth(before, after, "suspensions_http_request_duration_seconds_count", route="run", method="GET") == 2
    assert growth(before, after, "suspensions_http_requests_total", route="run", method="GET", status=200) == 2
    assert growth(before, after, "suspensions_http_requests_total", route="unmatched", method="GET", status=404) == 1
    assert not any(run_id in after for run_id in runs)


def test_a_sweep_task_counts_its_run_and_rows_and_records_its_heartbeat(engine):
    due(engine)
    due(engine, reason="approval")
    before = scrape()
    result = tasks.sweep_expired()
    after = scrape()
    assert result["expired"] == 2
    assert growth(before, after, "suspensions_sweep_runs_total", outcome="success") == 1
    assert growth(before, after, "suspensions_sweep_rows_total", outcome="expired") == 2
    assert growth(before, after, "suspensions_sweep_duration_seconds_count") == 1
    last = SweepHeartbeat.objects.get().last_success_at
    assert value(after, "suspensions_sweep_last_success_timestamp_seconds") == last.timestamp()


def test_a_sweep_that_raises_counts_a_failure_and_leaves_the_heartbeat_alone(db, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(services, "expire_suspensions", broken)
    before = scrape()
    with pytest.raises(RuntimeError):
        tasks.sweep_expired()
    after = scrape()
    assert growth(before, after, "suspensions_sweep_runs_total", outcome="failure") == 1
    assert growth(before, after, "suspensions_sweep_runs_total", outcome="success") == 0
    assert not SweepHeartbeat.objects.exists()


def test_the_heartbeat_stays_one_row_however_many_sweeps(db):
    heartbeat.beat()
    first = SweepHeartbeat.objects.get().last_success_at
    heartbeat.beat()
    assert SweepHeartbeat.objects.count() == 1
    assert SweepHeartbeat.objects.get().last_success_at >= first


# -- the functions the services call -------------------------------------------------------------


def test_a_transition_counts_only_when_its_transaction_commits(db, django_capture_on_commit_callbacks):
    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        with pytest.raises(RuntimeError), transaction.atomic():
            metrics.transition("suspended")
            raise RuntimeError("rolled back")
        with transaction.atomic():
            metrics.transition("suspended")
            metrics.transition("expired", 3)
    after = scrape()
    assert growth(before, after, "suspensions_transitions_total", kind="suspended") == 1
    assert growth(before, after, "suspensions_transitions_total", kind="expired") == 3


def test_a_fresh_claim_counts_on_commit_and_a_refusal_at_once(db, django_capture_on_commit_callbacks):
    before = scrape()
    with django_capture_on_commit_callbacks(execute=False) as pending:
        with transaction.atomic():
            metrics.claim("one_shot", "fresh")
        metrics.claim("one_shot", "conflict")
        during = scrape()
    for callback in pending:
        callback()
    after = scrape()
    assert growth(before, during, "suspensions_claims_total", kind="one_shot", outcome="fresh") == 0
    assert growth(before, during, "suspensions_claims_total", kind="one_shot", outcome="conflict") == 1
    assert growth(before, after, "suspensions_claims_total", kind="one_shot", outcome="fresh") == 1


def test_an_unknown_claim_outcome_is_a_programming_error(db):
    with pytest.raises(ValueError):
        metrics.claim("one_shot", "won")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "error, outcome",
    [
        (SuspensionExpired(), "expired"),
        (AdmissionConflict(), "conflict"),
        (Forbidden(), "refused"),
        (NotFound(), "refused"),
    ],
)
def test_a_counted_claim_counts_its_refusal_by_kind(db, error, outcome):
    @metrics.counted_claim("approval")
    def refuse():
        raise error

    before = scrape()
    with pytest.raises(type(error)):
        refuse()
    assert growth(before, scrape(), "suspensions_claims_total", kind="approval", outcome=outcome) == 1


def test_a_counted_claim_counts_a_replay_from_the_answer(db):
    class Answer:
        fresh = False

    replay = metrics.counted_claim("start")(lambda: Answer())
    before = scrape()
    replay()
    assert growth(before, scrape(), "suspensions_claims_total", kind="start", outcome="replay") == 1


def test_a_scrape_after_known_transitions_through_the_api_shows_exact_counts(
    engine, token, django_capture_on_commit_callbacks
):
    before = scrape()
    with django_capture_on_commit_callbacks(execute=True):
        s = pause(engine)  # registered, suspended
        assert resume(engine, s).status_code == 201  # one_shot fresh: admitted, started
        assert resume(engine, s).status_code == 200  # one_shot replay
        other = [{"call_id": "c1", "content": "another answer"}]
        assert resume(engine, s, other).status_code == 409  # one_shot conflict
        late = due(engine)  # registered, suspended
        assert resume(engine, late).status_code == 410  # one_shot expired
        bus = client(token("acme", ["bus"], "bus"))
        gated = pause(engine)  # registered, suspended
        assert resume(bus, gated).status_code == 403  # one_shot refused
        body = {"revision": s["run_revision"] + 1}
        assert post(engine, f"/api/v1/runs/{s['run_id']}/complete", body).status_code == 200  # completed
    after = scrape()
    transitions = {"registered": 3, "suspended": 3, "admitted": 1, "started": 1, "completed": 1}
    for kind, count in transitions.items():
        assert growth(before, after, "suspensions_transitions_total", kind=kind) == count, kind
    claims = {"fresh": 1, "replay": 1, "conflict": 1, "expired": 1, "refused": 1}
    for outcome, count in claims.items():
        assert growth(before, after, "suspensions_claims_total", kind="one_shot", outcome=outcome) == count, outcome


def test_every_transition_logs_one_line_at_info(engine, caplog, django_capture_on_commit_callbacks):
    caplog.set_level(logging.INFO, logger="suspensions.transitions")
    with django_capture_on_commit_callbacks(execute=True):
        s = pause(engine)
        resume(engine, s)
    lines = [
        (r.event, r.run_id, r.revision, r.actor, r.scope)
        for r in caplog.records
        if r.name == "suspensions.transitions" and r.levelno == logging.INFO
    ]
    run = s["run_id"]
    assert lines == [
        ("registered", run, 1, "token:engine", "acme"),
        ("suspended", run, 2, "token:engine", "acme"),
        ("admitted", run, 3, "token:engine", "acme"),
        ("started", run, 3, "token:engine", "acme"),
    ]


def test_the_transition_line_names_kind_run_revision_actor_and_scope_on_commit(
    db, caplog, django_capture_on_commit_callbacks
):
    caplog.set_level(logging.INFO, logger="suspensions.transitions")
    run_id = uuid.uuid4()
    with django_capture_on_commit_callbacks(execute=True):
        logs.transition(logs.Transition(kind="expired", run_id=run_id, revision=3, actor="sweeper", scope="acme"))
        assert not [r for r in caplog.records if r.name == "suspensions.transitions"]
    [line] = [r for r in caplog.records if r.name == "suspensions.transitions"]
    assert (line.levelno, line.event, line.run_id, line.revision, line.actor, line.scope) == (
        logging.INFO,
        "expired",
        str(run_id),
        3,
        "sweeper",
        "acme",
    )


# -- logs -------------------------------------------------------------------------------------


@pytest.fixture
def json_lines():
    """What the configured JSON handler writes during the test, as parsed objects."""
    [handler] = [h for h in logging.getLogger().handlers if isinstance(h.formatter, logs.JsonFormatter)]
    stream = io.StringIO()
    previous = handler.setStream(stream)
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.DEBUG)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.setLevel(level)
    handler.setStream(previous)


def test_a_sane_request_id_is_kept_and_answered(engine):
    response = engine.get("/api/v1/runs", HTTP_X_REQUEST_ID="edge-7f3a.b_c")
    assert response["X-Request-ID"] == "edge-7f3a.b_c"


@pytest.mark.parametrize(
    "sent",
    ["", "has space", "a" * 129, 'quote"d', "new\nline", "ünïcode"],
    ids=["empty", "space", "long", "quote", "newline", "unicode"],
)
def test_any_other_request_id_is_replaced_by_a_new_one(engine, sent):
    response = engine.get("/api/v1/runs", HTTP_X_REQUEST_ID=sent)
    assert response["X-Request-ID"] != sent
    assert context.sane_request_id(response["X-Request-ID"])


def test_refusals_before_any_view_carry_a_request_id_too(db):
    response = APIClient().post("/api/v1/runs", data="{}", content_type="application/json", CONTENT_LENGTH="999999999")
    assert response.status_code == 413
    assert context.sane_request_id(response["X-Request-ID"])


def test_log_lines_are_json_with_the_request_id_principal_and_run_id(engine, json_lines):
    run_id = register(engine)["id"]
    engine.get(f"/api/v1/runs/{run_id}", HTTP_X_REQUEST_ID="req-42")
    [line] = [x for x in json_lines() if x["logger"] == "suspensions.requests" and x.get("request_id") == "req-42"]
    assert {k: line[k] for k in ("level", "principal", "run_id", "route", "method", "status", "path")} == {
        "level": "INFO",
        "principal": "token:engine",
        "run_id": run_id,
        "route": "run",
        "method": "GET",
        "status": 200,
        "path": f"/api/v1/runs/{run_id}",
    }
    assert {"time", "message", "duration_ms"} <= line.keys()


def test_a_console_line_names_the_signed_in_user(db, json_lines):
    user = get_user_model().objects.create_user(username="carol", password="pw", is_staff=True)
    console = Client()
    console.force_login(user)
    console.get("/console/", HTTP_X_REQUEST_ID="req-console")
    [line] = [x for x in json_lines() if x.get("request_id") == "req-console" and x["logger"] == "suspensions.requests"]
    assert (line["principal"], line["route"]) == ("user:carol", "console:dashboard")


def test_lines_written_outside_a_request_carry_no_request_context(db, json_lines):
    logging.getLogger("suspensions.test").warning("between requests")
    [line] = [x for x in json_lines() if x["message"] == "between requests"]
    assert (line["request_id"], line["principal"], line["run_id"]) == (None, None, None)


def test_log_level_follows_the_log_level_variable():
    code = "import django, logging; django.setup(); print(logging.getLogger().level)"
    env = {**os.environ, "LOG_LEVEL": "error", "DJANGO_SETTINGS_MODULE": "suspensions_project.settings"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=settings.BASE_DIR)
    assert done.stdout.strip() == str(logging.ERROR), done.stderr


def test_a_published_task_carries_the_request_id_and_the_task_adopts_it(db):
    class Task:
        class request:  # noqa: N801 - the shape of celery's task.request
            request_id = "req-from-web"

    headers = {}
    context.bind(request_id="req-from-web")
    celery_signals.carry_the_request_id(headers=headers)
    context.clear()
    celery_signals.adopt_the_request_id(task_id="task-1", task=Task())
    assert (headers, context.request_id()) == ({"request_id": "req-from-web"}, "req-from-web")
    celery_signals.forget_the_request_id()
    assert context.request_id() is None


SECRET_PASSWORD = "Correct-Horse-Battery-Staple-91"
WRONG_PASSWORD = "Wrong-Horse-Battery-Staple-17"
DECISION_TOKEN = "decision-Zq8xv3Lw-never-logged"
WRONG_DECISION_TOKEN = "decision-Qm2pW9-also-never-logged"


def test_no_secret_is_ever_logged(db, token, caplog, json_lines):
    for logger in ("", "django", "django.request", "suspensions.requests"):
        caplog.set_level(logging.DEBUG, logger=logger or None)
    connection.force_debug_cursor = True  # every SQL statement and its parameters, at DEBUG
    try:
        engine_secret, bus_secret = token("acme", ["engine"], "engine"), token("acme", ["bus"], "bus")
        engine = client(engine_secret)
        s = pause(engine)
        resume(engine, s)
        assert client("sus_not-a-real-token-5k2").get("/api/v1/runs").status_code == 401
        get_user_model().objects.create_user(username="dora", password=SECRET_PASSWORD, is_staff=True)
        assert Client().post("/console/login/", {"username": "dora", "password": WRONG_PASSWORD}).status_code == 200
        assert Client().post("/console/login/", {"username": "dora", "password": SECRET_PASSWORD}).status_code == 302
        parked = post(engine, "/api/v1/flow-waits", flow_wait(DECISION_TOKEN))
        assert parked.status_code == 201, parked.content
        body = {"tenant": "acme", "env": "prod", "correlation_id": parked.json()["correlation_id"], "output": {}}
        bus = client(bus_secret)
        assert post(bus, "/api/v1/dispatch/resume", {**body, "decision_token": WRONG_DECISION_TOKEN}).status_code == 403
        assert post(bus, "/api/v1/dispatch/resume", {**body, "decision_token": DECISION_TOKEN}).status_code == 201
    finally:
        connection.force_debug_cursor = False
    captured = caplog.text + repr([r.__dict__ for r in caplog.records]) + json.dumps(json_lines())
    # The capture did see the requests and the SQL (with its parameters) that handled the secrets.
    assert "POST /api/v1/dispatch/resume" in captured and "INSERT INTO" in captured
    for secret in (engine_secret, bus_secret, "sus_not-a-real-token-5k2", SECRET_PASSWORD, WRONG_PASSWORD):
        assert secret not in captured
    assert DECISION_TOKEN not in captured and WRONG_DECISION_TOKEN not in captured


def flow_wait(decision_token):
    return {"envelope": envelope(), "snapshot": {"node": "n"}, "reason": "approval", "decision_token": decision_token}


# -- /readyz ----------------------------------------------------------------------------------


@pytest.fixture
def broker_ok(monkeypatch):
    """The broker check answers ok without a connection; returns the list of URLs it was asked about."""
    asked = []

    def check(url):
        asked.append(url)
        return "ok"

    monkeypatch.setattr(health, "_check_broker", check)
    monkeypatch.setattr(health, "_broker_seen", None)
    return asked


def readyz():
    response = APIClient().get("/readyz")
    return response.status_code, response.json()["sweep"]


def sweep_health():
    """`manage.py sweep_health` as a health check runs it: (exit status, its output)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "sweep_health"],
        cwd=settings.BASE_DIR,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr


def stale_heartbeat():
    old = db_now() - timedelta(seconds=3 * settings.SWEEP_INTERVAL_SECONDS + 5)
    SweepHeartbeat.objects.create(last_success_at=old)


def test_readyz_is_ready_after_a_recent_sweep(db, broker_ok):
    heartbeat.beat()
    assert readyz() == (200, "ok")


def test_readyz_stays_ready_with_a_stale_sweep_while_the_sweep_health_check_fails(transactional_db, broker_ok):
    # Readiness is this node's (database, broker): a stuck sweep worker must not take every web node out of
    # the balancer (issue 50, item 11). The sweep's worker answers for the sweep.
    stale_heartbeat()
    status, sweep = readyz()
    assert (status, sweep.startswith("stale: last success")) == (200, True)
    code, said = sweep_health()
    assert code == 1 and "sweep unhealthy: stale: last success" in said, said
    assert value(scrape(), "suspensions_sweep_stale") == 1.0


def test_the_sweep_health_check_passes_after_a_recent_sweep(transactional_db):
    heartbeat.beat()
    code, said = sweep_health()
    assert (code, said.strip()) == (0, f"sweep ok: last success within {3 * settings.SWEEP_INTERVAL_SECONDS} s")
    assert value(scrape(), "suspensions_sweep_stale") == 0.0


def test_readyz_reports_never_and_stays_ready_while_the_sweep_health_check_fails(transactional_db, broker_ok):
    assert readyz() == (200, "never")
    code, said = sweep_health()
    assert code == 1 and "sweep unhealthy: never" in said, said


def test_readyz_checks_the_broker_once_for_several_probes(db, broker_ok, settings):
    heartbeat.beat()
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/13"
    for _ in range(3):
        assert APIClient().get("/readyz").status_code == 200
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/14"
    APIClient().get("/readyz")
    assert broker_ok == ["redis://127.0.0.1:6379/13", "redis://127.0.0.1:6379/14"]


# -- several processes ----------------------------------------------------------------------------


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(condition, what, seconds=60):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# The hook gunicorn.conf.py needs (docs/decisions.md): a dead worker's live gauges leave the scrape.
GUNICORN_CONF = """
from prometheus_client import multiprocess

bind = "127.0.0.1:{port}"
workers = 2
worker_class = "sync"
# Every worker is replaced after 5 requests: the counts below come from many processes, most of them gone.
max_requests = 5


def child_exit(server, worker):
    multiprocess.mark_process_dead(worker.pid)
"""


@pytest.fixture
def processes(transactional_db, tmp_path):
    """start(command, name) runs a process on the test database with a shared PROMETHEUS_MULTIPROC_DIR."""
    procs = Processes()
    env = child_env(PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus"), LOG_LEVEL="INFO")

    def start(command, name):
        procs.start(command, env=env, log_path=tmp_path / f"{name}.log")
        return tmp_path / f"{name}.log"

    yield start
    procs.stop_all()


# A bound on one request, not a measure: while gunicorn recycles both workers (max_requests) a request
# waits in the listen queue for the next one, longer still on a busy machine; it is answered in the end.
ANSWER_BOUND = 300


def http_get(url, timeout=ANSWER_BOUND):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - our own test server
            return response.status, response.read().decode()
    except OSError:
        return None, ""


@pytest.mark.slow
def test_a_scrape_sums_the_counters_of_every_web_and_worker_process(processes, tmp_path):
    bin_dir = Path(sys.executable).parent
    port = free_port()
    (tmp_path / "gunicorn.conf.py").write_text(GUNICORN_CONF.format(port=port))
    processes([str(bin_dir / "gunicorn"), "-c", str(tmp_path / "gunicorn.conf.py"), "suspensions_project.wsgi"], "web")
    worker_log = processes(
        [str(bin_dir / "celery"), "-A", "suspensions_project", "worker", "--concurrency", "1", "--purge"]
        + ["-n", f"obs-test-{uuid.uuid4().hex[:8]}@%h"],
        "worker",
    )
    base = f"http://127.0.0.1:{port}"
    # Until gunicorn listens a probe is refused at once; a short bound only keeps the polling going.
    wait_for(lambda: http_get(f"{base}/healthz", timeout=5)[0] == 200, "gunicorn")
    wait_for(lambda: "ready." in worker_log.read_text(), "the Celery worker")

    before = http_get(f"{base}/metrics")[1]
    context.bind(request_id="req-enqueued-by-test")
    tasks.sweep_expired.delay()
    context.clear()
    wait_for(SweepHeartbeat.objects.exists, "the worker's sweep")
    for _ in range(20):
        assert http_get(f"{base}/healthz")[0] == 200
    after = http_get(f"{base}/metrics")[1]

    # Scraped in a gunicorn worker: the sweep ran in the Celery pool, the 20 probes in at least 4 gunicorn workers.
    assert growth(before, after, "suspensions_sweep_runs_total", outcome="success") == 1
    assert growth(before, after, "suspensions_http_requests_total", route="healthz", method="GET", status=200) == 20
    assert len({p.stem.rsplit("_", 1)[1] for p in (tmp_path / "prometheus").glob("*.db")}) >= 6
    # The task ran with the id of the request (here: the test) that enqueued it.
    lines = [json.loads(x) for x in worker_log.read_text().splitlines() if x.startswith("{")]
    assert [x["request_id"] for x in lines if x["logger"] == "suspensions.tasks"] == ["req-enqueued-by-test"]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_gunicorn_s_own_lines_keep_their_process_id_through_a_graceful_stop(tmp_path):
    # gunicorn's format is "[%(process)d]"; a worker that imported the service's logging once logged
    # "--- Logging error ---" instead of "Worker exiting (pid: N)" at every graceful stop.
    web = start_gunicorn(tmp_path, database_url(connection.settings_dict), workers=1, threads=1)
    web.stop()
    log = web.log.read_text()
    assert "Logging error" not in log, log[-3000:]
    worker_exit = re.search(r"\[(\d+)\] \[INFO\] Worker exiting \(pid: (\d+)\)", log)
    assert worker_exit is not None, log[-3000:]
    assert worker_exit.group(1) == worker_exit.group(2)  # the worker's own pid, in gunicorn's format


def test_no_line_of_the_configured_handler_holds_an_email_link_or_a_callback_token(engine, json_lines):
    """docs/deploy.md, "Logs": the access line, Django's 404 warning and a CSRF refusal redact the capability."""
    from suspensions import email_links
    from tests.helpers import approval_pause, member

    alice = member("alice", {"acme/support": ["approver"]}, is_staff=True)
    approval = approval_pause()
    link = email_links.links(
        user_id=alice.pk,
        approval_id=approval.pk,
        run_id=approval.run_id,
        revision=2,
        deadline=approval.expires_at,
        now=db_now(),
    )["approve"].removeprefix(settings.CONSOLE_BASE_URL)
    assert Client().get(link).status_code == 200
    assert Client(enforce_csrf_checks=True).post(link).status_code == 403  # django.security.csrf's warning
    assert Client().get(link + "x").status_code == 404  # django.request's "Not Found: <path>"
    callback = "/api/v1/callbacks/" + "c" * 40
    assert engine.post(callback, {}, format="json").status_code == 404

    text = "\n".join(json.dumps(line) for line in json_lines())
    assert link.removeprefix("/console/act/")[:16] not in text and "c" * 40 not in text
    assert "Not Found: /console/act/<redacted>" in text and "Not Found: /api/v1/callbacks/<redacted>" in text
    assert "Forbidden (CSRF cookie not set.): /console/act/<redacted>" in text
    assert [line["path"] for line in json_lines() if line["logger"] == "suspensions.requests"] == [
        "/console/act/<redacted>",
        "/console/act/<redacted>",
        "/console/act/<redacted>",
        "/api/v1/callbacks/<redacted>",
    ]


def test_approvals_past_80_percent_of_their_window_are_counted_at_risk(engine, monkeypatch):
    from suspensions.models import Approval

    young, old, decided = (pause(engine, reason="approval", ttl_seconds=1000) for _ in range(3))
    pause(engine, reason="approval", ttl_seconds=0)  # no deadline: never at risk
    record = Approval.objects.get(pk=young["id"])
    assert record.at_risk_at == record.created_at + timedelta(seconds=800)
    now = db_now()
    for s in (old, decided):  # 900 of their 1000 seconds gone
        Approval.objects.filter(pk=s["id"]).update(created_at=now - timedelta(seconds=900), at_risk_at=now)
    Approval.objects.filter(pk=decided["id"]).update(status="denied")
    assert value(scrape(), "suspensions_approvals_at_risk") == 1
    monkeypatch.setattr(metrics, "EXACT_UP_TO", 0)  # past the bound: the planner's estimate, never below the walk
    assert value(scrape(), "suspensions_approvals_at_risk") >= 1
