"""Fixtures of the push tests: real receivers on 127.0.0.1 and real Celery workers on Redis."""

import pytest

from suspensions import services
from suspensions.clock import db_now
from suspensions.models import WebhookEndpoint
from suspensions.services.webhooks import new_secret
from tests.factories import principal
from tests.helpers import call, continuation
from tests.processes import EVERY_QUEUE, Processes, celery_worker, child_env, wait_for

from .receivers import Receiver, free_port


def make_endpoint(scope="acme", url="http://127.0.0.1:1/hooks", **fields):
    """An active endpoint row, as the management service writes it; its secret is `endpoint.secret`."""
    endpoint = WebhookEndpoint(url=url, secret=new_secret(), created_at=db_now(), **fields)
    endpoint.stamp_scope(scope)
    endpoint.save(force_insert=True)
    return endpoint


def paused(scope="acme", reason="approval", ttl=3600, **policy):
    """A pause stored through the services, as an engine would (an approval one announces approval.requested)."""
    engine = principal("token:engine", scope)
    run = services.register_run(principal=engine, agent_id="agent-1", scope=scope)
    return services.suspend_run(
        principal=engine,
        run_id=run.id,
        revision=1,
        reason=reason,
        pending=[call()],
        continuation=continuation(),
        ttl_seconds=ttl,
        approval=policy or None,
    )


@pytest.fixture
def receiver():
    """receiver(**options) starts a Receiver on a free port; every one is stopped at teardown."""
    started = []

    def start(port=None, **options):
        r = Receiver(port=port or free_port(), **options).start()
        started.append(r)
        return r

    yield start
    for r in started:
        r.stop()


@pytest.fixture
def worker(transactional_db, tmp_path):
    """worker(**env) runs `celery worker --beat` on the test database with short webhook delays, once ready.

    `env` adds to its environment, or overrides those delays; `queues` (every queue unless given) are the
    queues it consumes, as `-Q` names them; `beat=False` starts it without the beat.

    Every worker is stopped at teardown.
    """
    procs = Processes()

    def start(queues=EVERY_QUEUE, beat=True, **extra_env):
        short = {"WEBHOOK_RETRY_SCHEDULE": "0.2,0.2", "WEBHOOK_SWEEP_SECONDS": "1", "WEBHOOK_LEASE_SECONDS": "2"}
        env = child_env(WEBHOOK_ALLOW_PRIVATE="1", **{**short, **extra_env})
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        number = len(procs.started)
        path = tmp_path / f"worker-{number}.log"
        proc = procs.start(celery_worker(tmp_path, number, "push-test", queues, beat=beat), env=env, log_path=path)
        # Ready once it consumes: what is enqueued before its --purge would be purged (and left to the beat).
        wait_for(lambda: " ready." in path.read_text(), f"worker {number} to be ready (log: {path})")
        return proc

    yield start
    procs.stop_all()
