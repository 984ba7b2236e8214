"""Refusals that must happen before a view runs."""

from collections.abc import Callable

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse

from .api.errors import problem_json_response
from .exceptions import InvalidRequest, RequestTooLarge, Unavailable


class RequestSizeLimitMiddleware:
    """413 request_too_large from Content-Length alone, before the body is read."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = request.META.get("CONTENT_LENGTH") or "0"
        try:
            size = int(length)
        except ValueError:
            return problem_json_response(InvalidRequest("Content-Length is not a number"))
        if size > settings.MAX_REQUEST_BYTES:
            return problem_json_response(
                RequestTooLarge(f"the body is {size} bytes; at most {settings.MAX_REQUEST_BYTES}")
            )
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """A database that is down is a 503 with Retry-After for every page, not a 500."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, (OperationalError, InterfaceError)):
            return problem_json_response(Unavailable())
        return None
