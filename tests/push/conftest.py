"""Fixtures of the push tests: real receivers on 127.0.0.1 and real Celery workers on Redis."""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from suspensions.models import WebhookEndpoint
from suspensions.services.claims import db_now
from suspensions.services.webhooks import new_secret

from .receivers import Receiver, free_port


def make_endpoint(scope="acme", url="http://127.0.0.1:1/hooks", **fields):
    """An active endpoint row, as the management service writes it; its secret is `endpoint.secret`."""
    endpoint = WebhookEndpoint(url=url, secret=new_secret(), created_at=db_now(), **fields)
    endpoint.stamp_scope(scope)
    endpoint.save(force_insert=True)
    return endpoint


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


def database_url():
    db = connection.settings_dict
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def worker(transactional_db, tmp_path):
    """worker(**env) runs `celery worker --beat` on the test database with short webhook delays, once ready.

    Every worker is stopped at teardown.
    """
    started = []

    def start(**extra_env):
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
            "WEBHOOK_ALLOW_PRIVATE": "1",
            "WEBHOOK_RETRY_SCHEDULE": "0.2,0.2",
            "WEBHOOK_SWEEP_SECONDS": "1",
            "WEBHOOK_LEASE_SECONDS": "2",
            **extra_env,
        }
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        name = f"push-test-{uuid.uuid4().hex[:8]}@%h"
        command = [str(Path(sys.executable).parent / "celery"), "-A", "suspensions_project", "worker", "--beat"]
        command += ["--concurrency", "1", "--loglevel", "info", "--purge", "-n", name]
        command += ["--schedule", str(tmp_path / f"beat-{len(started)}")]
        path = tmp_path / f"worker-{len(started)}.log"
        log = open(path, "w")  # noqa: SIM115 - closed at teardown
        proc = subprocess.Popen(
            command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        started.append((proc, log))
        # Ready once it consumes: what is enqueued before its --purge would be purged (and left to the beat).
        wait_for(lambda: " ready." in path.read_text(), f"worker {name} to be ready (log: {path})")
        return proc

    yield start
    for proc, log in started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        log.close()


def wait_for(condition, what, seconds=60):
    """Poll until `condition()` holds; a bounded wait, failing the test past it."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
