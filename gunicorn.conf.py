"""gunicorn for the web process: `gunicorn -c gunicorn.conf.py suspensions_project.wsgi`.

Every value comes from the environment with a default that suits one
machine behind a proxy (docs/deploy.md, "Running in production").
"""

import logging
import os
import re
from pathlib import Path

from gunicorn.glogging import Logger


def _count(name: str, default: int) -> int:
    raw = os.environ.get(name, "") or str(default)
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{name} must be a whole number of at least 1, got {raw!r}")
    return int(raw)


# host:port, or several separated by commas; 0.0.0.0:8000 when the proxy is on another machine.
bind = [address.strip() for address in os.environ.get("GUNICORN_BIND", "127.0.0.1:8000").split(",")]


def _control_socket(first_bind: str) -> str:
    """gunicorn's control socket (for gunicornc): one per bind address, under this checkout's var/run."""
    name = re.sub(r"[^A-Za-z0-9.]+", "-", first_bind).strip("-")
    return str(Path(__file__).resolve().parent / "var" / "run" / f"gunicorn-{name}.ctl")


# gunicorn's own default is one path per user ($XDG_RUNTIME_DIR or ~/.gunicorn/gunicorn.ctl):
# every gunicorn of that user on the host would share it, each start takes it over and each stop
# unlinks it. Here each node has its own, named after its first bind address; "off" turns it off.
_control = os.environ.get("GUNICORN_CONTROL_SOCKET", "") or _control_socket(bind[0])
control_socket_disable = _control == "off"
control_socket = _control

# gthread's worker, except that a stopping worker takes the connections already queued on the
# listening socket and closes its copy at once, so the next ones are refused, not reset
# (suspensions_project/gunicorn_worker.py; docs/deploy.md, "Restarting without dropping requests").
worker_class = "suspensions_project.gunicorn_worker.DrainingThreadWorker"
# Threads share a process and its database pool: keep DB_POOL_MAX at or above GUNICORN_THREADS.
workers = _count("GUNICORN_WORKERS", 4)
threads = _count("GUNICORN_THREADS", 8)

# A request still running after this is killed with its worker (the claim's transaction rolls back).
timeout = _count("GUNICORN_TIMEOUT", 30)
graceful_timeout = _count("GUNICORN_GRACEFUL_TIMEOUT", 30)
keepalive = 5

# The addresses whose X-Forwarded-* headers gunicorn trusts (the proxy's); "*" trusts every client.
forwarded_allow_ips = os.environ.get("GUNICORN_FORWARDED_ALLOW_IPS", "127.0.0.1")

# The application logs one JSON access line per request with its request id
# (suspensions/observability): gunicorn's own access log would only repeat it.
accesslog = None
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")


class _RedactCapabilities(logging.Filter):
    """gunicorn's "Error handling request <uri>" names the path: an email link's or a callback's token
    is redacted as in the service's own lines (docs/deploy.md, "Logs")."""

    def filter(self, record: logging.LogRecord) -> bool:
        from suspensions.observability import redact

        record.msg, record.args = redact.text(record.getMessage()), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = redact.text(logging.Formatter().formatException(record.exc_info))
        return True


class RedactingLogger(Logger):
    def setup(self, cfg: object) -> None:
        super().setup(cfg)
        for handler in self.error_log.handlers:
            handler.addFilter(_RedactCapabilities())


logger_class = RedactingLogger


def child_exit(server: object, worker: object) -> None:
    """A dead worker's live gauges leave the aggregated /metrics (prometheus-client multiprocess mode)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)  # type: ignore[attr-defined]


def worker_exit(server: object, worker: object) -> None:
    """A stopping worker exports the spans it still holds (docs/deploy.md, "Traces"); nothing when traces are off."""
    from suspensions.observability import tracing

    tracing.flush()


def post_worker_init(worker: object) -> None:
    """What a worker has loaded (Django, and every view the URLconf imports) leaves the cyclic GC's reach.

    The web process holds about 240,000 objects the garbage collector tracks once loaded (Django, DRF, the
    A2A and MCP SDKs, pydantic's models), all alive for the process's life. A full collection walked them all:
    about 120 ms with the GIL held, every thread of the worker stalled, every few hundred requests. Frozen
    (gc.freeze), a full collection walks only what requests made: about 1 ms (docs/performance.md, "Where the
    time goes"). The URLconf is imported first, so the views are loaded, and frozen, before the first request.
    """
    import gc

    from django.apps import apps
    from django.urls import get_resolver

    if not apps.ready:  # an application that sets Django up at its first request: nothing loaded to freeze yet
        return
    get_resolver().url_patterns  # noqa: B018 (imports every view now)
    gc.freeze()
