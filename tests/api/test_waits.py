"""Waiting without webhooks (docs/api.md, "Waiting without webhooks"): the long poll on a run and the event
stream, served by the real ASGI process (uvicorn) on the test's database, woken by PostgreSQL NOTIFY.

No timing is asserted: a wait that was not woken would answer at its 60 s timeout with the run unchanged, so
each test asserts what the answer holds.
"""

import http.client
import json
import socket
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, transaction

from suspensions import services
from suspensions.models import ApiToken, Event, Run
from suspensions.principals import Principal
from suspensions.tokens import create_token
from tests.helpers import approval_pause
from tests.processes import Processes, child_env, wait_for


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def asgi(tmp_path):
    """uvicorn serving suspensions_project.asgi on the test database."""
    port = free_port()
    procs = Processes()
    command = [str(Path(sys.executable).parent / "uvicorn"), "suspensions_project.asgi:application"]
    command += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    procs.start(command, env=child_env(DJANGO_DEBUG="0"), log_path=tmp_path / "uvicorn.log")

    def up() -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            return conn.getresponse().status == 200
        except OSError:
            return False

    wait_for(up, "uvicorn to serve")
    yield port
    procs.stop_all()


def secret_for(scope: str, *roles: str) -> str:
    return create_token(scope=scope, roles=roles, name=f"{scope}:{'+'.join(roles)}")[1]


def get(port: int, path: str, secret: str, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=90)
    conn.request("GET", path, headers={"Authorization": f"Bearer {secret}", **(headers or {})})
    response = conn.getresponse()
    body = json.loads(response.read())
    conn.close()
    return response.status, body


def revision_of(record) -> int:
    """The run's revision while it waits on the approval `record`."""
    return Run.objects.get(pk=record.run_id).revision


def approve(record, scope: str = "acme/support") -> None:
    approver = Principal(name="token:alice", grants=((scope, frozenset({"approver"})),))
    version = services.Version(
        run_id=record.run_id, suspension_id=record.suspension_id, run_revision=revision_of(record)
    )
    services.decide(principal=approver, suspension_id=record.suspension_id, version=version, decision="approve")


@pytest.mark.django_db(transaction=True)
def test_a_wait_answers_with_the_run_once_a_decision_moved_it(asgi):
    record = approval_pause()
    run_id, paused_at = record.run_id, revision_of(record)
    secret = secret_for("acme", "engine")
    answer: dict = {}

    def waiter() -> None:
        answer["status"], answer["body"] = get(
            asgi, f"/api/v1/runs/{run_id}/wait?after_revision={paused_at}&timeout=60", secret
        )

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(1)  # let it wait (were it not woken, it would answer at 60 s with the run unchanged)
    conn = http.client.HTTPConnection("127.0.0.1", asgi, timeout=30)
    conn.request("GET", "/metrics")
    scrape = conn.getresponse().read().decode()
    assert 'suspensions_waiters{kind="wait"} 1.0' in scrape  # the process counts the waiter it holds
    approve(record)
    thread.join()
    assert answer["status"] == 200
    assert answer["body"]["id"] == str(run_id)
    assert (answer["body"]["state"], answer["body"]["revision"]) == ("running", paused_at + 1)


@pytest.mark.django_db(transaction=True)
def test_a_wait_with_nothing_happening_answers_the_run_unchanged_at_its_timeout(asgi):
    record = approval_pause()
    status, body = get(asgi, f"/api/v1/runs/{record.run_id}/wait?timeout=1", secret_for("acme", "engine"))
    assert status == 200
    assert (body["state"], body["revision"]) == ("paused", revision_of(record))


@pytest.mark.django_db(transaction=True)
def test_a_run_out_of_scope_is_the_same_404_as_no_run_and_bad_parameters_are_400s(asgi):
    record = approval_pause(scope="acme/support")
    outsider = secret_for("globex", "engine")
    hidden = get(asgi, f"/api/v1/runs/{record.run_id}/wait?timeout=1", outsider)
    missing = get(asgi, "/api/v1/runs/01900000-0000-7000-8000-000000000000/wait?timeout=1", outsider)
    assert hidden == missing
    assert hidden[0] == 404 and hidden[1]["code"] == "not_found"
    engine = secret_for("acme", "engine")
    for query, name in (("timeout=61", "timeout"), ("after_revision=-1", "after_revision"), ("since=1", "since")):
        status, body = get(asgi, f"/api/v1/runs/{record.run_id}/wait?{query}", engine)
        assert (status, body["code"]) == (400, "invalid_request"), query
        assert name in body["errors"], body
    status, body = get(asgi, f"/api/v1/runs/{record.run_id}/wait?timeout=1", "not-a-token")
    assert (status, body["code"]) == (401, "unauthenticated")


class Stream:
    """An SSE connection read message by message."""

    def __init__(self, port: int, secret: str, query: str = "", last_event_id: int | None = None) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=90)
        headers = {"Authorization": f"Bearer {secret}", "Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        self.conn.request("GET", f"/api/v1/events/stream{query}", headers=headers)
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        assert self.response.getheader("Content-Type").startswith("text/event-stream")

    def message(self) -> dict:
        """The next message with data (comments and the retry line skipped); an AssertionError if none comes in
        a minute (the keep-alive comments would otherwise keep the socket's timeout from firing)."""
        fields: dict = {}
        deadline = time.monotonic() + 60
        while True:
            assert time.monotonic() < deadline, "no message within a minute"
            line = self.response.fp.readline().decode().rstrip("\n")
            if line == "":
                if "data" in fields:
                    return {"id": int(fields["id"]), "event": fields["event"], "data": json.loads(fields["data"])}
                fields = {}
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(": ")
            fields[name] = value

    def close(self) -> None:
        self.conn.close()


def visible_ids(after: int, scope: str) -> list[int]:
    return list(Event.objects.filter(id__gt=after, scope__startswith=scope).order_by("id").values_list("id", flat=True))


@pytest.mark.django_db(transaction=True)
def test_the_stream_sends_what_the_caller_may_read_and_resumes_from_last_event_id_with_nothing_lost_or_repeated(
    asgi,
):
    secret = secret_for("acme", "auditor")
    stream = Stream(asgi, secret)
    first = approval_pause(scope="acme/support")
    approval_pause(scope="globex/sales")  # not the caller's: never streamed
    seen = [stream.message() for _ in range(2)]
    assert [m["event"] for m in seen] == ["registered", "suspended"]
    assert {m["data"]["run_id"] for m in seen} == {str(first.run_id)}
    assert all(m["data"]["id"] == m["id"] and m["data"]["hash"] for m in seen)
    stream.close()
    # While nobody listens: a decision and another pause. The stream resumed after the last id seen gets exactly
    # those events, in order, and nothing from before.
    approve(first)
    second = approval_pause(scope="acme/support")
    missed = visible_ids(seen[-1]["id"], "acme")
    assert len(missed) >= 3
    resumed = Stream(asgi, secret, last_event_id=seen[-1]["id"])
    again = [resumed.message() for _ in missed]
    assert [m["id"] for m in again] == missed
    assert str(second.run_id) in {m["data"]["run_id"] for m in again}
    resumed.close()


@pytest.mark.django_db(transaction=True)
def test_an_event_whose_id_was_drawn_first_but_committed_last_is_not_skipped(asgi):
    """Two transactions: the one that drew the lower event id commits after the other. The stream holds the
    later-drawn event back until the earlier one commits, then sends both in commit order: none is skipped."""
    secret = secret_for("acme", "auditor")
    stream = Stream(asgi, secret)
    engine = Principal(name="token:engine", grants=(("acme", frozenset({"engine"})),))
    drawn, release = threading.Event(), threading.Event()
    slow: dict = {}

    def slow_register() -> None:
        with transaction.atomic():
            slow["run"] = services.register_run(principal=engine, agent_id="slow", scope="acme/support")
            drawn.set()
            release.wait(30)
        connection.close()

    thread = threading.Thread(target=slow_register)
    thread.start()
    drawn.wait(30)
    fast = services.register_run(principal=engine, agent_id="fast", scope="acme/support")
    # The fast one's event is committed, the slow one's not yet: the stream must not send the fast one first. The
    # slow one commits a second later.
    threading.Timer(1.0, release.set).start()
    first = stream.message()
    thread.join()
    second = stream.message()
    slow_event = Event.objects.get(run_id=slow["run"].id, kind="registered").id
    fast_event = Event.objects.get(run_id=fast.id, kind="registered").id
    assert slow_event < fast_event  # the slow one drew its id first
    assert [first["id"], second["id"]] == [slow_event, fast_event]
    stream.close()


@pytest.mark.django_db(transaction=True)  # the views read on a thread of their own, so the rows must be committed
def test_refusals_through_the_django_test_client(client):
    """The same views answer in the Django process too (runserver, the test client): refusals are problem+json."""
    secret = secret_for("acme", "engine")
    auth = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    response = client.get("/api/v1/events/stream?scope=globex", **auth)
    assert (response.status_code, response.json()["code"]) == (403, "forbidden")
    response = client.get("/api/v1/events/stream?scope=not%20a%20scope", **auth)
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request")
    response = client.post("/api/v1/events/stream", **auth)
    assert response.status_code == 405 and response["Content-Type"] == "application/problem+json"
    assert not Run.objects.exists() and ApiToken.objects.count() == 1
