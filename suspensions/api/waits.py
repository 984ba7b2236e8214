"""Waiting without webhooks (docs/api.md, "Waiting without webhooks"): a long poll on one run, and a
Server-Sent Events stream of the events the caller may read.

Both are Django async views: in the ASGI process (suspensions_project/asgi.py) a waiter is a coroutine, not
a thread, and one LISTEN connection wakes them all (suspensions/listening.py). Who is calling, what they may
see and what the run is now are read with the same principals, selectors and answers as every other read,
in Django's sync thread; only the waiting itself is asynchronous.
"""

import asyncio
import itertools
import json
import re
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar
from uuid import UUID

from asgiref.sync import sync_to_async
from django.db import DatabaseError, connection
from django.db.models import F
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from rest_framework import exceptions

from .. import listening, scopes, selectors
from ..exceptions import Forbidden, InvalidRequest, NotFound, ServiceError, Unauthenticated, Unavailable
from ..models import Run
from ..principals import Principal, for_user, has_staff_access
from ..problems import PROBLEM, problem_json_response
from ..strictjson import MAX_SAFE_INTEGER
from ..wire.answers import RunOut
from ..wire.answers_audit import AuditEventLine
from .authentication import BearerTokenAuthentication
from .filtering import refuse_unknown

# The two routes below (api/urls.py), for the ASGI process's own handler (suspensions_project/asgi.py).
LONG_LIVED_PATH = re.compile(r"^/api/v1/(runs/[^/]+/wait|events/stream)$")
WAIT_DEFAULT_SECONDS, WAIT_MAX_SECONDS = 30, 60
STREAM_PAGE = 500
KEEP_ALIVE_SECONDS = 15.0
RETRY_MILLISECONDS = 2000
WAIT_PARAMETERS = ("after_revision", "timeout")
STREAM_PARAMETERS = ("scope", "last_event_id")
COMPACT = {"separators": (",", ":"), "ensure_ascii": False}
EVENT_COLUMNS = ("id", "run_id", "scope", "kind", "actor", "revision", "data", "at", "prev_hash", "hash")
T = TypeVar("T")


def refusing(view: Callable[..., Any]) -> Callable[..., Any]:
    """A refusal raised before the answer starts is the problem+json every other endpoint gives."""

    async def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method not in ("GET", "HEAD"):
            body = {"type": "about:blank", "title": f'Method "{request.method}" not allowed.', "status": 405}
            body |= {"detail": body["title"], "code": "method_not_allowed"}
            return JsonResponse(body, status=405, content_type=PROBLEM, headers={"Allow": "GET, HEAD"})
        try:
            response = await view(request, *args, **kwargs)
        except ServiceError as error:
            response = problem_json_response(error)
        except DatabaseError:  # the middleware that answers this elsewhere is not in the long-lived chain
            response = problem_json_response(Unavailable())
        response["Cache-Control"] = "no-store"  # as NoStoreMiddleware, not in that chain either
        return response  # type: ignore[no-any-return]

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


def caller(request: HttpRequest) -> Principal:
    """The bearer token's principal, or the console's signed-in staff user; 401 otherwise (read in the sync thread)."""
    try:
        found = BearerTokenAuthentication().read(request)
    except exceptions.AuthenticationFailed as exc:
        raise Unauthenticated(str(exc.detail)) from None
    if found is not None:
        return found[0]
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and has_staff_access(user):
        return for_user(user)
    raise Unauthenticated("send 'Authorization: Bearer <token>'")


def whole_number(params: Any, name: str, *, high: int = MAX_SAFE_INTEGER) -> int | None:
    text = params.get(name)
    if text is None or text == "":
        return None
    if not text.isascii() or not text.isdigit() or int(text) > high:
        raise InvalidRequest(f"{name} must be a whole number from 0 to {high}", errors={name: ["Not a valid number."]})
    return int(text)


def _then_release(function: Callable[..., T], *args: Any) -> T:
    try:
        return function(*args)
    finally:
        connection.close()  # back to the pool: a waiter holds no connection while it waits


async def in_sync_thread(function: Callable[..., T], *args: Any) -> T:
    """`function` on a thread of the loop's shared pool, its database connection returned when it is done.

    Not Django's thread-sensitive default: under ASGI that is a thread per request, which would keep its
    connection for the whole wait."""
    return await sync_to_async(_then_release, thread_sensitive=False)(function, *args)


# -- the long poll on one run ------------------------------------------------------------------


def current_run(principal: Principal, pk: UUID) -> Run:
    """The run as `GET /runs/{id}` reads it, for a principal who sees it; 404 leaking nothing otherwise."""
    run = selectors.runs(principal).annotate(live_suspension_id=F("suspension__id")).filter(pk=pk).first()
    if run is None:
        raise NotFound()
    return run


def wait_request(request: HttpRequest, pk: UUID) -> tuple[Principal, Run, int | None, int]:
    principal = caller(request)
    refuse_unknown(request.GET, WAIT_PARAMETERS)
    after = whole_number(request.GET, "after_revision")
    timeout = whole_number(request.GET, "timeout", high=WAIT_MAX_SECONDS)
    return principal, current_run(principal, pk), after, WAIT_DEFAULT_SECONDS if timeout is None else timeout


@refusing
async def run_wait(request: HttpRequest, pk: UUID) -> HttpResponse:
    """`GET /api/v1/runs/{id}/wait?after_revision=N&timeout=S`: the run as soon as its revision passes N (by
    default, the revision it has now), or at the timeout as it is."""
    async with listening.hub() as hub:
        with hub.watching_run(str(pk)) as woken:  # before the first read: a change after it wakes us
            principal, run, after, timeout = await in_sync_thread(wait_request, request, pk)
            after = run.revision if after is None else after
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while run.revision <= after and (left := deadline - loop.time()) > 0:
                try:
                    await asyncio.wait_for(woken.wait(), left)
                except TimeoutError:
                    break
                woken.clear()
                run = await in_sync_thread(current_run, principal, pk)
    return JsonResponse(RunOut.of(run).wire(), json_dumps_params=COMPACT)  # as GET /runs/{id} writes it


# -- the event stream --------------------------------------------------------------------------

# Events strictly after the cursor in (tx, id) order (migration 0023_event_announce). `ready`: written by a
# transaction older than every one still running, so nothing that commits later can come before it; a stream sends the
# ready ones and stops at the first that is not, so it never skips an event whose id was drawn earlier but committed
# later.
_AFTER = (
    "SELECT {columns}, e.tx::text, e.tx < pg_snapshot_xmin(pg_current_snapshot()) FROM suspensions_event e "
    "WHERE (e.tx, e.id) > (%s::xid8, %s) AND ({visible}) ORDER BY e.tx, e.id LIMIT %s"
)
HELD_BACK_SECONDS = 0.02


def visible_sql(principal: Principal, scope: str | None) -> tuple[str, list[Any]]:
    """The WHERE of the events this principal may read (any role), under `scope` when given."""
    clauses, params = [], []
    if scope is not None:
        clauses.append(f"e.scope_l{scopes.depth(scope)} = %s")
        params.append(scope)
    if not principal.superuser:
        held = principal.scopes_with()
        clauses.append("(" + (" OR ".join(f"e.scope_l{scopes.depth(h)} = %s" for h in held) or "FALSE") + ")")
        params += held
    return " AND ".join(clauses) or "TRUE", params


def stream_request(request: HttpRequest) -> tuple[Principal, str | None, tuple[str, int]]:
    """Who, which scope, and the cursor: after `Last-Event-ID` (or `last_event_id`), else after the newest event."""
    principal = caller(request)
    refuse_unknown(request.GET, STREAM_PARAMETERS)
    scope = request.GET.get("scope") or None
    if scope is not None and not scopes.is_valid(scope):
        raise InvalidRequest("scope is not a valid scope path", errors={"scope": ["Not a valid scope."]})
    if scope is not None and not principal.sees(scope):
        raise Forbidden(f"no role in scope '{scope}'")
    last = request.headers.get("Last-Event-ID") or request.GET.get("last_event_id")
    return (
        principal,
        scope,
        cursor_after(None if last is None else whole_number({"last_event_id": last}, "last_event_id")),
    )


def cursor_after(event_id: int | None) -> tuple[str, int]:
    """The (tx, id) of event `event_id`; with none, of the newest event (a new stream starts from now)."""
    with connection.cursor() as cursor:
        if event_id is None:
            # e.tx, not tx: a bare `tx` would name the output column, the text, and sort by it (all of every
            # partition read and sorted, and '999' after '1000'); e.tx is the xid8, read along the (tx, id) index.
            cursor.execute("SELECT e.tx::text, e.id FROM suspensions_event e ORDER BY e.tx DESC, e.id DESC LIMIT 1")
        else:
            cursor.execute("SELECT tx::text, id FROM suspensions_event WHERE id = %s", [event_id])
        row = cursor.fetchone()
    if row is None:
        return ("0", event_id or 0)  # an id never written (or pruned): every event after that id
    return row[0], row[1]


def events_after(principal: Principal, scope: str | None, after: tuple[str, int]) -> tuple[list[tuple[Any, ...]], bool]:
    """The next ready events after the cursor, each ending with its tx; and whether one was held back."""
    visible, params = visible_sql(principal, scope)
    text = _AFTER.format(columns=", ".join(f"e.{c}" for c in EVENT_COLUMNS), visible=visible)
    with connection.cursor() as cursor:
        cursor.execute(text, [after[0], after[1], *params, STREAM_PAGE])
        rows = cursor.fetchall()
    ready = [row[:-1] for row in itertools.takewhile(lambda row: row[-1], rows)]
    return ready, len(ready) < len(rows)


def frame(row: tuple[Any, ...]) -> bytes:
    """One SSE message: the event id as its id, its kind as its event name, the event as the export writes it."""
    event = AuditEventLine.of(dict(zip(EVENT_COLUMNS, row, strict=False))).wire()
    del event["type"]
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"id: {event['id']}\nevent: {event['kind']}\ndata: {data}\n\n".encode()


async def frames(principal: Principal, scope: str | None, after: tuple[str, int]) -> AsyncIterator[bytes]:
    yield f"retry: {RETRY_MILLISECONDS}\n: connected\n\n".encode()
    async with listening.hub() as hub:
        with hub.watching_events() as woken:
            pause = HELD_BACK_SECONDS
            while True:
                woken.clear()
                rows, held_back = await in_sync_thread(events_after, principal, scope, after)
                for row in rows:
                    yield frame(row)
                if rows:
                    after = (rows[-1][-1], rows[-1][0])
                if len(rows) == STREAM_PAGE:
                    continue
                if held_back:  # an older transaction is still running: look again in a moment, then less often
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, KEEP_ALIVE_SECONDS / 15)
                    continue
                pause = HELD_BACK_SECONDS
                try:
                    await asyncio.wait_for(woken.wait(), KEEP_ALIVE_SECONDS)
                except TimeoutError:
                    yield b": keep-alive\n\n"


@refusing
async def event_stream(request: HttpRequest) -> StreamingHttpResponse:
    """`GET /api/v1/events/stream?scope=...`: every event the caller may read, as Server-Sent Events."""
    principal, scope, after = await in_sync_thread(stream_request, request)
    response = StreamingHttpResponse(frames(principal, scope, after), content_type="text/event-stream")
    response["X-Accel-Buffering"] = "no"  # nginx: pass each message on as it comes
    return response
