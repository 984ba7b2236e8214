"""Refusals that must happen before a view runs, and the cache headers every API and console answer carries."""

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote_to_bytes

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


FORM = "application/x-www-form-urlencoded"


class Utf8RequestMiddleware:
    """400 invalid_request for a path, query string or form body that is not UTF-8, before any view reads it.

    Django decodes all three with errors="replace", so a bad byte reached the
    views as U+FFFD: a filter then matched nothing (`?agent_id=%ff` answered
    200) while other parameters happened to refuse it. One check here covers
    every parameter of every view, the console's and Slack's forms included;
    the error names each parameter (or `path`) that is not UTF-8.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        errors = _pairs_not_utf8(_raw(request.META.get("QUERY_STRING", "")))
        if _not_utf8(_raw_path(request)):
            errors["path"] = ["The path is not UTF-8."]
        if request.content_type == FORM and not errors:
            errors = _pairs_not_utf8(request.body)
        if errors:
            return problem_json_response(InvalidRequest("The request holds bytes that are not UTF-8.", errors=errors))
        return self.get_response(request)


def _raw(text: str) -> bytes:
    """The bytes a WSGI string carries (PEP 3333: each byte as one latin-1 character)."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:  # not from a WSGI server: text already, checked as it would be sent
        return text.encode("utf-8", "surrogatepass")


def _raw_path(request: HttpRequest) -> bytes:
    """The path's bytes as sent. Django replaces PATH_INFO with a copy that re-percent-encodes bad bytes
    (repercent_broken_unicode), so the request line the server keeps is read: gunicorn's RAW_URI, uWSGI's
    REQUEST_URI. Without either, the path as Django holds it, which is then always UTF-8."""
    uri = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")
    if uri is None:
        return _raw(request.META.get("PATH_INFO", ""))
    return unquote_to_bytes(_raw(uri).partition(b"?")[0])


def _not_utf8(raw: bytes) -> bool:
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _pairs_not_utf8(raw: bytes) -> dict[str, list[str]]:
    """Each `name=value` of a query string or form body whose name or value decodes to no UTF-8, by name."""
    errors: dict[str, list[str]] = {}
    for pair in raw.split(b"&"):
        name, _, value = (unquote_to_bytes(part.replace(b"+", b" ")) for part in pair.partition(b"="))
        if _not_utf8(name) or _not_utf8(value):
            errors[name.decode("utf-8", "replace")] = ["Not UTF-8: percent-encode the UTF-8 bytes of the text."]
    return errors


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
    """Cache-Control: no-store on every API answer and console page (docs/decisions.md, "Trust boundaries").

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
