"""Celery's side of the logs: the same JSON configuration, and the request id carried into tasks; a child's spans
exported before it exits.

Connected by suspensions_project/celery.py, so web processes (which publish)
and workers (which run) both have them.
"""

import logging.config
from typing import Any

from celery import signals

from . import context, tracing

HEADER = "request_id"


@signals.setup_logging.connect(dispatch_uid="suspensions.observability.logging")
def use_the_django_logging(**kwargs: Any) -> None:
    """The worker and beat log through settings.LOGGING, as JSON lines at LOG_LEVEL.

    Connecting this signal at all stops Celery from replacing the root
    logger's handlers with its own text format (and `--loglevel` is then
    ignored: LOG_LEVEL decides, as in the web processes).
    """
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@signals.before_task_publish.connect(dispatch_uid="suspensions.observability.publish")
def carry_the_request_id(headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
    request_id = context.request_id()
    if request_id and headers is not None:
        headers.setdefault(HEADER, request_id)


@signals.task_prerun.connect(dispatch_uid="suspensions.observability.prerun")
def adopt_the_request_id(task_id: str | None = None, task: Any = None, **kwargs: Any) -> None:
    """The publishing request's id; a task nobody's request enqueued (beat's) is known by its task id."""
    carried = getattr(task.request, HEADER, None) if task is not None else None
    context.bind(
        request_id=context.sane_request_id(carried) or context.sane_request_id(task_id) or context.new_request_id()
    )


@signals.task_postrun.connect(dispatch_uid="suspensions.observability.postrun")
def forget_the_request_id(**kwargs: Any) -> None:
    context.clear()


@signals.worker_process_shutdown.connect(dispatch_uid="suspensions.observability.flush_spans")
def flush_spans(**kwargs: Any) -> None:
    """A prefork child leaves by os._exit, past atexit: the spans it still holds are exported first (traces on)."""
    tracing.flush()
