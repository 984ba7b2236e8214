"""The sweep and readiness while push is stuck (issue 50, item 11; docs/deploy.md, "The sweep's worker").

The issue's topology soak saw one slow delivery stall the expiry sweep for nine minutes (the sweep
shared the push worker's processes) and, through /readyz, take every web node out of the balancer.
Its done-when: with the soak's faults, and autovacuum off, every sweep stays on time and /readyz
answers 200 on both nodes.

Real parts: two gunicorn nodes on this test's database, a push worker (`-Q celery,fanout,delivery`,
one process) and the sweep's own worker (`-Q sweep`, with the beat: a sweep every SWEEP_INTERVAL
seconds), Redis as the broker, and a webhook receiver that holds every delivery open until the test
lets it go (it trickles its answer's header, so the sender never times out: the push worker's one
process is busy for as long as the test wants). Autovacuum is off on every table of the service and
nothing runs ANALYZE. Faults from the soak: the push worker SIGKILLed mid-delivery (a new one sends
the message again and is held in turn), and one node stopped (SIGTERM) and started again.

While every delivery is held, each pause whose deadline passes is expired by the sweep, /readyz
answers 200 on both nodes and `manage.py sweep_health` passes. Once the receiver lets go, every
webhook message is delivered, each answered once by `webhook-id` (the killed worker's send reached
the receiver but never got its answer: at least once, receivers dedupe on `webhook-id`).
"""

import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from suspensions.models import MessageStatus, OutboxEvent, Run, RunState, SweepHeartbeat, WebhookMessage
from tests.front_door import Server, request, start_gunicorn
from tests.helpers import call, continuation
from tests.ops.test_pgbouncer import Traffic, pause
from tests.processes import child_env, database_url, wait_for
from tests.push.conftest import make_endpoint, receiver, worker  # noqa: F401 - the fixtures
from tests.push.test_workers import sender_of

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# Every process sees the same interval, as one deployment's configuration: the sweep's beat, the nodes'
# /readyz (which once judged the heartbeat against it) and `manage.py sweep_health`.
SWEEP_INTERVAL = "2"
PUSH_QUEUES = "celery,fanout,delivery"
SHORT_TTL = 2
PAUSES_WHILE_HELD = 4
READYZ_SAMPLES = 5
# Longer than a sweep takes to come round many times over; shorter than the receiver holds a delivery
# (Receiver.hold_seconds), so a sweep that waits behind the held delivery fails the test.
EXPIRY_WAIT_SECONDS = 60


@pytest.fixture
def autovacuum_off(transactional_db: None) -> Iterator[list[str]]:
    """Autovacuum off on every table of the service and its TOAST table, as the issue's repeat asks; reset after."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace")
        tables = sorted(name for (name,) in cursor.fetchall())
        for table in tables:
            cursor.execute(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false, toast.autovacuum_enabled = false)')
    yield tables
    with connection.cursor() as cursor:
        for table in tables:
            cursor.execute(f'ALTER TABLE "{table}" RESET (autovacuum_enabled, toast.autovacuum_enabled)')


def autovacuum_enabled_somewhere(tables: list[str]) -> list[str]:
    """The tables among `tables` whose options do not turn autovacuum off."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relname = ANY(%s) AND relnamespace = 'public'::regnamespace"
            " AND NOT coalesce('autovacuum_enabled=false' = ANY(reloptions), false)",
            [tables],
        )
        return [name for (name,) in cursor.fetchall()]


def start_node(tmp_path: Path, name: str) -> Server:
    directory = tmp_path / name
    directory.mkdir()
    return start_gunicorn(
        directory, database_url(), workers=1, threads=4, extra_env={"SWEEP_INTERVAL_SECONDS": SWEEP_INTERVAL}
    )


@pytest.fixture
def nodes(autovacuum_off: list[str], tmp_path: Path) -> Iterator[list[Server]]:
    """Two gunicorn nodes; the list holds whichever are running (a node the test restarts is replaced in it)."""
    started = [start_node(tmp_path, "node-0"), start_node(tmp_path, "node-1")]
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def readyz(server: Server) -> tuple[int, Any]:
    answer = request(server.port, "GET", "/readyz", timeout=10)
    return answer.status, answer.body.decode()


def sample_readyz(servers: list[Server]) -> list[tuple[int, Any]]:
    """READYZ_SAMPLES answers of /readyz from each of `servers`."""
    return [readyz(server) for _ in range(READYZ_SAMPLES) for server in servers]


def sweep_health() -> tuple[int, str]:
    """`manage.py sweep_health`, as the sweep worker's health check runs it: (exit status, its output)."""
    done = subprocess.run(
        [sys.executable, "manage.py", "sweep_health"],
        cwd=settings.BASE_DIR,
        env=child_env(SWEEP_INTERVAL_SECONDS=SWEEP_INTERVAL),
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout + done.stderr


def short_pauses(engines: list[Any], count: int) -> list[str]:
    """`count` pauses with a SHORT_TTL deadline, made alternately through each engine's node; their run ids."""
    made = []
    for n in range(count):
        engine = engines[n % len(engines)]
        run = engine.post("/runs", {"agent_id": "liveness"}, 201)
        body = {"revision": run["revision"], "reason": "external_tool", "pending": [call()]}
        body |= {"continuation": continuation(), "ttl_seconds": SHORT_TTL}
        made.append(engine.post(f"/runs/{run['id']}/suspend", body, 201))
    return [s["run_id"] for s in made]


def expired(run_ids: list[str]) -> int:
    return Run.objects.filter(id__in=run_ids, state=RunState.EXPIRED).count()


def assert_live_while_held(nodes: list[Server], engines: list[Any], held: Any, push: Any, sweeper: Any) -> list[str]:
    """Short pauses made through both nodes are all expired by the sweep while the push worker is held; ready."""
    runs = short_pauses(engines, PAUSES_WHILE_HELD)
    samples = []

    def all_expired() -> bool:
        samples.extend(sample_readyz(nodes))
        return expired(runs) == len(runs)

    wait_for(all_expired, f"the sweep to expire {len(runs)} pauses", seconds=EXPIRY_WAIT_SECONDS, step=0.5)
    samples.extend(sample_readyz(nodes))
    # Still held: nothing answered since the hold began, and the push worker is the one sending.
    assert not held.released.is_set() and held.answered_ids() == []
    assert sender_of([push, sweeper], held.port) is push
    assert {status for status, _ in samples} == {200}, [s for s in samples if s[0] != 200]
    code, said = sweep_health()
    assert code == 0 and "sweep ok" in said, said
    return runs


def test_while_a_slow_delivery_holds_the_push_worker_the_sweep_expires_every_due_pause_and_both_nodes_stay_ready(
    autovacuum_off,
    nodes,
    worker,  # noqa: F811
    receiver,  # noqa: F811
    token,
    tmp_path,
):
    assert autovacuum_off and autovacuum_enabled_somewhere(autovacuum_off) == []
    sweeper = worker(queues="sweep", SWEEP_INTERVAL_SECONDS=SWEEP_INTERVAL)
    push_env = {"SWEEP_INTERVAL_SECONDS": SWEEP_INTERVAL}
    push = worker(queues=PUSH_QUEUES, beat=False, **push_env)
    wait_for(SweepHeartbeat.objects.exists, "the first sweep")
    held = receiver(trickle=True)
    make_endpoint(url=held.url)
    secret = token("acme", ["engine"], "liveness")
    traffics = [Traffic(node.port) for node in nodes]
    try:
        engines = [traffic.client(secret) for traffic in traffics]
        # An approval pause with no near deadline: its approval.requested is the delivery the receiver holds.
        pause(engines[0], "approval", agent_id="liveness")
        assert held.arrived.wait(60), "the push worker never reached the receiver"
        runs = assert_live_while_held(nodes, engines, held, push, sweeper)

        # Fault: the push worker killed mid-delivery. A new one sends the message again, and is held in turn.
        os.killpg(push.pid, signal.SIGKILL)
        push.wait()
        push = worker(queues=PUSH_QUEUES, beat=False, **push_env)
        wait_for(lambda: len(held.requests) > 1, "the new push worker's send")
        runs += assert_live_while_held(nodes, engines, held, push, sweeper)

        # Fault: one node stopped (SIGTERM) and started again; the other stays ready meanwhile.
        traffics[1].close()
        nodes[1].stop()
        assert {status for status, _ in sample_readyz(nodes[:1])} == {200}
        nodes[1] = start_node(tmp_path, "node-1-again")
        traffics[1] = Traffic(nodes[1].port)
        engines[1] = traffics[1].client(secret)
        runs += assert_live_while_held(nodes, engines, held, push, sweeper)
    finally:
        for traffic in traffics:
            traffic.close()
    assert [a for t in traffics for a in t.failures()] == []

    held.released.set()
    undelivered = WebhookMessage.objects.exclude(status=MessageStatus.DELIVERED)
    undispatched = OutboxEvent.objects.filter(dispatched_at__isnull=True)
    wait_for(
        lambda: not undispatched.exists() and not undelivered.exists(), "every message delivered", seconds=120, step=0.2
    )
    messages = {str(m) for m in WebhookMessage.objects.values_list("id", flat=True)}
    answered = Counter(held.answered_ids())
    assert set(answered) == messages and set(answered.values()) == {1}, answered
    # The killed worker's send reached the receiver and got no answer; the same message went again.
    assert set(held.ids()) == messages and Counter(held.ids())[held.ids()[0]] == 2
    assert expired(runs) == len(runs) == 3 * PAUSES_WHILE_HELD
