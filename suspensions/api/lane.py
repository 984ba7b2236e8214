"""The plain lane: an engine's hot writes served without DRF's request machinery, by the same view code.

DRF's APIView is the reference for every endpoint: its schema, its refusals,
its answers. For the writes an engine sends in a loop (register, pause,
resume, decide, start, complete) the machinery around the view (a Request
wrapper, content negotiation, two authenticator classes, the permission and
throttle objects, the finishing of the Response) costs about as much CPU as
the view's own Python, for a request that is almost always the same plain
shape. `plain(View)` serves that shape directly and hands everything else
to `View.as_view()` untouched:

- a POST with no query string, no Accept or one the JSON renderer answers
  as it is (`*/*`, `application/json`), and either no body or an
  `application/json` body that the strict JSON reader accepts;
- a bearer token that is live now (read on this request, as always) and no
  throttle that refuses it. A request handed to DRF after its token was
  read (a dead token, a throttle's 429) keeps that read: DRF's
  authentication answers from it instead of reading the token again.

A request of that shape runs the view's own `post`, with the parsed body and
the token's principal, and its Response is finished as DRF finishes it (the
same renderer, the same `Allow` header); an error the view raises is
answered by the project's one exception handler. Anything else (another
method, a session, a missing, malformed or dead token, a body the reader
refuses, an odd Accept, a throttle's 429) goes to DRF, which answers it as
it always did: the lane only ever says yes faster, never differently
(tests/api/test_lane.py sends the same requests down both and compares the
answers byte for byte). `API_PLAIN_LANE=0` turns it off.
"""

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponseBase
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions as drf
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from .. import strictjson
from .authentication import LANE_READ, BearerTokenAuthentication, StaffSessionAuthentication
from .errors import problem_exception_handler
from .parsers import StrictJSONParser
from .throttling import TokenRateThrottle

ACCEPTED = frozenset({"", "*/*", "application/json"})
JSON = "application/json"
RENDERER = JSONRenderer()
AUTHENTICATION = BearerTokenAuthentication()
# Set on a request the shortcut offered to the lane and the lane declined: the view sends it straight to DRF.
DECLINED = "declined_by_lane"


class PlainRequest:
    """What a view's `post` reads of DRF's Request: the parsed body, the principal, the token."""

    __slots__ = ("data", "user", "auth", "_request")

    def __init__(self, request: HttpRequest, data: Any, user: Any, auth: Any) -> None:
        self._request = request
        self.data = data
        self.user = user
        self.auth = auth

    @property
    def META(self) -> dict[str, Any]:  # noqa: N802 (Django's name; a throttle reads the client address here)
        return self._request.META


def body_of(request: HttpRequest) -> Any:
    """The request's body parsed, when the lane may take it; None when DRF should have the request."""
    meta = request.META
    if request.method != "POST" or meta.get("QUERY_STRING") or meta.get("HTTP_ACCEPT", "") not in ACCEPTED:
        return None
    content_type = meta.get("CONTENT_TYPE", "")
    if content_type not in ("", JSON):
        return None
    try:
        raw = request.body
    except RequestDataTooBig:
        return None
    if not raw:
        return {}  # DRF's data for a request without a body
    if content_type != JSON:
        return None  # DRF ignores a body of no media type
    try:
        return strictjson.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, strictjson.StrictJSONError):
        return None


class Lane:
    """One view's plain lane: `serve` answers a plain request, or says None and DRF answers it."""

    def __init__(self, view_class: type[APIView]) -> None:
        _require_defaults(view_class)
        self.view_class = view_class
        self.drf_view = view_class.as_view()
        probe = view_class()
        probe.setup(HttpRequest())  # as as_view's view does: a view with GET also answers HEAD (its Allow says so)
        self.headers = probe.default_response_headers

    def serve(self, request: HttpRequest, kwargs: dict[str, Any]) -> Response | None:
        """The view's own answer to a request of the lane's shape, finished as DRF would; None for anything else."""
        data = body_of(request)
        if data is None:
            return None
        try:
            found = AUTHENTICATION.read(request)
        except drf.AuthenticationFailed as refused:
            setattr(request, LANE_READ, refused)  # DRF answers the 401 from this read, without a second one
            return None
        except Exception as exc:  # noqa: BLE001 - the database gone: DRF's answer to an error in its authentication
            return self.failed(exc, {"request": request})
        if found is None:
            return None
        setattr(request, LANE_READ, found)
        principal, token = found
        # As DRF's Request does: the principal is on the Django request too (the log context names it).
        request.user = principal  # type: ignore[assignment]
        request.auth = token  # type: ignore[attr-defined]
        shim = PlainRequest(request, data, principal, token)
        view_class = self.view_class
        instance = view_class(request=shim, args=(), kwargs=kwargs, format_kwarg=None)
        if not TokenRateThrottle().allow_request(shim, instance):  # type: ignore[arg-type]
            return None  # DRF answers the 429 with its wait
        try:
            response = view_class.post(instance, shim, **kwargs)  # type: ignore[attr-defined]
        except Exception as exc:  # noqa: BLE001 - failed() raises what the handler does not answer
            return self.failed(exc, {"view": instance, "request": shim})
        return finish(response, self.headers)

    def failed(self, exc: Exception, context: dict[str, Any]) -> Response:
        """As DRF's handle_exception: the project's exception handler answers it, or it is raised on."""
        response = problem_exception_handler(exc, context)
        if response is None:
            raise exc
        response.exception = True
        return finish(response, self.headers)


def plain(view_class: type[APIView]) -> Callable[..., HttpResponseBase]:
    """`view_class.as_view()`, with its plain POSTs served by the lane (see the module's docstring)."""
    lane = Lane(view_class)
    drf_view = lane.drf_view

    @csrf_exempt  # as APIView.as_view: only a session is held to CSRF, and sessions go to DRF
    def view(request: HttpRequest, **kwargs: Any) -> HttpResponseBase:
        if not settings.API_PLAIN_LANE or request.__dict__.get(DECLINED):
            return drf_view(request, **kwargs)
        served = lane.serve(request, kwargs)
        return served if served is not None else drf_view(request, **kwargs)

    view.lane = lane  # type: ignore[attr-defined]  # the shortcut (shortcut.py) serves it before the middleware
    view.cls = drf_view.cls  # type: ignore[attr-defined]  # drf-spectacular describes the APIView
    view.initkwargs = drf_view.initkwargs  # type: ignore[attr-defined]
    return view


def finish(response: Response, headers: dict[str, str]) -> Response:
    """What DRF's finalize_response does to a Response whose negotiation chose the JSON renderer."""
    response.accepted_renderer = RENDERER
    response.accepted_media_type = JSON
    response.renderer_context = {}  # type: ignore[attr-defined]
    for key, value in headers.items():
        response[key] = value
    return response


def _require_defaults(view_class: type[APIView]) -> None:
    """The lane does what these classes do; a view (or a REST_FRAMEWORK setting) that changes one is refused."""
    assumed = {
        "authentication_classes": [BearerTokenAuthentication, StaffSessionAuthentication],
        "throttle_classes": [TokenRateThrottle],
        "permission_classes": [IsAuthenticated],
        "parser_classes": [StrictJSONParser],
        "renderer_classes": [JSONRenderer],
        "content_negotiation_class": DefaultContentNegotiation,
        "versioning_class": None,
    }
    changed = [name for name, value in assumed.items() if getattr(view_class, name) != value]
    if changed:
        raise TypeError(f"{view_class.__name__} sets {', '.join(changed)}: the plain lane would not honour it")
