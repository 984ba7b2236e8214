"""Liveness and readiness probes.

Readiness means "this node can serve": its database and its broker answer.
The sweep's heartbeat is not part of it: a stuck sweep worker would take every
web node out of the load balancer at once, though each could serve (issue 50,
item 11). Its staleness goes to /metrics (suspensions_sweep_stale) and to
`manage.py sweep_health`, the sweep worker's own health check (docs/deploy.md,
"The sweep's worker").
"""

import threading
import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from kombu import Connection

from .observability import heartbeat

# A broker that is down costs a connect timeout; probes come every few seconds
# from several balancers, so one check per process serves them all for this long.
BROKER_CHECK_SECONDS = 5.0

_broker_lock = threading.Lock()
_broker_seen: tuple[str, float, str] | None = None  # (broker URL, checked at, result)


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    """Ready when the database and the broker answer; `sweep` is shown for people and never decides readiness."""
    checks = {"database": database_status(), "broker": broker_status()}
    checks["sweep"] = heartbeat.status()[0] if checks["database"] == "ok" else "unknown"
    ready = checks["database"] == "ok" and checks["broker"] == "ok"
    response = JsonResponse({"status": "ready" if ready else "unavailable", **checks}, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "5"
    return response


def database_status() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means not ready
        return f"down: {exc.__class__.__name__}"


def broker_status() -> str:
    """The broker check, at most once per BROKER_CHECK_SECONDS per process.

    While one thread checks, the others answer the previous result at once
    rather than queue behind a connect timeout; only the very first check of
    a URL makes them wait.
    """
    global _broker_seen
    url = settings.CELERY_BROKER_URL
    seen = _broker_seen
    if seen is not None and seen[0] == url and time.monotonic() - seen[1] < BROKER_CHECK_SECONDS:
        return seen[2]
    if not _broker_lock.acquire(blocking=seen is None or seen[0] != url):
        assert seen is not None
        return seen[2]
    try:
        seen = _broker_seen
        if seen is not None and seen[0] == url and time.monotonic() - seen[1] < BROKER_CHECK_SECONDS:
            return seen[2]
        result = _check_broker(url)
        _broker_seen = (url, time.monotonic(), result)
        return result
    finally:
        _broker_lock.release()


def _check_broker(url: str) -> str:
    try:
        with Connection(url, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS, connect_timeout=2) as broker:
            broker.ensure_connection(max_retries=1)
        return "ok"
    except Exception as exc:  # noqa: BLE001
        return f"down: {exc.__class__.__name__}"
