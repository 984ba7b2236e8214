"""The normal deployment (docs/deploy.md, "Topology"): two web nodes and two Celery workers, through PgBouncer, on one
PostgreSQL.

Real parts: PgBouncer in transaction mode (4 server connections, round robin; tests/pgbouncer.py)
in front of this test's database; two gunicorn nodes (each its own master, workers and pools, as
two hosts would run it) and two Celery workers with their beat (every queue, `-Q sweep,celery,fanout,delivery`), all
through PgBouncer; Redis as the broker; two webhook receivers.

Resumers and approvers race on the same pauses, half of them on each node: every pause has
exactly one winner. A webhook backlog made while no worker runs (every transition's messages to
two endpoints) is then drained by both workers: every message reaches its receiver once
(counted by `webhook-id`), and each worker delivered some of them (their JSON log lines).
"""

import json
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from suspensions.models import MessageStatus, OutboxEvent, WebhookMessage
from tests import pgbouncer
from tests.front_door import Server, start_gunicorn
from tests.ops.test_pgbouncer import Traffic, assert_one_winner, bouncer, decide, pause, race, resume  # noqa: F401
from tests.processes import wait_for
from tests.push.conftest import make_endpoint, receiver, worker  # noqa: F401 - the fixtures
from tests.races.test_approvals_race import assert_one_decision

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

NODES, THREADS = 2, 4
PAUSES, RACERS = 6, 6
APPROVAL_PAUSES, APPROVERS = 6, 6
BACKLOG_RUNS = 60


@pytest.fixture
def nodes(bouncer: pgbouncer.PgBouncer, tmp_path: Path) -> Iterator[list[Server]]:  # noqa: F811
    """Two gunicorn nodes, each with one worker of THREADS threads, through PgBouncer."""
    started = []
    try:
        for n in range(NODES):
            directory = tmp_path / f"node-{n}"
            directory.mkdir()
            started.append(start_gunicorn(directory, bouncer.url(), workers=1, threads=THREADS))
        yield started
    finally:
        for server in started:
            server.stop()


def across(traffics: list[Traffic], token: Callable[..., str], roles: list[str], name: str, count: int) -> list:
    """`count` clients, each with a token of its own, alternating between the nodes."""
    return [traffics[n % NODES].client(token("acme", roles, f"{name}-{n}")) for n in range(count)]


def backlog(traffics: list[Traffic], token: Callable[..., str]) -> None:
    """BACKLOG_RUNS runs registered and completed, on both nodes at once: each announces run.finished."""
    engines = across(traffics, token, ["engine"], "backlog", NODES)

    def on(node: int) -> None:
        for _ in range(BACKLOG_RUNS // NODES):
            run = engines[node].post("/runs", {"agent_id": "topology"}, 201)
            engines[node].post(f"/runs/{run['id']}/complete", {"revision": run["revision"]}, 200)

    threads = [threading.Thread(target=on, args=(n,)) for n in range(NODES)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def delivered_by(log: Path) -> set[str]:
    """The message ids a worker's JSON log says it delivered."""
    ids = set()
    for line in log.read_text().splitlines():
        if '"outcome": "delivered"' in line and "webhook attempt" in line:
            ids.add(json.loads(line)["message_id"])
    return ids


def test_two_nodes_and_two_workers_through_pgbouncer_give_one_winner_per_pause_and_every_message_once(
    bouncer,  # noqa: F811
    nodes,
    worker,  # noqa: F811
    receiver,  # noqa: F811
    token,
    tmp_path,
):
    # 50 ms an answer: the backlog takes the first worker to start seconds, and the second one joins in.
    receivers = [receiver(delay=0.05), receiver(delay=0.05)]
    endpoints = [make_endpoint("acme", url=receivers[0].url), make_endpoint("acme", url=receivers[1].url)]
    traffics = [Traffic(node.port) for node in nodes]
    try:
        engine = traffics[0].client(token("acme", ["engine"], "engine"))
        pauses = [pause(engine) for _ in range(PAUSES)]
        for s, row in zip(pauses, race(across(traffics, token, ["engine"], "racer", RACERS), pauses, resume)):
            assert_one_winner(s, row)
        approvals = [pause(engine, "approval") for _ in range(APPROVAL_PAUSES)]
        for s, row in zip(
            approvals, race(across(traffics, token, ["approver"], "approver", APPROVERS), approvals, decide)
        ):
            assert_one_decision(s, row)
        backlog(traffics, token)
    finally:
        for traffic in traffics:
            traffic.close()
    assert [a for t in traffics for a in t.failures()] == []

    # The backlog: every announced event, to both endpoints, made while no worker ran.
    expected = OutboxEvent.objects.count() * len(endpoints)
    through_pgbouncer = {"DATABASE_URL": bouncer.url()}
    worker(**through_pgbouncer), worker(**through_pgbouncer)
    done = WebhookMessage.objects.filter(status=MessageStatus.DELIVERED)
    wait_for(lambda: done.count() == expected, f"{expected} deliveries", seconds=120)

    for r, endpoint in zip(receivers, endpoints):
        ids = Counter(r.ids())
        assert set(ids) == {
            str(i) for i in WebhookMessage.objects.filter(endpoint=endpoint).values_list("id", flat=True)
        }
        assert set(ids.values()) == {1}, "a message reached its receiver twice"
    by_worker = [delivered_by(tmp_path / f"worker-{n}.log") for n in range(2)]
    assert all(by_worker), [len(w) for w in by_worker]  # both workers drained part of the backlog
    assert by_worker[0] | by_worker[1] == {str(m) for m in done.values_list("id", flat=True)}
    assert bouncer.connections("SERVERS") <= bouncer.pool_size
