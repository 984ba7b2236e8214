"""Refusals that must happen before a view runs, and the cache headers every API and console answer carries."""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import add_never_cache_headers

from . import logins
from .exceptions import InvalidRequest, RequestTooLarge, Unavailable
from .problems import problem_json_response

# A body this far over the bound is read and dropped before the 413 (see RequestSizeLimitMiddleware).
DRAIN_BYTES = 2 * 1024 * 1024
DRAIN_CHUNK = 64 * 1024


class RequestSizeLimitMiddleware:
    """413 request_too_large from Content-Length alone, before anything parses the body.

    A body up to DRAIN_BYTES over the bound (what nginx's client_max_body_size
    of deploy/nginx lets through) is read and dropped first: answered with
    its body unread, gunicorn closes a socket that still holds data, the
    kernel resets the connection, and nginx, still sending the body it
    buffered, can lose the 413 and answer 502 instead (seen once in a
    parallel `make test`). A larger body is refused without reading it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        length = request.META.get("CONTENT_LENGTH") or "0"
        try:
            size = int(length)
        except ValueError:
            return problem_json_response(InvalidRequest("Content-Length is not a number"))
        if size > settings.MAX_REQUEST_BYTES:
            if size <= settings.MAX_REQUEST_BYTES + DRAIN_BYTES:
                _drop_body(request)
            return problem_json_response(
                RequestTooLarge(f"the body is {size} bytes; at most {settings.MAX_REQUEST_BYTES}")
            )
        return self.get_response(request)


def _drop_body(request: HttpRequest) -> None:
    """Read the body to its end in chunks, keeping none of it; a client gone meanwhile ends it quietly."""
    try:
        while request.read(DRAIN_CHUNK):
            pass
    except OSError:
        pass


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


class NoStoreMiddleware:
    """Cache-Control: no-store on every API answer and console page (DESIGN §16).

    They carry continuations, inputs and receipts; no browser or proxy cache
    may keep a copy. Every one of them, not a list of views, so a new
    endpoint cannot forget it.
    """

    PREFIXES = ("/api/v1/", "/console/")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.path.startswith(self.PREFIXES):
            add_never_cache_headers(response)
        return response


class ContentSecurityPolicyMiddleware:
    """A Content-Security-Policy on every HTML page: the console, the admin, /api/docs/ (issue 32).

    Scripts, styles, fonts and fetches come from this origin only and nothing
    inline runs: an injected tag in engine-supplied text could not execute
    even if escaping failed once. The pages were written for it (no inline
    script; /api/docs/ loads Swagger UI's start-up script as a file).
    `data:` images: Swagger UI's icons. A page that sets its own keeps it.
    """

    POLICY = "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "font-src 'self'",
            "connect-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html"):
            response.headers.setdefault("Content-Security-Policy", self.POLICY)
        return response


class LoginLockoutMiddleware:
    """A locked (username, address) gets a 429 page from both sign-in forms, even with the right password.

    The rule itself is logins.LockoutBackend's; this is only its HTTP face,
    answered before the form checks a password.
    """

    LOGIN_VIEWS = frozenset({"console:login", "admin:login"})

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_view(self, request: HttpRequest, view: Any, args: Any, kwargs: Any) -> HttpResponse | None:
        match = request.resolver_match
        if request.method != "POST" or match is None or match.view_name not in self.LOGIN_VIEWS:
            return None
        left = logins.refused(logins.submitted_username(request), logins.client_address(request))
        if not left:
            return None
        response = render(request, "registration/login_locked.html", {"minutes": -(-left // 60)}, status=429)
        response["Retry-After"] = str(left)
        return response
