"""The delivery side of bench/push.py: a local webhook receiver, a real Celery worker, the endpoint joining them.

Moved out of bench/push.py (which re-exports `Receiver` and `broker_url`:
bench/soak.py reaches them as `push.Receiver` and `push.broker_url`), so the
phases there read as what they measure and this as what they run on.
"""

import json
import os
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import common

SCOPE = "bench-push"


def broker_url() -> str:
    explicit = os.environ.get("BENCH_BROKER_URL")
    if explicit:
        return explicit
    inherited = os.environ.get("CELERY_BROKER_URL", "")
    return inherited if inherited.startswith(("redis", "amqp")) else "redis://127.0.0.1:6379/14"


# -- the receiver and the worker -----------------------------------------------------------


class Receiver:
    """An http.server thread answering 200 to every POST; records when each message first arrived."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.arrived: dict[str, tuple[float, Any]] = {}  # webhook-id -> (time, body)
        self.posts = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                at = time.time()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
                receiver.record(self.headers.get("webhook-id", ""), at, body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def record(self, message_id: str, at: float, body: bytes) -> None:
        try:
            data = json.loads(body).get("data", {})
        except ValueError:
            data = {}
        with self.lock:
            self.posts += 1
            self.arrived.setdefault(message_id, (at, data))

    def clear(self) -> None:
        with self.lock:
            self.arrived.clear()
            self.posts = 0

    def count(self) -> int:
        with self.lock:
            return len(self.arrived)

    def times(self) -> list[float]:
        with self.lock:
            return sorted(at for at, _ in self.arrived.values())

    def by_run(self) -> dict[str, float]:
        with self.lock:
            return {str(d.get("run_id")): at for at, d in self.arrived.values() if isinstance(d, dict)}

    def wait_for(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count() >= n:
                return True
            time.sleep(0.05)
        return False

    def close(self) -> None:
        self.server.shutdown()


class Worker:
    """`celery worker --concurrency N` (prefork) on the bench database and broker, private-addresses allowed."""

    def __init__(self, processes: int) -> None:
        self.name = f"bench-push-{processes}-{os.getpid()}@localhost"
        env = {
            **os.environ,
            "DATABASE_URL": common.bench_database_url(),
            "CELERY_BROKER_URL": broker_url(),
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY", "bench-only-secret"),
            "AUDIT_SIGNING_KEY": os.environ.get("AUDIT_SIGNING_KEY", common.BENCH_AUDIT_KEY),
            "WEBHOOK_ALLOW_PRIVATE": "1",
            "LOG_LEVEL": "WARNING",
            "DB_POOL_MIN": "1",
        }
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.started = time.time()
        self.process = subprocess.Popen(
            [
                str(common.ROOT / ".venv" / "bin" / "celery"),
                "-A",
                "suspensions_project",
                "--quiet",
                "worker",
                "--pool",
                "prefork",
                "-Q",
                "celery,fanout,delivery",
                "--concurrency",
                str(processes),
                "--loglevel",
                "warning",
                "--without-gossip",
                "--without-mingle",
                "-n",
                self.name,
            ],
            cwd=common.ROOT,
            env=env,
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def purge() -> None:
    from suspensions_project.celery import app

    app.control.purge()


def endpoint(receiver: Receiver, event_types: list[str] | None = None) -> None:
    from suspensions.services import webhooks

    who = common.principal(SCOPE, ["operator"])
    webhooks.create_endpoint(
        principal=who,
        scope=SCOPE,
        url=f"http://127.0.0.1:{receiver.port}/hooks",
        event_types=["run.finished"] if event_types is None else event_types,
        description="bench receiver",
    )


def tasks_run(worker: "Worker", settle: float = 2.0) -> dict[str, int]:
    """The worker's count of the tasks it ran, by name (its remote-control `stats`), once it stops changing.

    The last delivery is not the last task: tasks enqueued behind it (no-ops
    for messages already delivered) still run, and count.
    """
    from suspensions_project.celery import app

    last: dict[str, int] | None = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        stats = app.control.inspect(destination=[worker.name], timeout=5.0).stats() or {}
        total = dict(stats.get(worker.name, {}).get("total", {}))
        if total == last:
            return total
        last = total
        time.sleep(settle)
    return last or {}
