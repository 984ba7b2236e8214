"""Celery tasks: thin wrappers around services (STYLE: tasks as a thin interface)."""

from typing import Any

from celery import shared_task
from django.conf import settings

from . import services

# The soft limit interrupts a sweep stuck past it (its open batch rolls back
# and stays due); the hard limit kills the child if even that hangs. The loop
# itself stops well before the soft limit, between batches.
SOFT_LIMIT = settings.SWEEP_TIME_LIMIT_SECONDS
HARD_LIMIT = SOFT_LIMIT + 30


@shared_task(
    name="suspensions.tasks.sweep_expired", soft_time_limit=SOFT_LIMIT, time_limit=HARD_LIMIT, ignore_result=True
)
def sweep_expired() -> dict[str, Any]:
    """Run the expiry sweep (T9) once. Two of these at once are harmless: see services.sweep."""
    return services.expire_suspensions(max_seconds=SOFT_LIMIT * 0.8).as_dict()
