"""Liveness and readiness probes."""

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from kombu import Connection


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


def readyz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # noqa: BLE001 - any failure means not ready
        checks["database"] = f"down: {exc.__class__.__name__}"
    try:
        with Connection(
            settings.CELERY_BROKER_URL, transport_options=settings.CELERY_BROKER_TRANSPORT_OPTIONS, connect_timeout=2
        ) as broker:
            broker.ensure_connection(max_retries=1)
        checks["broker"] = "ok"
    except Exception as exc:  # noqa: BLE001
        checks["broker"] = f"down: {exc.__class__.__name__}"
    ready = all(v == "ok" for v in checks.values())
    response = JsonResponse({"status": "ready" if ready else "unavailable", **checks}, status=200 if ready else 503)
    if not ready:
        response["Retry-After"] = "5"
    return response
