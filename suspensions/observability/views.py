"""GET /metrics: every process's metrics in the Prometheus text format (docs/api.md, "7.11 Metrics")."""

import hashlib
import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST

from . import metrics as collected


@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    """Open when METRICS_TOKEN is empty; otherwise only for `Authorization: Bearer <METRICS_TOKEN>`."""
    if settings.METRICS_TOKEN and not _presents(request, settings.METRICS_TOKEN):
        response = HttpResponse("A bearer token is required.\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(collected.exposition(), content_type=CONTENT_TYPE_LATEST)


def _presents(request: HttpRequest, token: str) -> bool:
    scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer":
        return False
    # Digests of both sides: equal lengths, so the comparison's time says nothing about the token's length either.
    return hmac.compare_digest(_digest(presented.strip()), _digest(token))


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()
