"""Restarting a web node under load drops nothing (docs/deploy.md, "Restarting without dropping requests").

Real parts: gunicorn nodes started as the README starts them (gunicorn.conf.py), nginx with the
shipped deploy/nginx/suspensions.conf and its two upstreams, this test's PostgreSQL. A node is
stopped with SIGTERM, as `kill <master pid>` or systemd stop would, while clients keep sending.

- At the node: every request it received is answered, and once it stops taking new ones they are
  refused at connect, never accepted and then reset unread (what a client cannot tell from a
  request that ran and lost its answer).
- Through nginx: every request gets the service's answer, the other node taking over. A 502 or
  a broken connection would be allowed only for a request the database shows never ran, and its
  identical retry must then succeed.
- Each node has its own gunicorn control socket under var/run; stopping one leaves the other's.
"""

import http.client
import json
import os
import re
import signal
import socket
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.db import connection, connections

from suspensions.models import Run, Suspension
from tests.front_door import ROOT, Nginx, Server, database_url, request, start_gunicorn, start_nginx
from tests.helpers import call, continuation
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True)]

CLIENTS = 6
TIMEOUT = 30
# Each client's bound on requests, whatever happens.
MOST = 400


def stop_with_sigterm(server: Server) -> int:
    """SIGTERM to the node's master, as an operator's `kill` sends it; its exit status once it is gone."""
    os.kill(server.process.pid, signal.SIGTERM)
    return server.process.wait(timeout=60)


@pytest.fixture
def nodes(transactional_db: None, tmp_path: Path) -> Iterator[list[Server]]:
    """Two gunicorn nodes on this test's database, each 2 workers of 2 threads."""
    started: list[Server] = []
    try:
        for n in range(2):
            directory = tmp_path / f"node-{n}"
            directory.mkdir()
            started.append(start_gunicorn(directory, database_url(connection.settings_dict), workers=2, threads=2))
        yield started
    finally:
        for server in started:
            server.stop()


def register(port: int, secret: str, agent_id: str) -> Any:
    """POST /api/v1/runs on a new connection: its status, or the connection error."""
    auth = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    body = json.dumps({"agent_id": agent_id}).encode()
    try:
        return request(port, "POST", "/api/v1/runs", headers=auth, body=body, timeout=TIMEOUT).status
    except (OSError, http.client.HTTPException) as exc:
        return exc


@pytest.mark.slow
def test_a_node_stopped_under_load_answers_what_it_received_and_refuses_the_rest(nodes, token):
    node = nodes[0]
    secret = token("acme", ["engine"], "restart-direct")
    sent: list[list[tuple[str, Any]]] = [[] for _ in range(CLIENTS)]
    stopped = threading.Event()

    def client(n: int) -> None:
        try:
            refused = 0
            for i in range(MOST):
                agent = f"direct-{n}-{i}"
                outcome = register(node.port, secret, agent)
                sent[n].append((agent, outcome))
                refused = refused + 1 if isinstance(outcome, ConnectionRefusedError) else 0
                if stopped.is_set() and refused >= 3:
                    return
        finally:
            connections.close_all()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda: sum(map(len, sent)) >= 30, "30 requests sent before the stop")
        assert stop_with_sigterm(node) == 0
    finally:
        stopped.set()
        for thread in threads:
            thread.join(timeout=120)

    outcomes = [outcome for mine in sent for _, outcome in mine]
    assert 201 in outcomes and any(isinstance(o, ConnectionRefusedError) for o in outcomes)
    broken = [(agent, outcome) for mine in sent for agent, outcome in mine if outcome != 201]
    broken = [(agent, outcome) for agent, outcome in broken if not isinstance(outcome, ConnectionRefusedError)]
    assert broken == [], "requests the node accepted and dropped unanswered"
    refused = [agent for mine in sent for agent, outcome in mine if isinstance(outcome, ConnectionRefusedError)]
    assert not Run.objects.filter(agent_id__in=refused).exists()
    answered = [agent for mine in sent for agent, outcome in mine if outcome == 201]
    assert Run.objects.filter(agent_id__in=answered).count() == len(answered)


class Flows:
    """Each client's register, suspend and resume through nginx, each request checked as it is answered."""

    def __init__(self, nginx: Nginx, secret: str) -> None:
        self.nginx, self.secret = nginx, secret
        self.statuses: list[int] = []
        self.unanswered: list[tuple[str, str, str]] = []  # (what, how it failed, what the retry got)
        self.done = 0
        self.lock = threading.Lock()

    def send(
        self, http: httpx.Client, what: str, path: str, body: dict[str, Any], never_ran: Callable[[], bool]
    ) -> Any:
        """The answer (201 expected); after a 502 or a broken connection, the database must show the
        request never ran, and its identical retry must succeed."""
        key = {"Idempotency-Key": uuid.uuid4().hex} if path == "/runs" else {}
        try:
            response = http.post(path, json=body, headers=key)
            failure = f"HTTP {response.status_code}" if response.status_code == 502 else None
        except httpx.TransportError as exc:
            response, failure = None, repr(exc)
        if failure is not None:
            ran = not never_ran()
            response = http.post(path, json=body, headers=key)
            with self.lock:
                self.unanswered.append((what, failure, f"ran={ran}, retry {response.status_code}"))
        assert response is not None
        with self.lock:
            self.statuses.append(response.status_code)
        assert response.status_code == 201, (what, response.status_code, response.text[:300])
        return response.json()

    def flow(self, http: httpx.Client, agent: str) -> None:
        run = self.send(
            http, "register", "/runs", {"agent_id": agent}, lambda: not Run.objects.filter(agent_id=agent).exists()
        )
        body = {
            "revision": run["revision"],
            "reason": "external_tool",
            "pending": [call()],
            "continuation": continuation(),
        }
        pause = self.send(
            http,
            "suspend",
            f"/runs/{run['id']}/suspend",
            body,
            lambda: not Suspension.objects.filter(run_id=run["id"]).exists(),
        )
        version = {"run_id": run["id"], "suspension_id": pause["id"], "run_revision": pause["run_revision"]}
        resume = {"version": version, "results": [{"call_id": "c1", "content": "ok"}]}
        self.send(
            http,
            "resume",
            f"/runs/{run['id']}/resume",
            resume,
            lambda: Run.objects.get(id=run["id"]).revision == pause["run_revision"],
        )
        with self.lock:
            self.done += 1

    def client(self, n: int, stopped: threading.Event, after: int) -> None:
        """Flows until `after` of them have run since the stop (MOST at the most)."""
        url = f"http://127.0.0.1:{self.nginx.port}/api/v1"
        headers = {"Authorization": f"Bearer {self.secret}"}
        try:
            with httpx.Client(base_url=url, headers=headers, timeout=TIMEOUT) as http:
                since = 0
                for i in range(MOST // 3):
                    self.flow(http, f"nginx-{n}-{i}")
                    since += stopped.is_set()
                    if since >= after:
                        return
        finally:
            connections.close_all()


@pytest.mark.slow
def test_a_node_stopped_under_load_behind_nginx_loses_no_request(nodes, token, tmp_path):
    nginx = start_nginx(tmp_path, nodes[0].port, second_upstream_port=nodes[1].port)
    try:
        flows = Flows(nginx, token("acme", ["engine"], "restart-nginx"))
        stopped = threading.Event()
        raised: list[BaseException] = []

        def client(n: int) -> None:
            try:
                flows.client(n, stopped, after=5)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the test's thread
                raised.append(exc)

        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for thread in threads:
            thread.start()
        try:
            wait_for(lambda: flows.done >= 10 or raised, "10 flows before the stop")
            assert stop_with_sigterm(nodes[0]) == 0
        finally:
            stopped.set()
            for thread in threads:
                thread.join(timeout=120)
        if raised:
            raise raised[0]
    finally:
        nginx.stop()

    assert all(s == 201 for s in flows.statuses)
    assert [u for u in flows.unanswered if not u[2].startswith("ran=False, retry 201")] == []
    lines = nginx.access_log.read_text().splitlines()
    first, second = (f"127.0.0.1:{node.port}" for node in nodes)
    # The stopped node answered some requests, and refused one the other node then answered.
    assert any(line.split(" upstream=")[1].startswith(f"{first} ") for line in lines)
    assert any(f"upstream={first}, {second} " in line for line in lines)


def control_socket(server: Server) -> Path:
    """The control socket path the node's master logged."""
    found: list[str] = []

    def logged() -> bool:
        found[:] = re.findall(r"Control socket listening at (\S+)", server.log.read_text())
        return bool(found)

    wait_for(logged, "the control socket's log line", seconds=30)
    return Path(found[0])


def answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
        return True


def test_two_nodes_on_one_host_each_have_their_own_control_socket_and_stopping_one_leaves_the_other(
    transactional_db, tmp_path
):
    started = []
    try:
        for n in range(2):
            (tmp_path / f"node-{n}").mkdir()
            url = database_url(connection.settings_dict)
            started.append(start_gunicorn(tmp_path / f"node-{n}", url, workers=1, threads=1))
        first, second = (control_socket(server) for server in started)
        assert first != second
        assert first.parent == second.parent == ROOT / "var" / "run"
        assert answers(first) and answers(second)

        assert stop_with_sigterm(started[0]) == 0
        assert not first.exists()
        assert answers(second)
    finally:
        for server in started:
            server.stop()
