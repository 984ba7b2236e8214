"""Slow clients (issue 15): the documented front door keeps answering while 200 clients never finish a header.

The servers are real: gunicorn with gunicorn.conf.py (2 workers x 4 threads, DEBUG off) against
this test's PostgreSQL database (committed data: a transactional test), and nginx in the
foreground with deploy/nginx/suspensions.conf rendered on free ports (tests/front_door.py).
200 connections send `GET /healthz HTTP/1.1` and a Host line, never the blank line that ends the
header, and stay open; meanwhile /healthz and the API must answer through nginx. The failure
condition is an answer that does not come within PATIENCE seconds, never a measured duration.

Straight to gunicorn, the same probes get no answer for as long as the 200 sockets stay open:
each gthread worker hands a readable connection to a thread, which then waits for the rest of
the header without a time limit, so 8 slow clients already hold all 8 threads (see
bench/slow_clients.py for the figures with and without nginx).
"""

import http.client
import json
import re
from collections.abc import Iterator

import pytest
from django.conf import settings
from django.db import connection

from tests.front_door import Answer, Nginx, Server, SlowClients, database_url, request, start_gunicorn, start_nginx
from tests.processes import wait_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SLOW_CLIENTS = 200
# Seconds an answer may take before the front door counts as stalled (a healthy one takes milliseconds).
PATIENCE = 5
# deploy/nginx/suspensions.conf's client_header_timeout.
CLIENT_HEADER_TIMEOUT = 10


@pytest.fixture
def front_door(transactional_db: None, tmp_path) -> Iterator[tuple[Server, Nginx]]:
    """gunicorn, then nginx in front of it; both stopped however the test ends."""
    gunicorn = start_gunicorn(tmp_path, database_url(connection.settings_dict), workers=2, threads=4)
    try:
        nginx = start_nginx(tmp_path, gunicorn.port)
        try:
            yield gunicorn, nginx
        finally:
            nginx.stop()
    finally:
        # Before the database is flushed: the workers hold pooled connections to it.
        gunicorn.stop()


def ask(
    port: int, method: str, path: str, *, headers: dict[str, str] | None = None, body: bytes | None = None
) -> Answer:
    """The answer to one request, or the test fails if it does not come within PATIENCE seconds."""
    try:
        return request(port, method, path, headers=headers, body=body, timeout=PATIENCE)
    except TimeoutError:
        pytest.fail(f"{method} {path} got no answer within {PATIENCE} s: the front door is stalled")


def answers_while_held(port: int, secret: str) -> None:
    """/healthz, then an authenticated write and read of the API, each answered within PATIENCE."""
    healthz = ask(port, "GET", "/healthz")
    assert healthz.status == 200, healthz.body
    assert json.loads(healthz.body) == {"status": "ok"}

    auth = {"Authorization": f"Bearer {secret}"}
    body = json.dumps({"agent_id": "slow-clients"}).encode()
    created = ask(port, "POST", "/api/v1/runs", headers={**auth, "Content-Type": "application/json"}, body=body)
    assert created.status == 201, created.body
    listed = ask(port, "GET", "/api/v1/runs", headers=auth)
    assert listed.status == 200, listed.body
    assert json.loads(created.body)["id"] in [run["id"] for run in json.loads(listed.body)["results"]]


def test_two_hundred_clients_that_never_finish_their_header_stall_neither_healthz_nor_the_api_behind_nginx(
    front_door, token
):
    _, nginx = front_door
    secret = token("acme", ["engine"], "slow-clients")
    with SlowClients(nginx.port, SLOW_CLIENTS) as slow:
        # The probes must queue behind the slow clients, not before: wait until nginx has accepted them all.
        wait_for(lambda: nginx.accepted() >= SLOW_CLIENTS, "nginx to accept the slow clients")
        assert slow.still_open() == SLOW_CLIENTS

        answers_while_held(nginx.port, secret)

        # The probes ran while every slow client was still connected, waiting on its header.
        assert slow.still_open() == SLOW_CLIENTS
        # And nginx lets them go itself once client_header_timeout has passed.
        closed = slow.closed_by_server(timeout=CLIENT_HEADER_TIMEOUT + 2 * PATIENCE)
        assert len(closed) == SLOW_CLIENTS, f"{SLOW_CLIENTS - len(closed)} slow clients still held"


def test_nginx_passes_a_usable_request_id_through_and_sets_its_own_for_a_missing_or_unusable_one(front_door):
    _, nginx = front_door

    mine = ask(nginx.port, "GET", "/healthz", headers={"X-Request-ID": "probe-42"})
    assert mine.status == 200
    assert mine.headers["X-Request-ID"] == "probe-42"
    assert nginx.access_line("probe-42", PATIENCE) is not None

    # nginx's $request_id reached the application, which kept and answered it: the access line has it.
    for sent in ({}, {"X-Request-ID": "not a usable id"}):
        answer = ask(nginx.port, "GET", "/healthz", headers=sent)
        assert answer.status == 200
        given = answer.headers["X-Request-ID"]
        assert re.fullmatch(r"[0-9a-f]{32}", given), given
        assert nginx.access_line(given, PATIENCE) is not None, (sent, given, nginx.access_log.read_text())


def test_a_body_just_over_the_service_bound_gets_the_service_s_own_413_through_nginx(front_door, token):
    _, nginx = front_door
    auth = {"Authorization": f"Bearer {token('acme', ['engine'], 'too-large')}", "Content-Type": "application/json"}

    over = ask(nginx.port, "POST", "/api/v1/runs", headers=auth, body=b" " * (settings.MAX_REQUEST_BYTES + 1))
    assert over.status == 413, over.body[:500]
    assert over.headers["Content-Type"] == "application/problem+json"
    assert json.loads(over.body)["code"] == "request_too_large"

    # Past client_max_body_size (9 MiB) nginx answers itself, before a byte reaches gunicorn.
    huge = ask(nginx.port, "POST", "/api/v1/runs", headers=auth, body=b" " * (9 * 1024 * 1024 + 1))
    assert huge.status == 413
    assert "problem" not in huge.headers.get("Content-Type", "")


def test_gunicorn_reads_a_body_just_over_the_bound_before_its_413_so_the_connection_lives_on(front_door, token):
    """Answered unread, the body would make gunicorn reset the connection under nginx (a 502 instead of the 413)."""
    server, _ = front_door
    auth = {"Authorization": f"Bearer {token('acme', ['engine'], 'drained')}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/api/v1/runs", body=b" " * (settings.MAX_REQUEST_BYTES + 1), headers=auth)
        over = conn.getresponse()
        assert over.status == 413 and json.loads(over.read())["code"] == "request_too_large"
        # The same connection serves the next request: the body was read to its end, not left in the socket.
        conn.request("GET", "/api/v1/runs", headers=auth)
        following = conn.getresponse()
        assert following.status == 200, following.read()[:300]
    finally:
        conn.close()
