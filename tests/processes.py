"""Real processes for the tests (Celery workers, gunicorn) on the test database, stopped at teardown."""

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import connection

from tests.front_door import database_url as url_of


def database_url() -> str:
    """DATABASE_URL of the database this test runs on (pytest-django's test_<name>)."""
    return url_of(connection.settings_dict)


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a process that must see the test's database and broker."""
    return {**os.environ, "DATABASE_URL": database_url(), "CELERY_BROKER_URL": settings.CELERY_BROKER_URL, **extra}


# Every queue (settings.CELERY_TASK_QUEUES): the sweep's, then the ones docs/deploy.md gives push's workers.
EVERY_QUEUE = "sweep,celery,fanout,delivery"


def celery_worker(
    tmp_path: Path, number: int, prefix: str, queues: str = EVERY_QUEUE, *, beat: bool = True
) -> list[str]:
    """`celery worker --beat` on `queues`, with its own name and beat schedule file, purging what is queued.

    `beat=False`: a worker without the beat, as production runs all but one (docs/deploy.md).
    """
    name = f"{prefix}-{uuid.uuid4().hex[:8]}@%h"
    command = [str(Path(sys.executable).parent / "celery"), "-A", "suspensions_project", "worker"]
    command += ["--beat"] if beat else []
    command += ["-Q", queues, "--concurrency", "1", "--loglevel", "info", "--purge", "-n", name]
    return command + ["--schedule", str(tmp_path / f"beat-{number}")]


class Processes:
    """Started processes, each in its own session (so its children stop with it) and logging to a file."""

    def __init__(self) -> None:
        self.started: list[tuple[subprocess.Popen[bytes], IO[Any]]] = []

    def start(self, command: list[str], *, env: dict[str, str], log_path: Path) -> subprocess.Popen[bytes]:
        log = open(log_path, "w")  # noqa: SIM115 - closed in stop_all
        proc = subprocess.Popen(
            command, cwd=settings.BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.started.append((proc, log))
        return proc

    def stop_all(self) -> None:
        """SIGTERM each process group, SIGKILL what is left after 20 s."""
        for proc, log in self.started:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()


def wait_for(condition: Callable[[], object], what: str, seconds: float = 60, step: float = 0.02) -> None:
    """Poll until `condition()` holds; a bounded wait, failing the test past it."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(step)
