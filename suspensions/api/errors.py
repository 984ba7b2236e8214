"""One exception handler renders every error as application/problem+json (RFC 9457)."""

import logging
import math
from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.response import Response

from ..exceptions import (
    Forbidden,
    InternalError,
    InvalidRequest,
    NotFound,
    RequestTooLarge,
    ServiceError,
    Unauthenticated,
    Unavailable,
)
from ..problems import (  # noqa: F401 (re-exported for the API)
    BEARER_CHALLENGE,
    PROBLEM,
    RETRY_AFTER_SECONDS,
    problem_body,
    problem_headers,
    problem_json_response,
)

log = logging.getLogger(__name__)


def problem_response(error: ServiceError) -> Response:
    return Response(problem_body(error), status=error.status, content_type=PROBLEM, headers=problem_headers(error))


def _field_errors(detail: Any) -> Any:
    if isinstance(detail, dict):
        return {key: _field_errors(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_field_errors(value) for value in detail]
    return str(detail)


def as_service_error(exc: Exception) -> ServiceError | None:
    """Translate DRF, Django and database exceptions into the stable codes."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, drf.ValidationError):
        errors = _field_errors(exc.detail)
        if not isinstance(errors, dict):
            errors = {"non_field_errors": errors}
        return InvalidRequest("The request has invalid fields.", errors=errors)
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        return Unauthenticated(str(exc.detail))
    if isinstance(exc, drf.PermissionDenied):
        return Forbidden(str(exc.detail))
    if isinstance(exc, (drf.NotFound, Http404)):
        return NotFound()
    if isinstance(exc, (drf.ParseError, drf.UnsupportedMediaType)):
        return InvalidRequest(str(exc.detail))
    if isinstance(exc, RequestDataTooBig):
        return RequestTooLarge()
    if isinstance(exc, (OperationalError, InterfaceError)):
        log.warning("database unavailable: %s", exc)
        return Unavailable()
    return None


def problem_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    error = as_service_error(exc)
    if error is not None:
        return problem_response(error)
    if isinstance(exc, drf.APIException):
        # Method not allowed, not acceptable, throttled: keep their HTTP status.
        body = {
            "type": "about:blank",
            "title": str(exc.detail),
            "status": exc.status_code,
            "detail": str(exc.detail),
            "code": exc.default_code,
        }
        wait = getattr(exc, "wait", None)  # Throttled's seconds to wait; the stubs do not know it
        headers = {"Retry-After": str(math.ceil(wait))} if wait is not None else {}
        return Response(body, status=exc.status_code, content_type=PROBLEM, headers=headers)
    if isinstance(exc, DatabaseError):
        log.exception("database error")
        return problem_response(Unavailable())
    return None


@csrf_exempt  # a POST to a wrong path is a 404 problem, not Django's HTML CSRF page
def unknown_api_path(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
    return problem_json_response(NotFound(f"no API resource at {request.path}"))


# The paths whose clients read JSON, never an HTML page: the API and the integrations (Slack).
MACHINE_PATHS = ("/api/", "/integrations/")


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: what Django refuses before a view answers is a problem+json for machines, else its page.

    Django's own refusals of a request (a SuspiciousOperation: too many form
    fields or files, a body over DATA_UPLOAD_MAX_MEMORY_SIZE, a bad Host)
    come here, never through the API's exception handler.
    """
    if not request.path.startswith(MACHINE_PATHS):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return problem_json_response(RequestTooLarge())
    return problem_json_response(InvalidRequest(f"the request was refused: {exception}"[:300]))


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: a path no API route matches (a malformed id) is still a problem, not an HTML page."""
    if request.path.startswith("/api/"):
        return problem_json_response(NotFound())
    return defaults.page_not_found(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    """handler500: a bug under /api/ is a problem+json 500 without a traceback; elsewhere Django's page.

    Django has logged the exception (logger django.request) before it calls this.
    """
    if request.path.startswith("/api/"):
        return problem_json_response(InternalError())
    return defaults.server_error(request)
