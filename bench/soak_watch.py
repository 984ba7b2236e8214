"""The soak's processes and what is watched while it runs (bench/soak.py).

The Celery workers (push's, and the sweep's own with the beat, as production
runs them: docs/deploy.md, "The sweep's worker"), every successful sweep (the
heartbeat row) and /readyz's answers, read every second, the processes' RSS and CPU from /proc, PostgreSQL
connections, the webhook backlog, the broker's queue and the oldest overdue
pause, sampled every 5 s; afterwards the drain conditions and the lags read
back from the database (a pause's expiry after its deadline, a message's
delivery after its event).
"""

import http.client
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Self

import common

SAMPLE_SECONDS = 5.0
LIVENESS_SECONDS = 1.0
PUSH_QUEUES = "celery,fanout,delivery"


def celery_worker(
    url: str,
    broker: str,
    concurrency: int,
    sweep_interval: int,
    directory: Path,
    *,
    queues: str = PUSH_QUEUES,
    beat: bool = False,
    name: str = "soak",
) -> subprocess.Popen[bytes]:
    """`celery worker` on `queues` (as tests/processes.py starts it) in its own session, its schedule in `directory`.

    The soak starts two, as docs/deploy.md runs them: push's (`-Q celery,fanout,delivery`) and the sweep's own
    (`-Q sweep`, one process) with the beat.
    """
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": broker,
        "SWEEP_INTERVAL_SECONDS": str(sweep_interval),
        "WEBHOOK_ALLOW_PRIVATE": "1",
        "DJANGO_DEBUG": "0",
        "LOG_LEVEL": "WARNING",
        "DB_POOL_MIN": "1",
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    command = [str(common.ROOT / ".venv" / "bin" / "celery"), "-A", "suspensions_project", "--quiet", "worker"]
    command += ["--beat"] if beat else []
    command += [
        "-Q",
        queues,
        "--concurrency",
        str(concurrency),
        "--loglevel",
        "warning",
        "--purge",
        "--without-gossip",
    ]
    command += ["--without-mingle", "-n", f"{name}-{os.getpid()}@%h", "--schedule", str(directory / "beat-schedule")]
    return subprocess.Popen(command, cwd=common.ROOT, env=env, start_new_session=True)


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the worker's process group (it and its pool), SIGKILL it after 30 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


# -- /proc -------------------------------------------------------------------------------------


def children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo += children(current)
    return out


def rss_mib(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return round(total / 1024, 1)


# -- sampling ----------------------------------------------------------------------------------

BACKGROUND = """
    SELECT (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()),
           (SELECT count(*) FROM suspensions_webhookmessage WHERE status = 'pending'),
           (SELECT count(*) FROM suspensions_outboxevent WHERE dispatched_at IS NULL),
           (SELECT coalesce(extract(epoch FROM now() - min(expires_at)), 0) FROM suspensions_suspension
             WHERE expires_at <= now()),
           (SELECT array_agg(pid) FROM pg_stat_activity WHERE datname = current_database())
"""


def machine_cpu_seconds() -> float:
    """CPU seconds the whole machine spent busy since boot (every core, every process)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    return (sum(fields) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


class Sampler:
    """A daemon thread running `run` until the `with` block ends (`stop` is set, then joined)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def run(self) -> None:
        raise NotImplementedError


class Watch(Sampler):
    """A thread sampling every 5 s into `book.samples`; prints a line a minute."""

    def __init__(
        self, book: Any, gunicorn: common.Gunicorn, workers: list[Any], url: str, broker: str, vacuum_seconds: float = 0
    ) -> None:
        self.book, self.gunicorn, self.workers, self.url, self.broker = book, gunicorn, workers, url, broker
        self.vacuum_seconds, self.vacuumed = vacuum_seconds, 0.0
        self.pg_cpu, self.pg_last = 0.0, dict[int, float]()
        super().__init__()

    def run(self) -> None:
        import redis
        import soak_report

        queue = redis.Redis.from_url(self.broker) if self.broker.startswith("redis") else None
        with common.connect(self.url, autocommit=True) as pg:
            printed = 0
            vacuum = self.vacuum_seconds > 0 and common.autovacuum_off(pg)
            while not self.stop.wait(SAMPLE_SECONDS):
                self.sample(pg, queue)
                if vacuum and self.book.now() - self.vacuumed >= self.vacuum_seconds:
                    self.vacuum(pg)
                minute = int(self.book.now() // 60)
                if minute > printed:
                    printed = minute
                    print(soak_report.progress(self.book, minute), flush=True)

    def sample(self, pg: Any, queue: Any) -> None:
        workers = children(self.gunicorn.process.pid)
        celery = [pid for worker in self.workers for pid in tree(worker.pid)]
        connections, pending, undispatched, overdue, backends = pg.execute(BACKGROUND).fetchone()
        self.count_backends(backends or [])
        self.book.samples.append(
            {
                "at": round(self.book.now(), 1),
                "gunicorn_pids": workers,
                "gunicorn_rss_mib": rss_mib(workers),
                "celery_rss_mib": rss_mib(celery),
                "gunicorn_cpu_s": round(common.cpu_seconds(workers), 2),
                "celery_cpu_s": round(common.cpu_seconds(celery), 2),
                "bench_cpu_s": round(time.process_time(), 2),
                "postgres_cpu_s": round(self.pg_cpu, 2),
                "machine_cpu_s": round(machine_cpu_seconds(), 2),
                "pg_connections": connections,
                "webhook_backlog": pending + undispatched,
                "broker_queue": sum(queue.llen(q.name) for q in queues()) if queue is not None else None,
                "oldest_overdue_s": round(float(overdue), 1),
                "load_1min": round(os.getloadavg()[0], 2),
            }
        )

    def vacuum(self, pg: Any) -> None:
        """What autovacuum would do by now on a server that runs it: VACUUM (ANALYZE) of the app's tables.

        Its CPU is a backend's of the bench database, so it counts in PostgreSQL's column, as autovacuum's would.
        """
        self.vacuumed = self.book.now()
        started = time.monotonic()
        common.vacuum_tables(pg)
        self.book.vacuums.append({"at": round(self.vacuumed, 1), "seconds": round(time.monotonic() - started, 2)})

    def count_backends(self, pids: list[int]) -> None:
        """Add the CPU the bench database's backends used since the last sample (a new backend's, all of it)."""
        first = not self.pg_last
        now = {pid: common.cpu_seconds([pid]) for pid in pids}
        self.pg_cpu += sum(cpu - self.pg_last.get(pid, cpu if first else 0.0) for pid, cpu in now.items())
        self.pg_last = now


class Liveness(Sampler):
    """A thread reading, every LIVENESS_SECONDS, the sweep's heartbeat (each new successful sweep) and /readyz.

    `gaps()`: the seconds between successive successful sweeps seen; `readyz`: how many times each status came.
    """

    def __init__(self, url: str, port: int) -> None:
        self.url, self.port = url, port
        self.sweeps: list[float] = []
        self.readyz: dict[str, int] = {}
        super().__init__()

    def run(self) -> None:
        with common.connect(self.url, autocommit=True) as pg:
            while not self.stop.wait(LIVENESS_SECONDS):
                row = pg.execute(
                    "SELECT extract(epoch FROM last_success_at) FROM suspensions_sweepheartbeat"
                ).fetchone()
                if row is not None and (not self.sweeps or float(row[0]) != self.sweeps[-1]):
                    self.sweeps.append(float(row[0]))
                status = self.probe()
                self.readyz[status] = self.readyz.get(status, 0) + 1

    def probe(self) -> str:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request("GET", "/readyz")
            return str(conn.getresponse().status)
        except OSError as exc:
            return exc.__class__.__name__
        finally:
            conn.close()

    def gaps(self) -> list[float]:
        return [round(b - a, 2) for a, b in zip(self.sweeps, self.sweeps[1:], strict=False)]

    def summary(self, sweep_interval: int) -> dict[str, Any]:
        gaps = self.gaps()
        return {
            "sweeps_seen": len(self.sweeps),
            "largest_sweep_gap_s": max(gaps, default=None),
            "sweep_gaps_over_two_intervals": sum(1 for g in gaps if g > 2 * sweep_interval),
            "readyz": self.readyz,
        }


# -- after the load ------------------------------------------------------------------------------


def wait_until(condition: Any, seconds: float) -> float:
    """Poll `condition` until true or `seconds` pass; the seconds waited, or -1 on a timeout."""
    began = time.monotonic()
    while not condition():
        if time.monotonic() - began > seconds:
            return -1.0
        time.sleep(0.5)
    return round(time.monotonic() - began, 1)


def lags(t0_wall: float) -> dict[str, list[Any]]:
    """(seconds into the soak, lag in seconds): each expiry or escalation after its deadline, each delivery after
    its event; and when each announced event was written ("made")."""
    from soak_checks import sql

    # An escalation's event carries the new deadline; its lag runs from the one it moved.
    deadline = "coalesce(data->>'previous_expires_at', data->>'expires_at')::timestamptz"
    sweep = sql(
        f"SELECT extract(epoch FROM {deadline}) - %s, extract(epoch FROM at - {deadline}) "
        "FROM suspensions_event WHERE kind IN ('expired', 'escalated')",
        [t0_wall],
    )
    # From the event's outbox row (written with the transition), so the fan-out's wait is in the lag.
    push = sql(
        "SELECT extract(epoch FROM o.created_at) - %s, extract(epoch FROM m.delivered_at - o.created_at) "
        "FROM suspensions_webhookmessage m JOIN suspensions_outboxevent o ON o.id = m.event_id "
        "WHERE m.delivered_at IS NOT NULL",
        [t0_wall],
    )
    made = sql("SELECT extract(epoch FROM created_at) - %s FROM suspensions_outboxevent", [t0_wall])
    return {
        "sweep": [(float(a), float(b)) for a, b in sweep],
        "push": [(float(a), float(b)) for a, b in push],
        "made": [float(a) for (a,) in made],
    }


def queues() -> Any:
    """The broker queues the worker consumes (settings.CELERY_TASK_QUEUES: the sweep's and push's)."""
    from django.conf import settings

    return settings.CELERY_TASK_QUEUES
