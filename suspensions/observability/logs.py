"""Logs as one JSON object per line (docs/deploy.md, "Logs"), through the standard `logging` configuration.

settings.LOGGING puts `JsonFormatter` and `ContextFilter` on the one handler,
so every record (Django's, Celery's, ours) leaves with the request id, the
principal and the run id of the request or task that wrote it.

What is never logged: request bodies, headers, query strings, token secrets,
passwords, decision tokens, the capability in an email link's or a callback
URL's path (both formatters pass every line through redact.text). Lines name
a principal by its name (`token:<name>`, `user:<username>`), a token by
nothing at all.
"""

import logging
from dataclasses import dataclass
from typing import Any, Protocol

from django.db import transaction
from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter as BaseJsonFormatter

from . import context, redact

# A line holds none of the caller's file, line or function, nor the thread's or
# process's name: the logging HOWTO's "Optimization" switches spare every record
# the work of finding them (a transition logs on every claim). The process id is
# kept (os.getpid() costs next to nothing): gunicorn's own format is
# "[%(process)d]", which raised a logging error on every line without it.
logging._srcfile = None  # type: ignore[attr-defined]
logging.logThreads = False
logging.logMultiprocessing = False

transitions = logging.getLogger("suspensions.transitions")
requests = logging.getLogger("suspensions.requests")

# Probes and scrapes come every few seconds; at INFO they would drown the rest.
QUIET_ROUTES = frozenset({"healthz", "readyz", "metrics"})


class ContextFilter(logging.Filter):
    """Adds request_id, principal and run_id to every record (a value the record already has is kept)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in (
            ("request_id", context.request_id),
            ("principal", context.principal),
            ("run_id", context.run_id),
        ):
            if getattr(record, name, None) is None:
                setattr(record, name, value())
        return True


class TerminalFilter(logging.Filter):
    """`make run`'s terminal: one line per request (its access line), and other records at `level` or above.

    Django's own lines about a request (runserver's, and django.request's warning for each 4xx) say
    again what the access line said; a 5xx's error, with its traceback, still shows.
    """

    REPEATS = {"django.server": logging.CRITICAL + 1, "django.request": logging.ERROR}

    def __init__(self, level: str = "WARNING") -> None:
        super().__init__()
        self.level = logging.getLevelNamesMapping()[level]

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == requests.name:
            return record.levelno >= logging.INFO
        return record.levelno >= max(self.level, self.REPEATS.get(record.name, 0))


class JsonFormatter(BaseJsonFormatter):
    """time, level, logger, message, the context fields, then any `extra`; the exception as text."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", ["levelname", "name", "message"])
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", "time")
        # Django's request records carry the request object and the socket: their repr says nothing useful.
        kwargs.setdefault("reserved_attrs", [*RESERVED_ATTRS, "request", "server_time"])
        super().__init__(**kwargs)

    def format(self, record: logging.LogRecord) -> str:
        return redact.text(super().format(record))


class TextFormatter(logging.Formatter):
    """`make run`'s terminal lines: logging's own format, capability paths redacted like the JSON lines."""

    def format(self, record: logging.LogRecord) -> str:
        return redact.text(super().format(record))


class EventLike(Protocol):
    @property
    def kind(self) -> str: ...
    @property
    def run_id(self) -> Any: ...
    @property
    def revision(self) -> int: ...
    @property
    def actor(self) -> str: ...
    @property
    def scope(self) -> str: ...


@dataclass(frozen=True)
class Transition:
    """A transition written without an Event instance (the sweep's set-based SQL)."""

    kind: str
    run_id: Any
    revision: int
    actor: str
    scope: str


def transition(event: EventLike) -> None:
    """One INFO line for one transition (an Event row), once its transaction commits.

    Call it from the one event writer, inside the change's transaction: a
    change that rolls back logs nothing. The line holds the event's kind,
    run id, revision, actor and scope; never its data (it may hold a reason
    text an approver typed, and inputs are not ours to copy into logs).
    """
    fields = {
        "event": event.kind,
        "run_id": str(event.run_id),
        "revision": event.revision,
        "actor": event.actor,
        "scope": event.scope,
    }
    transaction.on_commit(
        lambda: transitions.info(
            "%s run %s at revision %s", fields["event"], fields["run_id"], fields["revision"], extra=fields
        )
    )


def request_finished(*, method: str, path: str, route: str, status: int, seconds: float) -> None:
    """The access line of one request: no query string, no headers, no body."""
    level = logging.DEBUG if route in QUIET_ROUTES else logging.INFO
    requests.log(
        level,
        "%s %s %s",
        method,
        path,
        status,
        extra={
            "method": method,
            "path": path,
            "route": route,
            "status": status,
            "duration_ms": round(seconds * 1000, 1),
        },
    )
