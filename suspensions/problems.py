"""Errors as application/problem+json (RFC 9457): one body for DRF views, middleware and plain views."""

from typing import Any

from django.http import JsonResponse

from .exceptions import ServiceError
from .wire.answers import Problem

PROBLEM = "application/problem+json"
RETRY_AFTER_SECONDS = "5"
# RFC 9110: every 401 names the scheme that would work (docs/decisions.md, "Trust boundaries").
BEARER_CHALLENGE = 'Bearer realm="api"'


def problem_body(error: ServiceError) -> dict[str, Any]:
    return Problem.of(error).wire()


def problem_headers(error: ServiceError) -> dict[str, str]:
    if error.status == 401:
        return {"WWW-Authenticate": BEARER_CHALLENGE}
    if error.status == 429:
        return {"Retry-After": str(getattr(error, "retry_after", RETRY_AFTER_SECONDS))}
    return {"Retry-After": RETRY_AFTER_SECONDS} if error.status == 503 else {}


def problem_json_response(error: ServiceError) -> JsonResponse:
    """The same body for places outside DRF (middleware, plain Django views)."""
    response = JsonResponse(problem_body(error), status=error.status, content_type=PROBLEM)
    for name, value in problem_headers(error).items():
        response[name] = value
    return response
