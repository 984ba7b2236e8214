"""Celery tasks: thin wrappers around services (STYLE: tasks as a thin interface)."""

import logging
import time
from typing import Any

from celery import shared_task
from django.conf import settings

from . import services
from .observability import heartbeat, metrics

log = logging.getLogger(__name__)

# The soft limit interrupts a sweep stuck past it (its open batch rolls back
# and stays due); the hard limit kills the child if even that hangs. The loop
# itself stops well before the soft limit, between batches.
SOFT_LIMIT = settings.SWEEP_TIME_LIMIT_SECONDS
HARD_LIMIT = SOFT_LIMIT + 30


@shared_task(
    name="suspensions.tasks.sweep_expired", soft_time_limit=SOFT_LIMIT, time_limit=HARD_LIMIT, ignore_result=True
)
def sweep_expired() -> dict[str, Any]:
    """Run the expiry sweep (T9) once. Two of these at once are harmless: see services.sweep.

    A sweep that returns records its heartbeat (what /readyz checks) and its
    counts; one that raises counts as a failure and leaves the heartbeat alone.
    """
    began = time.monotonic()
    try:
        result = services.expire_suspensions(max_seconds=SOFT_LIMIT * 0.8).as_dict()
        heartbeat.beat()
    except BaseException:
        # BaseException: the soft time limit and a worker's shutdown end a sweep too.
        metrics.sweep_failed(seconds=time.monotonic() - began)
        raise
    # After the sweep's own commits (each batch is one), so these count only what is written.
    metrics.sweep_finished(result, seconds=time.monotonic() - began)
    log.info("sweep finished: %(expired)s expired, %(dropped)s dropped, %(failed)s failed", result, extra=result)
    return result
