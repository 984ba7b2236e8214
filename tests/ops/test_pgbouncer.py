"""The service behind PgBouncer in transaction pooling mode, with racing resumers (docs/deploy.md, "PgBouncer";
docs/deploy.md, "Topology"; issue 31).

Real parts: PgBouncer (Debian's, `make pgbouncer`) on a free port in front of this test's
database, pool_mode = transaction, with fewer server connections (POOL_SIZE) than the web
workers hold client connections (WORKERS x THREADS, each worker's pool filled to its maximum):
consecutive transactions of one Django connection land on another server connection (handed
out round robin, so always when one is idle), and anything kept on a session (a prepared
statement, a SET, an advisory lock, a LISTEN, a temporary table, a WITH HOLD cursor) would be
missing or wrong on the next one. gunicorn runs as the README starts it, with DATABASE_URL
through PgBouncer as docs/deploy.md says (the service prepares no statement on the server:
tests/services/test_sql.py). Without the settings' DISABLE_SERVER_SIDE_CURSORS the test fails
(the admin pages, a 500).

Every request goes over HTTP, each racer on its own keep-alive connection with its own token (so
the audit trail names the winner), and every answer is counted: the whole load must finish
with no 5xx and no connection error.
"""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client

from suspensions.models import Admission, Approval, Event, Run, Start
from tests import pgbouncer
from tests.front_door import ROOT, Server, start_gunicorn
from tests.helpers import call, continuation, snapshot
from tests.processes import wait_for
from tests.races.test_approvals_race import assert_one_decision, decision_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

WORKERS, THREADS = 2, 8
# PgBouncer's server connections to PostgreSQL: fewer than the WORKERS x THREADS client connections.
POOL_SIZE = 4
PAUSES, RACERS = 16, 8
APPROVAL_PAUSES, APPROVERS = 8, 6
FLOWS = 4
TIMEOUT = 30


@pytest.fixture
def bouncer(transactional_db: None, tmp_path) -> Iterator[pgbouncer.PgBouncer]:
    running = pgbouncer.start(connection.settings_dict, pool_size=POOL_SIZE, log=tmp_path / "pgbouncer.log")
    try:
        yield running
    finally:
        # After gunicorn (fixture order) and before the test database is flushed or dropped: PgBouncer's
        # server connections to it would keep DROP DATABASE from running.
        running.stop()


@pytest.fixture
def web(bouncer: pgbouncer.PgBouncer, tmp_path) -> Iterator[Server]:
    # DB_POOL_MIN = THREADS: each worker's pool opens all its connections, more than PgBouncer has servers.
    env = {"DB_POOL_MIN": str(THREADS), "DJANGO_STATIC_ROOT": str(tmp_path / "static")}
    collect_static(env)
    server = start_gunicorn(tmp_path, bouncer.url(), workers=WORKERS, threads=THREADS, extra_env=env)
    try:
        yield server
    finally:
        server.stop()


def collect_static(env: dict[str, str]) -> None:
    """collectstatic into the test's STATIC_ROOT, as a deploy does: with DEBUG off the admin needs its manifest."""
    settings_env = {**os.environ, "DJANGO_DEBUG": "0", **env}
    collected = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput"], cwd=ROOT, env=settings_env, capture_output=True
    )
    assert collected.returncode == 0, collected.stderr.decode()[-2000:]


class Traffic:
    """Every client the test made, and (method, path, status or the connection error) of every request sent."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.answers: list[tuple[str, str, Any]] = []
        self.clients: list[Api] = []

    def client(self, secret: str) -> "Api":
        """An API client with the bearer token `secret`."""
        return self.made(f"http://127.0.0.1:{self.port}/api/v1", headers={"Authorization": f"Bearer {secret}"})

    def browser(self, session_key: str) -> "Api":
        """A signed-in browser: the session cookie of a staff user."""
        return self.made(f"http://127.0.0.1:{self.port}", cookies={settings.SESSION_COOKIE_NAME: session_key})

    def made(self, base_url: str, **kwargs: Any) -> "Api":
        made = Api(httpx.Client(base_url=base_url, timeout=TIMEOUT, **kwargs), self.answers)
        self.clients.append(made)
        return made

    def failures(self) -> list[tuple[str, str, Any]]:
        return [a for a in self.answers if not isinstance(a[2], int) or a[2] >= 500]

    def close(self) -> None:
        """Keep-alive connections left open would hold gunicorn's graceful stop for its whole timeout."""
        for made in self.clients:
            made.http.close()


class Api:
    """One client's keep-alive connection to the service (with its credentials), every answer noted in `answers`."""

    def __init__(self, http: httpx.Client, answers: list[tuple[str, str, Any]]) -> None:
        self.http, self.answers = http, answers

    def send(self, method: str, path: str, body: Any = None) -> httpx.Response:
        try:
            response = self.http.request(method, path, json=body)
        except httpx.HTTPError as exc:
            self.answers.append((method, path, repr(exc)))
            raise
        self.answers.append((method, path, response.status_code))
        return response

    def post(self, path: str, body: Any, status: int | None = None) -> dict[str, Any]:
        """The answer's JSON; with `status`, the test fails on any other status."""
        response = self.send("POST", path, body)
        assert status is None or response.status_code == status, (path, response.status_code, response.text[:500])
        return response.json()  # type: ignore[no-any-return]

    def get(self, path: str) -> dict[str, Any]:
        response = self.send("GET", path)
        assert response.status_code == 200, (path, response.status_code, response.text[:500])
        return response.json()  # type: ignore[no-any-return]


def pause(api: Api, reason: str = "external_tool", agent_id: str = "behind-pgbouncer") -> dict[str, Any]:
    """Register a run and pause it over HTTP; the suspension body (with run_revision)."""
    run = api.post("/runs", {"agent_id": agent_id}, 201)
    body = {"revision": run["revision"], "reason": reason, "pending": [call()], "continuation": continuation()}
    return api.post(f"/runs/{run['id']}/suspend", body, 201)


def version(s: dict[str, Any]) -> dict[str, Any]:
    return {"run_id": s["run_id"], "suspension_id": s["id"], "run_revision": s["run_revision"]}


def in_threads(count: int, act: Callable[[int], Any]) -> list[Any]:
    """act(0) .. act(count - 1), each in its own thread; their answers, or the first exception one raised."""
    results: list[Any] = [None] * count
    raised: list[BaseException] = []

    def run(n: int) -> None:
        try:
            results[n] = act(n)
        except Exception as exc:  # noqa: BLE001 - re-raised below, in the test's thread
            raised.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if raised:
        raise raised[0]
    return results


def race(apis: list[Api], pauses: list[dict[str, Any]], send: Callable[[Api, int, dict[str, Any]], Any]) -> list[Any]:
    """Each client sends to each pause in turn, all released together per pause; answers[pause][client]."""
    barrier = threading.Barrier(len(apis), timeout=60)

    def client(n: int) -> list[Any]:
        mine = []
        for s in pauses:
            barrier.wait()
            mine.append(send(apis[n], n, s))
        return mine

    by_client = in_threads(len(apis), client)
    return [[by_client[n][i] for n in range(len(apis))] for i in range(len(pauses))]


def results_of(n: int) -> list[dict[str, Any]]:
    """Even racers send one and the same result; each odd one a result of its own."""
    return [{"call_id": "c1", "content": "ok" if n % 2 == 0 else f"racer {n}"}]


def resume(api: Api, n: int, s: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = api.send("POST", f"/runs/{s['run_id']}/resume", {"version": version(s), "results": results_of(n)})
    return response.status_code, response.json()


def assert_one_winner(s: dict[str, Any], answers: list[tuple[int, dict[str, Any]]]) -> None:
    """One fresh claim; the racers that sent the winner's very results replay it, every other one conflicts."""
    winners = [n for n, (status, _) in enumerate(answers) if status == 201]
    assert len(winners) == 1, answers
    w = winners[0]
    won = answers[w][1]
    assert won["fresh"] is True and won["run_revision"] == s["run_revision"] + 1
    for n, (status, body) in enumerate(answers):
        if n == w:
            continue
        if results_of(n) == results_of(w):
            assert (status, body["fresh"], body["start"]) == (200, False, won["start"]), (n, body)
        else:
            assert (status, body["code"]) == (409, "admission_conflict"), (n, body)
            assert body["admitted_digest"] == won["admission"]["request_digest"]
    assert_claimed_by(s, f"token:racer-{w}")


def assert_claimed_by(s: dict[str, Any], actor: str) -> None:
    run = Run.objects.get(pk=s["run_id"])
    assert (run.state, run.revision) == ("running", s["run_revision"] + 1)
    assert list(Admission.objects.filter(run_id=run.id).values_list("actor", flat=True)) == [actor]
    assert Start.objects.filter(run_id=run.id).count() == 1
    events = Event.objects.filter(run_id=run.id).order_by("id").values_list("kind", "actor", "revision")
    assert list(events) == [
        ("registered", "token:engine", 1),
        ("suspended", "token:engine", 2),
        ("admitted", actor, 3),
        ("started", actor, 3),
    ]


def decide(api: Api, n: int, s: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = api.send("POST", f"/approvals/{s['id']}/decide", {"version": version(s), **decision_of(n)})
    return response.status_code, response.json()


def assert_shared_server_connections(bouncer: pgbouncer.PgBouncer) -> None:
    """Every worker's pooled connection is a PgBouncer client, and they took turns on POOL_SIZE servers at most."""
    wait_for(lambda: bouncer.connections("CLIENTS") == WORKERS * THREADS, "each worker's pool to fill")
    assert bouncer.connections("SERVERS") <= POOL_SIZE < WORKERS * THREADS


def lifecycle(engine: Api, approver: Api, agent_id: str) -> None:
    """Every other kind of request once: register, pause, resume, complete; approve, start, complete; reads."""
    s = pause(engine, agent_id=agent_id)
    resumed = engine.post(f"/runs/{s['run_id']}/resume", {"version": version(s), "results": results_of(0)}, 201)
    done = engine.post(f"/runs/{s['run_id']}/complete", {"revision": resumed["run_revision"]}, 200)
    assert (done["state"], done["revision"]) == ("completed", s["run_revision"] + 2)

    a = pause(engine, "approval", agent_id)
    assert a["id"] in [row["id"] for row in approver.get("/approvals")["results"]]
    decided = approver.post(f"/approvals/{a['id']}/decide", {"version": version(a), "decision": "approve"}, 201)
    started = engine.post(f"/admissions/{decided['admission']['id']}/start", {}, 201)
    done = engine.post(f"/runs/{a['run_id']}/complete", {"revision": started["run_revision"]}, 200)
    assert (done["state"], done["revision"]) == ("completed", a["run_revision"] + 2)

    assert engine.get(f"/runs/{a['run_id']}")["state"] == "completed"
    kinds = [e["kind"] for e in engine.get(f"/runs/{s['run_id']}/events")["results"]]
    assert kinds == ["registered", "suspended", "admitted", "started", "completed"]
    listed = engine.get(f"/runs?agent_id={agent_id}")["results"]
    assert sorted((run["id"], run["state"]) for run in listed) == sorted(
        [(s["run_id"], "completed"), (a["run_id"], "completed")]
    )


def races(traffic: Traffic, token: Callable[..., str]) -> None:
    """RACERS resumers per external_tool pause, then APPROVERS approvers per approval pause: one winner each."""
    engine = traffic.client(token("acme", ["engine"], "engine"))
    pauses = [pause(engine) for _ in range(PAUSES)]
    racers = [traffic.client(token("acme", ["engine"], f"racer-{n}")) for n in range(RACERS)]
    for s, row in zip(pauses, race(racers, pauses, resume)):
        assert_one_winner(s, row)

    approval_pauses = [pause(engine, "approval") for _ in range(APPROVAL_PAUSES)]
    approvers = [traffic.client(token("acme", ["approver"], f"approver-{n}")) for n in range(APPROVERS)]
    for s, row in zip(approval_pauses, race(approvers, approval_pauses, decide)):
        assert_one_decision(s, row)


def flows(traffic: Traffic, token: Callable[..., str]) -> None:
    """FLOWS clients at once, each through `lifecycle` twice: nothing may lean on a server connection's session."""
    engine_secret, approver_secret = token("acme", ["engine"], "engine"), token("acme", ["approver"], "approver")

    def flow(n: int) -> None:
        engine, approver = traffic.client(engine_secret), traffic.client(approver_secret)
        for round_ in range(2):
            lifecycle(engine, approver, f"flow-{n}-{round_}")

    approved = Approval.objects.filter(status="approved").count()
    in_threads(FLOWS, flow)
    agents = [f"flow-{n}-{round_}" for n in range(FLOWS) for round_ in range(2)]
    assert Run.objects.filter(agent_id__in=agents, state="completed").count() == len(agents) * 2
    assert Approval.objects.filter(status="approved").count() == approved + len(agents)


def refusal(traffic: Traffic, token: Callable[..., str]) -> None:
    """Results that do not match the pause: a problem+json 422, and nothing written."""
    engine = traffic.client(token("acme", ["engine"], "refused"))
    s = pause(engine)
    before = snapshot()
    body = {"version": version(s), "results": [{"call_id": "other", "content": 1}]}
    wrong = engine.send("POST", f"/runs/{s['run_id']}/resume", body)
    assert wrong.status_code == 422 and wrong.headers["Content-Type"].startswith("application/problem+json")
    assert json.loads(wrong.text)["status"] == 422
    assert snapshot() == before


def staff_pages(traffic: Traffic) -> None:
    """The admin's user and group pages: their permission lists are Django's ModelMultipleChoiceField.

    The field reads its choices with QuerySet.iterator(), which on PostgreSQL is a server-side
    cursor unless DISABLE_SERVER_SIDE_CURSORS: DECLARE on one server connection, FETCH on the
    next (with server_round_robin, always another one): 'portal "_django_curs_..." does not exist', a 500.
    """
    user = User.objects.create_superuser("operator", "operator@example.com", "not-used-here")
    group = Group.objects.create(name="reviewers")
    signed_in = Client()
    signed_in.force_login(user)
    browser = traffic.browser(signed_in.cookies[settings.SESSION_COOKIE_NAME].value)
    for path in (f"/admin/auth/user/{user.pk}/change/", f"/admin/auth/group/{group.pk}/change/"):
        page = browser.send("GET", path)
        assert page.status_code == 200, (path, page.status_code, page.text[:300])
        assert "Can add run" in page.text  # one of the permission choices the cursor read


def test_behind_pgbouncer_racers_get_one_winner_each_every_kind_of_request_works_and_nothing_errs(bouncer, web, token):
    traffic = Traffic(web.port)
    try:
        races(traffic, token)
        flows(traffic, token)
        refusal(traffic, token)
        staff_pages(traffic)
    finally:
        traffic.close()

    assert traffic.failures() == []
    raced = 2 * (PAUSES + APPROVAL_PAUSES) + PAUSES * RACERS + APPROVAL_PAUSES * APPROVERS
    assert len(traffic.answers) == raced + FLOWS * 2 * 13 + 3 + 2
    assert_shared_server_connections(bouncer)
