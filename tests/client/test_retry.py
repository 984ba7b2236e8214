"""The client's retry against real faults: a gunicorn worker killed after its commit, a 503, a refused connection.

The kill is tests/races/test_faults.py's hook (see apps.py): the worker dies
after the transaction committed and before it answers, so the client sees a
dropped connection for a write that happened. A 503 comes from a small proxy
of this file in front of the live server, answering 503 with Retry-After
before it starts to forward.
"""

import http.client
import itertools
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from suspensions_client import Client, ConnectionLost, IdempotencyMismatch, Retry, StartUncertain, Unavailable

from suspensions.models import Admission, Event, Run, Start, Suspension, WebhookEndpoint
from tests.helpers import envelope
from tests.push.receivers import free_port

from .conftest import cont, pending

RESULTS = [{"call_id": "c1", "content": {"paid": True}}]


@pytest.fixture
def dying(connect, tmp_path):
    """dying(*roles) -> (client, notices): its first request kills the worker after the commit."""

    numbers = itertools.count()

    def make(*roles):
        notices = []
        headers = {"X-Test-Kill-Once": str(tmp_path / f"kill-{next(numbers)}")}
        client = connect(*roles, headers=headers, retry=Retry(backoff=0.2, on_retry=notices.append))
        return client, notices

    return make


def kinds(run_id):
    return list(Event.objects.filter(run_id=run_id).order_by("id").values_list("kind", flat=True))


def test_a_resume_whose_worker_dies_after_commit_is_resent_and_answered_as_the_replay(engine, dying):
    pause = engine.suspend(engine.register("a"), reason="external_tool", pending=[pending()], continuation=cont())
    client, notices = dying("engine")
    replay = client.resume(pause, RESULTS)
    assert (replay.fresh, replay.admission.fresh, replay.suspension, replay.results) == (False, False, None, None)
    assert [n.attempt for n in notices] == [1] and notices[0].path == f"/runs/{pause.run_id}/resume"
    stored = Admission.objects.get(run_id=pause.run_id)
    assert replay.admission.request_digest == stored.request_digest
    assert replay.start.digest == Start.objects.get(run_id=pause.run_id).digest
    assert kinds(pause.run_id) == ["registered", "suspended", "admitted", "started"]


def test_a_suspend_whose_answer_was_lost_returns_the_pause_the_first_attempt_stored(engine, dying):
    run = engine.register("a")
    client, notices = dying("engine")
    pause = client.suspend(run, reason="approval", pending=[pending()], continuation=cont(), ttl_seconds=600)
    assert len(notices) == 1 and pause == engine.get_suspension(pause.id)
    assert (pause.run_revision, Suspension.objects.get().id) == (2, uuid.UUID(pause.id))
    assert kinds(run.id) == ["registered", "suspended"]


def test_a_complete_whose_answer_was_lost_returns_the_completed_run(engine, dying):
    pause = engine.suspend(engine.register("a"), reason="external_tool", pending=[pending()], continuation=cont())
    started = engine.resume(pause, RESULTS)
    client, notices = dying("engine")
    done = client.complete(started)
    assert (done.state, done.revision, len(notices)) == ("completed", 4, 1)
    assert kinds(pause.run_id)[-1] == "completed" and kinds(pause.run_id).count("completed") == 1


def test_a_start_whose_answer_was_lost_is_start_uncertain_and_was_granted_once(engine, approver, dying):
    pause = engine.pause_for_approval(engine.register("a"), [pending()], cont())
    admitted = approver.decide(pause.id, pause.version)
    client, _ = dying("engine")
    with pytest.raises(StartUncertain) as uncertain:
        client.start(admitted)
    assert uncertain.value.code == "resume_already_started"
    assert uncertain.value.receipt["digest"] == Start.objects.get(run_id=pause.run_id).digest
    assert engine.latest_admission(pause.run_id).state == "started"


def test_a_register_whose_answer_was_lost_is_resent_with_its_key_and_returns_the_one_run(dying):
    client, notices = dying("engine")
    run = client.register("once", scope="acme")
    assert [n.attempt for n in notices] == [1]
    assert [str(pk) for pk in Run.objects.filter(agent_id="once").values_list("id", flat=True)] == [run.id]


def test_a_webhook_create_whose_answer_was_lost_returns_the_one_endpoint_and_its_secret(dying):
    client, notices = dying("operator")
    endpoint = client.create_webhook("http://127.0.0.1:1/hooks", scope="acme")
    assert len(notices) == 1
    stored = WebhookEndpoint.objects.get()
    assert (str(stored.id), stored.secret) == (endpoint.id, endpoint.secret)


def test_a_park_whose_answer_was_lost_returns_the_first_parks_correlation_id(dying):
    client, notices = dying("engine")
    parked = client.park_flow_wait(envelope(), {"step": 1}, "external_tool")
    assert len(notices) == 1
    assert parked.correlation_id == Suspension.objects.get().correlation_id


def test_the_caller_may_give_its_own_idempotency_key_and_a_second_call_with_it_is_a_replay(engine):
    first = engine.register("mine", scope="acme", idempotency_key="order-42")
    again = engine.register("mine", scope="acme", idempotency_key="order-42")
    assert first == again and Run.objects.filter(agent_id="mine").count() == 1
    with pytest.raises(IdempotencyMismatch):
        engine.register("other", scope="acme", idempotency_key="order-42")


def test_every_create_sends_a_new_key_so_two_calls_are_two_runs(engine):
    assert engine.register("twice", scope="acme") != engine.register("twice", scope="acme")
    assert Run.objects.filter(agent_id="twice").count() == 2


class Flaky:
    """A proxy to the live server that answers its first `refusals` requests 503 with Retry-After: 1."""

    def __init__(self, upstream_port: int, refusals: int) -> None:
        self.refusals, self.bodies = refusals, []
        flaky = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.forward()

            def do_GET(self) -> None:  # noqa: N802
                self.forward()

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                flaky.bodies.append(body)
                if len(flaky.bodies) <= flaky.refusals:
                    problem = b'{"code": "unavailable", "status": 503, "title": "down", "detail": "retry"}'
                    self.answer(503, {"Retry-After": "1", "Content-Type": "application/problem+json"}, problem)
                    return
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                response = upstream.getresponse()
                self.answer(response.status, {"Content-Type": response.getheader("Content-Type")}, response.read())
                upstream.close()

            def answer(self, status: int, headers: dict, body: bytes) -> None:
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def flaky(base_url, gunicorn):
    proxies = []

    def make(refusals):
        proxies.append(Flaky(gunicorn.port, refusals))
        return proxies[-1]

    yield make
    for proxy in proxies:
        proxy.close()


def test_a_503_is_retried_after_its_retry_after_with_the_identical_bytes(flaky, token):
    proxy, notices = flaky(refusals=1), []
    with Client(proxy.url, token("acme", ["engine"]), retry=Retry(on_retry=notices.append)) as client:
        run = client.register("behind-proxy", scope="acme", session_id="s-1")
    assert [(n.attempt, n.cause, n.delay) for n in notices] == [(1, "503", 1.0)]
    assert len(proxy.bodies) == 2 and proxy.bodies[0] == proxy.bodies[1]
    assert Run.objects.get(pk=run.id).session_id == "s-1"


def test_a_503_that_outlasts_the_attempts_is_raised_as_unavailable(flaky, token):
    proxy = flaky(refusals=10)
    with Client(proxy.url, token("acme", ["engine"]), retry=Retry(attempts=2)) as client:
        with pytest.raises(Unavailable) as down:
            client.list_runs()
    assert (down.value.status, down.value.retry_after, len(proxy.bodies)) == (503, 1.0, 2)


def test_a_retry_after_longer_than_the_client_waits_is_raised_at_once(flaky, token):
    proxy = flaky(refusals=10)
    with Client(proxy.url, token("acme", ["engine"]), retry=Retry(max_retry_after=0.5)) as client:
        with pytest.raises(Unavailable):
            client.list_runs()
    assert len(proxy.bodies) == 1


def test_a_refused_connection_is_retried_then_connection_lost_without_having_reached_anyone(transactional_db):
    notices = []
    retry = Retry(attempts=3, backoff=0.01, on_retry=notices.append)
    with Client(f"http://127.0.0.1:{free_port()}", "sus_x", retry=retry) as client:
        with pytest.raises(ConnectionLost) as lost:
            client.register("nowhere", scope="acme")
    assert (lost.value.maybe_applied, lost.value.attempts) == (False, 3)
    assert [n.cause for n in notices] == ["ConnectError", "ConnectError"]
