"""The three steps of a fan-out (`outbox.fan_out`).

- `hold`: lock up to `limit` undispatched events (SKIP LOCKED, oldest
  first) and split them into those to fan out now and those held back
  behind an earlier undispatched event of their run that this call does
  not hold; with the database clock (one statement: sql/push.py's HOLD).
- `endpoints`: the active endpoints of some scopes (a run-bound one for its run only), oldest first.
- `dispatch`: the messages inserted (a message already there is left as it
  is) and the fanned-out events marked dispatched.
"""

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q

from ..models import OutboxEvent, WebhookEndpoint
from ..models import WebhookMessage as Message
from .sql import push


def hold(
    ids: Sequence[int] | None, older_than: timedelta | None, limit: int
) -> tuple[datetime | None, list[OutboxEvent], list[int]]:
    """(the clock, the events to fan out now in id order, the ids held back); no clock when nothing is held."""
    params: dict[str, Any] = {"limit": limit}
    if ids is not None:
        params["ids"] = [int(i) for i in ids]
    if older_than is not None:
        params["older"] = older_than.total_seconds()
    found = list(OutboxEvent.objects.raw(push.HOLD[(ids is not None, older_than is not None)], params))
    if not found:
        return None, [], []
    clock: datetime = getattr(found[0], "fanned_at")  # noqa: B009 (the raw statement's own columns)
    ready = [e for e in found if not getattr(e, "held_back")]  # noqa: B009
    return clock, ready, [e.id for e in found if getattr(e, "held_back")]  # noqa: B009


def endpoints(wanted: set[str], runs: set[Any], *, top_level: bool = False) -> list[WebhookEndpoint]:
    """The active endpoints of the `wanted` scopes, and with `top_level` those of every workspace, oldest first;
    of those bound to one run (A2A subscriptions), only the `runs`' ones."""
    match = Q(scope__in=wanted) | Q(scope_l2="") if top_level else Q(scope__in=wanted)
    bound = Q(run_id__isnull=True) | Q(run_id__in=runs)
    return list(WebhookEndpoint.objects.filter(match, bound, active=True).order_by("created_at"))


def dispatch(messages: list[Message], events: list[OutboxEvent], now: datetime) -> None:
    """The messages written (one left by a fan-out that died before its commit stays) and the events marked."""
    Message.objects.bulk_create(messages, ignore_conflicts=True)
    OutboxEvent.objects.filter(id__in=[e.id for e in events]).update(dispatched_at=now)
