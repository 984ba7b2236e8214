"""Reads that may lag go to a streaming replica (docs/deploy.md, "Read replicas").

With `DATABASE_REPLICA_URL` set, settings add the `replica` database and this
router. A read goes there only inside `reads_may_lag()`, which the lists, the
inbox, the dashboard and the audit export enter (`LagTolerantGet`,
`lag_tolerant`, `lagging`); everything else reads the primary. Inside a
transaction on the primary every read stays there too, so a claim, a lock or a
read inside a write never sees the replica; and for `REPLICA_FRESH_SECONDS`
after a browser's successful write (`PrimaryAfterWriteMiddleware`'s cookie)
its pages read the primary, so the page after a decision shows the decision.
Without a replica nothing here runs: the router is not installed and the
middleware removes itself.
"""

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import wraps
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.db import DEFAULT_DB_ALIAS, connections
from django.http import HttpRequest, HttpResponse

REPLICA = "replica"
FRESH_COOKIE = "suspensions_primary"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

_may_lag: ContextVar[bool] = ContextVar("suspensions_reads_may_lag", default=False)
T = TypeVar("T")


def configured() -> bool:
    return REPLICA in settings.DATABASES


class ReplicaRouter:
    """Django's database router: the replica for the reads `reads_may_lag` marks, the primary for the rest."""

    def db_for_read(self, model: Any, **hints: Any) -> str | None:
        if _may_lag.get() and not connections[DEFAULT_DB_ALIAS].in_atomic_block:
            return REPLICA
        return None

    def db_for_write(self, model: Any, **hints: Any) -> str | None:
        return None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the replica holds the primary's rows

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # the replica follows the primary's schema by replication


def fresh(request: HttpRequest) -> bool:
    """This browser wrote a moment ago: its reads go to the primary, so it sees its own write."""
    return FRESH_COOKIE in request.COOKIES


@contextmanager
def reads_may_lag(request: HttpRequest | None = None) -> Iterator[None]:
    """The reads inside go to the replica, when there is one and `request` did not just write."""
    if not configured() or (request is not None and fresh(request)):
        yield
        return
    token = _may_lag.set(True)
    try:
        yield
    finally:
        _may_lag.reset(token)


def lagging(chunks: Iterable[T], request: HttpRequest) -> Iterator[T]:
    """A streamed answer whose reads may lag: each chunk is produced inside `reads_may_lag`, since the
    generator runs after the view has returned."""
    iterator = iter(chunks)
    while True:
        with reads_may_lag(request):
            chunk = next(iterator, None)
        if chunk is None:
            return
        yield chunk


def lag_tolerant(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A function view (a console list or dashboard) whose reads may lag. Put it under the access check
    (`staff_required`), so who is asking is read from the primary: a session just signed in, or a person just
    made inactive, may not be on the replica yet."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        with reads_may_lag(request):
            return view(request, *args, **kwargs)

    return wrapped


class LagTolerantGet:
    """For a DRF list view: its GET reads may lag (the POST of the same view, a write, is untouched)."""

    def get(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        with reads_may_lag(request):
            return super().get(request, *args, **kwargs)  # type: ignore[misc]


class PrimaryAfterWriteMiddleware:
    """After a successful write, the browser's next reads (for REPLICA_FRESH_SECONDS) go to the primary."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        if not configured():
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.method not in SAFE_METHODS and response.status_code < 400:
            seconds = settings.REPLICA_FRESH_SECONDS
            response.set_cookie(FRESH_COOKIE, "1", max_age=seconds, httponly=True, samesite="Lax")
        return response
