"""The lane's shortcut: a middleware that serves the plain lane's requests before the rest of the stack.

The plain lane (lane.py) takes DRF's request machinery off an engine's hot
writes. Between the outer middlewares and the view there is still Django's
own: nine middlewares, the URL resolver and the view middleware, about a
tenth of such a request's Python (docs/performance.md, "The sixth pass"),
and for a request with a bearer token, a JSON body and no cookie all but
three of them have nothing to do. This middleware sits right below the
ones every answer needs (the request id, the log line and the metrics;
no-store; the size bound; the database's 503) and, for a POST with no
Cookie header whose path resolves to a lane view, does what the skipped
middlewares would do for it and calls the lane itself:

- it runs the request and response hooks of the three that act on such a
  request: `SecurityMiddleware` (its HTTPS redirect, its headers),
  `CommonMiddleware` (ALLOWED_HOSTS through `get_host()`, refused user
  agents, the www redirect, Content-Length) and `XFrameOptionsMiddleware`;
  a request hook that answers or raises sends the request down the stack
  instead, which then answers it as it always did;
- it resolves the URL as Django's handler does, sets `resolver_match` and
  binds the run to the log context (the observability middleware's view
  hook);
- an exception goes to the database middleware's hook, then to Django's
  own `response_for_exception`, and the answer still gets the headers.

What the others would do for such a request is nothing: sessions, CSRF and
messages act only on a cookie or a session (and the lane's views are
csrf_exempt), the authentication middleware's user is replaced by the
token's principal, WhiteNoise answers only static files, and the sign-in
lockout only the two sign-in forms. Each of them is listed below with its
reason; a middleware that is not listed makes the service refuse to start,
so adding one means deciding here whether the lane's requests need it.

Everything the lane declines (lane.py: an odd Accept, a body the reader
refuses, a dead token, a throttle's 429) goes on down the stack with its
token read kept, and DRF answers it there. tests/api/test_lane.py holds
the two paths to the same status, headers and body.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.handlers.exception import response_for_exception
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.middleware.clickjacking import XFrameOptionsMiddleware
from django.middleware.common import CommonMiddleware
from django.middleware.security import SecurityMiddleware
from django.urls import resolve

from ..middleware import DatabaseUnavailableMiddleware
from ..observability.middleware import bind_route
from .lane import DECLINED

SELF = f"{__name__}.LaneShortcut"
# The middlewares below the shortcut whose hooks it runs itself, in MIDDLEWARE's order.
RUN = {
    "django.middleware.security.SecurityMiddleware": SecurityMiddleware,
    "django.middleware.common.CommonMiddleware": CommonMiddleware,
    "django.middleware.clickjacking.XFrameOptionsMiddleware": XFrameOptionsMiddleware,
}
# The ones with nothing to do for a lane request, and why.
IDLE = {
    "whitenoise.middleware.WhiteNoiseMiddleware": "answers static files only",
    "django.contrib.sessions.middleware.SessionMiddleware": "a lane request carries no cookie",
    "django.middleware.csrf.CsrfViewMiddleware": "no cookie, and the lane's views are csrf_exempt",
    "django.contrib.auth.middleware.AuthenticationMiddleware": "the lane sets the token's principal as the user",
    "suspensions.middleware.LoginLockoutMiddleware": "acts on the two sign-in forms only",
    "django.contrib.messages.middleware.MessageMiddleware": "no cookie, no session: no messages",
}


class LaneShortcut:
    """Serves the plain lane's POSTs before the middlewares they do not need (see the module's docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        below = list(settings.MIDDLEWARE)
        below = below[below.index(SELF) + 1 :]
        unknown = [name for name in below if name not in RUN and name not in IDLE]
        if unknown:
            raise ImproperlyConfigured(
                f"{', '.join(unknown)} below {SELF}: say in api/shortcut.py what it does for a lane request"
            )
        hooks = [RUN[name](get_response) for name in below if name in RUN]
        self.requests = [hook.process_request for hook in hooks if hasattr(hook, "process_request")]
        self.responses = [hook.process_response for hook in reversed(hooks) if hasattr(hook, "process_response")]
        self.database = DatabaseUnavailableMiddleware(get_response)

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        lane = self.lane_of(request)
        if lane is None:
            return self.get_response(request)
        try:
            response = lane.serve(request, request.resolver_match.kwargs)  # type: ignore[union-attr]
            if response is None:
                setattr(request, DECLINED, True)  # the view below sends it straight to DRF
                return self.get_response(request)
            response = response.render()
        except Exception as exc:  # noqa: BLE001 - as Django's handler: the middlewares' hook, then its own answer
            response = self.database.process_exception(request, exc) or response_for_exception(request, exc)
        for hook in self.responses:
            response = hook(request, response)
        return response

    def lane_of(self, request: HttpRequest) -> Any:
        """The lane of the view this request resolves to, when the shortcut may serve it; else None."""
        if request.method != "POST" or request.META.get("HTTP_COOKIE") or not settings.API_PLAIN_LANE:
            return None
        try:
            if any(hook(request) is not None for hook in self.requests):
                return None  # a redirect or a refusal: the stack below answers it as it always does
            match = resolve(request.path_info)
        except Exception:  # noqa: BLE001 - a disallowed host or agent, an unknown path: raised again below
            return None
        lane = getattr(match.func, "lane", None)
        if lane is None:
            return None
        request.resolver_match = match
        bind_route(request, match.kwargs)
        return lane
