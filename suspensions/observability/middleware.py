"""The first middleware: a request id in and out, the log context, the latency metric, the access line."""

import time
from collections.abc import Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.conf import settings
from django.core.signals import request_finished
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse

from . import context, logs, metrics, redact

HEADER = "X-Request-ID"
META_KEY = "HTTP_X_REQUEST_ID"  # the header in WSGI's environ: request.headers would build the whole header map
# A path that resolved to no named route (a scanner's probe, a typo) is one label, not one per path.
UNMATCHED = "unmatched"
STATIC = "static"


class RequestObservabilityMiddleware:
    """Binds the request id (the caller's `X-Request-ID` if sane, else a new one) and answers it.

    Outermost, so refusals of the middlewares below carry the id and are timed
    too. Requests are labelled by their URL name (`run-resume`,
    `console:approval`), never by their path: ids in paths would make a
    series per run.
    """

    # Both: under ASGI the waits' handler (suspensions_project/asgi.py) has only async-capable middleware, so a
    # waiter is a coroutine and holds no thread.
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        # Decided once: asgiref's test costs a few microseconds, on every request if asked there.
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.answered_async(request)
        request_id, began = self.began(request)
        return self.answered(request, self.get_response(request), request_id, began)

    async def answered_async(self, request: HttpRequest) -> HttpResponse:
        request_id, began = self.began(request)
        return self.answered(request, await self.get_response(request), request_id, began)

    def began(self, request: HttpRequest) -> tuple[str, float]:
        request_id = context.sane_request_id(request.META.get(META_KEY)) or context.new_request_id()
        # Cleared when the response is closed (below), after Django's own request logging.
        context.bind(request_id=request_id, request=request)
        return request_id, time.perf_counter()

    def answered(self, request: HttpRequest, response: HttpResponse, request_id: str, began: float) -> HttpResponse:
        seconds = time.perf_counter() - began
        response[HEADER] = request_id
        route = route_of(request)
        metrics.request_answered(route=route, method=request.method or "", status=response.status_code, seconds=seconds)
        logs.request_finished(
            method=request.method or "",
            path=redact.path(request.path),
            route=route,
            status=response.status_code,
            seconds=seconds,
        )
        return response

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: dict[str, Any]) -> None:
        bind_route(request, kwargs)


def bind_route(request: HttpRequest, kwargs: dict[str, Any]) -> None:
    """Once the URL is resolved: a run's route names its run in the log context."""
    match = request.resolver_match
    if match is not None and "runs/<uuid:pk>" in match.route and "pk" in kwargs:
        context.bind_run(kwargs["pk"])


def route_of(request: HttpRequest) -> str:
    match = request.resolver_match
    if match is not None and match.url_name:
        return match.view_name
    # WhiteNoise answers static files before any URL is resolved.
    return STATIC if request.path.startswith(settings.STATIC_URL or "/static/") else UNMATCHED


@receiver(request_finished, dispatch_uid="suspensions.observability.clear_context")
def clear_context(**kwargs: Any) -> None:
    context.clear()
