"""What every log line of a request or a task carries: its request id, its principal, its run.

Context variables, so each gunicorn thread and each Celery task sees only its
own. The middleware binds them when a request arrives; a Celery task binds the
request id it was published with. Nothing here imports a model: the logging
configuration loads this module before the apps are ready.
"""

import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.utils.functional import SimpleLazyObject, empty

# A caller's X-Request-ID is kept only if it is a short plain token: it goes
# into every log line, so it must not carry a newline, a quote or a payload.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9._-]{1,128}")


@dataclass
class Bound:
    request_id: str | None = None
    run_id: str | None = None
    # The request itself, to name its principal once authentication has run (see principal()).
    request: Any = None


_bound: ContextVar[Bound | None] = ContextVar("suspensions_log_context", default=None)


def new_request_id() -> str:
    return uuid.uuid4().hex


def sane_request_id(value: object) -> str | None:
    """`value` if it may be used as a request id as it is, else None."""
    if isinstance(value, str) and SANE_REQUEST_ID.fullmatch(value):
        return value
    return None


def bind(*, request_id: str, request: Any = None) -> None:
    _bound.set(Bound(request_id=request_id, request=request))


def bind_run(run_id: object) -> None:
    bound = _bound.get()
    if bound is not None:
        bound.run_id = str(run_id)


def clear() -> None:
    _bound.set(None)


def request_id() -> str | None:
    bound = _bound.get()
    return bound.request_id if bound is not None else None


def run_id() -> str | None:
    bound = _bound.get()
    return bound.run_id if bound is not None else None


def principal() -> str | None:
    """The name of whoever the request authenticated as, once it has; never triggers authentication.

    DRF stores the token's Principal (or the session's user) on the Django
    request when it authenticates; the console's lazy user counts once a view
    has looked at it. Before that, and for tasks, there is no principal yet.
    """
    bound = _bound.get()
    if bound is None or bound.request is None:
        return None
    user = bound.request.__dict__.get("user")
    if isinstance(user, SimpleLazyObject):
        user = user._wrapped if user._wrapped is not empty else None  # type: ignore[attr-defined]
    if user is None:
        return None
    name = getattr(user, "name", None)  # a Principal
    if isinstance(name, str):
        return name
    if not getattr(user, "is_authenticated", False):
        return "anonymous"
    return f"user:{user.get_username()}"
